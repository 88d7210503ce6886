"""The bedrock wire: the native Converse response, display text, results, and a fuzzed stream.

The stateful test draws one turn (optional text in block 0, then 1-4 tool calls with
generated JSON input cut into fragments of 1-8 characters; a call with no arguments may
stream no input at all), emits it event by event in a random interleaving of the blocks,
and injects at most one of each fault the format can express: a block index reused by
another call, truncation, a second contentBlockStop, a fragment after the stop, corrupt
JSON, messageStop before a block's stop, a stopReason that is not ``tool_use``, and a
second messageStop. The test keeps its own model of every call and predicts, for every
step, exactly which findings it adds.
"""

from __future__ import annotations

import binascii
import copy
import json
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from callgate import BufferUsageError, ExtractedCall, LLMStreamBuffer, ToolResult
from callgate.cli.check import check_stream, report
from callgate.cli.commands import examples
from callgate.strategies import BedrockStrategy, default_wire_strategies
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from callgate.testing.plans import StreamPlan, stream_plans
from wire_common import (
    JSON_CODES,
    JUNK,
    CallModel,
    Expectation,
    canonical,
    check_slot_ranks,
    match_findings,
    one,
    reported_state,
)
from wire_common import (
    value_paths as _paths,
)

Event = dict[str, Any]

PROFILE = "bedrock"
FIXTURES = {name: json.loads(text) for name, text in examples() if name.startswith("bedrock_")}
ID_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
USAGE = {"inputTokens": 412, "outputTokens": 68, "totalTokens": 480}
METRICS = {"latencyMs": 1874}


def events_of(name: str) -> list[Event]:
    events: list[Event] = FIXTURES[name]["events"]
    return events


def fed(events: list[Any], schemas: Mapping[str, Any] | None = None) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=schemas if schemas is not None else TOOL_SCHEMAS)
    for event in events:
        buffer.add(event)
    buffer.end()
    return buffer


def checked(name: str) -> dict[str, Any]:
    """The check report for a bundled fixture, run through check_stream."""
    events: list[Mapping[str, Any]] = list(events_of(name))
    return check_stream(events, FIXTURES[name]["tool_schemas"])


# -- ConverseStream events ---------------------------------------------------------------------


def block_start(key: int, tool_id: str, name: str) -> Event:
    start = {"toolUse": {"toolUseId": tool_id, "name": name}}
    return {"contentBlockStart": {"start": start, "contentBlockIndex": key}}


def input_delta(key: int, text: str) -> Event:
    return {"contentBlockDelta": {"delta": {"toolUse": {"input": text}}, "contentBlockIndex": key}}


def text_delta(key: int, text: str) -> Event:
    return {"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": key}}


def block_stop(key: int) -> Event:
    return {"contentBlockStop": {"contentBlockIndex": key}}


def message_end(reason: str) -> list[Event]:
    return [
        {"messageStop": {"stopReason": reason}},
        {"metadata": {"usage": USAGE, "metrics": METRICS}},
    ]


# -- the stateful test -------------------------------------------------------------------------


