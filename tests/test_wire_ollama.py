"""Ollama native /api/chat: the native response, display, results, and a stateful fuzz.

The stateful test plans one turn (thinking, content and 1-4 whole calls, with or without
ids and ``function.index``) and emits it piece by piece, cutting lines at random. Faults
are injected at most once each: an id reused by a later call, a call with non-object
arguments or no name, a truncated stream, an error line, a ``done_reason`` of
``length``, a second ``done: true`` line and a call after it. The test keeps its own
model of every slot and builds the expected stream=false response from what it sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from callgate import BufferUsageError, LLMStreamBuffer, ToolResult
from callgate.cli.check import report
from callgate.strategies import (
    CohereStrategy,
    ExtractedCall,
    OllamaStrategy,
    OpenAIStrategy,
    default_wire_strategies,
)
from callgate.testing.plans import REQUIRED_ARGUMENTS as REQUIRED
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from callgate.testing.plans import arguments_for
from wire_common import FIXTURES, WireInvariants, calls_of, codes, fed, fed_fixture, stream_of

TEXT = st.text(max_size=8)

Chunk = dict[str, Any]
MODEL = "qwen3:8b"
COUNTERS = {
    "total_duration": 2815468125,
    "load_duration": 41204250,
    "prompt_eval_count": 182,
    "prompt_eval_duration": 310559042,
    "eval_count": 61,
    "eval_duration": 2462173458,
}


def line(n: int, message: Chunk, done: bool = False, reason: str | None = "stop") -> Chunk:
    out: Chunk = {
        "model": MODEL,
        "created_at": f"2025-10-14T09:21:{n % 60:02d}.{n:09d}Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
    }
    if done:
        out["done_reason"] = reason
        out.update(COUNTERS)
    return out


def tool_call(name: str | None, arguments: Any, call_id: str | None = None) -> Chunk:
    function: Chunk = {} if name is None else {"name": name}
    function["arguments"] = arguments
    entry: Chunk = {"function": function}
    if call_id is not None:
        entry["id"] = call_id
    return entry


# -- the native response ------------------------------------------------------------------


def test_parallel_calls_assemble_into_the_stream_false_response() -> None:
    buffer = fed_fixture("ollama_parallel_calls.json")
    assert buffer.strategy is not None and buffer.strategy.name == "ollama"
    assert buffer.executable
    assert buffer.as_dict() == {
        "model": "qwen3:8b",
        "created_at": "2025-10-14T09:21:09.000000000Z",
        "message": {
            "role": "assistant",
            "content": "",
            "thinking": "Weather, time and a search.",
            "tool_calls": [
                {
                    "function": {
                        "index": 0,
                        "name": "get_weather",
                        "arguments": {"city": "Paris", "unit": "C"},
                    }
                },
                {"function": {"index": 1, "name": "get_time", "arguments": {"tz": "Europe/Paris"}}},
                {
                    "function": {
                        "index": 2,
                        "name": "search",
                        "arguments": {"query": "café near Louvre", "limit": 3},
                    }
                },
            ],
        },
        "done": True,
        "done_reason": "stop",
        **COUNTERS,
    }


def test_content_is_displayed_and_thinking_is_not() -> None:
    chunks = [
        line(1, {"thinking": "Short answer."}),
        line(2, {"content": "Paris is"}),
        line(3, {"content": " the capital."}),
        line(4, {}, done=True),
    ]
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    shown = []
    for item in chunks:
        buffer.add(item)
        shown.append(buffer.text())
    buffer.end()
    assert shown == ["", "Paris is", " the capital.", ""]
    message = buffer.as_dict()
    assert message["message"] == {
        "role": "assistant",
        "content": "Paris is the capital.",
        "thinking": "Short answer.",
    }
    assert OllamaStrategy().content_text(message) == "Paris is the capital."
    assert buffer.turn_state == "not_applicable"


def test_calls_by_position_whatever_their_index_says() -> None:
    chunks = [
        line(1, {"tool_calls": [{"function": {"index": 0, "name": "ping", "arguments": {}}}]}),
        line(2, {"tool_calls": [{"function": {"index": 0, "name": "ping", "arguments": {}}}]}),
        line(3, {}, done=True),
    ]
    buffer = fed(chunks)
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "ping", {}), (1, None, "ping", {})]
    indices = [c["function"]["index"] for c in buffer.as_dict()["message"]["tool_calls"]]
    assert indices == [0, 0]


def test_ids_from_a_newer_server_are_kept() -> None:
    buffer = fed(
        [line(1, {"tool_calls": [tool_call("ping", {}, "call_k7f2m9xq")]}), line(2, {}, True)]
    )
    assert calls_of(buffer) == [(0, "call_k7f2m9xq", "ping", {})]
    assert buffer.as_dict()["message"]["tool_calls"] == [
        {"function": {"name": "ping", "arguments": {}}, "id": "call_k7f2m9xq"}
    ]


def test_missing_arguments_mean_an_empty_object() -> None:
    buffer = fed([line(1, {"tool_calls": [{"function": {"name": "ping"}}]}), line(2, {}, True)])
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "ping", {})]
    assert buffer.as_dict()["message"]["tool_calls"] == [{"function": {"name": "ping"}}]


def test_calls_are_not_executable_before_the_done_line() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    buffer.add(line(1, {"tool_calls": [tool_call("get_weather", {"city": "Paris"})]}))
    buffer.add(line(2, {}))
    assert not buffer.executable and not buffer.is_finished()
    buffer.add(line(3, {}, done=True))
    assert buffer.executable and buffer.is_finished()


@pytest.mark.parametrize("reason", ["length", "load", "unload"])
def test_only_stop_ends_a_turn_with_calls(reason: str) -> None:
    buffer = fed(
        [
            line(1, {"tool_calls": [tool_call("get_weather", {"city": "Paris"})]}),
            line(2, {}, True, reason),
        ]
    )
    assert codes(buffer) == [("wrong_terminal_reason", 0)]


def test_an_older_server_without_done_reason_ends_the_turn_normally() -> None:
    done = line(2, {}, True)
    del done["done_reason"]
    buffer = fed([line(1, {"tool_calls": [tool_call("ping", {})]}), done])
    assert buffer.executable


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"tool_calls": [tool_call("get_weather", ["Paris"])]}, "non_object_arguments"),
        ({"tool_calls": [tool_call("get_weather", '{"city": "Paris"}')]}, "non_object_arguments"),
        ({"tool_calls": [tool_call(None, {"city": "Paris"})]}, "missing_name"),
        ({"tool_calls": [{"function": "get_weather"}]}, "malformed_chunk"),
        ({"tool_calls": ["get_weather"]}, "malformed_chunk"),
        ({"tool_calls": {"function": {"name": "ping", "arguments": {}}}}, "malformed_chunk"),
    ],
)
def test_unreadable_or_invalid_calls_block_the_turn(message: Chunk, code: str) -> None:
    buffer = fed([line(1, message), line(2, {}, True)])
    assert code in [c for c, _ in codes(buffer)]
    assert not buffer.executable


def test_an_error_line_blocks_the_turn() -> None:
    buffer = fed_fixture("ollama_error_line.json")
    assert codes(buffer) == [("missing_terminal", None), ("missing_terminal", 0)]
    assert not buffer.executable


# -- reading messages, results, recognition ------------------------------------------------


def test_extract_reads_the_response() -> None:
    strategy = OllamaStrategy()
    message = fed_fixture("ollama_parallel_calls.json").as_dict()
    assert strategy.extract(message) == [
        ExtractedCall(None, "get_weather", {"city": "Paris", "unit": "C"}, 0),
        ExtractedCall(None, "get_time", {"tz": "Europe/Paris"}, 1),
        ExtractedCall(None, "search", {"query": "café near Louvre", "limit": 3}, 2),
    ]
    assert strategy.extract(message["message"]) == strategy.extract(message)
    text_only = fed_fixture("ollama_text_only.json").as_dict()
    assert strategy.extract(text_only) == []


def test_result_messages_are_tool_messages_naming_the_tool() -> None:
    calls = [
        ExtractedCall(None, "get_weather", {"city": "Paris"}, 0),
        ExtractedCall("call_k7f2m9xq", "get_time", {"tz": "UTC"}, 1),
    ]
    results = [ToolResult(calls[0], "18 C"), ToolResult(calls[1], "no such zone", is_error=True)]
    assert OllamaStrategy().result_messages(results) == [
        {"role": "tool", "content": "18 C", "tool_name": "get_weather"},
        {
            "role": "tool",
            "content": "no such zone",
            "tool_name": "get_time",
            "tool_call_id": "call_k7f2m9xq",
        },
    ]


def test_profile_attributes() -> None:
    strategy = OllamaStrategy()
    assert (strategy.name, strategy.per_call_done, strategy.requires_id) == ("ollama", False, False)
    assert strategy.empty_arguments_object and strategy.leaks_into_text


def test_recognition_is_disjoint_from_every_other_wire_strategy() -> None:
    strategies = default_wire_strategies()
    own = [c for name in FIXTURES if name.startswith("ollama_") for c in stream_of(name)]
    own = [c for c in own if "error" not in c]
    own.append(fed_fixture("ollama_parallel_calls.json").as_dict())
    for shape in own:
        claimed = [s.name for s in strategies if s.recognizes(shape)]
        assert claimed == ["ollama"], (claimed, shape)
    ollama = OllamaStrategy()
    for name, data in FIXTURES.items():
        if not name.startswith("ollama_"):
            for shape in data.get("chunks", data.get("events")):
                assert not ollama.recognizes(shape), shape
    cohere_response = fed(FIXTURES["cohere_parallel_calls.json"]["events"]).as_dict()
    assert not ollama.recognizes(cohere_response)
    assert not CohereStrategy().recognizes(fed_fixture("ollama_parallel_calls.json").as_dict())
    assert not OpenAIStrategy().recognizes(line(1, {"tool_calls": [tool_call("ping", {})]}))


# -- the stateful test --------------------------------------------------------------------


@dataclass
class PlannedCall:
    name: str | None
    arguments: Any
    call_id: str | None
    index: int | None

    def entry(self) -> Chunk:
        entry = tool_call(self.name, self.arguments, self.call_id)
        if self.index is not None:
            entry["function"] = {"index": self.index, **entry["function"]}
        return entry


@dataclass
class SlotModel:
    key: int
    name: str | None
    call_id: str | None
    arguments: Any
    fate: str = "ok"
    """ok, or the finding code its checks will give (non_object_arguments, missing_name)."""
    state: str = "accumulating"


@dataclass
class Line:
    content: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[tuple[str, PlannedCall]] = field(default_factory=list)

    def message(self) -> Chunk:
        message: Chunk = {"content": "".join(self.content)}
        if self.thinking:
            message["thinking"] = "".join(self.thinking)
        if self.calls:
            message["tool_calls"] = [c.entry() for _, c in self.calls]
        return message


@st.composite
def turn_plans(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Thinking, then content and 1-4 whole calls in a drawn order."""
    with_ids, with_index = draw(st.booleans()), draw(st.booleans())
    pieces: list[tuple[str, Any]] = [("thinking", t) for t in draw(st.lists(TEXT, max_size=3))]
    for n in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(sorted(TOOL_SCHEMAS)))
        call_id = f"call_{n}{draw(st.text('abcdefgh0123456789', min_size=3, max_size=8))}"
        planned = PlannedCall(
            name,
            draw(arguments_for(name)),
            call_id if with_ids else None,
            n if with_index else None,
        )
        pieces.append(("call", planned))
        pieces += [("content", t) for t in draw(st.lists(TEXT, max_size=2))]
    return pieces


