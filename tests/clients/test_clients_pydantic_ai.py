"""pydantic-ai's agent on ``CallgateModel`` over a real OpenAI client and a loopback upstream.

The wrapped model is pydantic-ai's own ``OpenAIChatModel`` whose client gives up after one
second. Prose quoting a call in inline code reaches the agent's output whole and runs
nothing; a call the model was writing into its text when ``length`` cut the stream is not
shown, the output says in one line that it was not run; an upstream slower than the
client's timeout makes the run raise, never end as an empty success. Each is checked with
the agent streaming its events and running whole.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, Iterator
from typing import Any

import openai
import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, RunContext

from callgate.integrations.pydantic_ai import CallgateModel
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import (
    ReplayUpstream,
    Script,
    sse_body,
    whole_body,
    whole_response,
)
from callgate.testing.builders import openai_chunks

QWEN = "Qwen/Qwen2.5-7B-Instruct"
QUOTED = (
    "The model emits `<tool_call>"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    + "</tool_call>` in its output."
)
"""A Qwen model's prose that quotes its own call format in inline code."""
PARTIAL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa'
"""A Qwen call the model was writing when its length limit cut the stream."""
CUT_NOTICE = (
    "\n\nA call to get_weather was not run: the answer was cut off before the call was complete."
)


def _answer(prompt: str, stream: bool) -> Script:
    """The upstream's answer to a prompt, by its first word (streamed or whole)."""
    delay = 3.0 if prompt.startswith("slow") else 0.0
    if prompt.startswith("cut"):
        chunks = openai_chunks([], [], text=["Checking. ", *PARTIAL], usage=True)
        chunks[-2]["choices"][0]["finish_reason"] = "length"
    else:
        chunks = openai_chunks([], [], text=list(QUOTED), usage=True)
    if stream:
        return Script(sse_body(chunks), delay=delay)
    whole = {**whole_response(chunks), "usage": chunks[-1]["usage"]}
    return Script(whole_body(whole), content_type="application/json", delay=delay)


def pick(path: str, body: dict[str, Any]) -> Script:
    del path
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _answer(str(users[-1]["content"]) if users else "", bool(body.get("stream")))


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with ServerThread(ReplayUpstream(pick)) as server:
        yield server.url + "/v1"


def run(base: str, prompt: str, *, streamed: bool) -> tuple[str, list[str]]:
    """An agent on ``CallgateModel`` with a ``get_weather`` tool: its output, the tool's runs."""
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    ran: list[str] = []

    async def go() -> str:
        client = openai.AsyncOpenAI(base_url=base, api_key="sk-loopback", timeout=1, max_retries=0)
        wrapped = OpenAIChatModel(QWEN, provider=OpenAIProvider(openai_client=client))
        agent: Agent[None, str] = Agent(CallgateModel(wrapped), retries=0)

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """The weather in a city."""
            ran.append(city)
            return "clear"

        async def handler(_: RunContext[None], stream: AsyncIterable[Any]) -> None:
            async for _event in stream:
                pass

        result = await agent.run(prompt, event_stream_handler=handler if streamed else None)
        return result.output

    return asyncio.run(go()), ran


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
def test_quoted_markup_is_the_output_whole_and_runs_nothing(base_url: str, streamed: bool) -> None:
    assert run(base_url, "The format?", streamed=streamed) == (QUOTED, [])


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
def test_a_call_cut_in_the_text_is_a_notice_not_markup(base_url: str, streamed: bool) -> None:
    assert run(base_url, "cut one", streamed=streamed) == ("Checking. " + CUT_NOTICE, [])


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
def test_an_upstream_slower_than_the_timeout_raises(base_url: str, streamed: bool) -> None:
    with pytest.raises(Exception) as raised:
        run(base_url, "slow one", streamed=streamed)
    assert (
        "timed out" in str(raised.value).lower() or "timeout" in type(raised.value).__name__.lower()
    )
