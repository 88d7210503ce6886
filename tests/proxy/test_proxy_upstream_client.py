"""The upstream client: the lean HTTP/1.1 one for plain http, httpx for the rest, alike.

Every behaviour runs both ways (``http1`` on and off) against real loopback servers: the
body streamed as it comes, the client's headers forwarded, kept-alive connections reused,
no cookie kept, a refused, silent, slow, cut or malformed upstream answered in the client
wire's error shape. https and a proxy from the environment stay with httpx.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.forwarding import relayed
from callgate.proxy.http1 import Headers, Http1Pool, direct
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from proxy_cases import chat_chunk as chat
from proxy_cases import closed_url

REQUEST: dict[str, Any] = {
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
}
TURN = [chat({"role": "assistant", "content": "Hello there."}), chat({}, "stop")]
BOTH = pytest.mark.parametrize("http1", [True, False], ids=["http1", "httpx"])

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """A raw HTTP server on a loopback port in its own thread: ``handler`` per connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.url = ""

    @contextmanager
    def running(self) -> Iterator[RawServer]:
        """Serve until the block ends."""
        ready = threading.Event()
        holder: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

        async def serve() -> None:
            stop = asyncio.Event()

            async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                self.connections += 1
                try:
                    await self.handler(reader, writer)
                except (ConnectionError, asyncio.IncompleteReadError):
                    pass
                finally:
                    writer.close()

            server = await asyncio.start_server(accept, "127.0.0.1", 0)
            self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            holder.append((asyncio.get_running_loop(), stop))
            ready.set()
            async with server:
                await stop.wait()

        thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
        thread.start()
        assert ready.wait(20)
        try:
            yield self
        finally:
            loop, stop = holder[0]
            loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=10)


async def _request(reader: asyncio.StreamReader) -> bytes:
    """One request's head (its body read and dropped)."""
    head = await reader.readuntil(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))
    return head


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"


@contextmanager
def _proxy(upstream: str, http1: bool, **options: Any) -> Iterator[str]:
    with ServerThread(create_app(ProxyConfig(upstream, http1=http1, **options))) as proxy:
        yield proxy.url + "/v1/chat/completions"


def _text(body: bytes) -> str:
    """The text a streamed Chat Completions answer carries."""
    out = []
    for event in body.split(b"\n\n"):
        if event.startswith(b"data: {"):
            for choice in json.loads(event[6:]).get("choices", []):
                out.append(choice.get("delta", {}).get("content") or "")
    return "".join(out)


def test_plain_http_goes_direct_and_the_rest_through_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert direct("http://127.0.0.1:8000") and direct("http://models.internal/v1")
    assert not direct("https://api.openai.com/v1")
    proxy = create_app(ProxyConfig("http://127.0.0.1:1"))
    proxy.start()
    assert isinstance(proxy.http1, Http1Pool)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    assert not direct("http://127.0.0.1:8000")
    for upstream in ("https://api.openai.com", "http://127.0.0.1:1"):
        proxy = create_app(ProxyConfig(upstream))
        proxy.start()
        assert proxy.http1 is None and proxy.client is not None


def test_a_proxy_from_the_environment_is_still_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY set: the request goes to that proxy (absolute URL), as httpx sent it."""
    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    relay = ReplayUpstream(lambda path, body: Script(sse_body(TURN)))
    with ServerThread(relay) as forward:
        monkeypatch.setenv("HTTP_PROXY", forward.url)
        with _proxy(closed_url(), http1=True) as url:
            reply = httpx.post(url, json=REQUEST, timeout=30)
    assert reply.status_code == 200 and _text(reply.content) == "Hello there."
    assert [path for path, _, _ in relay.requests] == ["/v1/chat/completions"]


@BOTH
def test_the_stream_comes_through_with_the_clients_headers(http1: bool) -> None:
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(TURN), write_sizes=(7,)))
    with ServerThread(upstream) as up, _proxy(up.url, http1) as url:
        headers = {"authorization": "Bearer sk-1", "x-trace": "t1", "accept-encoding": "gzip"}
        with httpx.stream("POST", url, json=REQUEST, headers=headers, timeout=30) as reply:
            body = b"".join(reply.iter_raw())
    assert reply.status_code == 200 and _text(body) == "Hello there."
    assert body.endswith(b"data: [DONE]\n\n")
    _, sent, got = upstream.requests[0]
    assert sent == REQUEST and got["authorization"] == "Bearer sk-1" and got["x-trace"] == "t1"
    assert got["host"] == up.url.removeprefix("http://")


@BOTH
@pytest.mark.parametrize(("answers", "connections"), [(5, 1), (1, 3)])
def test_kept_alive_connections_are_reused_while_the_upstream_keeps_them(
    http1: bool, answers: int, connections: int
) -> None:
    """An upstream that closes a kept-alive connection after ``answers`` answers: the next
    request opens a fresh one and is answered."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(answers):
            await _request(reader)
            writer.write(SSE_HEAD + b"\r\n" + _chunked(sse_body(TURN)))
            await writer.drain()

    with RawServer(answer).running() as up, _proxy(up.url, http1) as url:
        for _ in range(3):
            assert _text(httpx.post(url, json=REQUEST, timeout=30).content) == "Hello there."
    assert up.connections == connections


