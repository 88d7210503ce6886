"""What the proxy sends upstream for a gated request, and what it counts per request.

The body goes as JSON, told as JSON when the client said nothing of its type and as the
client said otherwise; the client's own headers go with it, the connection's do not; a
request whose client left before its body ended sends nothing upstream. The metrics of many
requests add up per label, as each request counts them.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from typing import Any

import anyio
import httpx
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.outflow import stream_out
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from proxy_cases import WEATHER, openai_tools
from proxy_cases import chat_chunk as chat

REQUEST: dict[str, Any] = {
    "model": "m",
    "messages": [{"role": "user", "content": "h\u00e9llo \u2603"}],
    "stream": True,
    "tools": openai_tools(WEATHER),
    "temperature": 0.25,
    "seed": 2**40,
}
TURN = [chat({"role": "assistant", "content": "Hi."}), chat({}, "stop")]


def test_the_upstream_gets_the_body_as_json_with_the_clients_headers() -> None:
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(TURN)))
    with ServerThread(upstream) as up, ServerThread(create_app(ProxyConfig(up.url))) as proxy:
        url = proxy.url + "/v1/chat/completions"
        raw = httpx.Request("POST", url, json=REQUEST).content
        untyped = {"x-trace": "7", "keep-alive": "timeout=5"}
        typed = {"content-type": "application/json; charset=utf-8"}
        for headers in (untyped, typed):
            answer = httpx.post(url, content=raw, headers=headers, timeout=30)
            assert answer.status_code == 200 and "Hi." in answer.text
    (path, first, sent), (_, second, sent_typed) = upstream.requests
    assert path == "/v1/chat/completions"
    assert first == second == REQUEST  # floats, large integers and non-ASCII text as sent
    assert sent["content-type"] == "application/json"
    assert sent_typed["content-type"] == "application/json; charset=utf-8"
    assert sent["x-trace"] == "7"
    assert "keep-alive" not in sent
    assert int(sent["content-length"]) == len(httpx.Request("POST", url, json=first).content)


def test_a_client_gone_before_its_body_ended_sends_nothing_upstream() -> None:
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(TURN)))
    with ServerThread(upstream) as up, ServerThread(create_app(ProxyConfig(up.url))) as proxy:
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                b"content-type: application/json\r\ncontent-length: 500\r\n\r\n"
                b'{"model": "m", "messages": ['
            )
        time.sleep(0.3)
        answer = httpx.post(proxy.url + "/v1/chat/completions", json=REQUEST, timeout=30)
        assert answer.status_code == 200
    assert [body for _, body, _ in upstream.requests] == [REQUEST]


def test_the_counts_of_many_requests_add_up_per_label() -> None:
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(TURN)))
    with ServerThread(upstream) as up, ServerThread(create_app(ProxyConfig(up.url))) as proxy:
        for _ in range(3):
            httpx.post(proxy.url + "/v1/chat/completions", json=REQUEST, timeout=30)
        developer = {**REQUEST, "messages": [{"role": "developer", "content": "be brief"}]}
        for _ in range(2):
            httpx.post(proxy.url + "/v1/chat/completions", json=developer, timeout=30)
        text = httpx.get(proxy.url + "/metrics", timeout=10).text
    found = dict(re.findall(r"^(callgate_proxy_\S+) (\S+)$", text, re.MULTILINE))
    assert float(found['callgate_proxy_turns_total{status="not_applicable",wire="openai"}']) == 5
    assert float(found['callgate_proxy_rewrites_total{code="role_renamed"}']) == 2
    assert float(found["callgate_proxy_added_seconds_count"]) == 5


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_response_is_sent_whole_or_cancelled_when_its_client_leaves(backend: str) -> None:
    """On asyncio the listener is a plain task, on trio a task group: the same either way.

    A pump that ends sends the start, its pieces and the end; a client that leaves while
    the pump waits (a silent upstream) cancels it, and nothing is sent after.
    """

    async def run(leave: bool) -> tuple[list[Any], bool]:
        sent: list[Any] = []
        finished = []

        async def receive() -> dict[str, Any]:
            await anyio.sleep(0.05 if leave else 30)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message.get("body", message["type"]))

        async def pump(emit: Any) -> None:
            await emit(b"a")
            if leave:
                await anyio.sleep(30)
            await emit(b"b")
            finished.append(True)

        start = {"type": "http.response.start", "status": 200, "headers": []}
        with anyio.fail_after(10):
            await stream_out(receive, send, start, pump)
        return sent, bool(finished)

    assert anyio.run(run, False, backend=backend) == (
        ["http.response.start", b"a", b"b", b""],
        True,
    )
    assert anyio.run(run, True, backend=backend) == (["http.response.start", b"a"], False)


def test_a_cancellation_from_outside_is_not_taken_for_a_client_leaving() -> None:
    """The server cancelling the request (a shutdown) cancels it: no end is sent."""

    async def run() -> list[Any]:
        sent: list[Any] = []

        async def receive() -> dict[str, Any]:
            await asyncio.sleep(30)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message.get("body", message["type"]))

        async def pump(emit: Any) -> None:
            await emit(b"a")
            await asyncio.sleep(30)

        start = {"type": "http.response.start", "status": 200, "headers": []}
        task = asyncio.ensure_future(stream_out(receive, send, start, pump))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return sent

    assert asyncio.run(run()) == ["http.response.start", b"a"]


def test_a_cookie_an_upstream_sets_never_goes_with_another_request() -> None:
    """The one upstream client serves every user: it keeps no cookie; a client's own goes."""
    answer = Script(sse_body(TURN), headers=(("set-cookie", "__cf_bm=user-a; Path=/"),))
    upstream = ReplayUpstream(lambda path, body: answer)
    with ServerThread(upstream) as up, ServerThread(create_app(ProxyConfig(up.url))) as proxy:
        url = proxy.url + "/v1/chat/completions"
        first = httpx.post(url, json=REQUEST, timeout=30)
        assert "__cf_bm=user-a" in first.headers["set-cookie"]  # relayed to its own client
        httpx.post(url, json=REQUEST, timeout=30)
        httpx.post(url, json=REQUEST, headers={"cookie": "mine=1"}, timeout=30)
    sent = [headers for _, _, headers in upstream.requests]
    assert [h.get("cookie") for h in sent] == [None, None, "mine=1"]
