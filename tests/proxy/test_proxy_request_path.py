"""A streamed request's own work: what the proxy does once per request, and only when needed.

The turn's buffer is made while the upstream is asked (the lean client calls back once the
request is written); the watcher for a client that leaves starts when the pump is first
about to wait for the upstream (a one-chunk answer already in needs none); and the end of
an answer the upstream sent whole goes out in one write with the body's end. The bytes a
client receives are the same either way.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import Any

import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Engine, Options
from callgate.proxy.http1 import Http1Pool
from callgate.proxy.outflow import Outlet, stream_out
from callgate.proxy.upstream import sse_body
from proxy_cases import WEATHER, openai_tools
from proxy_cases import chat_chunk as chat
from test_proxy_shaped_frames import count_parses
from test_proxy_upstream_client import SSE_HEAD, RawServer, _chunked, _request

START = {"type": "http.response.start", "status": 200, "headers": []}
TURN = [chat({"role": "assistant", "content": ""}), chat({"content": "Hi."}), chat({}, "stop")]
BODY = sse_body(TURN, done=True)
REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "1"}]}


async def _whole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Every request answered by the one-chunk turn, head and whole body in one write."""
    while True:
        await _request(reader)
        writer.write(SSE_HEAD + b"\r\n" + _chunked(BODY))
        await writer.drain()


async def _asked(app: Any, body: bytes) -> tuple[list[dict[str, Any]], int]:
    """One request through the ASGI app: what it sent, and how often it called ``receive``."""
    sent: list[dict[str, Any]] = []
    received = [0]
    gone = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, Any]:
        received[0] += 1
        if received[0] == 1:
            return {"type": "http.request", "body": body, "more_body": False}
        await gone
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }
    await app(scope, receive, send)
    return sent, received[0]


def test_an_answer_sent_whole_goes_out_in_one_write_with_the_end_and_no_watcher() -> None:
    async def main(url: str) -> list[tuple[list[dict[str, Any]], int]]:
        app = create_app(ProxyConfig(url))
        app.start()
        try:
            return [await _asked(app, json.dumps(REQUEST).encode()) for _ in range(3)]
        finally:
            await app.stop()

    with RawServer(_whole).running() as up:
        played = asyncio.run(main(up.url))
        assert up.connections == 1  # each answer read to its end: the connection kept
    for sent, received in played:
        assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
        assert sent[1]["more_body"] is False
        body = sent[1]["body"]
        assert body.startswith(BODY.split(b"\n\n")[0] + b"\n\n")  # the upstream's own bytes
        assert body.endswith(b"data: [DONE]\n\n") and body.count(b"[DONE]") == 1
        assert received == 1  # the body only: nothing waited, so no watcher ran


def test_a_lazy_pump_gets_no_watcher_until_it_is_about_to_wait() -> None:
    async def main() -> tuple[int, list[str]]:
        received = [0]
        leaves = asyncio.Event()
        seen: list[str] = []

        async def receive() -> dict[str, Any]:
            received[0] += 1
            await leaves.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            pass

        async def quick(out: Outlet) -> bytes:
            await out(b"a")
            return b"b"

        await stream_out(receive, send, START, quick, lazy=True)
        quiet = received[0]

        async def waits(out: Outlet) -> None:
            await out(b"a")
            out.watch()
            leaves.set()
            try:
                await asyncio.sleep(30)
            finally:
                seen.append("cancelled")

        await asyncio.wait_for(stream_out(receive, send, START, waits, lazy=True), 10)
        return quiet, seen

    quiet, seen = asyncio.run(main())
    assert quiet == 0
    assert seen == ["cancelled"]


def test_the_lean_client_calls_back_once_the_request_is_written() -> None:
    """The upstream answers only after the callback ran: it runs while the upstream answers."""
    called = threading.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        while not called.is_set():
            await asyncio.sleep(0.01)
        writer.write(SSE_HEAD + b"\r\n" + _chunked(BODY))
        await writer.drain()

    async def main(url: str) -> tuple[int, bytes]:
        pool = Http1Pool(connect_timeout=5, read_timeout=10)
        calls = [0]

        def sent() -> None:
            calls[0] += 1
            called.set()

        try:
            reply = await pool.send("POST", url + "/v1/chat/completions", {}, b"{}", sent=sent)
            return calls[0], await reply.aread()
        finally:
            await pool.aclose()

    with RawServer(answer).running() as up:
        calls, body = asyncio.run(main(up.url))
    assert calls == 1
    assert body == BODY


