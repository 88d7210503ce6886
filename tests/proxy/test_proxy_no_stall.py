"""No Nagle stall: a one-chunk streamed request through the proxy costs about what a byte
pass-through on the same stack costs, on every event loop.

A response written in several small writes (headers, each event, the end) on a socket
without ``TCP_NODELAY`` waits for the client's delayed ACK (about 40 ms on Linux) before
its last write leaves. The proxy's listening socket is its own (``bound_socket``), so it
must set what asyncio only sets on sockets it made itself.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.serving import ServerThread, bound_socket
from nodelay import LOOPS, accepted_nodelay
from pass_through import BytePassThrough

"""The event loops a user may have: asyncio always, uvloop where it is installed."""

_EVENTS = [
    {"role": "assistant", "content": ""},
    {"content": "Hello."},
]


def _sse() -> bytes:
    """A one-chunk text turn, one HTTP chunk per event, as a model server writes it."""
    out = bytearray()
    for index, delta in enumerate([*_EVENTS, {}]):
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
        if index == len(_EVENTS):
            choice["finish_reason"] = "stop"
        chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
        event = b"data: " + json.dumps(chunk).encode() + b"\n\n"
        out += b"%x\r\n%s\r\n" % (len(event), event)
    done = b"data: [DONE]\n\n"
    out += b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done)
    return bytes(out)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A raw HTTP/1.1 model server: keep-alive, a chunked SSE answer to every POST."""
    body = _sse()
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            writer.write(body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@contextmanager
def _model_server() -> Iterator[str]:
    """The raw model server on a loopback port, in a thread with its own loop."""
    started: list[tuple[asyncio.AbstractEventLoop, asyncio.Event, int]] = []
    ready = threading.Event()

    async def serve() -> None:
        stop = asyncio.Event()
        writers: list[asyncio.StreamWriter] = []
        tasks: list[asyncio.Task[None]] = []

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writers.append(writer)
            tasks.append(asyncio.current_task())  # type: ignore[arg-type]
            await _answer(reader, writer)

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        started.append((asyncio.get_running_loop(), stop, server.sockets[0].getsockname()[1]))
        ready.set()
        async with server:
            await stop.wait()
            for writer in writers:  # the handlers read their end and return
                writer.transport.abort()
            await asyncio.gather(*tasks)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(20), "the model server did not start"
    loop, stop, port = started[0]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)


@contextmanager
def _uvicorn_own(app: Any, loop: str) -> Iterator[str]:
    """``app`` served by uvicorn on a socket it binds itself (host and port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, loop=loop, http="h11", lifespan="off", log_level="error"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the pass-through did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _one(client: httpx.Client, url: str) -> float:
    """Seconds for one streamed one-chunk request, read to its end."""
    request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    started = time.perf_counter()
    with client.stream("POST", url + "/v1/chat/completions", json=request) as reply:
        assert reply.status_code == 200
        received = b"".join(reply.iter_raw())
    assert b"Hello." in received and received.endswith(b"data: [DONE]\n\n")
    return time.perf_counter() - started


@pytest.mark.parametrize("loop", LOOPS)
def test_an_accepted_connection_has_no_nagle(loop: str) -> None:
    """Every connection the proxy's socket accepts writes its small pieces at once."""
    assert accepted_nodelay(bound_socket("127.0.0.1", 0), loop) == [1]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_one_chunk_request_costs_what_a_pass_through_costs(loop: str) -> None:
    """Interleaved, in one run: the proxy is within 2.5x a byte pass-through on httpx.

    The ratio is taken per pair of requests run back to back (the median pair), so a load
    spike from other processes lands on both sides of a pair. A stall would make it 40 ms
    against about 2 ms (20x and more); on its lean upstream client the proxy takes 0.7x to
    1.0x the pass-through's time (1.0x to 1.8x on httpx), at a load five times the cores.
    """
    with (
        _model_server() as model,
        _uvicorn_own(BytePassThrough(model), loop) as bare,
        ServerThread(create_app(ProxyConfig(upstream=model)), loop=loop) as proxy,
        httpx.Client(timeout=30) as client,
    ):
        for url in (bare, proxy.url):  # open the keep-alive connections
            _one(client, url)
        through, gated = [], []
        for _ in range(21):
            through.append(_one(client, bare))
            gated.append(_one(client, proxy.url))
    # each pair ran back to back, under the same load: the median pair's ratio
    ratio = statistics.median(g / t for g, t in zip(gated, through, strict=True))
    assert ratio < 2.5, f"proxy {statistics.median(gated) * 1e3:.1f} ms, pass-through " + (
        f"{statistics.median(through) * 1e3:.1f} ms: {ratio:.1f}x the pass-through by pairs"
    )


class _Searches:
    """A finder first on ``sys.meta_path`` that finds nothing and notes every name searched."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        """Note ``name``; another finder answers."""
        del path, target
        self.names.append(name)


def test_a_request_searches_for_no_module() -> None:
    """Once warm, a proxied request imports nothing: a module missing from the install
    would be searched for on ``sys.path`` again at every import (httpcore asks for sniffio
    several times per upstream request; the proxy extra installs it)."""
    searches = _Searches()
    with (
        _model_server() as model,
        ServerThread(create_app(ProxyConfig(upstream=model))) as proxy,
        httpx.Client(timeout=30) as client,
    ):
        _one(client, proxy.url)
        sys.meta_path.insert(0, searches)
        try:
            for _ in range(3):
                _one(client, proxy.url)
        finally:
            sys.meta_path.remove(searches)
    assert searches.names == []
