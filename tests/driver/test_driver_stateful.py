"""The display machine composed with the detector and the slot machines, fuzzed.

Two drivers share one buffer over a conversation of OpenAI or Anthropic turns. Hypothesis
writes prose, calls embedded in the text (cut into arbitrary chunks), native calls
(fragments interleaved with prose) and repeats of calls already answered, under a policy
it picks, with the native->text fall-through on or off.
After every chunk both drivers process the buffer and the user's text is read. The
properties: no call runs before its policy allows, no call runs twice in the
conversation, every call a driver owns is answered exactly once per turn, and no text is
lost: what the user saw is the content with exactly the markup of owned calls removed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from callgate import Driver, Orchestrator, Tool
from callgate.driver.responses import DriverResponse
from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.testing.cuts import splits as deltas
from callgate.testing.wires import Chunk

SCHEMAS = {
    "alpha": {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}},
        "required": ["n", "tag"],
    },
    "beta": {"type": "object"},
    "gamma": {"type": "object"},
}
EVERY = DEFAULT_FORMATS
"""Every stream-detected text format: this test reads text calls on any model."""
OWNERS = {"alpha": 0, "beta": 0, "gamma": 1}
NAMES = st.sampled_from(["alpha", "beta", "gamma", "delta"])
"""``delta`` is nobody's tool."""
PROSE = st.text(alphabet="ab <>{}\n", min_size=1, max_size=12)


def chunk(delta: dict[str, Any], finish: str | None = None) -> Chunk:
    return {
        "id": "chatcmpl-fuzz",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in pairwise(points) if b > a]


class OpenAIWire:
    """OpenAI Chat Completions chunks; no per-call done, no text fall-through needed."""

    per_call_done = False
    leaks = False

    def start(self) -> list[Chunk]:
        return [chunk({"role": "assistant", "content": ""})]

    def text(self, piece: str) -> list[Chunk]:
        return [chunk({"content": piece})]

    def call(self, index: int, call_id: str, name: str, pieces: list[str]) -> list[Chunk]:
        opening = {"index": index, "id": call_id, "type": "function", "function": {"name": name}}
        return [chunk({"tool_calls": [opening]})] + [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces
        ]

    def end(self, native: bool) -> list[Chunk]:
        return [chunk({}, "tool_calls" if native else "stop")]


class AnthropicWire:
    """Anthropic Messages events: a text block opens on demand; each call closes itself."""

    per_call_done = True
    leaks = True

    def __init__(self) -> None:
        self.blocks = 0
        self.text_open = False

    def start(self) -> list[Chunk]:
        self.blocks, self.text_open = 0, False
        message = {"id": "msg_fuzz", "type": "message", "role": "assistant", "content": []}
        return [{"type": "message_start", "message": message}]

    def _close_text(self) -> list[Chunk]:
        if not self.text_open:
            return []
        self.text_open = False
        return [{"type": "content_block_stop", "index": self.blocks - 1}]

    def text(self, piece: str) -> list[Chunk]:
        events: list[Chunk] = []
        if not self.text_open:
            block = {"type": "text", "text": ""}
            events.append(
                {"type": "content_block_start", "index": self.blocks, "content_block": block}
            )
            self.blocks, self.text_open = self.blocks + 1, True
        delta = {"type": "text_delta", "text": piece}
        return [*events, {"type": "content_block_delta", "index": self.blocks - 1, "delta": delta}]

    def call(self, index: int, call_id: str, name: str, pieces: list[str]) -> list[Chunk]:
        events = self._close_text()
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        at = self.blocks
        self.blocks += 1
        events.append({"type": "content_block_start", "index": at, "content_block": block})
        events += [
            {"type": "content_block_delta", "index": at,
             "delta": {"type": "input_json_delta", "partial_json": piece}}
            for piece in pieces
        ]  # fmt: skip
        return [*events, {"type": "content_block_stop", "index": at}]

    def end(self, native: bool) -> list[Chunk]:
        delta = {"stop_reason": "tool_use" if native else "end_turn", "stop_sequence": None}
        return [*self._close_text(), {"type": "message_delta", "delta": delta},
                {"type": "message_stop"}]  # fmt: skip