class BedrockMachine(RuleBasedStateMachine):
    """Streams one generated ConverseStream turn and checks the buffer against a model."""

    buffer: LLMStreamBuffer

    @initialize(plan=stream_plans(alphabet=ID_ALPHABET, id_size=(22, 22), empty_arguments=True))
    def open_turn(self, plan: StreamPlan) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
        self.text = "".join(plan.text_parts)
        first = 1 if self.text else 0
        self.calls = [
            CallModel(
                first + n,
                f"tooluse_{call.suffix}",
                call.name,
                call.arguments,
                list(call.fragments),
                len(call.fragments) + 2,
            )
            for n, call in enumerate(plan.calls)
        ]
        self.terminal_sent = False
        self.ended = False
        self.truncated = False
        self.turn_refused = False
        self.faults: set[str] = set()
        self.expected: list[Expectation] = []
        self.ranks: dict[int, int] = {}
        self.shown: list[str] = []
        prelude: list[Event] = [{"messageStart": {"role": "assistant"}}]
        if self.text:
            prelude += [text_delta(0, part) for part in plan.text_parts] + [block_stop(0)]
        self._send(prelude, [])

    # -- plumbing ----------------------------------------------------------------------

    def _step(self, action: Callable[[], None], predicted: list[Expectation]) -> None:
        before = len(self.buffer.findings)
        action()
        match_findings(self.buffer.findings[before:], predicted)
        self.expected.extend(predicted)

    def _send(self, events: list[Event], predicted: list[Expectation]) -> None:
        def add_all() -> None:
            for event in events:
                self.buffer.add(event)
                self.shown.append(self.buffer.text())

        self._step(add_all, predicted)

    def _close(self, call: CallModel) -> list[Expectation]:
        call.closed = True
        if call.blocked:
            return []
        if call.corrupt:
            call.blocked = True
            return [(JSON_CODES, call.key)]
        call.validated = True
        return []

    def _emit(self, call: CallModel) -> None:
        piece = call.sent
        call.sent += 1
        if piece == 0:
            self._send([block_start(call.key, call.call_id, call.name)], [])
        elif piece <= len(call.fragments):
            text = call.fragments[piece - 1]
            if not call.blocked:
                call.received.append(text)
            self._send([input_delta(call.key, text)], [])
        else:
            self._send([block_stop(call.key)], self._close(call))

    def _pending(self) -> list[CallModel]:
        return [c for c in self.calls if c.pending]

    def _open(self) -> list[CallModel]:
        return [c for c in self.calls if c.started and not c.blocked]

    def _underway(self) -> bool:
        """Every call has started or one has closed: a stream-ending fault may come now."""
        return all(c.started for c in self.calls) or any(c.closed for c in self.calls)

    def _model_turn(self) -> str:
        if self.truncated or self.turn_refused or any(c.blocked for c in self.calls):
            return "blocked"
        return "executable" if self.terminal_sent else "streaming"

    def _finished_call(self, pick: int) -> CallModel | None:
        """An open call, emitted to its stop first if need be; None if it did not validate."""
        candidates = self._open()
        call = candidates[pick % len(candidates)]
        while call.pending:
            self._emit(call)
        return call if call.validated and not call.blocked else None

    # -- the stream ----------------------------------------------------------------------

    @precondition(lambda self: not self.ended and bool(self._pending()))
    @rule(pick=st.integers(0, 3))
    def emit_next(self, pick: int) -> None:
        pending = self._pending()
        self._emit(pending[pick % len(pending)])

    @precondition(lambda self: not self.ended and bool(self._pending()))
    @rule(pick=st.integers(0, 3), count=st.sampled_from([4, 12, 10**6]))
    def emit_run(self, pick: int, count: int) -> None:
        """Up to ``count`` pieces of one call in a row (10**6: the rest of the call)."""
        pending = self._pending()
        call = pending[pick % len(pending)]
        for _ in range(count):
            if not call.pending:
                break
            self._emit(call)

    @precondition(lambda self: not self.ended and not self.terminal_sent and not self._pending())
    @rule()
    def finish_turn(self) -> None:
        self.terminal_sent = True
        self._send(message_end("tool_use"), [])

    @precondition(lambda self: not self.ended and self.terminal_sent)
    @rule()
    def end_stream(self) -> None:
        predicted: list[Expectation] = []
        for call in self._open():
            if not call.validated:
                call.blocked = True
                predicted.append((one("missing_terminal"), call.key))
        self.ended = True
        self._step(self.buffer.end, predicted)

    @precondition(lambda self: self.ended)
    @rule()
    def add_after_end_is_refused(self) -> None:
        findings = self.buffer.findings
        with pytest.raises(BufferUsageError):
            self.buffer.add({"metadata": {"usage": USAGE}})
        assert self.buffer.findings == findings

    # -- faults, each at most once per run ----------------------------------------------

    @precondition(
        lambda self: not self.ended and "index_reuse" not in self.faults and bool(self._open())
    )
    @rule(pick=st.integers(0, 3), name=st.sampled_from(sorted(TOOL_SCHEMAS)))
    def reuse_index(self, pick: int, name: str) -> None:
        self.faults.add("index_reuse")
        candidates = self._open()
        call = candidates[pick % len(candidates)]
        call.blocked = True
        event = block_start(call.key, f"tooluse_REUSED_{call.key}", name)
        self._send([event], [(one("identity_collision"), call.key)])

    @precondition(
        lambda self: (
            not self.ended
            and not self.terminal_sent
            and "truncation" not in self.faults
            and self._underway()
        )
    )
    @rule()
    def truncate(self) -> None:
        self.faults.add("truncation")
        predicted: list[Expectation] = []
        for call in self._open():
            if not call.validated:
                call.blocked = True
                predicted.append((one("missing_terminal"), call.key))
        if not predicted and self._model_turn() == "streaming":
            predicted.append((one("missing_terminal"), None))
        self.truncated = True
        self.ended = True
        self._step(self.buffer.end, predicted)

    @precondition(
        lambda self: (
            not self.ended and "duplicate_terminal" not in self.faults and bool(self._open())
        )
    )
    @rule(pick=st.integers(0, 3))
    def duplicate_terminal(self, pick: int) -> None:
        call = self._finished_call(pick)
        if call is None:
            return
        self.faults.add("duplicate_terminal")
        call.blocked = True
        self._send([block_stop(call.key)], [(one("duplicate_terminal"), call.key)])

    @precondition(
        lambda self: not self.ended and "late_fragment" not in self.faults and bool(self._open())
    )
    @rule(pick=st.integers(0, 3), text=st.sampled_from([" ", "}", '"x"', ', "late": 1}']))
    def late_fragment(self, pick: int, text: str) -> None:
        call = self._finished_call(pick)
        if call is None:
            return
        self.faults.add("late_fragment")
        call.blocked = True
        self._send([input_delta(call.key, text)], [(one("delta_after_terminal"), call.key)])

    @precondition(
        lambda self: (
            not self.ended
            and "corrupt_json" not in self.faults
            and any(not c.blocked and c.unsent_fragments() for c in self.calls)
        )
    )
    @rule(
        pick=st.integers(0, 3),
        kind=st.sampled_from(["nul", "cut_closing_brace", "trailing_value"]),
        where=st.integers(0, 2**16),
    )
    def corrupt_json(self, pick: int, kind: str, where: int) -> None:
        self.faults.add("corrupt_json")
        candidates = [c for c in self.calls if not c.blocked and c.unsent_fragments()]
        call = candidates[pick % len(candidates)]
        call.corrupt_with(kind, where)

    @precondition(
        lambda self: (
            not self.ended
            and not self.terminal_sent
            and "early_turn_end" not in self.faults
            and all(c.started for c in self.calls)
            and any(not c.closed and not c.blocked for c in self.calls)
        )
    )
    @rule()
    def stop_message_before_a_block_stop(self) -> None:
        self.faults.add("early_turn_end")
        predicted: list[Expectation] = []
        for call in self._open():
            if not call.closed:
                call.blocked = True
                predicted.append((one("missing_terminal"), call.key))
        self.terminal_sent = True
        self._send(message_end("tool_use"), predicted)

    @precondition(
        lambda self: (
            not self.ended
            and not self.terminal_sent
            and "wrong_reason" not in self.faults
            and self._underway()
            and bool(self._open())
        )
    )
    @rule(reason=st.sampled_from(["end_turn", "max_tokens", "guardrail_intervened"]))
    def stop_for_another_reason(self, reason: str) -> None:
        self.faults.add("wrong_reason")
        predicted: list[Expectation] = []
        for call in self._open():
            call.blocked = True
            predicted.append((one("wrong_terminal_reason"), call.key))
        self.terminal_sent = True
        self._send(message_end(reason), predicted)

    @precondition(
        lambda self: not self.ended and self.terminal_sent and "second_ending" not in self.faults
    )
    @rule()
    def end_the_turn_again(self) -> None:
        """A second turn ending: refused; as a stream end it also settles every open call."""
        self.faults.add("second_ending")
        self.turn_refused = True
        predicted: list[Expectation] = [(one("duplicate_terminal"), None)]
        for call in self._open():
            if not call.validated:
                call.blocked = True
                predicted.append((one("missing_terminal"), call.key))
        self._send(message_end("tool_use"), predicted)

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def slot_states_never_move_back(self) -> None:
        assert self.buffer.gate is not None
        check_slot_ranks(self.buffer.gate, self.ranks)

    @invariant()
    def never_executable_before_terminal_evidence(self) -> None:
        if self.buffer.executable:
            assert self.terminal_sent
            assert not [f for f in self.buffer.findings if f.severity == "error"]

    @invariant()
    def slots_and_turn_follow_the_model(self) -> None:
        assert self.buffer.gate is not None
        actual = {key: slot.state for key, slot in self.buffer.gate.slots.items()}
        assert actual == {c.key: c.state for c in self.calls if c.started}
        assert self.buffer.turn_state == self._model_turn()

    # -- the end of the turn -----------------------------------------------------------

    def expected_message(self) -> dict[str, Any]:
        """The stream=false Converse response of a clean turn, built from the plan alone."""
        content: list[dict[str, Any]] = [{"text": self.text}] if self.text else []
        content += [
            {"toolUse": {"toolUseId": c.call_id, "name": c.name, "input": c.arguments}}
            for c in self.calls
        ]
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use",
            "usage": USAGE,
            "metrics": METRICS,
        }

    def teardown(self) -> None:
        if not hasattr(self, "buffer"):
            return
        if not self.ended:
            for call in self.calls:
                while call.pending:
                    self._emit(call)
            if not self.terminal_sent:
                self.finish_turn()
            self.end_stream()
        result = report(self.buffer)
        assert result["profile"] == PROFILE
        started = [c for c in self.calls if c.started]
        assert [(c["slot"], c["id"], c["name"]) for c in result["calls"]] == [
            (c.key, c.call_id, c.name) for c in started
        ]
        for call, entry in zip(started, result["calls"], strict=True):
            assert entry["state"] == reported_state(self.buffer, call.state)
            if call.validated:
                assert canonical(entry["arguments"]) == canonical(call.arguments)
            else:
                assert entry["arguments"] == "".join(call.received)
        if not self.faults:
            assert self.buffer.executable
            assert (result["status"], result["findings"]) == ("pass", [])
            message = self.buffer.as_dict()
            assert canonical(message) == canonical(self.expected_message())
            strategy = BedrockStrategy()
            assert strategy.extract(message) == [
                ExtractedCall(c.call_id, c.name, c.arguments, c.key) for c in self.calls
            ]
            assert "".join(self.shown) == self.text == strategy.content_text(message)
        else:
            assert not self.buffer.executable
            assert result["status"] == "fail"
            codes = {(f["code"], f["slot"]) for f in result["findings"]}
            for allowed, slot in self.expected:
                assert any((code, slot) in codes for code in allowed), (allowed, slot)


