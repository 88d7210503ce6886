"""The display machine composed with the detector and the slot machines, fuzzed.

Two drivers share one buffer over a conversation of OpenAI turns. Hypothesis writes
prose, calls embedded in the text (cut into arbitrary chunks), native calls (fragments
interleaved with prose) and repeats of calls already answered, under a policy it picks.
After every chunk both drivers process the buffer and the user's text is read. The
properties: no call runs before its policy allows, no call runs twice in the
conversation, every call a driver owns is answered exactly once per turn, and no text is
lost: what the user saw is the content with exactly the markup of owned calls removed.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from callgate import Driver, Orchestrator, Tool
from callgate.driver import DriverResponse
from sdk_streams import Chunk

SCHEMAS = {
    "alpha": {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}},
        "required": ["n", "tag"],
    },
    "beta": {"type": "object"},
    "gamma": {"type": "object"},
}
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


class DriversOverOneBuffer(RuleBasedStateMachine):
    @initialize(policy=st.sampled_from(["turn", "call", "parseable"]))
    def start(self, policy: str) -> None:
        self.policy = policy
        self.runs: list[tuple[str, int]] = []
        """(tag, round) of every tool run."""
        self.round = 0
        self.drivers = [
            Driver([self.tool(n) for n in ("alpha", "beta")], policy=policy),
            Driver([self.tool("gamma")], policy=policy),
        ]
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
        """tag -> the round at which the call's last piece was fed."""
        self.repeats: set[str] = set()
        self.native_slots = 0
        self.results: list[DriverResponse] = []
        self.feeding: str | None = None
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

    @precondition(lambda self: not self.queue)
    @rule(text=PROSE)
    def prose(self, text: str) -> None:
        self.expected.append(text)
        self.feed(chunk({"content": text}))

    @precondition(lambda self: not self.queue and not self.native_slots)
    @rule(name=NAMES, valid=st.booleans(), cuts=st.lists(st.integers(0, 200), max_size=6))
    def text_call(self, name: str, valid: bool, cuts: list[int]) -> None:
        tag = self.next_tag()
        arguments = json.dumps({"n": 1 if valid else "one", "tag": tag})
        markup = f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'
        if name not in OWNERS:
            self.expected.append(markup)
        self.calls[tag] = (name, valid or name != "alpha", None)
        self.queue = [chunk({"content": piece}) for piece in cut(markup, cuts)]
        self.feeding = tag

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
        opening = {"index": index, "id": call_id, "type": "function", "function": {"name": name}}
        self.queue = [chunk({"tool_calls": [opening]})] + [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in cut(json.dumps(arguments), cuts)
        ]
        self.feeding = tag

    @precondition(lambda self: bool(self.queue))
    @rule()
    def next_piece(self) -> None:
        self.feed(self.queue.pop(0))
        if not self.queue and self.feeding is not None:
            self.closed[self.feeding] = self.round

    @precondition(lambda self: not self.queue)
    @rule()
    def end_turn(self) -> None:
        self.feed(chunk({}, "tool_calls" if self.native_slots else "stop"))
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
            if native and self.policy != "parseable":
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
        owned = {call_id or tag for tag, (name, _, call_id) in self.calls.items() if name in OWNERS}
        assert set(keys) == owned, "every owned call is answered once, no other call"
        ran = {tag for tag, _ in self.runs[self.turn_runs :]}
        blocked = self.buffer.turn_state == "blocked"
        faulty = {OWNERS.get(name, -1) for name, valid, _ in self.calls.values() if not valid}
        natives = [c for c in self.calls.values() if c[2] is not None]
        assert blocked == any(not valid or name not in OWNERS for name, valid, _ in natives)
        for tag, (name, valid, call_id) in self.calls.items():
            if name not in OWNERS or not valid or tag in self.repeats:
                assert tag not in ran, (tag, name, valid)
            elif call_id is None:
                atomic = self.policy == "turn" and OWNERS[name] in faulty
                assert (tag in ran) != atomic, (tag, self.policy, faulty)
            elif not (blocked and self.policy == "parseable"):
                assert (tag in ran) != blocked, (tag, blocked)
        for result in answered:
            if result.call.id is not None and not result.is_error:
                self.answered.setdefault(result.call.id, (result.call.name, result.call.arguments))


DriversOverOneBuffer.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None
)
TestDriversOverOneBuffer = DriversOverOneBuffer.TestCase
