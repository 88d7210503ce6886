"""Cohere v2 chat stream: the native response, display, results, and a stateful fuzz.

The stateful test plans one turn (a tool plan, optional text, then 1-4 calls whose JSON
arguments are cut into fragments of 1-8 characters) and emits the calls' events in a
random interleaving (each event names its call's index, so the gate must demultiplex
them). Faults are injected at most once each: a tool-call-start reusing an index, a
truncated stream, a second tool-call-end, a delta after a call's end, corrupt JSON, a
message-end with another reason, a message-end before a call's end, and a delta for an
index never started. The test keeps its own model of every slot and builds the expected
stream=false response from what it sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from callgate import BufferUsageError, LLMStreamBuffer, ToolResult
from callgate.cli.check import report
from callgate.cli.commands import examples
from callgate.strategies import (
    AnthropicStrategy,
    CohereStrategy,
    ExtractedCall,
    OllamaStrategy,
    default_wire_strategies,
)
from wire_common import (
    JSON_CODES,
    REQUIRED,
    SAFE_TEXT,
    calls_of,
    check_slot_ranks,
    codes,
    pieces_of,
    reported_state,
)
from wire_common import LOOSE_JSON_VALUES as JSON_VALUES
from wire_common import LOOSE_TOOL_SCHEMAS as TOOL_SCHEMAS

Chunk = dict[str, Any]
FIXTURES = {name: json.loads(text) for name, text in examples()}
MESSAGE_ID = "fba98ad3-e5a1-413c-a8de-84fbf9baabf7"
USAGE = {
    "billed_units": {"input_tokens": 37, "output_tokens": 28},
    "tokens": {"input_tokens": 1380, "output_tokens": 70},
}


def events(name: str) -> list[Chunk]:
    stream: list[Chunk] = FIXTURES[name]["events"]
    return stream


def fed(stream: list[Chunk], schemas: Mapping[str, Any] | None = None) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS if schemas is None else schemas)
    for event in stream:
        buffer.add(event)
    buffer.end()
    return buffer


def fed_fixture(name: str) -> LLMStreamBuffer:
    return fed(events(name), FIXTURES[name]["tool_schemas"])


def message_start() -> Chunk:
    message = {
        "role": "assistant",
        "content": [],
        "tool_plan": "",
        "tool_calls": [],
        "citations": [],
    }
    return {"type": "message-start", "id": MESSAGE_ID, "delta": {"message": message}}


def plan_delta(text: str) -> Chunk:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": text}}}


def text_events(pieces: list[str], index: int = 0) -> list[Chunk]:
    start = {"content": {"type": "text", "text": ""}}
    return [
        {"type": "content-start", "index": index, "delta": {"message": start}},
        *(
            {
                "type": "content-delta",
                "index": index,
                "delta": {"message": {"content": {"text": p}}},
            }
            for p in pieces
        ),
        {"type": "content-end", "index": index},
    ]


def start(index: int, call_id: str | None, name: str | None) -> Chunk:
    function: Chunk = {"arguments": ""} if name is None else {"name": name, "arguments": ""}
    call: Chunk = {"type": "function", "function": function}
    if call_id is not None:
        call = {"id": call_id, **call}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def delta(index: int, text: str) -> Chunk:
    body = {"tool_calls": {"function": {"arguments": text}}}
    return {"type": "tool-call-delta", "index": index, "delta": {"message": body}}


def end(index: int) -> Chunk:
    return {"type": "tool-call-end", "index": index}


def message_end(reason: str = "TOOL_CALL") -> Chunk:
    return {"type": "message-end", "delta": {"finish_reason": reason, "usage": USAGE}}


def one_call(arguments: str, reason: str = "TOOL_CALL") -> list[Chunk]:
    return [
        message_start(),
        start(0, "get_weather_nsz5zm3w56q3", "get_weather"),
        *(delta(0, arguments[i : i + 4]) for i in range(0, len(arguments), 4)),
        end(0),
        message_end(reason),
    ]


# -- the native response ------------------------------------------------------------------


def test_parallel_calls_assemble_into_the_stream_false_response() -> None:
    buffer = fed_fixture("cohere_parallel_calls.json")
    assert buffer.strategy is not None and buffer.strategy.name == "cohere"
    assert buffer.executable
    assert buffer.as_dict() == {
        "id": MESSAGE_ID,
        "finish_reason": "TOOL_CALL",
        "message": {
            "role": "assistant",
            "tool_plan": "I will search for the weather in Paris and the time there.",
            "tool_calls": [
                {
                    "id": "get_weather_nsz5zm3w56q3",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{"city": "Paris", "unit": "C"}',
                    },
                },
                {
                    "id": "get_time_k88p0m8504w5",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"tz": "Europe/Paris"}'},
                },
            ],
        },
        "usage": USAGE,
    }


def test_tool_plan_and_thinking_are_kept_but_never_displayed() -> None:
    buffer = LLMStreamBuffer(
        tool_schemas=FIXTURES["cohere_thinking_then_call.json"]["tool_schemas"]
    )
    for event in events("cohere_thinking_then_call.json"):
        buffer.add(event)
        assert buffer.text() == ""
    message = buffer.as_dict()["message"]
    assert message["content"] == [{"type": "thinking", "thinking": "The user asks about Paris."}]
    assert message["tool_plan"] == "I will check the weather."
    assert CohereStrategy().content_text(buffer.as_dict()) == ""


def test_text_content_is_displayed() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    shown = []
    for event in events("cohere_text_only.json"):
        buffer.add(event)
        shown.append(buffer.text())
    assert "".join(shown) == "Paris is the capital of France."
    assert buffer.as_dict() == {
        "id": MESSAGE_ID,
        "finish_reason": "COMPLETE",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Paris is the capital of France."}],
        },
        "usage": USAGE,
    }
    assert buffer.turn_state == "not_applicable"


def test_citations_are_kept_in_order() -> None:
    citation = {
        "start": 5,
        "end": 9,
        "text": "20°C",
        "sources": [{"type": "tool", "id": "get_weather_k88p0m8504w5:0"}],
    }
    stream = [
        message_start(),
        *text_events(["It's 20°C in Toronto."]),
        {"type": "citation-start", "index": 0, "delta": {"message": {"citations": citation}}},
        {"type": "citation-end", "index": 0},
        message_end("COMPLETE"),
    ]
    assert fed(stream).as_dict()["message"]["citations"] == [citation]


def test_calls_are_not_executable_before_message_end() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    for event in one_call('{"city": "Paris"}')[:-1]:
        buffer.add(event)
        assert not buffer.executable
    assert buffer.slots[0].state == "validated"
    buffer.add(message_end())
    assert buffer.executable and buffer.is_finished()


@pytest.mark.parametrize("reason", ["COMPLETE", "MAX_TOKENS", "STOP_SEQUENCE", "ERROR"])
def test_only_tool_call_ends_a_turn_with_calls(reason: str) -> None:
    assert codes(fed(one_call('{"city": "Paris"}', reason))) == [("wrong_terminal_reason", 0)]


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ('{"city": "Paris",}', "malformed_json"),
        ('{"city": "Par', "malformed_json"),
        ('{"city": "Paris"} {}', "trailing_data"),
        ('["Paris"]', "non_object_arguments"),
        ('{"city": "Paris", "city": "Rome"}', "duplicate_key"),
        ('{"city": "Paris", "t": NaN}', "non_finite_number"),
        ('{"city": "\\ud800"}', "lone_surrogate"),
        ("", "schema_invalid"),  # no argument fragment means {}, which lacks "city"
    ],
)
def test_bad_arguments_keep_their_raw_text(bad: str, code: str) -> None:
    buffer = fed(one_call(bad))
    assert codes(buffer) == [(code, 0)]
    assert buffer.as_dict()["message"]["tool_calls"][0]["function"]["arguments"] == bad


def test_unreadable_events_are_refused_not_dropped() -> None:
    listed = start(0, "get_weather_nsz5zm3w56q3", "get_weather")
    listed["delta"]["message"]["tool_calls"] = [listed["delta"]["message"]["tool_calls"]]
    assert ("malformed_chunk", None) in codes(fed([message_start(), listed, message_end()]))
    bad_index = [message_start(), start("0", "id_1", "ping"), message_end()]  # type: ignore[arg-type]
    assert ("malformed_chunk", None) in codes(fed(bad_index))
    orphan = [message_start(), delta(3, "{}"), delta(3, "}"), message_end()]
    assert codes(fed(orphan)) == [("orphan_event", None)]
    started = message_start()
    started["delta"]["message"]["tool_calls"] = [{"id": "x"}]
    assert ("malformed_chunk", None) in codes(fed([started, message_end("COMPLETE")]))


def test_repeated_start_of_a_complete_call_is_dropped_as_a_duplicate() -> None:
    arguments = '{"city": "Paris"}'
    stream = [
        message_start(),
        start(0, "get_weather_nsz5zm3w56q3", "get_weather"),
        delta(0, arguments),
        start(0, "get_weather_nsz5zm3w56q3", "get_weather"),
        delta(0, arguments),
        end(0),
        message_end(),
    ]
    buffer = fed(stream)
    assert codes(buffer) == [("duplicate_call_ignored", 0)]
    assert buffer.executable
    assert calls_of(buffer) == [(0, "get_weather_nsz5zm3w56q3", "get_weather", {"city": "Paris"})]


# -- reading messages, results, recognition ------------------------------------------------


def test_extract_reads_the_response_and_its_message() -> None:
    strategy = CohereStrategy()
    response = fed_fixture("cohere_parallel_calls.json").as_dict()
    expected = [
        ExtractedCall("get_weather_nsz5zm3w56q3", "get_weather", {"city": "Paris", "unit": "C"}, 0),
        ExtractedCall("get_time_k88p0m8504w5", "get_time", {"tz": "Europe/Paris"}, 1),
    ]
    assert strategy.extract(response) == expected
    assert strategy.extract(response["message"]) == expected
    assert strategy.extract(fed_fixture("cohere_malformed_json.json").as_dict()) == []


def test_result_messages_are_tool_messages_with_documents() -> None:
    calls = [
        ExtractedCall("get_weather_nsz5zm3w56q3", "get_weather", {"city": "Paris"}, 0),
        ExtractedCall("get_time_k88p0m8504w5", "get_time", {"tz": "UTC"}, 1),
    ]
    results = [
        ToolResult(calls[0], '{"temperature": "20C"}'),
        ToolResult(calls[1], "no such zone", is_error=True),
    ]
    assert CohereStrategy().result_messages(results) == [
        {
            "role": "tool",
            "tool_call_id": "get_weather_nsz5zm3w56q3",
            "content": [{"type": "document", "document": {"data": '{"temperature": "20C"}'}}],
        },
        {
            "role": "tool",
            "tool_call_id": "get_time_k88p0m8504w5",
            "content": [{"type": "document", "document": {"data": '{"error": "no such zone"}'}}],
        },
    ]


def test_profile_attributes() -> None:
    strategy = CohereStrategy()
    assert (strategy.name, strategy.per_call_done, strategy.requires_id) == ("cohere", True, True)
    assert strategy.empty_arguments_object and strategy.leaks_into_text


def test_recognition_is_disjoint_from_every_other_wire_strategy() -> None:
    strategies = default_wire_strategies()
    own = [e for name in FIXTURES if name.startswith("cohere_") for e in events(name)]
    own.append(fed_fixture("cohere_parallel_calls.json").as_dict())
    for shape in own:
        claimed = [s.name for s in strategies if s.recognizes(shape)]
        assert claimed == ["cohere"], (claimed, shape)
    cohere = CohereStrategy()
    for name, data in FIXTURES.items():
        if not name.startswith("cohere_"):
            for shape in data.get("chunks", data.get("events")):
                assert not cohere.recognizes(shape), shape
    anthropic_message = fed(FIXTURES["anthropic_single_call.json"]["events"]).as_dict()
    assert not cohere.recognizes(anthropic_message)
    assert not AnthropicStrategy().recognizes(message_start())
    assert not OllamaStrategy().recognizes(fed_fixture("cohere_parallel_calls.json").as_dict())


# -- the stateful test --------------------------------------------------------------------


@dataclass
class CallModel:
    key: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    fragments: list[str]
    sent: int = 0
    received: list[str] = field(default_factory=list)
    state: str = "unseen"
    corrupt: bool = False
    was_validated: bool = False

    @property
    def pieces(self) -> int:
        """Start, each fragment, end."""
        return len(self.fragments) + 2

    @property
    def pending(self) -> bool:
        return self.sent < self.pieces

    @property
    def raw(self) -> str:
        return "".join(self.fragments)


@dataclass
class TurnPlan:
    plan: list[str]
    text: list[str]
    calls: list[CallModel]


@st.composite
def turn_plans(draw: st.DrawFn) -> TurnPlan:
    """A tool plan, optional text, then 1-4 calls with distinct ids and fragmented JSON."""
    count = draw(st.integers(1, 4))
    suffixes = draw(
        st.lists(
            st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=12),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    calls = []
    for key, suffix in enumerate(suffixes):
        name = draw(st.sampled_from(sorted(TOOL_SCHEMAS)))
        extra = draw(st.dictionaries(SAFE_TEXT, JSON_VALUES, max_size=3))
        arguments = {**extra, **{k: draw(v) for k, v in REQUIRED[name].items()}}
        text = json.dumps(arguments, ensure_ascii=draw(st.booleans()))
        calls.append(CallModel(key, f"{name}_{suffix}", name, arguments, draw(pieces_of(text))))
    plan = draw(st.lists(SAFE_TEXT, max_size=3))
    text = draw(st.lists(SAFE_TEXT, max_size=3))
    return TurnPlan(plan, text, calls)


class CohereMachine(RuleBasedStateMachine):
    """Streams one planned Cohere turn; the calls' events interleave; faults are drawn."""

    @initialize(plan=turn_plans())
    def open_turn(self, plan: TurnPlan) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
        self.plan = plan
        self.calls = plan.calls
        self.turn = "streaming"
        self.terminal_sent = False
        self.ended = False
        self.faults: set[str] = set()
        self.expected: list[tuple[frozenset[str], int | None]] = []
        self.ranks: dict[int, int] = {}
        prelude = [message_start(), *map(plan_delta, plan.plan)]
        if plan.text:
            prelude += text_events(plan.text)
        self._send(prelude)

    @property
    def streaming(self) -> bool:
        return not self.terminal_sent and not self.ended

    # -- plumbing ----------------------------------------------------------------------

    def _send(self, stream: list[Chunk]) -> None:
        for event in stream:
            self.buffer.add(event)

    def _expect(self, code: str | frozenset[str], key: int | None) -> None:
        self.expected.append((frozenset({code}) if isinstance(code, str) else code, key))

    def _block(self, call: CallModel, code: str | frozenset[str]) -> None:
        call.state = "blocked"
        self._expect(code, call.key)
        self.turn = "blocked"

    def _emit(self, call: CallModel) -> None:
        piece = call.sent
        call.sent += 1
        if piece == 0:
            call.state = "accumulating"
            self._send([start(call.key, call.call_id, call.name)])
        elif piece <= len(call.fragments):
            text = call.fragments[piece - 1]
            if call.state != "blocked":
                call.received.append(text)
            self._send([delta(call.key, text)])
        else:
            if call.state == "accumulating":
                if call.corrupt:
                    self._block(call, JSON_CODES)
                else:
                    call.state = "validated"
                    call.was_validated = True
            self._send([end(call.key)])

    def _finish(self, reason: str) -> None:
        self.terminal_sent = True
        for call in self.calls:
            if call.state == "accumulating":
                code = "missing_terminal" if reason == "TOOL_CALL" else "wrong_terminal_reason"
                self._block(call, code)
            elif call.state == "validated" and reason != "TOOL_CALL":
                self._block(call, "wrong_terminal_reason")
        if self.turn == "streaming":
            started = any(c.state != "unseen" for c in self.calls)
            self.turn = "executable" if started else "not_applicable"
        self._send([message_end(reason)])

    def _end(self) -> None:
        self.ended = True
        for call in self.calls:
            if call.state == "accumulating":
                self._block(call, "missing_terminal")
        if self.turn == "streaming":
            if any(c.state != "unseen" for c in self.calls):
                self._expect("missing_terminal", None)
                self.turn = "blocked"
            else:
                self.turn = "not_applicable"
        self.buffer.end()

    def _pending(self) -> list[CallModel]:
        return [c for c in self.calls if c.pending]

    def _closed(self) -> list[CallModel]:
        return [c for c in self.calls if c.state == "validated"]

    # -- the stream --------------------------------------------------------------------

    @precondition(lambda self: self.streaming and bool(self._pending()))
    @rule(pick=st.integers(0, 3), count=st.integers(1, 10))
    def emit_next_events(self, pick: int, count: int) -> None:
        pending = self._pending()
        call = pending[pick % len(pending)]
        for _ in range(count):
            if call.pending:
                self._emit(call)

    @precondition(lambda self: self.streaming and bool(self._pending()))
    @rule(pick=st.integers(0, 3))
    def emit_the_rest_of_a_call(self, pick: int) -> None:
        pending = self._pending()
        call = pending[pick % len(pending)]
        while call.pending:
            self._emit(call)

    @precondition(lambda self: self.streaming and not self._pending())
    @rule()
    def finish_turn(self) -> None:
        self._finish("TOOL_CALL")

    @precondition(lambda self: self.terminal_sent and not self.ended)
    @rule()
    def end_stream(self) -> None:
        self._end()

    @precondition(lambda self: self.ended)
    @rule()
    def add_after_end_is_refused(self) -> None:
        findings = self.buffer.findings
        with pytest.raises(BufferUsageError):
            self.buffer.add(message_end())
        assert self.buffer.findings == findings

    # -- faults, each at most once -----------------------------------------------------

    @precondition(
        lambda self: (
            self.streaming
            and "index_reuse" not in self.faults
            and any(c.state in ("accumulating", "validated") for c in self.calls)
        )
    )
    @rule(pick=st.integers(0, 3), name=st.sampled_from(sorted(TOOL_SCHEMAS)))
    def reuse_an_index(self, pick: int, name: str) -> None:
        self.faults.add("index_reuse")
        open_calls = [c for c in self.calls if c.state in ("accumulating", "validated")]
        call = open_calls[pick % len(open_calls)]
        self._block(call, "identity_collision")
        self._send([start(call.key, f"{name}_REUSED{call.key}", name)])

    @precondition(
        lambda self: (
            self.streaming
            and "truncation" not in self.faults
            and any(c.state != "unseen" for c in self.calls)
        )
    )
    @rule(now=st.integers(0, 9))
    def truncate(self, now: int) -> None:
        if now:
            return
        self.faults.add("truncation")
        self._end()

    @precondition(
        lambda self: (
            self.streaming and "duplicate_terminal" not in self.faults and bool(self._closed())
        )
    )
    @rule(pick=st.integers(0, 3))
    def second_tool_call_end(self, pick: int) -> None:
        self.faults.add("duplicate_terminal")
        closed = self._closed()
        call = closed[pick % len(closed)]
        self._block(call, "duplicate_terminal")
        self._send([end(call.key)])

    @precondition(
        lambda self: self.streaming and "late_delta" not in self.faults and bool(self._closed())
    )
    @rule(pick=st.integers(0, 3), text=st.sampled_from([" ", "}", '"x"', ', "late": 1}']))
    def delta_after_tool_call_end(self, pick: int, text: str) -> None:
        self.faults.add("late_delta")
        closed = self._closed()
        call = closed[pick % len(closed)]
        self._block(call, "delta_after_terminal")
        self._send([delta(call.key, text)])

    @precondition(
        lambda self: (
            self.streaming
            and "corrupt_json" not in self.faults
            and any(c.state != "blocked" and c.sent <= len(c.fragments) for c in self.calls)
        )
    )
    @rule(
        pick=st.integers(0, 3),
        kind=st.sampled_from(["nul", "cut_closing_brace", "trailing_value"]),
    )
    def corrupt_json(self, pick: int, kind: str) -> None:
        self.faults.add("corrupt_json")
        targets = [c for c in self.calls if c.state != "blocked" and c.sent <= len(c.fragments)]
        call = targets[pick % len(targets)]
        last = len(call.fragments) - 1
        if kind == "nul":
            j = max(call.sent - 1, 0)
            call.fragments[j] = "\x00" + call.fragments[j]
        elif kind == "cut_closing_brace":
            call.fragments[last] = call.fragments[last][:-1]
        else:
            call.fragments[last] += " {}"
        call.corrupt = True
        with pytest.raises(ValueError):
            json.loads(call.raw)

    @precondition(
        lambda self: self.streaming and "wrong_reason" not in self.faults and not self._pending()
    )
    @rule(reason=st.sampled_from(["COMPLETE", "MAX_TOKENS", "ERROR"]))
    def message_end_with_another_reason(self, reason: str) -> None:
        self.faults.add("wrong_reason")
        self._finish(reason)

    @precondition(
        lambda self: (
            self.streaming
            and "early_end" not in self.faults
            and any(c.state == "accumulating" for c in self.calls)
            and all(c.sent > 0 for c in self.calls)
        )
    )
    @rule()
    def message_end_before_a_tool_call_end(self) -> None:
        self.faults.add("early_end")
        self._finish("TOOL_CALL")

    @precondition(
        lambda self: self.streaming and "orphan" not in self.faults and bool(self._closed())
    )
    @rule()
    def delta_for_an_index_never_started(self) -> None:
        self.faults.add("orphan")
        self._send([delta(len(self.calls) + 7, '{"x": 1}')])
        self._expect("orphan_event", None)
        self.turn = "blocked"

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def slot_states_never_move_back(self) -> None:
        assert self.buffer.gate is not None
        check_slot_ranks(self.buffer.gate, self.ranks)

    @invariant()
    def never_executable_before_message_end(self) -> None:
        if self.buffer.executable:
            assert self.terminal_sent
            assert not [f for f in self.buffer.findings if f.severity == "error"]

    @invariant()
    def slots_follow_the_model(self) -> None:
        assert self.buffer.gate is not None
        actual = {key: slot.state for key, slot in self.buffer.gate.slots.items()}
        assert actual == {c.key: c.state for c in self.calls if c.state != "unseen"}
        assert self.buffer.turn_state == self.turn

    # -- the end of the turn -----------------------------------------------------------

    def teardown(self) -> None:
        if not hasattr(self, "buffer"):
            return
        if not self.ended:
            if not self.terminal_sent:
                for call in self.calls:
                    while call.pending:
                        self._emit(call)
                self._finish("TOOL_CALL")
            self._end()
        result = report(self.buffer)
        started = [c for c in self.calls if c.state != "unseen"]
        assert [(c["slot"], c["id"], c["name"]) for c in result["calls"]] == [
            (c.key, c.call_id, c.name) for c in started
        ]
        assert self.buffer.get_content() == "".join(self.plan.text)
        if not self.faults:
            assert result["status"] == "pass", result
            assert result["findings"] == []
            assert [c["arguments"] for c in result["calls"]] == [c.arguments for c in self.calls]
            assert self.buffer.as_dict() == self._expected_response()
        else:
            assert result["status"] == "fail", result
            assert self.expected, f"faults {self.faults} predicted no finding"
            found = {(f["code"], f["slot"]) for f in result["findings"]}
            for allowed, key in self.expected:
                assert any((code, key) in found for code in allowed), (allowed, key, found)
            for call, entry in zip(started, result["calls"], strict=True):
                assert entry["state"] == reported_state(self.buffer, call.state)
                if call.was_validated:
                    assert entry["arguments"] == call.arguments
                else:
                    assert entry["arguments"] == "".join(call.received)

    def _expected_response(self) -> Chunk:
        """The stream=false ChatResponse of a clean run, from the plan."""
        message: Chunk = {"role": "assistant"}
        if self.plan.text:
            message["content"] = [{"type": "text", "text": "".join(self.plan.text)}]
        if self.plan.plan:
            message["tool_plan"] = "".join(self.plan.plan)
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.raw},
            }
            for c in self.calls
        ]
        return {
            "id": MESSAGE_ID,
            "finish_reason": "TOOL_CALL",
            "message": message,
            "usage": USAGE,
        }


MACHINE_SETTINGS = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_interleaved_calls_with_injected_faults_follow_the_model() -> None:
    run_state_machine_as_test(CohereMachine, settings=MACHINE_SETTINGS)