def test_generated_streams_with_injected_faults_follow_the_model() -> None:
    run_state_machine_as_test(
        BedrockMachine,
        settings=settings(
            max_examples=100,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# -- examples ----------------------------------------------------------------------------------


def test_single_call_is_the_converse_response_with_an_object_input() -> None:
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES["bedrock_single_call.json"]["tool_schemas"])
    shown = []
    for event in events_of("bedrock_single_call.json"):
        buffer.add(event)
        shown.append(buffer.text())
    buffer.end()
    assert buffer.strategy is not None and buffer.strategy.name == PROFILE
    assert buffer.as_dict() == {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Let me check the weather in Paris."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_Jp7xE2pRQ3eZ4VmXn9bKcA",
                            "name": "get_weather",
                            "input": {"city": "Paris", "unit": "C"},
                        }
                    },
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 412, "outputTokens": 68, "totalTokens": 480},
        "metrics": {"latencyMs": 1874},
    }
    assert "".join(shown) == "Let me check the weather in Paris."
    assert buffer.executable and buffer.is_finished()
    message = buffer.as_dict()
    strategy = BedrockStrategy()
    assert strategy.extract(message) == [
        ExtractedCall(
            "tooluse_Jp7xE2pRQ3eZ4VmXn9bKcA", "get_weather", {"city": "Paris", "unit": "C"}, 1
        )
    ]
    assert strategy.content_text(message) == "Let me check the weather in Paris."


