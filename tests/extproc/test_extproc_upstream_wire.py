"""``callgate ext-proc --upstream-wire chat`` inside a real Envoy: clients of other wires.

The processor replaces each gated request's body with the engine's Chat Completions
translation and its ``:path`` with ``/v1/chat/completions``; Envoy sends that to a Chat
Completions upstream, and the engine writes the answer back in the client's wire. An
anthropic client (``messages.stream``) and an OpenAI Responses client (``responses.stream``)
each get the upstream's text and call, through both response body modes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from callgate.proxy.upstream import Script, sse_body
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from envoy_front import ROUTES, Front, anthropic_turn, require_envoy, responses_turn
from proxy_cases import WEATHER

require_envoy()

CALL = WireCall("call_1", "get_weather", ('{"city": ', '"Par', 'is"}'))
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def front() -> Iterator[Front]:
    with Front(upstream_wire="chat") as running:
        running.scripts[CHAT] = Script(
            sse_body(openai_chunks([CALL], [0, 0, 0, 0], text=["Checking."]))
        )
        yield running


def _asked_chat(front: Front) -> dict[str, Any]:
    """The one request the upstream got: a Chat Completions request on its path."""
    assert len(front.upstream.requests) == 1
    path, body, headers = front.upstream.requests.pop()
    assert path == CHAT
    sent = json.dumps(body, ensure_ascii=False).encode("utf-8")
    assert int(headers["content-length"]) == len(sent)
    assert body["stream"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "Weather in Paris?"
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    return body


@pytest.mark.parametrize("route", ROUTES)
def test_an_anthropic_client_gets_the_chat_upstreams_call_and_text(
    front: Front, route: str
) -> None:
    front.upstream.requests.clear()
    kwargs = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"name": n, "input_schema": s} for n, s in WEATHER.items()],
    }
    got = anthropic_turn(front.url(route), kwargs)
    assert got == {
        "content": "Checking.",
        "calls": [("get_weather", {"city": "Paris"})],
        "finish_reason": "tool_use",
    }
    assert _asked_chat(front)["max_tokens"] == 256


@pytest.mark.parametrize("route", ROUTES)
def test_a_responses_client_gets_the_chat_upstreams_call_and_text(front: Front, route: str) -> None:
    front.upstream.requests.clear()
    kwargs = {
        "model": "gpt-4.1",
        "instructions": "Be brief.",
        "input": "Weather in Paris?",
        "tools": [
            {"type": "function", "name": n, "parameters": s, "strict": False}
            for n, s in WEATHER.items()
        ],
    }
    got = responses_turn(front.url(route), kwargs)
    assert got == {
        "content": "Checking.",
        "calls": [("get_weather", {"city": "Paris"})],
        "finish_reason": "completed",
    }
    _asked_chat(front)


def test_a_path_callgate_does_not_gate_keeps_its_path_and_body(front: Front) -> None:
    front.upstream.requests.clear()
    answer = httpx.post(front.url("duplex") + "/v1/embeddings", json={"input": "x"}, timeout=20)
    assert answer.status_code == 404
    assert [(p, b) for p, b, _ in front.upstream.requests] == [("/v1/embeddings", {"input": "x"})]


@pytest.mark.parametrize("route", ROUTES)
def test_an_upstream_error_reaches_the_client_in_its_own_wires_shape(
    front: Front, route: str
) -> None:
    answer = front.scripts[CHAT]
    limited = b'{"error": {"message": "slow down", "type": "rate_limit_exceeded"}}'
    front.scripts[CHAT] = Script(limited, status=429, content_type="application/json")
    client = anthropic.Anthropic(
        base_url=front.url(route), api_key="sk-ant-loopback", max_retries=0, timeout=20
    )
    try:
        with client, pytest.raises(anthropic.RateLimitError) as caught:
            client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=64,
                messages=[{"role": "user", "content": "go"}],
                stream=True,
            )
    finally:
        front.scripts[CHAT] = answer
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["message"] == "slow down"