@BOTH
def test_a_gzipped_answer_is_read_decoded(http1: bool) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        head = SSE_HEAD + b"content-encoding: gzip\r\n\r\n"
        writer.write(head + _chunked(gzip.compress(sse_body(TURN))))
        await writer.drain()

    with RawServer(answer).running() as up, _proxy(up.url, http1) as url:
        reply = httpx.post(url, json=REQUEST, timeout=30)
    assert reply.status_code == 200 and _text(reply.content) == "Hello there."


@BOTH
def test_a_cookie_the_upstream_sets_is_not_kept(http1: bool) -> None:
    answer = Script(sse_body(TURN), headers=(("set-cookie", "lb=user-a; Path=/"),))
    upstream = ReplayUpstream(lambda path, body: answer)
    with ServerThread(upstream) as up, _proxy(up.url, http1) as url:
        first = httpx.post(url, json=REQUEST, timeout=30)
        httpx.post(url, json=REQUEST, timeout=30)
    assert "lb=user-a" in first.headers["set-cookie"]
    assert [h.get("cookie") for _, _, h in upstream.requests] == [None, None]


@BOTH
def test_a_refusing_upstream_is_a_502_in_the_wires_shape(http1: bool) -> None:
    with _proxy(closed_url(), http1, connect_timeout=2) as url:
        for stream in (True, False):
            reply = httpx.post(url, json={**REQUEST, "stream": stream}, timeout=30)
            assert reply.status_code == 502
            error = reply.json()["error"]
            assert error["code"] == "upstream_unreachable" and "ConnectError" in error["message"]
        messages = url.replace("/chat/completions", "/messages")
        reply = httpx.post(messages, json={**REQUEST, "max_tokens": 9}, timeout=30)
        assert reply.status_code == 502 and reply.json()["type"] == "error"


@BOTH
def test_an_answer_that_ends_with_its_connection_is_read_whole(http1: bool) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        writer.write(head + sse_body(TURN))
        await writer.drain()

    with RawServer(answer).running() as up, _proxy(up.url, http1) as url:
        for _ in range(2):
            reply = httpx.post(url, json=REQUEST, timeout=30)
            assert reply.status_code == 200 and _text(reply.content) == "Hello there."
            assert b"Error" not in reply.content  # no notice: the turn ended whole
    assert up.connections == 2


@BOTH
def test_an_upstream_silent_before_its_answer_is_a_504(http1: bool) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        await asyncio.sleep(3)

    with RawServer(answer).running() as up, _proxy(up.url, http1, read_timeout=0.4) as url:
        reply = httpx.post(url, json=REQUEST, timeout=30)
    assert reply.status_code == 504
    assert reply.json()["error"]["code"] == "upstream_timeout"


@BOTH
def test_an_upstream_silent_mid_stream_ends_the_stream_cleanly(http1: bool) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        first = sse_body(TURN[:1], done=False)
        writer.write(SSE_HEAD + b"\r\n" + b"%x\r\n%s\r\n" % (len(first), first))
        await writer.drain()
        await asyncio.sleep(3)

    with RawServer(answer).running() as up, _proxy(up.url, http1, read_timeout=0.4) as url:
        reply = httpx.post(url, json=REQUEST, timeout=30)
    assert reply.status_code == 200 and _text(reply.content).startswith("Hello there.")
    assert reply.content.endswith(b"data: [DONE]\n\n")
    assert b"ReadTimeout" in reply.content  # the notice says why the turn ended


