"""``--on-blocked repair N`` pins the re-ask's ``tool_choice`` to the tool whose call failed.

Through a real gateway on loopback in front of a replaying upstream of each wire: the
re-ask the upstream receives names the failed tool in that wire's own shape when exactly
one call was withheld, and leaves ``tool_choice`` as the client sent it otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.pinning import pin_failed_tool
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, whole_body
from callgate.strategies.base import ExtractedCall, ToolResult

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
PINNED = {
    "chat": {"type": "function", "function": {"name": "get_weather"}},
    "messages": {"type": "tool", "name": "get_weather"},
    "responses": {"type": "function", "name": "get_weather"},
}
"""The forced tool in each upstream wire's tool_choice shape."""


def tools(wire: str, names: tuple[str, ...] = ("get_weather", "get_time")) -> list[Any]:
    if wire == "chat":
        return [{"type": "function", "function": {"name": n, "parameters": WEATHER}} for n in names]
    if wire == "messages":
        return [{"name": n, "input_schema": WEATHER} for n in names]
    return [{"type": "function", "name": n, "parameters": WEATHER} for n in names]


def request(wire: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "tools": tools(wire), "stream": False, **extra}
    turn = [{"role": "user", "content": "weather in Paris?"}]
    if wire == "responses":
        return {**body, "input": turn}
    if wire == "messages":
        body["max_tokens"] = 512
    return {**body, "messages": turn}


def answer(wire: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A whole response of ``wire`` carrying ``calls`` (name, arguments)."""
    if wire == "chat":
        entries = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": c, "arguments": json.dumps(a)},
            }
            for n, (c, a) in enumerate(calls)
        ]
        message = {"role": "assistant", "content": None, "tool_calls": entries}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [choice]}
    if wire == "messages":
        blocks = [
            {"type": "tool_use", "id": f"toolu_{n}", "name": c, "input": a}
            for n, (c, a) in enumerate(calls)
        ]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": blocks,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 9},
        }
    items = [
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": c,
            "arguments": json.dumps(a),
            "status": "completed",
        }
        for n, (c, a) in enumerate(calls)
    ]
    return {"id": "resp_1", "object": "response", "status": "completed", "output": items}


class Upstream:
    """Answers in turn from ``answers`` (the last one repeats); records every request."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []
        self.app = ReplayUpstream(self.pick)

    def pick(self, path: str, body: dict[str, Any]) -> Script:
        n = min(len(self.app.requests) - 1, len(self.answers) - 1)
        return Script(whole_body(self.answers[n]), content_type="application/json")

    def sent(self) -> list[dict[str, Any]]:
        return [body for _, body, _ in self.app.requests]


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Upstream, str]]:
    replaying = Upstream()
    with ServerThread(replaying.app) as server:
        yield replaying, server.url


BAD = ("get_weather", {"town": "Paris"})
GOOD = ("get_weather", {"city": "Paris"})
PAIRS = [("chat", "chat"), ("messages", "messages"), ("responses", "responses")]
PAIRS += [("chat", "messages"), ("messages", "responses"), ("responses", "chat")]


def exchange(
    upstream: tuple[Upstream, str],
    client: str,
    wire: str,
    answers: list[list[tuple[str, dict[str, Any]]]],
    **extra: Any,
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    replaying, url = upstream
    replaying.app.requests.clear()
    replaying.answers = [answer(wire, calls) for calls in answers]
    options = Options(on_blocked="repair", repairs=1)
    same = None if client == wire else wire
    with ServerThread(
        create_app(ProxyConfig(upstream=url, options=options, upstream_wire=same))
    ) as proxy:
        reply = httpx.post(proxy.url + PATHS[client], json=request(client, **extra), timeout=30)
    return reply, replaying.sent()


@pytest.mark.parametrize(("client", "wire"), PAIRS)
def test_the_re_ask_forces_the_one_failed_tool_in_the_upstream_wire_shape(
    upstream: tuple[Upstream, str], client: str, wire: str
) -> None:
    reply, sent = exchange(upstream, client, wire, [[BAD], [GOOD]])
    assert reply.status_code == 200
    assert len(sent) == 2
    assert "tool_choice" not in sent[0]
    assert sent[1]["tool_choice"] == PINNED[wire]
    assert "Paris" in reply.text and "town" not in reply.text


@pytest.mark.parametrize(("client", "wire"), PAIRS[:3])
def test_two_failed_calls_leave_the_tool_choice_as_the_client_sent_it(
    upstream: tuple[Upstream, str], client: str, wire: str
) -> None:
    two = [BAD, ("get_time", {"zone": "CET"})]
    _, sent = exchange(upstream, client, wire, [two, [GOOD]])
    assert len(sent) == 2 and "tool_choice" not in sent[1]
    choice = {"chat": "required", "messages": {"type": "any"}, "responses": "required"}[client]
    _, sent = exchange(upstream, client, wire, [two, [GOOD]], tool_choice=choice)
    assert len(sent) == 2 and sent[1]["tool_choice"] == choice


@pytest.mark.parametrize("wire", ["openai", "anthropic", "openai-responses"])
def test_a_call_to_an_undeclared_tool_is_not_pinned(wire: str) -> None:
    """The upstream would refuse a forced tool its request does not declare."""
    client = {"openai": "chat", "anthropic": "messages", "openai-responses": "responses"}[wire]
    asked = request(client)
    failed = [ToolResult(ExtractedCall("c1", "get_news", {}, 0), "bad", refused=True)]
    assert pin_failed_tool(asked, wire, failed) is asked
    declared = [ToolResult(ExtractedCall("c1", "get_time", {}, 0), "bad", refused=True)]
    assert pin_failed_tool(asked, wire, declared)["tool_choice"]["type"] in ("function", "tool")
    assert pin_failed_tool(asked, "ollama", declared) is asked  # a wire without the field


def test_an_anthropic_tool_choice_keeps_its_parallel_flag(upstream: tuple[Upstream, str]) -> None:
    given = {"type": "auto", "disable_parallel_tool_use": True}
    _, sent = exchange(upstream, "messages", "messages", [[BAD], [GOOD]], tool_choice=given)
    pinned = {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    assert sent[1]["tool_choice"] == pinned


def test_anthropic_thinking_is_never_pinned(upstream: tuple[Upstream, str]) -> None:
    """Anthropic refuses a forced tool while extended thinking is on."""
    thinking = {"type": "enabled", "budget_tokens": 1024}
    _, sent = exchange(upstream, "messages", "messages", [[BAD], [GOOD]], thinking=thinking)
    assert len(sent) == 2 and "tool_choice" not in sent[1]
