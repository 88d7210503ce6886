"""What code written against the MCS SDK (the seeds' interface) reads, read as it reads it.

``if strategy.forming(message):`` and ``.tool_name``; ``buffer.as_dict()["role"]`` after
an empty stream; ``response.executed_calls``; ``buffer.executable`` deciding as the
verdict does; and the relay chunk OpenRouter sends after Gemini's complete calls.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.driver.responses import DriverResponse
from callgate.strategies import AnthropicStrategy, OpenAIStrategy
from callgate.strategies.base import NOT_FORMING, ExtractedCall, Forming, ToolResult

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"object": "chat.completion.chunk", "choices": [choice], **extra}


CALL = chunk(
    {
        "role": "assistant",
        "tool_calls": [
            {
                "index": 0,
                "id": "tool_0_get_weather",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
)


def test_a_relay_chunk_with_an_empty_list_after_the_calls_is_a_trailing_terminal() -> None:
    """OpenRouter relaying Gemini: ``"\\n"``, ``stop`` and ``"reasoning_details": []``."""
    relay = chunk({"role": "assistant", "content": "\n", "reasoning_details": []}, "stop")
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER})
    for piece in (CALL, chunk({}, "tool_calls"), relay):
        buffer.add(piece)
    buffer.end()
    assert buffer.verdict == "pass" and [c.name for c in buffer.calls] == ["get_weather"]
    assert [f.code for f in buffer.findings] == ["trailing_terminal"]


@pytest.mark.parametrize("carried", [{"reasoning_details": [{"text": "x"}]}, {"extra": {"a": 1}}])
def test_a_relay_chunk_that_carries_something_still_blocks(carried: dict[str, Any]) -> None:
    relay = chunk({"content": "\n", **carried}, "stop")
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER})
    for piece in (CALL, chunk({}, "tool_calls"), relay):
        buffer.add(piece)
    buffer.end()
    assert buffer.verdict == "fail" and "duplicate_terminal" in [f.code for f in buffer.findings]


def test_executable_says_what_the_verdict_says_for_a_text_call() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER}, text_formats="auto")
    buffer.add(chunk({"role": "assistant", "content": text}, model="Qwen/Qwen3-8B"))
    assert not buffer.executable  # the turn's end has not come
    buffer.add(chunk({}, "stop", model="Qwen/Qwen3-8B"))
    buffer.end()
    assert buffer.verdict == "pass" and buffer.executable
    assert [c.arguments for c in buffer.calls] == [{"city": "Paris"}]


def test_a_refused_text_call_is_not_executable() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>'
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER}, text_formats="auto")
    buffer.add(chunk({"content": text}, model="Qwen/Qwen3-8B"))
    buffer.add(chunk({}, "stop", model="Qwen/Qwen3-8B"))
    buffer.end()
    assert buffer.verdict == "fail" and not buffer.executable


def test_forming_is_false_when_nothing_is_coming_and_answers_tool_name() -> None:
    assert not NOT_FORMING and not Forming(coming=False)
    coming = Forming(coming=True, name="get_weather")
    assert coming and coming.forming and coming.tool_name == coming.name == "get_weather"
    strategy = OpenAIStrategy()
    assert not strategy.forming({"role": "assistant", "content": "hello"})
    message = {"role": "assistant", "tool_calls": [{"function": {"name": "get_weather"}}]}
    assert strategy.forming(message).tool_name == "get_weather"


def test_an_empty_buffer_gives_the_wires_empty_message() -> None:
    buffer = LLMStreamBuffer()
    assert buffer.as_dict() == {"role": "assistant", "content": None}
    buffer.end()
    assert buffer.as_dict()["role"] == "assistant"
    anthropic = LLMStreamBuffer([AnthropicStrategy()])
    assert anthropic.as_dict() == AnthropicStrategy().message(
        AnthropicStrategy().new_accumulator(anthropic_gate())
    )


def anthropic_gate() -> Any:
    from callgate.gate.turn import TurnGate

    return TurnGate()


def test_executed_calls_is_the_results() -> None:
    result = ToolResult(ExtractedCall("c1", "get_weather", {"city": "Paris"}), "sunny")
    response = DriverResponse("call_executed", (result,))
    assert response.executed_calls == response.results == (result,)
    assert DriverResponse().executed_calls == ()
