"""Cohere v2 chat stream: the native response, display, results, recognition.

The generated streams with injected faults run in tests/wires/test_every_wire_stateful.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer, ToolResult
from callgate.strategies import (
    AnthropicStrategy,
    CohereStrategy,
    ExtractedCall,
    OllamaStrategy,
    default_wire_strategies,
)
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from callgate.testing.wires.cohere import MESSAGE_ID, message_start
from wire_common import (
    FIXTURES,
    calls_of,
    codes,
    fed,
    fed_fixture,
    stream_of,
)

Chunk = dict[str, Any]
USAGE = {
    "billed_units": {"input_tokens": 37, "output_tokens": 28},
    "tokens": {"input_tokens": 1380, "output_tokens": 70},
}


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
    for event in stream_of("cohere_thinking_then_call.json"):
        buffer.add(event)
        assert buffer.text() == ""
    message = buffer.as_dict()["message"]
    assert message["content"] == [{"type": "thinking", "thinking": "The user asks about Paris."}]
    assert message["tool_plan"] == "I will check the weather."
    assert CohereStrategy().content_text(buffer.as_dict()) == ""


def test_text_content_is_displayed() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    shown = []
    for event in stream_of("cohere_text_only.json"):
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
    own = [e for name in FIXTURES if name.startswith("cohere_") for e in stream_of(name)]
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