@BOTH
def test_an_upstream_cut_mid_stream_ends_the_stream_cleanly(http1: bool) -> None:
    body = sse_body(TURN)
    cut = Script(body, cut_at=len(sse_body(TURN[:1], done=False)) + 5)
    with (
        ServerThread(ReplayUpstream(lambda path, body: cut)) as up,
        _proxy(up.url, http1) as url,
    ):
        reply = httpx.post(url, json=REQUEST, timeout=30)
    assert reply.status_code == 200 and _text(reply.content).startswith("Hello there.")
    assert reply.content.endswith(b"data: [DONE]\n\n")
    assert b"RemoteProtocolError" in reply.content


@BOTH
def test_an_upstream_error_status_is_relayed_as_it_is(http1: bool) -> None:
    error = {"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limited"}}
    busy = Script(
        json.dumps(error).encode(),
        status=429,
        content_type="application/json",
        headers=(("retry-after", "7"),),
    )
    with (
        ServerThread(ReplayUpstream(lambda path, body: busy)) as up,
        _proxy(up.url, http1) as url,
    ):
        for stream in (True, False):
            reply = httpx.post(url, json={**REQUEST, "stream": stream}, timeout=30)
            assert reply.status_code == 429 and reply.json() == error
            assert reply.headers["retry-after"] == "7"


@BOTH
def test_an_answer_that_is_not_http_is_a_502(http1: bool) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.5)

    with RawServer(answer).running() as up, _proxy(up.url, http1) as url:
        reply = httpx.post(url, json=REQUEST, timeout=30)
    assert reply.status_code == 502
    assert reply.json()["error"]["code"] == "upstream_unreachable"
    assert "RemoteProtocolError" in reply.json()["error"]["message"]


@BOTH
def test_a_client_that_leaves_closes_its_upstream_connection(http1: bool) -> None:
    closed = threading.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        first = sse_body(TURN[:1], done=False)
        writer.write(SSE_HEAD + b"\r\n" + b"%x\r\n%s\r\n" % (len(first), first))
        await writer.drain()
        if await reader.read(1) == b"":  # the proxy closed its side
            closed.set()

    with RawServer(answer).running() as up, _proxy(up.url, http1) as url:
        with httpx.stream("POST", url, json=REQUEST, timeout=30) as reply:
            assert next(reply.iter_raw())
        assert closed.wait(10), "the upstream connection stayed open"


def test_a_body_not_read_yet_stops_the_reading_not_the_memory() -> None:
    """An upstream writing faster than the client reads: the lean client buffers about 1 MB,
    then lets the upstream wait; every byte still arrives, in order."""
    body = bytes(range(256)) * (8 * 4096)  # 8 MiB

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body)
        writer.write(head + body)
        await writer.drain()

    async def read(url: str) -> tuple[int, bytes]:
        pool = Http1Pool(connect_timeout=5, read_timeout=10)
        reply = await pool.send("POST", url + "/v1/x", {}, b"{}")
        for _ in range(100):  # the upstream writes; nobody reads
            if reply._connection.paused:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        held = reply._connection.buffered
        received = await reply.aread()
        await reply.aclose()
        await pool.aclose()
        return held, received

    with RawServer(answer).running() as up:
        held, received = asyncio.run(read(up.url))
    assert 1 << 20 < held < 2 << 20
    assert received == body


_NAMES = st.sampled_from(["Content-Type", "content-type", "X-Id", "x-id", "Set-Cookie", "Via"])
_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12).map(str.strip)


@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=8), _NAMES)
def test_the_lean_headers_read_as_httpx_reads_them(
    pairs: list[tuple[str, str]], asked: str
) -> None:
    raw = [(k.encode(), v.encode()) for k, v in pairs]
    lean, reference = Headers(raw), httpx.Headers(raw)
    assert lean.multi_items() == reference.multi_items()
    assert lean.get(asked, "none") == reference.get(asked, "none")
    assert (asked in lean) == (asked in reference)
    assert relayed(lean, decoded=True) == relayed(reference, decoded=True)


