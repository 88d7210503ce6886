"""The OpenAI Agents SDK's Responses model through the gated gateway, in front of a
Chat-Completions-only server (``--upstream-wire chat``) and a Responses server.

The scripted model writes a call leaked into its text first, then a native call, then
its answer: the SDK's agent loop runs the tool for both calls (each gated, the leaked one
turned into a ``function_call`` item) and ends with the answer, streamed or not.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from agent_clients import responses_turn, tool_results
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body

agents = pytest.importorskip("agents")
openai = pytest.importorskip("openai")

ANSWER = "Paris is sunny, Rome is sunny."
LEAKED = 'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def chat_model(path: str, body: Mapping[str, Any]) -> Script:
    """A Chat-only server: a leaked call, a native call, then the answer."""
    assert path.endswith("/chat/completions"), path
    head = {"id": "chatcmpl-a", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    done = tool_results(path, body)
    call = {
        "index": 0,
        "id": "call_rome",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Rome"})},
    }
    deltas: list[tuple[dict[str, Any], str | None]] = [
        [({"content": LEAKED}, "stop")],
        [({"content": "And Rome.", "tool_calls": [call]}, "tool_calls")],
        [({"content": ANSWER}, "stop")],
    ][min(done, 2)]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": f}]} for d, f in deltas
    ]
    if body.get("stream"):
        return Script(sse_body(chunks))
    ((delta, finish),) = deltas
    message = {
        "role": "assistant",
        "content": delta.get("content"),
        **(
            {
                "tool_calls": [
                    {k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]
                ]
            }
            if "tool_calls" in delta
            else {}
        ),
    }
    whole = {
        **head,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    return Script(json.dumps(whole).encode(), content_type="application/json")


def responses_model(path: str, body: Mapping[str, Any]) -> Script:
    """A Responses server: a leaked call, a native call, then the answer (streamed)."""
    done = tool_results(path, body)
    if done == 0:
        return responses_turn(LEAKED)
    if done == 1:
        return responses_turn("And Rome.", ("call_rome", "get_weather", {"city": "Rome"}))
    return responses_turn(ANSWER)


@pytest.mark.parametrize(
    ("wire", "model", "streamed"),
    [("chat", chat_model, True), ("chat", chat_model, False), (None, responses_model, True)],
    ids=["chat-streamed", "chat-whole", "responses-streamed"],
)
def test_the_agents_sdk_runs_a_leaked_and_a_native_call_through_the_gateway(
    wire: str | None, model: Any, streamed: bool
) -> None:
    ran: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    agents.set_tracing_disabled(True)
    upstream = ReplayUpstream(model)
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",))
    with (
        ServerThread(upstream) as server,
        ServerThread(create_app(ProxyConfig(server.url, options, upstream_wire=wire))) as proxy,
    ):
        client = openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        agent = agents.Agent(
            name="weather",
            instructions="Answer with the weather.",
            tools=[get_weather],
            model=agents.OpenAIResponsesModel(model="m", openai_client=client),
        )

        async def run() -> Any:
            if not streamed:
                return await agents.Runner.run(agent, "Weather in Paris and Rome?")
            result = agents.Runner.run_streamed(agent, "Weather in Paris and Rome?")
            async for _ in result.stream_events():
                pass
            return result

        result = asyncio.run(run())
    assert ran == ["Paris", "Rome"]
    assert result.final_output == ANSWER
    assert len(upstream.requests) == 3
