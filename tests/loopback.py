"""A loopback SSE server and a recorded tool-calling turn, shared by the SDK loopback tests.

A ``ThreadingHTTPServer`` on 127.0.0.1 (an ephemeral port, a daemon thread, shut down by
:func:`serve`) answers the SDKs' streaming requests with recorded server-sent events,
written in many small writes cut at arbitrary byte positions (inside JSON strings, inside
UTF-8 sequences, between the two newlines that end an event), so the clients' own SSE
parsing and decoding is exercised. A path answers with its ``scripts`` bodies one request
at a time, in order, then with its ``responders`` answer to the request (a scripted model
that reads what it was sent) or its fixed ``routes`` body, if any. Every request to the
OpenAI and Anthropic paths must keep that provider's tool-call rules
(:mod:`provider_rules`); one that breaks them is refused with HTTP 400 and the problems,
as the real APIs refuse it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import openai

from callgate.testing.builders import Block, WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk, WireCall
from provider_rules import anthropic_problems, openai_problems

WRITE_SIZES = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3)
"""Sizes of the server's successive writes, cycled."""


# -- the loopback server -------------------------------------------------------------------


class Cut(bytes):
    """A scripted body the server stops sending after ``at`` bytes, closing the connection
    (the Content-Length promises all of it): a stream that breaks mid-turn."""

    at: int

    def __new__(cls, body: bytes, at: int) -> Cut:
        cut = super().__new__(cls, body)
        cut.at = at
        return cut


class LoopbackServer(ThreadingHTTPServer):
    """Serves recorded SSE bodies per path and remembers what the clients sent."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), SSEHandler)
        self.routes: dict[str, bytes] = {}
        """The body a path answers every request with (after its script runs out)."""
        self.scripts: dict[str, list[bytes]] = {}
        """Bodies a path answers its successive requests with, one each, in order."""
        self.responders: dict[str, Callable[[dict[str, Any]], bytes]] = {}
        """A path's answer made from the request (a model that reads what it was sent),
        once its script ran out."""
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.write_sizes: Sequence[int] = WRITE_SIZES
        """Sizes of the successive writes of a body, cycled (small: the clients' SSE
        parsing meets every split)."""
        self.rules = {"/v1/chat/completions": openai_problems, "/v1/messages": anthropic_problems}
        """The provider rules each path enforces on a request's ``messages``."""
        self.refused: list[list[str]] = []
        self.writes = 0
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def next_body(self, path: str, request: dict[str, Any]) -> bytes | None:
        """Record ``request`` and pick its answer: the script's next body, else the route's."""
        with self._lock:
            self.requests.append((path, request))
            script = self.scripts.get(path)
            if script:
                return script.pop(0)
            responder = self.responders.get(path)
            if responder is not None:
                return responder(request)
            return self.routes.get(path)


