"""Real Python clients through ``callgate proxy`` (a real process): quoted markup, timeouts.

One proxy (``--upstream-wire chat --timeout 1``) stands in front of a fake Chat Completions
upstream on loopback. Asked about the format, the model answers with prose that quotes its
own call in inline code, one character per chunk; asked anything marked slow, it waits
longer than the proxy's timeout before its first byte. Each client family (openai-python
sync, async and its ``.stream()`` helper, on Chat Completions and Responses;
anthropic-python; LangChain's ``ChatOpenAI`` with the tool bound; the OpenAI Agents SDK on
both of its models; Simon Willison's ``llm`` CLI with a tool) declares ``get_weather``:
the prose must reach the user whole and run nothing, and the timeout must end the turn in
an error the client raises or reports (``finish_reason: "error"`` with the notice's words,
``response.failed``, an Anthropic ``error`` event), never an empty success.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body, whole_body, whole_response
from callgate.proxy.wires import notices
from callgate.testing.builders import openai_chunks
from proxy_cases import QWEN_MODEL, WEATHER, proxy_process

QUOTED = (
    "The model emits `<tool_call>"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    + "</tool_call>` in its output."
)
"""A Qwen model's prose that quotes its own call format in inline code."""
SLOW = "slow"
"""A prompt holding this word is answered too late (after the proxy's timeout)."""
TIMED_OUT = notices.broken_line("ReadTimeout")
"""The line a client reads when the upstream did not answer in time."""
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": WEATHER["get_weather"]},
}


def _prompt(body: dict[str, Any]) -> str:
    """Every text the request carries (messages or Responses input), joined."""
    return json.dumps(body.get("messages", body.get("input", "")))


def pick(path: str, body: dict[str, Any]) -> Script:
    """The upstream's answer: the quoted prose, or (a slow prompt) nothing in time."""
    del path
    chunks = openai_chunks([], [], text=list(QUOTED), usage=True)
    for chunk in chunks:
        chunk["model"] = body.get("model", QWEN_MODEL)
    delay = 3.0 if SLOW in _prompt(body) else 0.0
    if not body.get("stream"):
        whole = {**whole_response(chunks), "usage": chunks[-1]["usage"]}
        return Script(whole_body(whole), content_type="application/json", delay=delay)
    return Script(sse_body(chunks), delay=delay, write_sizes=(4096,))


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ReplayUpstream, str]]:
    """The upstream and the proxy in front of it (its base URL, without ``/v1``)."""
    upstream = ReplayUpstream(pick)
    args = ["--upstream-wire", "chat", "--timeout", "1", "--text-formats", "tool_call_tag"]
    with (
        ServerThread(upstream) as server,
        proxy_process(["--upstream", server.url + "/v1", *args]) as (_, url, _first),
    ):
        yield upstream, url


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-loopback", max_retries=0)


def _messages(prompt: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": prompt}]


# -- openai-python ------------------------------------------------------------------------


def test_openai_python_shows_quoted_markup_whole_on_every_path(
    served: tuple[ReplayUpstream, str],
) -> None:
    _, url = served
    client = _openai(url)
    ask = {"model": QWEN_MODEL, "messages": _messages("The format?"), "tools": [TOOL]}
    whole = client.chat.completions.create(**ask).choices[0]  # type: ignore[call-overload]
    assert (whole.message.content, whole.message.tool_calls) == (QUOTED, None)
    assert whole.finish_reason == "stop"
    chunks = list(client.chat.completions.create(**ask, stream=True))  # type: ignore[call-overload]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == QUOTED
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)
    with client.chat.completions.stream(**ask) as stream:  # type: ignore[call-overload]
        for _ in stream:
            pass
        final = stream.get_final_completion().choices[0]
    assert (final.message.content, final.finish_reason) == (QUOTED, "stop")
    assert not final.message.tool_calls

    async def go() -> str:
        async_client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        parts = []
        async for chunk in await async_client.chat.completions.create(**ask, stream=True):  # type: ignore[call-overload]
            assert not (chunk.choices and chunk.choices[0].delta.tool_calls)
            parts.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        return "".join(parts)

    assert asyncio.run(go()) == QUOTED
    responses = client.responses.create(
        model=QWEN_MODEL,
        input="The format?",
        tools=[{"type": "function", "name": "get_weather", "parameters": WEATHER["get_weather"]}],
    )
    assert responses.output_text == QUOTED
    assert [item.type for item in responses.output] == ["message"]


def test_openai_python_reports_a_timed_out_upstream_as_an_error(
    served: tuple[ReplayUpstream, str],
) -> None:
    _, url = served
    client = _openai(url)
    ask = {"model": QWEN_MODEL, "messages": _messages(f"A {SLOW} one?"), "tools": [TOOL]}
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(**ask)  # type: ignore[call-overload]
    assert raised.value.status_code >= 500
    said: list[str] = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in client.chat.completions.create(**ask, stream=True):  # type: ignore[call-overload]
            said += [c.delta.content or "" for c in chunk.choices]
    assert raised.value.message == TIMED_OUT
    assert "".join(said).strip() == TIMED_OUT  # the same words in the text, before it
    with pytest.raises(openai.APIError), client.chat.completions.stream(**ask) as stream:  # type: ignore[call-overload]
        for _ in stream:
            pass

    async def go() -> None:
        async_client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        async for _ in await async_client.chat.completions.create(**ask, stream=True):  # type: ignore[call-overload]
            pass

    with pytest.raises(openai.APIError):
        asyncio.run(go())
    events = list(client.responses.create(model=QWEN_MODEL, input=f"A {SLOW} one?", stream=True))
    assert events[-1].type == "response.failed"
    assert events[-1].response.error is not None
    assert events[-1].response.error.message == TIMED_OUT