class OllamaMachine(WireInvariants):
    """Emits one planned Ollama turn piece by piece; line boundaries and faults are drawn."""

    @initialize(plan=turn_plans())
    def open_turn(self, plan: list[tuple[str, Any]]) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
        self.pending = list(plan)
        self.current = Line()
        self.sent: list[tuple[str, Any]] = []
        self.slots: list[SlotModel] = []
        self.turn = "streaming"
        self.terminal_sent = False
        self.ended = False
        self.faults: set[str] = set()
        self.expected: list[tuple[str, int | None]] = []
        self.ranks: dict[int, int] = {}
        self.lines = 0

    @property
    def streaming(self) -> bool:
        return not self.terminal_sent and not self.ended

    # -- plumbing ----------------------------------------------------------------------

    def _send(self, done: bool = False, reason: str = "stop") -> None:
        """Send the current line; the model reads its calls first, then its done."""
        self.lines += 1
        self.buffer.add(line(self.lines, self.current.message(), done, reason))
        self.sent += [("content", t) for t in self.current.content]
        self.sent += [("thinking", t) for t in self.current.thinking]
        for kind, planned in self.current.calls:
            self.sent.append((kind, planned))
            self._open_slot(planned, late=kind == "late")
        self.current = Line()
        if done:
            self._apply_done(reason)

    def _open_slot(self, planned: PlannedCall, *, late: bool) -> None:
        slot = SlotModel(len(self.slots), planned.name, planned.call_id, planned.arguments)
        if planned.name is None:
            slot.fate = "missing_name"
        elif not isinstance(planned.arguments, dict):
            slot.fate = "non_object_arguments"
        earlier = [s for s in self.slots if planned.call_id and s.call_id == planned.call_id]
        self.slots.append(slot)
        if late:
            if self.turn in ("executable", "not_applicable"):
                self.expected.append(("delta_after_terminal", slot.key))
            self.turn = "blocked"
        if earlier:
            self._block(slot, "identity_collision")
            slot.name = slot.call_id = None  # a conflicting identity is never recorded

    def _apply_done(self, reason: str) -> None:
        """The gate's turn done: the first closes and checks the open slots; a second
        blocks a turn that had ended cleanly (duplicate_terminal) and changes no slot."""
        if self.terminal_sent:
            if self.turn in ("executable", "not_applicable"):
                self.expected.append(("duplicate_terminal", None))
            self.turn = "blocked"
            for slot in self.slots:  # the buffer ends the stream on every done line
                if slot.state == "accumulating":
                    self._block(slot, "missing_terminal")
            return
        self.terminal_sent = True
        for slot in self.slots:
            if slot.state == "accumulating":
                if reason != "stop":
                    self._block(slot, "wrong_terminal_reason")
                elif slot.fate != "ok":
                    self._block(slot, slot.fate)
                else:
                    slot.state = "validated"
            elif slot.state == "validated":
                code = "duplicate_terminal" if reason == "stop" else "wrong_terminal_reason"
                self._block(slot, code)
        if self.turn == "streaming":
            self.turn = "executable" if self.slots else "not_applicable"

    def _block(self, slot: SlotModel, code: str) -> None:
        slot.state = "blocked"
        self.expected.append((code, slot.key))
        self.turn = "blocked"

    def _add(self, kind: str, value: Any) -> None:
        if kind == "call":
            self.current.calls.append((kind, value))
        else:
            getattr(self.current, kind).append(value)

    def _end(self) -> None:
        self.ended = True
        for slot in self.slots:
            if slot.state == "accumulating":
                self._block(slot, "missing_terminal")
        if self.turn == "streaming":
            self.turn = "not_applicable"
        self.buffer.end()

    # -- the stream --------------------------------------------------------------------

    @precondition(lambda self: self.streaming and bool(self.pending))
    @rule()
    def add_next_piece(self) -> None:
        self._add(*self.pending.pop(0))

    @precondition(lambda self: self.streaming and bool(self.pending))
    @rule()
    def add_the_rest(self) -> None:
        while self.pending:
            self._add(*self.pending.pop(0))

    @precondition(lambda self: self.streaming)
    @rule()
    def cut_line(self) -> None:
        self._send()

    @precondition(lambda self: self.streaming)
    @rule()
    def finish_turn(self) -> None:
        while self.pending:
            self._add(*self.pending.pop(0))
        self._send(done=True)

    @precondition(lambda self: self.terminal_sent and not self.ended)
    @rule()
    def end_stream(self) -> None:
        self._end()

    @precondition(lambda self: self.ended)
    @rule()
    def add_after_end_is_refused(self) -> None:
        findings = self.buffer.findings
        with pytest.raises(BufferUsageError):
            self.buffer.add(line(99, {"content": "late"}))
        assert self.buffer.findings == findings

    # -- faults, each at most once -----------------------------------------------------

    def _ids_to_reuse(self) -> list[PlannedCall]:
        """Calls with an id: sent, in the current line, or still to come."""
        calls = [c for k, c in self.sent + self.current.calls + self.pending if k == "call"]
        return [c for c in calls if c.call_id]

    @precondition(
        lambda self: self.streaming and "id_reuse" not in self.faults and bool(self._ids_to_reuse())
    )
    @rule(pick=st.integers(0, 3))
    def reuse_an_id(self, pick: int) -> None:
        """A call with another call's id (whichever comes second collides)."""
        self.faults.add("id_reuse")
        targets = self._ids_to_reuse()
        target = targets[pick % len(targets)]
        again = PlannedCall(target.name, target.arguments, target.call_id, None)
        self.current.calls.append(("call", again))

    @precondition(
        lambda self: "bad_call" not in self.faults and any(k == "call" for k, _ in self.pending)
    )
    @rule(pick=st.integers(0, 3), kind=st.sampled_from(["list", "string", "number", "no_name"]))
    def break_a_pending_call(self, pick: int, kind: str) -> None:
        self.faults.add("bad_call")
        calls = [c for k, c in self.pending if k == "call"]
        planned = calls[pick % len(calls)]
        if kind == "no_name":
            planned.name = None
        else:
            planned.arguments = {
                "list": [planned.arguments],
                "string": json.dumps(planned.arguments),
                "number": 7,
            }[kind]

    @precondition(lambda self: self.streaming and "truncation" not in self.faults and self.slots)
    @rule(error_line=st.booleans())
    def truncate(self, error_line: bool) -> None:
        self.faults.add("truncation")
        if error_line:
            self.buffer.add({"error": "an error was encountered while running the model"})
            if self.turn == "streaming":
                self.expected.append(("missing_terminal", None))
            self.turn = "blocked"
        self._end()

    @precondition(lambda self: self.streaming and "wrong_reason" not in self.faults)
    @rule()
    def finish_with_length(self) -> None:
        self.faults.add("wrong_reason")
        while self.pending:
            self._add(*self.pending.pop(0))
        self._send(done=True, reason="length")

    @precondition(
        lambda self: (
            self.terminal_sent
            and not self.ended
            and "duplicate_terminal" not in self.faults
            and any(s.state == "validated" for s in self.slots)
        )
    )
    @rule()
    def second_done_line(self) -> None:
        self.faults.add("duplicate_terminal")
        self._send(done=True)

    @precondition(
        lambda self: self.terminal_sent and not self.ended and "late_call" not in self.faults
    )
    @rule(name=st.sampled_from(sorted(TOOL_SCHEMAS)))
    def call_after_the_done_line(self, name: str) -> None:
        self.faults.add("late_call")
        arguments = {key: "x" for key in REQUIRED[name]}
        self.current.calls.append(("late", PlannedCall(name, arguments, None, None)))
        self._send()

    # -- the model's view, for the shared invariants (wire_common.WireInvariants) --------

    def model_slots(self) -> dict[int, str]:
        return {s.key: s.state for s in self.slots}

    def model_turn(self) -> str:
        return self.turn

    # -- the end of the turn -----------------------------------------------------------

    def teardown(self) -> None:
        if not hasattr(self, "buffer"):
            return
        if not self.ended:
            if not self.terminal_sent:
                while self.pending:
                    self._add(*self.pending.pop(0))
                self._send(done=True)
            self._end()
        result = report(self.buffer)
        assert [(c["slot"], c["id"], c["name"]) for c in result["calls"]] == [
            (s.key, s.call_id, s.name) for s in self.slots
        ]
        assert self.buffer.get_content() == "".join(v for k, v in self.sent if k == "content")
        if not self.faults:
            assert result["status"] == "pass", result
            assert result["findings"] == []
            assert [c["arguments"] for c in result["calls"]] == [s.arguments for s in self.slots]
            assert self.buffer.as_dict() == self._expected_response()
        else:
            assert result["status"] == "fail", result
            assert self.expected, f"faults {self.faults} predicted no finding"
            found = {(f["code"], f["slot"]) for f in result["findings"]}
            assert set(self.expected) <= found, (self.expected, found)

    def _expected_response(self) -> Chunk:
        """The stream=false response of a clean run, from what was sent."""
        message: Chunk = {
            "role": "assistant",
            "content": "".join(v for k, v in self.sent if k == "content"),
        }
        thinking = "".join(v for k, v in self.sent if k == "thinking")
        if thinking:
            message["thinking"] = thinking
        message["tool_calls"] = [v.entry() for k, v in self.sent if k == "call"]
        return {
            "model": MODEL,
            "created_at": line(self.lines, {})["created_at"],
            "message": message,
            "done": True,
            "done_reason": "stop",
            **COUNTERS,
        }


def test_generated_turns_with_injected_faults_follow_the_model() -> None:
    run_state_machine_as_test(OllamaMachine, settings=settings.get_profile("machine"))
