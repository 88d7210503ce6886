"""The Vercel AI SDK against ``callgate proxy`` (a real process) over loopback.

``streamText`` with one zod tool and ``stopWhen`` (tests/node_ai: ``npm ci`` there; CI runs
it), through ``@ai-sdk/openai-compatible`` with no fetch wrapper, in front of a fake
OpenAI-compatible upstream. The SDK sends each zod tool's schema as Draft-07
(``"$schema": "http://json-schema.org/draft-07/schema#"``); its tool must run. Without Node
or its ``npm ci`` the test skips, unless ``CALLGATE_REQUIRE_NODE=1`` (CI) fails it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.proxy.wires import notices
from callgate.testing.builders import WireText, anthropic_events, openai_chunks
from callgate.testing.wires.base import WireCall
from proxy_cases import QWEN_MODEL, node_for, proxy_process

NODE_AI = Path(__file__).resolve().parents[1] / "node_ai"
MODEL = "gpt-4.1"


class Model:
    """The upstream: ``first`` answers the user, a sentence answers once the tool did."""

    def __init__(self, first: list[dict[str, Any]]) -> None:
        self.first = sse_body(first)
        self.upstream = ReplayUpstream(self.pick)

    def pick(self, path: str, body: dict[str, Any]) -> Script:
        del path
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            return Script(sse_body(openai_chunks([], [], text=["It is clear ", "in Oslo."])))
        return Script(self.first)


@pytest.fixture
def native() -> Iterator[tuple[Model, str]]:
    """The proxy in front of a model that calls get_weather natively, in pieces."""
    call = WireCall("call_1", "get_weather", ('{"city": ', '"Oslo"}'))
    model = Model(openai_chunks([call], [0, 0, 0]))
    with (
        ServerThread(model.upstream) as upstream,
        proxy_process(["--upstream", upstream.url + "/v1"]) as (_, url, _first),
    ):
        yield model, url


def run_client(url: str, model: str = MODEL, api: str = "chat") -> dict[str, Any]:
    """One streamText run through the proxy at ``url``: what the SDK saw.

    ``api="responses"`` takes the SDK's default OpenAI provider (the Responses API),
    ``api="anthropic"`` its Anthropic provider (the Messages API).
    """
    program = node_for("node_ai", "ai")
    done = subprocess.run(
        [program, str(NODE_AI / "client.mjs"), url + "/v1", model, "Weather in Oslo?", api],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_ai_sdk_runs_its_draft_07_zod_tool_through_the_proxy(
    native: tuple[Model, str],
) -> None:
    model, url = native
    got = run_client(url)
    sent = model.upstream.requests[0][1]["tools"][0]["function"]["parameters"]
    assert sent["$schema"] == "http://json-schema.org/draft-07/schema#"  # what zod sends
    assert got["executed"] == [{"city": "Oslo"}], got
    assert got["finish_reasons"] == ["tool-calls", "stop"], got
    assert got["text"] == "It is clear in Oslo.", got
    assert got["errors"] == []
    assert len(model.upstream.requests) == 2


QUOTED = (
    "The model emits `<tool_call>"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    + "</tool_call>` in its output."
)
"""Prose that quotes a Qwen call in inline code (a Qwen model's own explanation)."""


def test_the_ai_sdk_shows_markup_quoted_in_inline_code_and_runs_nothing() -> None:
    model = Model(openai_chunks([], [], text=list(QUOTED)))
    with (
        ServerThread(model.upstream) as upstream,
        proxy_process(["--upstream", upstream.url + "/v1"]) as (_, url, _first),
    ):
        got = run_client(url, QWEN_MODEL)
    assert got["executed"] == [], got
    assert got["text"] == QUOTED
    assert got["finish_reasons"] == ["stop"]


def test_the_ai_sdk_reports_an_upstream_slower_than_the_timeout_as_an_error() -> None:
    late = ReplayUpstream(lambda path, body: Script(Model([]).first, delay=3.0))
    with (
        ServerThread(late) as upstream,
        proxy_process(["--upstream", upstream.url + "/v1", "--timeout", "1"]) as (_, url, _first),
    ):
        got = run_client(url)
    timed_out = notices.broken_line("ReadTimeout")
    assert got["executed"] == [] and got["finish_reasons"] == ["error"], got
    assert got["errors"] and all(timed_out in e for e in got["errors"]), got


REPEATED_KEY = openai_chunks(
    [WireCall("call_1", "get_weather", ('{"city": "Oslo", ', '"city": "Paris"}'))], [0, 0, 0]
)
"""A native call whose key comes twice: the gate refuses it, JavaScript's parse keeps Paris."""
SET_ASIDE = openai_chunks(
    [WireCall("call_n", "get_weather", ('{"city": "Oslo"}',))],
    [0, 0],
    text=[
        'Sure. <tool_call>{"name": "get_weather", ',
        '"arguments": {"city": "Paris"}}</tool_call>',
    ],
)
"""A call written in the text (Paris), then a native one (Oslo): the text call is set aside."""
EMPTY_ARGUMENTS = openai_chunks([WireCall("call_1", "get_time", ("",))], [0, 0])
"""get_time (no parameter) with an empty arguments text: no JSON, so the gate refuses it;
the SDK reads a blank text as an empty object."""


@pytest.mark.parametrize(
    ("api", "turn", "model", "runs"),
    [
        ("chat", REPEATED_KEY, MODEL, []),
        ("chat", SET_ASIDE, QWEN_MODEL, []),  # the turn is stranded: no call of it is sent
        ("responses-unstored", REPEATED_KEY, MODEL, []),
        ("responses-unstored", SET_ASIDE, QWEN_MODEL, [{"city": "Oslo"}]),
        ("anthropic", SET_ASIDE, QWEN_MODEL, []),  # stranded too: Messages keeps every block
        ("chat", EMPTY_ARGUMENTS, MODEL, []),  # its entry ends with an open brace
    ],
    ids=[
        "chat-repeated-key",
        "chat-set-aside",
        "responses-repeated-key",
        "responses-set-aside",
        "anthropic-set-aside",
        "chat-empty-arguments",
    ],
)
def test_under_stream_args_the_ai_sdk_runs_no_call_the_gate_withheld(
    api: str, turn: list[dict[str, Any]], model: str, runs: list[dict[str, Any]]
) -> None:
    """The SDK runs every call whose streamed arguments parse once its stream ends, whatever
    the turn's finish says: the brace that closes a call's arguments comes only with the
    gate's acceptance, so a withheld call's arguments never parse and it never runs."""
    upstream = Model(turn)
    flags = ["--stream-args", "--on-blocked", "notice", "--upstream-wire", "chat"]
    with (
        ServerThread(upstream.upstream) as server,
        proxy_process(["--upstream", server.url + "/v1", *flags]) as (_, url, _first),
    ):
        got = run_client(url, model, api=api)
    assert got["executed"] == runs, got
    assert "was not run" in got["text"], got


def messages_model(first: list[WireCall]) -> ReplayUpstream:
    """A Messages upstream: ``first``'s tool_use blocks, then a sentence once a tool ran."""

    def pick(path: str, body: dict[str, Any]) -> Script:
        del path
        done = any(
            isinstance(block, dict) and block.get("type") == "tool_result"
            for message in body.get("messages", [])
            for block in (
                message.get("content") if isinstance(message.get("content"), list) else []
            )
        )
        if done:
            said = WireText(("It is clear ", "in Oslo."))
            return Script(sse_body(anthropic_events([said], [0, 0, 0, 0]), named=True))
        order = [n for n, call in enumerate(first) for _ in range(2 + len(call.fragments))]
        return Script(sse_body(anthropic_events(first, order), named=True))

    return ReplayUpstream(pick)


TWICE = WireCall("toolu_1", "get_weather", ('{"city": "Oslo", ', '"city": "Paris"}'))


@pytest.mark.parametrize(
    ("calls", "runs"),
    [
        ([TWICE], []),
        ([WireCall("toolu_1", "get_weather", ('{"city": ', '"Oslo"}'))], [{"city": "Oslo"}]),
        ([WireCall("toolu_0", "get_time", ()), TWICE], []),
    ],
    ids=["repeated-key", "accepted", "no-input-beside-refused"],
)
def test_under_stream_args_the_ai_sdk_on_messages_runs_only_an_accepted_streamed_block(
    calls: list[WireCall], runs: list[dict[str, Any]]
) -> None:
    """The SDK's Anthropic provider hands a tool_use block to the tool once the block's stop
    came: each streamed block stops only after the gate's verdict, a refused one with its
    input never whole (the SDK reports it as invalid input and runs nothing). A refused
    block that got no input at all gets an open brace: the SDK runs an empty input as an
    empty object (get_time ran so, refused with the call beside it)."""
    upstream = messages_model(calls)
    flags = ["--stream-args", "--on-blocked", "notice", "--upstream-wire", "messages"]
    with (
        ServerThread(upstream) as server,
        proxy_process(["--upstream", server.url + "/v1", *flags]) as (_, url, _first),
    ):
        got = run_client(url, "claude-x", api="anthropic")
    assert got["executed"] == runs, got
    if runs:
        assert got["finish_reasons"] == ["tool-calls", "stop"], got
        assert "clear in Oslo" in got["text"], got
    else:
        assert "was not run" in got["text"], got
