"""LLMStreamBuffer: wire resolution, the native message, display, SDK objects, misuse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter

from callgate import (
    AnthropicStrategy,
    BufferUsageError,
    ExtractedCall,
    ExtractionChain,
    LLMStreamBuffer,
    OpenAIStrategy,
    ToolResult,
    UnrecognizedStreamError,
)
from callgate.cli.fixtures import examples
from callgate.fsm.interpreter import TransitionError
from callgate.gate.turn import TurnGate

FIXTURES = {name: json.loads(text) for name, text in examples()}


EMPTY = {"role": "assistant", "content": None}
"""The message of a turn with no chunk (the default chain's first wire's, as MCS gives)."""


def stream(name: str) -> list[dict[str, Any]]:
    data = FIXTURES[name]
    chunks: list[dict[str, Any]] = data.get("chunks", data.get("events"))
    return chunks


def fed(name: str, **kwargs: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES[name]["tool_schemas"], **kwargs)
    for chunk in stream(name):
        buffer.add(chunk)
    return buffer


def test_default_buffer_resolves_openai_and_builds_the_native_message() -> None:
    buffer = fed("openai_single_call.json")
    assert buffer.strategy is not None and buffer.strategy.name == "openai"
    assert buffer.as_dict() == {
        "role": "assistant",
        "content": "Let me check. ",
        "tool_calls": [
            {
                "id": "call_w1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "C"}'},
            }
        ],
    }
    assert buffer.is_finished() and buffer.executable


def test_openai_content_is_null_when_no_text_streamed() -> None:
    assert fed("auto_detect_openai.json").as_dict()["content"] is None


def test_anthropic_message_keeps_blocks_in_index_order_with_object_input() -> None:
    message = fed("anthropic_thinking_then_call.json").as_dict()
    assert message["role"] == "assistant" and message["stop_reason"] == "tool_use"
    thinking, tool = message["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": "The user wants weather.",
        "signature": "EqQBCgIYAhIM",
    }
    assert tool == {
        "type": "tool_use",
        "id": "toolu_01A",
        "name": "get_weather",
        "input": {"city": "Paris", "unit": "C"},
    }


def test_thinking_is_not_display_text() -> None:
    buffer = fed("anthropic_thinking_then_call.json")
    assert buffer.text() == ""
    assert buffer.get_content() == ""


def test_text_returns_new_content_once_and_nothing_while_held() -> None:
    chunks = stream("openai_text_only.json")
    buffer = LLMStreamBuffer()
    buffer.add(chunks[0])
    assert buffer.text() == "Paris is "
    assert buffer.text() == ""
    buffer.hold()
    buffer.add(chunks[1])
    assert buffer.text() == ""
    buffer.release()
    assert buffer.text() == "sunny."
    assert buffer.get_content() == "Paris is sunny."


def test_reset_starts_a_new_turn_and_drops_held_text() -> None:
    buffer = fed("openai_single_call.json")
    buffer.hold()
    buffer.reset()
    assert buffer.as_dict() == EMPTY and buffer.text() == "" and buffer.slots == []
    for chunk in stream("anthropic_single_call.json"):
        buffer.add(chunk)
    assert buffer.strategy is not None and buffer.strategy.name == "anthropic"


def test_sdk_typed_chunks_go_straight_in() -> None:
    chunks = stream("openai_single_call.json")
    typed_openai = [ChatCompletionChunk.model_validate(c) for c in chunks]
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES["openai_single_call.json"]["tool_schemas"])
    for chunk in typed_openai:
        buffer.add(chunk)
    assert buffer.as_dict() == fed("openai_single_call.json").as_dict()
    assert buffer.executable

    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    name = "anthropic_interleaved_two_calls.json"
    typed = [adapter.validate_python(e) for e in stream(name)]
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES[name]["tool_schemas"])
    for event in typed:
        buffer.add(event)
    assert buffer.executable
    assert buffer.as_dict()["content"] == fed(name).as_dict()["content"]


def test_a_chunk_of_no_known_format_is_a_clear_error_and_changes_nothing() -> None:
    buffer = LLMStreamBuffer()
    with pytest.raises(UnrecognizedStreamError, match="recognises this chunk"):
        buffer.add({"hello": "world"})
    assert buffer.strategy is None and buffer.as_dict() == EMPTY


def test_a_chunk_that_is_not_a_mapping_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="mapping or an SDK model"):
        LLMStreamBuffer().add(42)


def test_add_after_end_is_a_usage_error() -> None:
    buffer = fed("openai_single_call.json")
    buffer.end()
    with pytest.raises(BufferUsageError, match="after end"):
        buffer.add(stream("openai_single_call.json")[0])


def test_parseable_arguments_are_not_executable_before_the_terminal_event() -> None:
    chunks = stream("openai_parseable_before_terminal.json")
    schemas = FIXTURES["openai_parseable_before_terminal.json"]["tool_schemas"]
    buffer = LLMStreamBuffer(tool_schemas=schemas)
    seen = []
    for chunk in chunks:
        buffer.add(chunk)
        seen.append(buffer.executable)
    assert seen == [False] * (len(chunks) - 1) + [True]


def test_deepseek_reasoning_content_stays_in_the_message_and_is_not_shown() -> None:
    def chunk(**delta: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    buffer = LLMStreamBuffer()
    buffer.add(chunk(role="assistant", reasoning_content="Think"))
    buffer.add(chunk(reasoning_content="ing."))
    buffer.add(chunk(content="Answer."))
    buffer.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert buffer.text() == "Answer."
    assert buffer.as_dict() == {
        "role": "assistant",
        "content": "Answer.",
        "reasoning_content": "Thinking.",
    }
    assert buffer.turn_state == "not_applicable"


def test_chain_promotion_never_changes_which_strategy_claims() -> None:
    chain = ExtractionChain([OpenAIStrategy(), AnthropicStrategy()])
    openai_chunk, anthropic_event = (
        stream("openai_single_call.json")[0],
        stream("anthropic_single_call.json")[0],
    )
    for _ in range(3):
        for shape, expected in ((anthropic_event, "anthropic"), (openai_chunk, "openai")):
            strategy = chain.resolve(shape)
            assert strategy is not None and strategy.name == expected
            assert next(iter(chain)).name == expected


def test_strategies_read_calls_and_text_back_from_the_native_message() -> None:
    openai, anthropic = OpenAIStrategy(), AnthropicStrategy()
    message = fed("openai_single_call.json").as_dict()
    [call] = openai.extract(message)
    assert call == ExtractedCall("call_w1", "get_weather", {"city": "Paris", "unit": "C"}, 0)
    assert openai.content_text(message) == "Let me check. "
    assert openai.result_messages([ToolResult(call, "18 C")]) == [
        {"role": "tool", "tool_call_id": "call_w1", "content": "18 C"}
    ]

    message = fed("anthropic_interleaved_two_calls.json").as_dict()
    calls = anthropic.extract(message)
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert anthropic.content_text(message) == "I'll check both. "
    assert anthropic.result_messages([ToolResult(calls[0], "18 C", is_error=True)]) == [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A",
                    "content": "18 C",
                    "is_error": True,
                }
            ],
        }
    ]


def test_gate_misuse_names_machine_state_and_event() -> None:
    gate = TurnGate()
    gate.identity(0, "call_1", "f")
    gate.slots[0].state = "terminal"
    message = "'slot' cannot handle event 'args' in state 'terminal'"
    with pytest.raises(TransitionError, match=message):
        gate.fragment(0, "{}")
    assert gate.slots[0].state == "terminal"


def test_a_blocked_call_keeps_its_raw_arguments() -> None:
    buffer = fed("openai_malformed_json.json")
    buffer.end()
    [slot] = buffer.slots
    assert slot.state == "blocked"
    assert slot.raw_arguments == '{"city": Paris}'