def _slow_answers(gap: float) -> Handler:
    """A kept-alive upstream writing each answer's five bytes ``gap`` seconds apart."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await _request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
            for byte in b"ok ok":
                await writer.drain()
                await asyncio.sleep(gap)
                writer.write(bytes([byte]))
            await writer.drain()

    return answer


async def _ask(pool: Http1Pool, url: str) -> bytes:
    reply = await pool.send("POST", url + "/v1/x", {}, b"{}")
    try:
        return await reply.aread()
    finally:
        await reply.aclose()


def test_a_full_pool_makes_a_request_wait_for_a_connection() -> None:
    """At most ``max_connections`` open: the others wait and take the first's in turn."""

    async def run(url: str) -> list[bytes]:
        pool = Http1Pool(connect_timeout=5, read_timeout=10, max_connections=1)
        answers = await asyncio.gather(*(_ask(pool, url) for _ in range(3)))
        await pool.aclose()
        return answers

    with RawServer(_slow_answers(0.05)).running() as up:
        assert asyncio.run(run(up.url)) == [b"ok ok"] * 3
    assert up.connections == 1


def test_a_pool_busy_past_the_read_timeout_is_a_pool_timeout() -> None:
    """The one connection busy with an answer that trickles in: the next request gives up
    after the read timeout with a PoolTimeout; the first still ends, and room comes back."""

    async def run(url: str) -> tuple[bytes, bytes, str]:
        pool = Http1Pool(connect_timeout=5, read_timeout=0.4, max_connections=1)
        first = asyncio.ensure_future(_ask(pool, url))
        await asyncio.sleep(0.05)
        with pytest.raises(httpx.PoolTimeout) as raised:
            await _ask(pool, url)
        done = await first
        again = await _ask(pool, url)
        await pool.aclose()
        return done, again, str(raised.value)

    with RawServer(_slow_answers(0.15)).running() as up:
        assert asyncio.run(run(up.url)) == (
            b"ok ok",
            b"ok ok",
            "every upstream connection stayed busy",
        )
    assert up.connections == 1


def test_take_says_when_a_read_would_wait_and_gives_what_came() -> None:
    """``take()`` never waits: None while nothing came, each piece once, then ``b""``."""

    async def read(url: str) -> list[bytes | None]:
        pool = Http1Pool(connect_timeout=5, read_timeout=10)
        reply = await pool.send("POST", url + "/v1/x", {}, b"{}")
        seen: list[bytes | None] = [reply.take()]
        while (piece := reply.take()) != b"":
            if piece is None:
                await reply.wait()
            else:
                seen.append(piece)
        seen.append(reply.take())
        await reply.aclose()
        await pool.aclose()
        return seen

    with RawServer(_slow_answers(0.05)).running() as up:
        seen = asyncio.run(read(up.url))
    assert seen[0] is None  # the body's first byte comes 50 ms after the head
    assert b"".join(p for p in seen[1:] if p) == b"ok ok" and len(seen) == 7
    assert seen[-1] == b""


def test_a_wait_given_up_leaves_no_timer_once_the_reply_is_closed() -> None:
    """A read loop awaiting ``wait()`` that is cancelled, then closes the reply: the
    connection is closed and its read timeout no longer pending; a wait past the read
    timeout is a ReadTimeout."""

    async def run(url: str) -> tuple[bool, bool, str]:
        pool = Http1Pool(connect_timeout=5, read_timeout=0.2)
        reply = await pool.send("POST", url + "/v1/x", {}, b"{}")
        assert reply.take() is None
        waiting = asyncio.ensure_future(reply.wait())
        await asyncio.sleep(0.01)
        waiting.cancel()
        await reply.aclose()
        connection = reply._connection
        idle = connection.timer is None and connection.lost
        late = await pool.send("POST", url + "/v1/x", {}, b"{}")
        try:
            assert late.take() is None
            await late.wait()
            timeout = "none"
        except httpx.ReadTimeout:
            timeout = "ReadTimeout"
        await late.aclose()
        await pool.aclose()
        return idle, late._connection.lost, timeout

    with RawServer(_slow_answers(1.0)).running() as up:
        idle, closed, timeout = asyncio.run(run(up.url))
    assert idle and closed and timeout == "ReadTimeout"
