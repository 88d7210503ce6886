"""The openai-responses wire: native Response objects, display text, results, and a fuzzed stream.

The stateful test draws one turn (optional text in a message item, then 1-4 function calls
with generated JSON arguments cut into fragments of 1-8 characters), emits it event by
event in a random interleaving of the calls, and injects at most one of each fault the
format can express: an output_index reused by another call, truncation, a second done,
a delta after the done, corrupt JSON, restated arguments that differ from the deltas, the
turn completing before a call's done, a response.incomplete ending, and a second ending.
The test keeps its own model of every call and predicts, for every step, exactly which
findings it adds.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from callgate import BufferUsageError, ExtractedCall, LLMStreamBuffer, ToolResult
from callgate.cli.check import check_stream, report
from callgate.cli.commands import examples
from callgate.gate.strictjson import parse_arguments
from callgate.strategies import ResponsesStrategy, default_wire_strategies
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

PROFILE = "openai-responses"
FIXTURES = {name: json.loads(text) for name, text in examples() if name.startswith("responses_")}


def events_of(name: str) -> list[Event]:
    events: list[Event] = FIXTURES[name]["events"]
    return events


def fed(events: list[Any], schemas: dict[str, Any] | None = None) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=schemas if schemas is not None else TOOL_SCHEMAS)
    for event in events:
        buffer.add(event)
    buffer.end()
    return buffer


def checked(name: str) -> dict[str, Any]:
    """The check report for a bundled fixture, run through check_stream."""
    events: list[Mapping[str, Any]] = list(events_of(name))
    return check_stream(events, FIXTURES[name]["tool_schemas"])


def completed_response(events: list[Event]) -> dict[str, Any]:
    """What stream=false returns: the Response that ``response.completed`` carries."""
    response: dict[str, Any] = next(
        e["response"] for e in events if e["type"] == "response.completed"
    )
    return response


# -- a Responses stream writer ---------------------------------------------------------------


class Writer:
    """Writes Responses events with sequence numbers and a realistic envelope."""

    RESPONSE_ID = "resp_68b1c2f0a4e88190b7f2d3c41e5a6b7c"

    def __init__(self) -> None:
        self.sequence = 0

    def event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return event

    def envelope(self, status: str, output: list[Any]) -> dict[str, Any]:
        return {
            "id": self.RESPONSE_ID,
            "object": "response",
            "created_at": 1756371440,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"}
            if status == "incomplete"
            else None,
            "model": "gpt-4.1-2025-04-14",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "usage": None
            if status == "in_progress"
            else {"input_tokens": 90, "output_tokens": 40, "total_tokens": 130},
            "metadata": {},
        }

    def lifecycle(self, kind: str, status: str, output: list[Any]) -> Event:
        return self.event(kind, response=self.envelope(status, copy.deepcopy(output)))

    def message(self, key: int, text_parts: list[str]) -> tuple[list[Event], dict[str, Any]]:
        """A whole message item at ``key``, and its done form."""
        item_id = f"msg_68b1c2f1d3b08190a9c4e2f7{key:04d}"
        text = "".join(text_parts)
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        done = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "content": [{**empty, "text": text}],
            "role": "assistant",
        }
        added = {**done, "status": "in_progress", "content": []}
        where = {"item_id": item_id, "output_index": key, "content_index": 0}
        events = [
            self.event("response.output_item.added", output_index=key, item=added),
            self.event("response.content_part.added", **where, part=empty),
            *(
                self.event("response.output_text.delta", **where, delta=part, logprobs=[])
                for part in text_parts
            ),
            self.event("response.output_text.done", **where, text=text, logprobs=[]),
            self.event("response.content_part.done", **where, part={**empty, "text": text}),
            self.event("response.output_item.done", output_index=key, item=done),
        ]
        return events, done

    @staticmethod
    def call_item(
        item_id: str, call_id: str, name: str, arguments: str, status: str
    ) -> dict[str, Any]:
        return {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "arguments": arguments,
            "call_id": call_id,
            "name": name,
        }

    def added(self, key: int, item_id: str, call_id: str, name: str) -> Event:
        item = self.call_item(item_id, call_id, name, "", "in_progress")
        return self.event("response.output_item.added", output_index=key, item=item)

    def delta(self, key: int, item_id: str, text: str) -> Event:
        return self.event(
            "response.function_call_arguments.delta", item_id=item_id, output_index=key, delta=text
        )

    def arguments_done(self, key: int, item_id: str, arguments: str) -> Event:
        return self.event(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=key,
            arguments=arguments,
        )

    def item_done(self, key: int, item: dict[str, Any]) -> Event:
        return self.event("response.output_item.done", output_index=key, item=item)


@dataclass
class ResponsesCall(CallModel):
    """A call of a Responses turn: also the id of its output item."""

    item_id: str = ""

    def done_item(self) -> dict[str, Any]:
        return Writer.call_item(self.item_id, self.call_id, self.name, self.raw, "completed")


# -- the stateful test -------------------------------------------------------------------------


class ResponsesMachine(RuleBasedStateMachine):
    """Streams one generated Responses turn and checks the buffer against a model."""

    buffer: LLMStreamBuffer

    @initialize(plan=stream_plans())
    def open_turn(self, plan: StreamPlan) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
        self.writer = Writer()
        self.text = "".join(plan.text_parts)
        first = 1 if self.text else 0
        self.calls = [
            ResponsesCall(
                first + n,
                f"call_{call.suffix}",
                call.name,
                call.arguments,
                list(call.fragments),
                len(call.fragments) + 2,
                item_id=f"fc_{call.suffix}",
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
        self.message_item: dict[str, Any] | None = None
        prelude = [
            self.writer.lifecycle("response.created", "in_progress", []),
            self.writer.lifecycle("response.in_progress", "in_progress", []),
        ]
        if self.text:
            events, self.message_item = self.writer.message(0, list(plan.text_parts))
            prelude += events
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

    def _close_events(self, call: CallModel) -> list[Event]:
        return [
            self.writer.arguments_done(call.key, call.item_id, call.raw),
            self.writer.item_done(call.key, call.done_item()),
        ]

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
            event = self.writer.added(call.key, call.item_id, call.call_id, call.name)
            self._send([event], [])
        elif piece <= len(call.fragments):
            text = call.fragments[piece - 1]
            if not call.blocked:
                call.received.append(text)
            self._send([self.writer.delta(call.key, call.item_id, text)], [])
        else:
            self._send(self._close_events(call), self._close(call))

    def _output(self) -> list[dict[str, Any]]:
        items = [self.message_item] if self.message_item is not None else []
        return items + [c.done_item() for c in self.calls if c.started]

    def _completed(self) -> Event:
        return self.writer.lifecycle("response.completed", "completed", self._output())

    def _pending(self) -> list[CallModel]:
        return [c for c in self.calls if c.pending]

    @staticmethod
    def _restatable(call: CallModel) -> bool:
        return call.started and not call.closed and not call.blocked and any(call.received)

    def _open(self) -> list[CallModel]:
        return [c for c in self.calls if c.started and not c.blocked]

    def _underway(self) -> bool:
        """Every call has started or one has closed: a stream-ending fault may come now."""
        return all(c.started for c in self.calls) or any(c.closed for c in self.calls)

    def _model_turn(self) -> str:
        if self.truncated or self.turn_refused or any(c.blocked for c in self.calls):
            return "blocked"
        return "executable" if self.terminal_sent else "streaming"

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

    @precondition(lambda self: not self.ended)
    @rule()
    def keepalive(self) -> None:
        self._send([self.writer.event("keepalive")], [])

    @precondition(lambda self: not self.ended and not self.terminal_sent and not self._pending())
    @rule()
    def finish_turn(self) -> None:
        self.terminal_sent = True
        self._send([self._completed()], [])

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
            self.buffer.add(self.writer.event("keepalive"))
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
        event = self.writer.added(call.key, f"fc_REUSED{call.key}", f"call_REUSED{call.key}", name)
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

    def _finished_call(self, pick: int) -> CallModel | None:
        """An open call, emitted to its done first if need be; None if it did not validate."""
        candidates = self._open()
        call = candidates[pick % len(candidates)]
        while call.pending:
            self._emit(call)
        return call if call.validated and not call.blocked else None

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
        self._send(self._close_events(call), [(one("duplicate_terminal"), call.key)])

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
        event = self.writer.delta(call.key, call.item_id, text)
        self._send([event], [(one("delta_after_terminal"), call.key)])

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
            and "args_mismatch" not in self.faults
            and any(self._restatable(c) for c in self.calls)
        )
    )
    @rule(pick=st.integers(0, 3), where=st.sampled_from(["arguments_done", "item_done"]))
    def restate_other_arguments(self, pick: int, where: str) -> None:
        """A restatement that differs from the deltas (a call with no delta yet takes its
        arguments from the restatement, so only a call that streamed some can differ)."""
        self.faults.add("args_mismatch")
        candidates = [c for c in self.calls if self._restatable(c)]
        call = candidates[pick % len(candidates)]
        call.blocked = True
        other = call.raw + " "
        if where == "arguments_done":
            event = self.writer.arguments_done(call.key, call.item_id, other)
        else:
            item = Writer.call_item(call.item_id, call.call_id, call.name, other, "completed")
            event = self.writer.item_done(call.key, item)
        self._send([event], [(one("args_mismatch"), call.key)])

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
    def complete_before_a_done(self) -> None:
        self.faults.add("early_turn_end")
        predicted: list[Expectation] = []
        for call in self._open():
            if not call.closed:
                call.blocked = True
                predicted.append((one("missing_terminal"), call.key))
        self.terminal_sent = True
        self._send([self._completed()], predicted)

    @precondition(
        lambda self: (
            not self.ended
            and not self.terminal_sent
            and "incomplete" not in self.faults
            and self._underway()
            and bool(self._open())
        )
    )
    @rule()
    def end_incomplete(self) -> None:
        self.faults.add("incomplete")
        predicted: list[Expectation] = []
        for call in self._open():
            call.blocked = True
            predicted.append((one("wrong_terminal_reason"), call.key))
        self.terminal_sent = True
        event = self.writer.lifecycle("response.incomplete", "incomplete", self._output())
        self._send([event], predicted)

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
        self._send([self._completed()], predicted)

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
            assert canonical(message) == canonical(self._completed()["response"])
            strategy = ResponsesStrategy()
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
        ResponsesMachine,
        settings=settings(
            max_examples=100,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# -- examples ----------------------------------------------------------------------------------

PASSING = sorted(name for name, data in FIXTURES.items() if data["expect"]["exit"] == 0)


@pytest.mark.parametrize("name", [*PASSING, "responses_text_only.json"])
def test_the_native_message_is_the_response_that_stream_false_returns(name: str) -> None:
    events = events_of(name)
    buffer = fed(events, FIXTURES[name]["tool_schemas"])
    assert buffer.strategy is not None and buffer.strategy.name == PROFILE
    assert buffer.as_dict() == completed_response(events)
    assert buffer.is_finished()


def test_single_call_message_display_and_calls() -> None:
    buffer = fed(events_of("responses_single_call.json"))
    message = buffer.as_dict()
    assert message["output"] == [
        {
            "id": "msg_68b1c2f1d3b08190a9c4e2f7b6d5a4c300",
            "type": "message",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "annotations": [],
                    "logprobs": [],
                    "text": "Let me check the weather. ",
                }
            ],
            "role": "assistant",
        },
        {
            "id": "fc_68b1c2f2e7d48190a1b2c3d4e5f6a7b801",
            "type": "function_call",
            "status": "completed",
            "arguments": '{"city":"Paris","unit":"C"}',
            "call_id": "call_Fq4Jx2VhY8mN3tR7wZ1bK6dP",
            "name": "get_weather",
        },
    ]
    assert (message["object"], message["status"]) == ("response", "completed")
    assert buffer.get_content() == "Let me check the weather. "
    assert buffer.executable
    strategy = ResponsesStrategy()
    assert strategy.extract(message) == [
        ExtractedCall(
            "call_Fq4Jx2VhY8mN3tR7wZ1bK6dP", "get_weather", {"city": "Paris", "unit": "C"}, 1
        )
    ]


def test_reasoning_summaries_stay_in_the_message_and_are_not_display_text() -> None:
    events = events_of("responses_interleaved_two_calls.json")
    buffer = LLMStreamBuffer(
        tool_schemas=FIXTURES["responses_interleaved_two_calls.json"]["tool_schemas"]
    )
    shown = []
    for event in events:
        buffer.add(event)
        shown.append(buffer.text())
    assert "".join(shown) == ""
    reasoning = buffer.as_dict()["output"][0]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"][0]["text"].startswith("The user wants")


def test_mid_stream_message_shows_the_call_in_progress_with_its_arguments_so_far() -> None:
    events = events_of("responses_single_call.json")
    cut = next(
        n
        for n, e in enumerate(events)
        if e["type"] == "response.function_call_arguments.delta" and e["delta"] == '"Par'
    )
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    for event in events[: cut + 1]:
        buffer.add(event)
    item = buffer.as_dict()["output"][1]
    assert (item["status"], item["arguments"]) == ("in_progress", '{"city":"Par')
    assert ResponsesStrategy().extract(buffer.as_dict()) == []
    assert not buffer.executable


def test_a_text_message_in_progress_is_built_from_its_deltas() -> None:
    events = events_of("responses_text_only.json")
    buffer = LLMStreamBuffer()
    for event in events:
        buffer.add(event)
        if event["type"] == "response.output_text.done":
            break
    [item] = buffer.as_dict()["output"]
    assert item["status"] == "in_progress"
    assert item["content"] == [
        {
            "type": "output_text",
            "annotations": [],
            "logprobs": [],
            "text": "Paris is 21 °C and sunny right now.",
        }
    ]
    assert ResponsesStrategy().content_text(buffer.as_dict()) == item["content"][0]["text"]


def test_parseable_arguments_are_not_executable_before_the_item_done_and_completed() -> None:
    events = events_of("responses_single_call.json")
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    verdicts = []
    for event in events:
        buffer.add(event)
        verdicts.append((event["type"], buffer.executable))
    assert [kind for kind, executable in verdicts if executable] == ["response.completed"]
    assert parse_arguments('{"city":"Paris","unit":"C"}')[0] is not None


def test_typed_sdk_events_give_the_same_message_and_verdict() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    for name in ("responses_interleaved_two_calls.json", "responses_args_mismatch.json"):
        events = events_of(name)
        typed = [adapter.validate_python(e) for e in events]
        assert not isinstance(typed[0], dict)
        from_objects, from_dicts = fed(typed), fed(events)
        assert report(from_objects) == report(from_dicts)
        assert from_objects.as_dict() == from_dicts.as_dict()


def test_result_messages_are_function_call_output_items_by_call_id() -> None:
    ok = ExtractedCall("call_A", "get_weather", {"city": "Paris"}, 1)
    failed = ExtractedCall("call_B", "get_time", {"tz": "Mars/Olympus"}, 2)
    results = [ToolResult(ok, '{"temp": 21}'), ToolResult(failed, "unknown zone", is_error=True)]
    assert ResponsesStrategy().result_messages(results) == [
        {"type": "function_call_output", "call_id": "call_A", "output": '{"temp": 21}'},
        {"type": "function_call_output", "call_id": "call_B", "output": "unknown zone"},
    ]
    assert ResponsesStrategy().result_messages([]) == []


def test_only_this_strategy_claims_responses_events_and_response_objects() -> None:
    strategies = default_wire_strategies()
    events = events_of("responses_interleaved_two_calls.json")
    for shape in [*events, completed_response(events)]:
        claims = [s.name for s in strategies if s.recognizes(shape)]
        assert claims == [PROFILE], (claims, shape.get("type", shape))
    for name, text in examples():
        data = json.loads(text)
        if name.startswith("responses_") or data.get("profile") == PROFILE:
            continue
        for chunk in data.get("chunks", data.get("events", [])):
            assert not ResponsesStrategy().recognizes(chunk), name


def test_the_completed_response_must_agree_with_the_stream() -> None:
    result = checked("responses_args_mismatch_completed.json")
    assert result["profile"] == PROFILE
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [("args_mismatch", 0)]
    assert result["calls"][0]["state"] == "blocked"
    assert result["status"] == "fail"


def test_an_incomplete_done_item_does_not_close_its_call() -> None:
    result = checked("responses_wrong_terminal_reason.json")
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [("wrong_terminal_reason", 0)]
    assert "incomplete: max_output_tokens" in result["findings"][0]["message"]


def test_a_done_restating_other_arguments_blocks_that_call() -> None:
    result = checked("responses_args_mismatch.json")
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [("args_mismatch", 0)]
    assert result["calls"][0]["arguments"] == '{"city":"Paris","unit":"C"}'


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("responses_failed.json", "server_error"),
        ("responses_error_event.json", "rate_limit_exceeded"),
        ("responses_custom_tool_call.json", "custom_tool_call"),
        ("responses_malformed_chunk.json", "output_index '0'"),
    ],
)
def test_refusals_say_what_was_refused(name: str, needle: str) -> None:
    result = checked(name)
    assert result["status"] == "fail"
    assert any(needle in f["message"] for f in result["findings"]), result["findings"]


def test_a_huge_output_index_is_refused_without_a_slot() -> None:
    result = checked("responses_limit_slot_index.json")
    assert result["calls"] == []
    assert [f["code"] for f in result["findings"]] == ["limit_exceeded"]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_bundled_events_are_valid_sdk_events_unless_the_fault_is_a_missing_field(
    name: str,
) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    invalid = []
    for event in events_of(name):
        try:
            adapter.validate_python(event, strict=event["type"] != "error")
        except ValueError:
            invalid.append(event["type"])
    if name in ("responses_missing_id.json", "responses_missing_name.json"):
        assert invalid
    else:
        assert invalid == [] or name == "responses_malformed_chunk.json", invalid


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
    strategy = ResponsesStrategy()
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