# -- anthropic-python ---------------------------------------------------------------------


def _anthropic(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-loopback", max_retries=0)


ANTHROPIC_TOOL = {"name": "get_weather", "input_schema": WEATHER["get_weather"]}


def test_anthropic_python_shows_quoted_markup_whole(served: tuple[ReplayUpstream, str]) -> None:
    _, url = served
    client = _anthropic(url)
    ask: dict[str, Any] = {
        "model": QWEN_MODEL,
        "max_tokens": 200,
        "messages": _messages("The format?"),
        "tools": [ANTHROPIC_TOOL],
    }
    whole = client.messages.create(**ask)
    assert [b.type for b in whole.content] == ["text"] and whole.stop_reason == "end_turn"
    assert whole.content[0].text == QUOTED  # type: ignore[union-attr]
    with client.messages.stream(**ask) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == QUOTED  # type: ignore[union-attr]


def test_anthropic_python_raises_on_a_timed_out_upstream(
    served: tuple[ReplayUpstream, str],
) -> None:
    _, url = served
    client = _anthropic(url)
    ask: dict[str, Any] = {
        "model": QWEN_MODEL,
        "max_tokens": 200,
        "messages": _messages(f"A {SLOW} one?"),
        "tools": [ANTHROPIC_TOOL],
    }
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(**ask)
    with pytest.raises(anthropic.APIStatusError) as raised, client.messages.stream(**ask) as stream:
        for _ in stream:
            pass
    assert TIMED_OUT in str(raised.value)


# -- LangChain ----------------------------------------------------------------------------


def test_langchain_shows_quoted_markup_whole_and_reports_a_timeout(
    served: tuple[ReplayUpstream, str],
) -> None:
    from langchain_openai import ChatOpenAI

    _, url = served
    model = ChatOpenAI(
        model=QWEN_MODEL,
        base_url=url + "/v1",
        api_key="sk-loopback",
        max_retries=0,  # type: ignore[arg-type]
    ).bind_tools([TOOL])
    said = model.invoke("The format?")
    assert (said.content, said.tool_calls) == (QUOTED, [])  # type: ignore[attr-defined]
    streamed: Any = None
    for piece in model.stream("The format?"):
        streamed = piece if streamed is None else streamed + piece
    assert (streamed.content, streamed.tool_calls) == (QUOTED, [])
    with pytest.raises(openai.APIStatusError):
        model.invoke(f"A {SLOW} one?")
    with pytest.raises(openai.APIError) as raised:
        for _ in model.stream(f"A {SLOW} one?"):
            pass
    assert raised.value.message == TIMED_OUT


# -- the OpenAI Agents SDK ----------------------------------------------------------------


def _agents_run(url: str, prompt: str, *, responses: bool, streamed: bool) -> tuple[Any, list[str]]:
    """One Agents SDK run with a ``get_weather`` function tool: its output, the tool's runs."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    ran: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "clear"

    async def go() -> Any:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-loopback", max_retries=0)
        kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
        model = kind(model=QWEN_MODEL, openai_client=client)
        agent = Agent(name="weather", instructions="Answer.", model=model, tools=[get_weather])
        if not streamed:
            return (await Runner.run(agent, prompt)).final_output
        result = Runner.run_streamed(agent, prompt)
        async for _ in result.stream_events():
            pass
        return result.final_output

    return asyncio.run(go()), ran


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_the_agents_sdk_shows_quoted_markup_whole_and_raises_on_a_timeout(
    served: tuple[ReplayUpstream, str], responses: bool, streamed: bool
) -> None:
    _, url = served
    output, ran = _agents_run(url, "The format?", responses=responses, streamed=streamed)
    assert (output, ran) == (QUOTED, [])
    with pytest.raises(Exception) as raised:
        _agents_run(url, f"A {SLOW} one?", responses=responses, streamed=streamed)
    assert isinstance(raised.value, openai.APIError) or "failed" in str(raised.value).lower()


# -- the llm CLI ----------------------------------------------------------------------------


def _llm(url: str, home: Path, prompt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``llm -m callgate PROMPT`` with a ``get_weather`` tool, the proxy as its OpenAI server."""
    program = shutil.which("llm", path=str(Path(sys.executable).parent))
    if program is None:
        pytest.skip("needs the llm CLI (pip install llm)")
    home.mkdir(exist_ok=True)
    models = (
        f"- model_id: callgate\n  model_name: {QWEN_MODEL}\n  api_base: {url}/v1\n"
        "  supports_tools: true\n"
    )
    (home / "extra-openai-models.yaml").write_text(models, encoding="utf-8")
    env = {**os.environ, "LLM_USER_PATH": str(home), "OPENAI_API_KEY": "sk-loopback"}
    tool = 'def get_weather(city: str) -> str:\n    "The weather."\n    return "clear"\n'
    command = [program, "-m", "callgate", "--functions", tool, *extra, prompt]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_the_llm_cli_prints_quoted_markup_whole_and_reports_a_timeout(
    served: tuple[ReplayUpstream, str], tmp_path: Path
) -> None:
    upstream, url = served
    home = tmp_path / "llm"
    for extra in ((), ("--no-stream",)):
        done = _llm(url, home, "The format?", *extra)
        assert done.returncode == 0, done.stderr
        assert done.stdout == QUOTED + "\n"
        sent = upstream.requests[-1][1]
        assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]
    streamed = _llm(url, home, f"A {SLOW} one?")
    assert streamed.returncode != 0 and TIMED_OUT in streamed.stderr
    whole = _llm(url, home, f"A {SLOW} one?", "--no-stream")
    assert whole.returncode != 0 and "502" in whole.stderr