class SSEHandler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length))
        rule = self.server.rules.get(self.path)
        problems = rule(request.get("messages") or []) if rule is not None else []
        if problems:
            self.server.refused.append(problems)
            self.refuse(problems)
            return
        body = self.server.next_body(self.path, request)
        if body is None:
            self.send_error(404, f"no recording for {self.path}")
            return
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        sent = body[: body.at] if isinstance(body, Cut) else body
        for count, piece in enumerate(byte_pieces(sent, self.server.write_sizes)):
            self.wfile.write(piece)
            self.wfile.flush()
            self.server.writes += 1
            if count % 8 == 7:
                time.sleep(0.001)  # let some writes reach the client as separate reads
        if isinstance(body, Cut):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def refuse(self, problems: list[str]) -> None:
        """HTTP 400 with an error body both SDKs read (``error.message``, ``error.type``)."""
        error = {"type": "invalid_request_error", "message": "; ".join(problems)}
        data = json.dumps({"type": "error", "error": error}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""


def byte_pieces(data: bytes, sizes: Sequence[int]) -> Iterator[bytes]:
    start, turn = 0, 0
    while start < len(data):
        size = sizes[turn % len(sizes)]
        yield data[start : start + size]
        start, turn = start + size, turn + 1


@contextmanager
def serve() -> Iterator[LoopbackServer]:
    """A running loopback server, shut down (and its thread joined) on exit."""
    server = LoopbackServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert not thread.is_alive()


def openai_sse(chunks: Sequence[Chunk]) -> bytes:
    events = [f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n" for chunk in chunks]
    return ("".join(events) + "data: [DONE]\n\n").encode()


def anthropic_sse(events: Sequence[Chunk]) -> bytes:
    return "".join(
        f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
        for event in events
    ).encode()


def round_robin(lengths: Sequence[int]) -> list[int]:
    """Pieces of every item in turn: the calls' fragments interleave."""
    order: list[int] = []
    for step in range(max(lengths, default=0)):
        order += [item for item, length in enumerate(lengths) if step < length]
    return order


# -- the recorded turn ---------------------------------------------------------------------

WEATHER = {"city": "Zürich", "note": "☔ Regen — 雨 🌧️", "days": [1, 2]}
SEARCH = {"query": "café near the Louvre", "tags": ["日本語", "emoji 😀"], "limit": 3}
TEXT = "Je vérifie 🌦️ et je cherche. "
SIZES = (3, 1, 4, 1, 5, 9, 2, 6)


def two_calls(prefix: str, *, corrupt: bool = False) -> list[WireCall]:
    """Two calls with unicode arguments, one raw UTF-8, one ``\\u``-escaped.

    ``corrupt`` drops the colon after the second call's first key, as a broken model
    output would: the stream stays well formed, only that call's JSON is not.
    """
    search = json.dumps(SEARCH)
    if corrupt:
        search = search.replace('"query": ', '"query" ', 1)
    return [
        WireCall(
            f"{prefix}W7gK2pXq",
            "get_weather",
            split(json.dumps(WEATHER, ensure_ascii=False), SIZES),
        ),
        WireCall(f"{prefix}S9mB4tZr", "search", split(search, SIZES[::-1])),
    ]


def recorded_openai(calls: Sequence[WireCall], text: str = TEXT) -> list[Chunk]:
    """An OpenAI turn: ``text``, then ``calls`` with their fragments interleaved."""
    order = round_robin([1 + len(call.fragments) for call in calls])
    return openai_chunks(calls, order, text=split(text, SIZES))


def recorded_anthropic(calls: Sequence[WireCall], text: str = TEXT) -> list[Chunk]:
    """An Anthropic turn: a ``text`` block, then ``calls``, all blocks interleaved."""
    blocks: list[Block] = [WireText(split(text, SIZES)), *calls]
    events = anthropic_events(blocks, round_robin([2 + len(block.fragments) for block in blocks]))
    # A keep-alive the SDK must swallow before it reaches the buffer.
    return [*events[:3], {"type": "ping"}, *events[3:]]


# -- the SDK clients, pointed at the loopback server ---------------------------------------


def client_options(server: LoopbackServer, path: str = "") -> dict[str, Any]:
    """Options every SDK client here shares: the loopback URL, no retries, a short timeout."""
    return {
        "base_url": f"http://127.0.0.1:{server.port}{path}",
        "api_key": "test",
        "max_retries": 0,
        "timeout": 10,
    }


def openai_client(server: LoopbackServer) -> openai.OpenAI:
    http = openai.DefaultHttpxClient(trust_env=False)
    return openai.OpenAI(**client_options(server, "/v1"), http_client=http)


def anthropic_client(server: LoopbackServer) -> anthropic.Anthropic:
    http = anthropic.DefaultHttpxClient(trust_env=False)
    return anthropic.Anthropic(**client_options(server), http_client=http)


def async_openai_client(server: LoopbackServer) -> openai.AsyncOpenAI:
    http = openai.DefaultAsyncHttpxClient(trust_env=False)
    return openai.AsyncOpenAI(**client_options(server, "/v1"), http_client=http)


def async_anthropic_client(server: LoopbackServer) -> anthropic.AsyncAnthropic:
    http = anthropic.DefaultAsyncHttpxClient(trust_env=False)
    return anthropic.AsyncAnthropic(**client_options(server), http_client=http)