def test_reasoning_stays_in_the_message_and_is_not_display_text() -> None:
    name = "bedrock_reasoning_then_call.json"
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES[name]["tool_schemas"])
    shown = []
    for event in events_of(name):
        buffer.add(event)
        shown.append(buffer.text())
    assert "".join(shown) == ""
    reasoning = buffer.as_dict()["output"]["message"]["content"][0]
    assert reasoning == {
        "reasoningContent": {
            "reasoningText": {
                "text": "The user wants the current weather in Paris.",
                "signature": "ErUBCkgIAhABGAIiQGm3b7mJ1kR2t6pWQe4tQ0yS8vL0",
            }
        }
    }


def test_redacted_reasoning_keeps_its_bytes() -> None:
    events: list[Event] = [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"redactedContent": b"\x00\x01"}},
                "contentBlockIndex": 0,
            }
        },
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"redactedContent": b"\x02"}},
                "contentBlockIndex": 0,
            }
        },
        block_stop(0),
        *message_end("end_turn"),
    ]
    buffer = fed(events)
    assert buffer.as_dict()["output"]["message"]["content"] == [
        {"reasoningContent": {"redactedContent": b"\x00\x01\x02"}}
    ]
    assert buffer.turn_state == "not_applicable"


def test_an_empty_input_stream_is_an_empty_object() -> None:
    name = "bedrock_empty_input.json"
    buffer = fed(events_of(name), FIXTURES[name]["tool_schemas"])
    assert buffer.executable
    [block] = buffer.as_dict()["output"]["message"]["content"]
    assert block["toolUse"]["input"] == {}


