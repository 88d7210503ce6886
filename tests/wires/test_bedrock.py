"""The bedrock wire: the native Converse response, display text, results, boto3's parsing.

The generated streams with injected faults run in tests/wires/test_every_wire_stateful.py.
"""

from __future__ import annotations

import binascii
import copy
import json
import struct
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callgate import ExtractedCall, LLMStreamBuffer, ToolResult
from callgate.cli.check import report
from callgate.cli.fixtures import examples
from callgate.strategies import BedrockStrategy, default_wire_strategies
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

PROFILE = "bedrock"
FIXTURES = fixtures("bedrock_")
USAGE = {"inputTokens": 412, "outputTokens": 68, "totalTokens": 480}
METRICS = {"latencyMs": 1874}


# -- ConverseStream events ---------------------------------------------------------------------


def block_start(key: int, tool_id: str, name: str) -> Event:
    start = {"toolUse": {"toolUseId": tool_id, "name": name}}
    return {"contentBlockStart": {"start": start, "contentBlockIndex": key}}


def input_delta(key: int, text: str) -> Event:
    return {"contentBlockDelta": {"delta": {"toolUse": {"input": text}}, "contentBlockIndex": key}}


def block_stop(key: int) -> Event:
    return {"contentBlockStop": {"contentBlockIndex": key}}


def message_end(reason: str) -> list[Event]:
    return [
        {"messageStop": {"stopReason": reason}},
        {"metadata": {"usage": USAGE, "metrics": METRICS}},
    ]


# -- examples ----------------------------------------------------------------------------------


def test_single_call_is_the_converse_response_with_an_object_input() -> None:
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES["bedrock_single_call.json"]["tool_schemas"])
    shown = []
    for event in stream_of("bedrock_single_call.json"):
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
    for event in stream_of(name):
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
    buffer = fed(stream_of(name), FIXTURES[name]["tool_schemas"])
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
    buffer = fed(stream_of(name), FIXTURES[name]["tool_schemas"])
    [block] = buffer.as_dict()["output"]["message"]["content"]
    assert block["toolUse"]["input"] == '{"city": "Paris",}'
    assert BedrockStrategy().extract(buffer.as_dict()) == []


def test_parseable_input_is_not_executable_before_the_stop_and_message_stop() -> None:
    events = stream_of("bedrock_single_call.json")
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
    buffer = fed(stream_of(name), FIXTURES[name]["tool_schemas"])
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
    events = stream_of(name)
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
    events = stream_of(name)
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
