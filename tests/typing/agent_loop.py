"""Type-checked with ``mypy --strict`` by tests/test_typing.py (never run): the agent loop
as a user writes it, with the SDKs' own message and tool param types."""

from __future__ import annotations

from typing import Literal

import anthropic
import openai
from anthropic.types import MessageParam, ToolParam
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from callgate import Driver, DriverResponse, Tool, Turn, arun_turn, run_turn


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


driver = Driver([Tool.from_function(get_weather)])


def openai_loop(client: openai.OpenAI) -> Turn:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather?"}]
    tools: list[ChatCompletionToolParam] = driver.tool_specs("openai")
    buffer = driver.new_stream_buffer()
    stream = client.chat.completions.create(
        model="gpt-4.1", messages=messages, tools=tools, stream=True
    )
    turn = run_turn(stream, driver, buffer)
    messages += turn.history
    status: Literal["pass", "fail", "not_applicable"] = turn.status
    print(status)
    return turn


async def anthropic_loop(client: anthropic.AsyncAnthropic) -> Turn:
    messages: list[MessageParam] = [{"role": "user", "content": "Weather?"}]
    tools: list[ToolParam] = driver.tool_specs("anthropic")
    buffer = driver.new_stream_buffer()
    stream = await client.messages.create(
        model="claude-sonnet-4-6", max_tokens=512, messages=messages, tools=tools, stream=True
    )
    turn = await arun_turn(stream, driver, buffer)
    messages += turn.history
    return turn


def step_status(
    response: DriverResponse,
) -> Literal["call_pending", "call_executed", "call_failed"] | None:
    return response.status