def test_input_in_progress_is_read_leniently_and_is_not_a_call_yet() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    for event in [
        {"messageStart": {"role": "assistant"}},
        block_start(0, "tooluse_abc", "get_weather"),
        input_delta(0, '{"city": '),
    ]:
        buffer.add(event)
    [block] = buffer.as_dict()["output"]["message"]["content"]
    assert block["toolUse"]["input"] == '{"city": '
    assert BedrockStrategy().extract(buffer.as_dict()) == []
    buffer.add(input_delta(0, '"Paris"}'))
    [block] = buffer.as_dict()["output"]["message"]["content"]
    assert block["toolUse"]["input"] == {"city": "Paris"}
    assert not buffer.executable


def test_a_blocked_call_keeps_its_raw_input_text() -> None:
    name = "bedrock_malformed_json.json"
    buffer = fed(events_of(name), FIXTURES[name]["tool_schemas"])
    [block] = buffer.as_dict()["output"]["message"]["content"]
    assert block["toolUse"]["input"] == '{"city": "Paris",}'
    assert BedrockStrategy().extract(buffer.as_dict()) == []


def test_parseable_input_is_not_executable_before_the_stop_and_message_stop() -> None:
    events = events_of("bedrock_single_call.json")
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES["bedrock_single_call.json"]["tool_schemas"])
    executable = []
    for event in events:
        buffer.add(event)
        executable.append((next(iter(event)), buffer.executable))
    assert [kind for kind, ok in executable if ok] == ["messageStop", "metadata"]


def test_server_side_tool_use_stays_in_the_message_and_is_not_gated() -> None:
    name = "bedrock_server_tool_use.json"
    result = checked(name)
    assert (result["status"], result["calls"]) == ("not_applicable", [])
    buffer = fed(events_of(name), FIXTURES[name]["tool_schemas"])
    tool = buffer.as_dict()["output"]["message"]["content"][0]["toolUse"]
    assert tool == {
        "toolUseId": "tooluse_SeRvErToOlAbCdEfGhIjKl",
        "name": "web_grounding",
        "type": "server_tool_use",
        "input": {"query": "weather Paris"},
    }
    assert BedrockStrategy().extract(buffer.as_dict()) == []


def test_result_messages_are_one_user_message_of_tool_results() -> None:
    ok = ExtractedCall("tooluse_A", "get_weather", {"city": "Paris"}, 1)
    failed = ExtractedCall("tooluse_B", "get_time", {"tz": "Mars/Olympus"}, 2)
    results = [ToolResult(ok, '{"temp": 21}'), ToolResult(failed, "unknown zone", is_error=True)]
    assert BedrockStrategy().result_messages(results) == [
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_A",
                        "content": [{"text": '{"temp": 21}'}],
                        "status": "success",
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "tooluse_B",
                        "content": [{"text": "unknown zone"}],
                        "status": "error",
                    }
                },
            ],
        }
    ]
    assert BedrockStrategy().result_messages([]) == []