@pytest.mark.parametrize("upstream", ["chat", "messages"])
def test_a_turn_prepared_later_plays_as_one_prepared_at_once(
    upstream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_proxy_wire_matrix import _qwen, body

    monkeypatch.setattr("callgate.proxy.core.fresh_id", lambda prefix="call_": prefix + "1")
    request = {**REQUEST, "model": "Qwen/Qwen2.5-7B-Instruct", "tools": openai_tools(WEATHER)}
    data = body(upstream, _qwen(upstream))
    played = []
    for prepared in (True, False):
        turn = Engine(request, Options(), upstream=upstream, prepared=prepared)
        if not prepared:
            assert not hasattr(turn, "buffer")
            turn.prepare()
            made = turn.buffer
            turn.prepare()
            assert turn.buffer is made  # made once
        out = turn.play_bytes(data) + turn.close_bytes()
        out += b"".join(turn.encode(c) for c in turn.finish())
        audit = turn.audit()
        del audit["cpu_us"]
        played.append((out, audit))
    assert played[0] == played[1]
    assert played[0][1]["calls"]  # the stream's leaked call, converted


@pytest.mark.parametrize("client", ["chat", "messages"])
def test_a_turn_of_one_text_chunk_learns_no_shape(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shape is learned from a turn's second plain text frame: no probes for one."""
    parsed = count_parses(monkeypatch)
    turn = Engine(REQUEST, Options(), client=client, upstream="chat")
    turn.play_bytes(BODY)
    assert turn._shape is None
    assert len(parsed) == 3  # the role, the text and the finish chunks; [DONE] is not JSON


def test_a_request_leaves_nothing_for_the_garbage_collector() -> None:
    """The turn, its reader and writer, its buffer: freed when the request ends."""
    import gc

    async def main(url: str) -> list[str]:
        app = create_app(ProxyConfig(url))
        app.start()
        try:
            await _asked(app, json.dumps(REQUEST).encode())
            gc.collect()
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                for _ in range(3):
                    await _asked(app, json.dumps(REQUEST).encode())
                gc.collect()
                return [type(o).__name__ for o in gc.garbage]
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
        finally:
            await app.stop()

    with RawServer(_whole).running() as up:
        left = asyncio.run(main(up.url))
    assert not {"GatedTurn", "ChatWriter", "ChatReader", "LLMStreamBuffer"} & set(left)


def _conversation() -> dict[str, Any]:
    """A Chat request as agents send them: a system prompt, calls answered, tools."""
    messages: list[Any] = [{"role": "system", "content": "Be brief."}]
    for n in range(4):
        messages.append({"role": "user", "content": f"step {n}"})
        call = {"id": f"c{n}", "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "8 C"})
    return {**REQUEST, "messages": messages, "tools": openai_tools(WEATHER)}


def test_a_request_that_needs_no_rewrite_is_forwarded_as_it_came() -> None:
    """Its messages and tools are the client's own objects, not copies made per request."""
    from callgate.proxy.normalize import normalize

    body = _conversation()
    kept = copy.deepcopy(body)
    out, rewrites = normalize("openai", body)
    assert rewrites == []
    assert out == body == kept
    assert all(a is b for a, b in zip(out["messages"], body["messages"], strict=True))
    assert all(a is b for a, b in zip(out["tools"], body["tools"], strict=True))


def test_a_rewritten_message_is_a_copy_and_the_body_stays_as_it_was() -> None:
    from callgate.proxy.normalize import normalize

    body = _conversation()
    body["messages"][0]["role"] = "developer"
    body["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{broken"
    body["messages"][5]["tool_calls"][0]["id"] = "c0"  # a reused id: renamed, its result too
    body["messages"][6]["tool_call_id"] = "c0"
    kept = copy.deepcopy(body)
    out, rewrites = normalize("openai", body)
    assert body == kept
    assert {r.code for r in rewrites} == {"role_renamed", "arguments_repaired", "id_renamed"}
    assert out["messages"][0] == {"role": "system", "content": "Be brief."}
    assert out["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"
    renamed = out["messages"][5]["tool_calls"][0]["id"]
    assert renamed != "c0" and out["messages"][6]["tool_call_id"] == renamed
    assert out["messages"][1] is body["messages"][1]  # untouched: shared


def test_a_requests_driver_is_found_by_its_tools_without_formatting_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Equal tools find one driver; tools that differ (a number's type, NaN and null, key
    order) find their own; a value MessagePack cannot carry is keyed by ``repr``."""
    from callgate.proxy import core

    formatted: list[object] = []

    def counted(value: object) -> str:
        formatted.append(value)
        return builtin_repr(value)

    builtin_repr = repr
    monkeypatch.setattr(core, "repr", counted, raising=False)
    options = Options()

    def tools(**schema: Any) -> dict[str, Any]:
        return {**REQUEST, "tools": openai_tools({"t": {"type": "object", **schema}})}

    first = core.driver_for(tools(default=1), options)
    assert core.driver_for(copy.deepcopy(tools(default=1)), options) is first
    others = [tools(default=1.0), tools(default=True), tools(default=None)]
    others += [tools(default=float("nan")), tools(default="1")]
    drivers = [core.driver_for(other, options) for other in others]
    assert len({id(d) for d in [first, *drivers]}) == 6
    assert formatted == []
    big = core.driver_for(tools(default=2**70), options)
    assert big is core.driver_for(tools(default=2**70), options)
    assert len(formatted) == 2


async def _paced(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Every request answered by the one-chunk turn, each event in a write of its own."""
    while True:
        await _request(reader)
        writer.write(SSE_HEAD + b"\r\n")
        for event in BODY.split(b"\n\n")[:-1]:
            await writer.drain()
            await asyncio.sleep(0.02)
            writer.write(b"%x\r\n%s\n\n\r\n" % (len(event) + 2, event))
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def test_a_write_to_the_client_that_fails_is_not_an_engine_defect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The client is gone mid-stream (its write fails): no error event, nothing logged."""

    async def main(url: str) -> list[dict[str, Any]]:
        app = create_app(ProxyConfig(url))
        app.start()
        sent: list[dict[str, Any]] = []
        gone = asyncio.get_running_loop().create_future()

        async def receive() -> dict[str, Any]:
            if not sent:
                return {"type": "http.request", "body": json.dumps(REQUEST).encode()}
            await gone
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(dict(message))
            if message.get("more_body") and b'"Hi."' in message["body"]:
                raise RuntimeError("the client's transport is closed")

        scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions"}
        try:
            with pytest.raises(RuntimeError, match="transport is closed"):
                await app({**scope, "query_string": b"", "headers": []}, receive, send)
        finally:
            await app.stop()
        return sent

    with RawServer(_paced).running() as up:
        sent = asyncio.run(main(up.url))
    assert b'"Hi."' in sent[-1]["body"]  # the last write tried: no error event after it
    assert "engine failed" not in caplog.text
