"""The openai-responses wire: native Response objects, display text, results, recognition.

The generated streams with injected faults run in tests/wires/test_every_wire_stateful.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from callgate import ExtractedCall, LLMStreamBuffer, ToolResult
from callgate.cli.check import report
from callgate.cli.fixtures import examples
from callgate.gate.strictjson import parse_arguments
from callgate.strategies import ResponsesStrategy, default_wire_strategies
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from wire_common import (
    JUNK,
    checked,
    fed,
    fixtures,
    stream_of,
)
from wire_common import (
    value_paths as _paths,
)

Event = dict[str, Any]

PROFILE = "openai-responses"
FIXTURES = fixtures("responses_")


def completed_response(events: list[Event]) -> dict[str, Any]:
    """What stream=false returns: the Response that ``response.completed`` carries."""
    response: dict[str, Any] = next(
        e["response"] for e in events if e["type"] == "response.completed"
    )
    return response


# -- examples ----------------------------------------------------------------------------------

PASSING = sorted(name for name, data in FIXTURES.items() if data["expect"]["exit"] == 0)


@pytest.mark.parametrize("name", [*PASSING, "responses_text_only.json"])
def test_the_native_message_is_the_response_that_stream_false_returns(name: str) -> None:
    events = stream_of(name)
    buffer = fed(events, FIXTURES[name]["tool_schemas"])
    assert buffer.strategy is not None and buffer.strategy.name == PROFILE
    assert buffer.as_dict() == completed_response(events)
    assert buffer.is_finished()


def test_single_call_message_display_and_calls() -> None:
    buffer = fed(stream_of("responses_single_call.json"))
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
    events = stream_of("responses_interleaved_two_calls.json")
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
    events = stream_of("responses_single_call.json")
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
    events = stream_of("responses_text_only.json")
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
    events = stream_of("responses_single_call.json")
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
        events = stream_of(name)
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
    events = stream_of("responses_interleaved_two_calls.json")
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
    for event in stream_of(name):
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
    events = copy.deepcopy(stream_of(name))
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