def test_only_this_strategy_claims_converse_events_and_responses() -> None:
    strategies = default_wire_strategies()
    name = "bedrock_interleaved_two_calls.json"
    events = events_of(name)
    for shape in [*events, fed(events, FIXTURES[name]["tool_schemas"]).as_dict()]:
        claims = [s.name for s in strategies if s.recognizes(shape)]
        assert claims == [PROFILE], (claims, shape)
    for other, text in examples():
        data = json.loads(text)
        if other.startswith("bedrock_") or data.get("profile") == PROFILE:
            continue
        for chunk in data.get("chunks", data.get("events", [])):
            assert not BedrockStrategy().recognizes(chunk), other


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("bedrock_stream_exception.json", "modelStreamErrorException"),
        ("bedrock_malformed_chunk.json", "toolUse input is not text"),
    ],
)
def test_refusals_say_what_was_refused(name: str, needle: str) -> None:
    result = checked(name)
    assert result["status"] == "fail"
    assert any(needle in f["message"] for f in result["findings"]), result["findings"]


def test_a_stop_for_a_block_never_started_is_an_orphan_on_that_index() -> None:
    result = checked("bedrock_orphan_event.json")
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [("orphan_event", 3)]
    assert [(c["slot"], c["state"]) for c in result["calls"]] == [(0, "blocked"), (3, "blocked")]


def test_a_huge_block_index_is_refused_without_a_slot() -> None:
    result = checked("bedrock_limit_slot_index.json")
    assert result["calls"] == []
    assert [f["code"] for f in result["findings"]] == ["limit_exceeded"]


# -- the fixtures as boto3 hands them: through botocore's own event-stream parser --------------


def _frame(event_type: str, body: Mapping[str, Any]) -> bytes:
    """One AWS event-stream message as Bedrock sends it (events carry a ``p`` padding field)."""

    def header(name: str, value: str) -> bytes:
        raw_name, raw_value = name.encode(), value.encode()
        return (
            bytes([len(raw_name)])
            + raw_name
            + b"\x07"
            + struct.pack(">H", len(raw_value))
            + raw_value
        )

    if event_type.endswith("Exception"):
        headers = header(":exception-type", event_type) + header(":message-type", "exception")
        payload = json.dumps(body).encode()
    else:
        headers = header(":event-type", event_type) + header(":message-type", "event")
        payload = json.dumps({**body, "p": "abcdefghijklmnopqrstuvwxyzABCDEF"}).encode()
    headers += header(":content-type", "application/json")
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", binascii.crc32(message))


class _RawStream:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> Iterator[bytes]:
        yield self.data

    def close(self) -> None:
        """Nothing to release."""


def through_botocore(events: list[Event]) -> tuple[list[Any], str | None]:
    """The events after an encode to the wire and botocore's ConverseStream parsing.

    boto3 raises an exception event instead of yielding it; its message comes back second.
    """
    import botocore.session
    from botocore.eventstream import EventStream
    from botocore.exceptions import EventStreamError
    from botocore.parsers import EventStreamJSONParser

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]
    data = b"".join(_frame(key, body) for event in events for key, body in event.items())
    parsed = EventStream(_RawStream(data), shape, EventStreamJSONParser(), "ConverseStream")
    received: list[Any] = []
    try:
        received.extend(parsed)
    except EventStreamError as error:
        return received, str(error)
    return received, None


@pytest.mark.parametrize(
    "name",
    sorted(n for n in FIXTURES if n not in ("bedrock_malformed_chunk.json",)),
)
def test_bundled_events_are_exactly_what_boto3_yields(name: str) -> None:
    events = events_of(name)
    parsed, raised = through_botocore(events)
    if name == "bedrock_stream_exception.json":
        assert parsed == events[:-1]
        assert raised is not None and "modelStreamErrorException" in raised
        return
    assert (parsed, raised) == (events, None)
    assert report(fed(parsed, FIXTURES[name]["tool_schemas"])) == checked(name)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(FIXTURES)), data=st.data())
def test_a_field_of_the_wrong_type_or_missing_is_refused_not_a_crash(
    name: str, data: st.DataObject
) -> None:
    events = copy.deepcopy(events_of(name))
    for _ in range(data.draw(st.integers(1, 3))):
        event = events[data.draw(st.integers(0, len(events) - 1))]
        paths = [p for p in _paths(event) if p]
        if not paths:
            continue
        path = data.draw(st.sampled_from(paths))
        parent = event
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(JUNK)
    strategy = BedrockStrategy()
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES[name]["tool_schemas"], strategy=strategy)
    for event in events:
        buffer.add(event)
        buffer.text()
    buffer.end()
    message = buffer.as_dict()
    strategy.extract(message)
    strategy.content_text(message)
    if buffer.executable:
        assert all(slot.state == "validated" for slot in buffer.slots)