class DriversOverOneBuffer(RuleBasedStateMachine):
    @initialize(
        policy=st.sampled_from(["turn", "call", "parseable"]),
        wire=st.sampled_from([OpenAIWire, AnthropicWire]),
        fall_through=st.booleans(),
    )
    def start(
        self, policy: str, wire: type[OpenAIWire | AnthropicWire], fall_through: bool
    ) -> None:
        self.policy = policy
        self.wire = wire()
        self.text_calls_run = fall_through or not self.wire.leaks
        """Whether calls in the text are calls: always on OpenAI, with the backup elsewhere."""
        self.runs: list[tuple[str, int]] = []
        """(tag, round) of every tool run."""
        self.round = 0
        self.drivers = [
            Driver([self.tool(n) for n in ("alpha", "beta")], policy=policy, text_formats=EVERY),
            Driver([self.tool("gamma")], policy=policy, text_formats=EVERY),
        ]
        if not fall_through:
            for driver in self.drivers:
                driver.set_native_backup_strategy(None)
        self.buffer = Orchestrator(self.drivers, policy=policy).new_stream_buffer()
        self.answered: dict[str, tuple[str, dict[str, Any]]] = {}
        """Native call id -> (tool, arguments) of the calls that ran in earlier turns."""
        self.uid = 0
        self.new_turn()

    def tool(self, name: str) -> Tool:
        def run(**arguments: Any) -> str:
            self.runs.append((str(arguments.get("tag")), self.round))
            return f"{name} ran"

        return Tool(name, SCHEMAS[name], run)

    def new_turn(self) -> None:
        self.content: list[str] = []
        self.expected: list[str] = []
        """The content with the markup of owned text calls removed: what must be shown."""
        self.shown: list[str] = []
        self.queue: list[Chunk] = []
        self.calls: dict[str, tuple[str, bool, str | None]] = {}
        """tag -> (tool name, valid, native call id or None for a text call)."""
        self.closed: dict[str, int] = {}
        """tag -> the round at which the call's last argument piece was fed."""
        self.stopped: dict[str, int] = {}
        """tag -> the round at which the call's own done was fed (Anthropic)."""
        self.pending_tags: list[tuple[int, str, str]] = []
        """(chunks left in the queue, tag, what) marks: when that many remain, record it."""
        self.started = False
        self.repeats: set[str] = set()
        self.native_slots = 0
        self.results: list[DriverResponse] = []
        self.feeding: str | None = None
        self.marks: dict[int, str] = {}
        self.turn_runs = len(self.runs)

    def next_tag(self) -> str:
        self.uid += 1
        return f"u{self.uid}"

    @property
    def text_mode(self) -> bool:
        return any(call_id is None for _, _, call_id in self.calls.values())

    # -- feeding ----------------------------------------------------------------------

    def feed(self, item: Chunk, *, end: bool = False) -> None:
        self.round += 1
        if end:
            self.buffer.end()
        else:
            self.buffer.add(item)
        self.results += [d.process_llm_response(self.buffer) for d in self.drivers]
        self.shown.append(self.buffer.text())

    def enqueue(self, build: Callable[[], list[Chunk]]) -> None:
        """Queue the chunks ``build`` makes, after the turn's opening if it has not begun."""
        opening = [] if self.started else self.wire.start()
        self.started = True
        self.queue = [*opening, *build()]

    @precondition(lambda self: not self.queue)
    @rule(text=PROSE)
    def prose(self, text: str) -> None:
        self.expected.append(text)
        self.enqueue(lambda: self.wire.text(text))
        self.feeding = None
        while self.queue:
            self.next_piece()

    @precondition(lambda self: not self.queue and not self.native_slots)
    @rule(name=NAMES, valid=st.booleans(), data=st.data())
    def text_call(self, name: str, valid: bool, data: st.DataObject) -> None:
        tag = self.next_tag()
        arguments = json.dumps({"n": 1 if valid else "one", "tag": tag})
        markup = f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'
        if name not in OWNERS or not self.text_calls_run:
            self.expected.append(markup)
        self.calls[tag] = (name, valid or name != "alpha", None)
        pieces = data.draw(deltas(markup), label="deltas")
        self.enqueue(lambda: [c for piece in pieces for c in self.wire.text(piece)])
        self.feeding = tag
        last = max(i for i, piece in enumerate(pieces) if piece)
        self.marks = {len(pieces) - 1 - last: "closed"}
        """The markup is whole once its last non-empty piece is fed; each empty piece after it
        is one more chunk (the text block is open by then on both wires)."""

    @precondition(lambda self: not self.queue and not self.text_mode)
    @rule(name=NAMES, valid=st.booleans(), cuts=st.lists(st.integers(0, 200), max_size=4))
    def native_call(self, name: str, valid: bool, cuts: list[int]) -> None:
        tag = self.next_tag()
        arguments = {"n": 1 if valid else "one", "tag": tag}
        self.open_native(tag, f"call_{tag}", name, arguments, cuts)
        self.calls[tag] = (name, valid or name != "alpha", f"call_{tag}")

    @precondition(lambda self: not self.queue and not self.text_mode and bool(self.answered))
    @rule(data=st.data())
    def repeat_an_answered_call(self, data: st.DataObject) -> None:
        call_id = data.draw(st.sampled_from(sorted(self.answered)))
        name, arguments = self.answered[call_id]
        tag = str(arguments["tag"])
        if tag in self.calls:
            return
        self.open_native(tag, call_id, name, arguments, [])
        self.calls[tag] = (name, True, call_id)
        self.repeats.add(tag)

    def open_native(
        self, tag: str, call_id: str, name: str, arguments: dict[str, Any], cuts: list[int]
    ) -> None:
        index = self.native_slots
        self.native_slots += 1
        pieces = cut(json.dumps(arguments), cuts)
        self.enqueue(lambda: self.wire.call(index, call_id, name, pieces))
        self.feeding = tag
        self.marks = {1: "closed", 0: "stopped"} if self.wire.per_call_done else {0: "closed"}

    @precondition(lambda self: bool(self.queue))
    @rule()
    def next_piece(self) -> None:
        self.feed(self.queue.pop(0))
        what = self.marks.get(len(self.queue)) if self.feeding is not None else None
        if what == "closed":
            self.closed[self.feeding] = self.round  # type: ignore[index]
        elif what == "stopped":
            self.stopped[self.feeding] = self.round  # type: ignore[index]

    @precondition(lambda self: not self.queue)
    @rule()
    def end_turn(self) -> None:
        self.feeding = None
        self.enqueue(lambda: self.wire.end(bool(self.native_slots)))
        while self.queue:
            self.next_piece()
        self.feed({}, end=True)
        self.check_turn()
        self.buffer.reset()
        self.new_turn()

    # -- properties -------------------------------------------------------------------

    @invariant()
    def no_call_runs_twice_in_the_conversation(self) -> None:
        tags = [tag for tag, _ in self.runs]
        assert len(tags) == len(set(tags)), tags

    @invariant()
    def no_call_runs_before_its_policy_allows(self) -> None:
        for tag, when in self.runs:
            if tag not in self.calls or tag in self.repeats:
                continue
            assert tag in self.closed and when >= self.closed[tag], (tag, when, self.closed)
            native = self.calls[tag][2] is not None
            if self.policy == "turn" and not native:
                assert self.buffer.ended, "a text call ran before the turn ended"
            per_call = self.policy == "call" and self.wire.per_call_done
            if native and per_call:
                assert tag in self.stopped and when >= self.stopped[tag], (tag, self.stopped)
            elif native and self.policy != "parseable":
                assert self.buffer.turn_state == "executable", self.buffer.turn_state

    @invariant()
    def shown_text_is_a_prefix_of_what_must_be_shown(self) -> None:
        shown, expected = "".join(self.shown), "".join(self.expected)
        assert expected.startswith(shown), (shown, expected)

    def check_turn(self) -> None:
        assert "".join(self.shown) == "".join(self.expected), "held text was lost or leaked"
        answered = [r for response in self.results for r in response.results]
        keys = [r.call.id or str(r.call.arguments["tag"]) for r in answered]
        assert len(keys) == len(set(keys)), f"a call was answered twice: {keys}"
        owned = {
            call_id or tag
            for tag, (name, _, call_id) in self.calls.items()
            if name in OWNERS and (call_id is not None or self.text_calls_run)
        }
        assert set(keys) == owned, "every owned call is answered once, no other call"
        ran = {tag for tag, _ in self.runs[self.turn_runs :]}
        blocked = self.buffer.turn_state == "blocked"
        natives = [c for c in self.calls.values() if c[2] is not None]
        texts = [
            (tag, valid)
            for tag, (name, valid, call_id) in self.calls.items()
            if call_id is None and name in OWNERS and self.text_calls_run
        ]
        refused = [tag for tag, valid in texts if not valid]
        assert blocked == (
            any(not valid or name not in OWNERS for name, valid, _ in natives) or bool(refused)
        )
        order = [tag for tag, _ in texts]
        for tag, (name, valid, call_id) in self.calls.items():
            if name not in OWNERS or not valid or tag in self.repeats:
                assert tag not in ran, (tag, name, valid)
            elif call_id is None and not self.text_calls_run:
                assert tag not in ran, "the fall-through is off: a leaked call never runs"
            elif call_id is None:
                # all-or-nothing over the whole turn: under turn one refused text call
                # refuses them all; under call and parseable it refuses those after it
                first = order.index(refused[0]) if refused else len(order)
                atomic = order.index(tag) > first if self.policy != "turn" else bool(refused)
                assert (tag in ran) != atomic, (tag, self.policy, refused)
            elif not (blocked and self.policy in ("parseable", "call")):
                assert (tag in ran) != blocked, (tag, blocked)
        for result in answered:
            if result.call.id is not None and not result.is_error:
                self.answered.setdefault(result.call.id, (result.call.name, result.call.arguments))


DriversOverOneBuffer.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None
)
TestDriversOverOneBuffer = DriversOverOneBuffer.TestCase


def test_a_call_whose_markup_came_whole_may_run_before_a_trailing_empty_delta() -> None:
    """The machine's own model: the markup is closed by its last non-empty delta."""

    class Whole:
        def draw(self, strategy: object, label: str | None = None) -> list[str]:
            arguments = json.dumps({"n": "one", "tag": "u1"})
            return [f'<tool_call>{{"name": "beta", "arguments": {arguments}}}</tool_call>', ""]

    machine = DriversOverOneBuffer()
    machine.start(policy="call", wire=OpenAIWire, fall_through=False)
    machine.text_call("beta", False, Whole())  # type: ignore[arg-type]
    while machine.queue:
        machine.next_piece()
        machine.no_call_runs_before_its_policy_allows()
    assert machine.runs == [("u1", 2)] and machine.closed == {"u1": 2}
