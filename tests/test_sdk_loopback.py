"""End to end: the official SDK clients stream recorded SSE over loopback into the buffer.

A ``ThreadingHTTPServer`` on 127.0.0.1 (an ephemeral port, a daemon thread, shut down at
teardown) answers the SDKs' streaming requests with recorded server-sent events, written
in many small writes cut at arbitrary byte positions (inside JSON strings, inside UTF-8
sequences, between the two newlines that end an event), so the clients' own SSE parsing
and decoding is exercised. Each typed chunk the SDK yields goes straight into
LLMStreamBuffer.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from callgate import LLMStreamBuffer
from sdk_streams import Block, Call, Chunk, TextBlock, anthropic_events, openai_chunks, split

WRITE_SIZES = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3)
"""Sizes of the server's successive writes, cycled (see ``assert_streamed`` for the cuts)."""


# -- the loopback server -------------------------------------------------------------------


class LoopbackServer(ThreadingHTTPServer):
    """Serves one recorded SSE body per path and remembers what the clients sent."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), SSEHandler)
        self.routes: dict[str, bytes] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.writes = 0

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class SSEHandler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.requests.append((self.path, json.loads(self.rfile.read(length))))
        body = self.server.routes.get(self.path)
        if body is None:
            self.send_error(404, f"no recording for {self.path}")
            return
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for count, piece in enumerate(byte_pieces(body, WRITE_SIZES)):
            self.wfile.write(piece)
            self.wfile.flush()
            self.server.writes += 1
            if count % 8 == 7:
                time.sleep(0.001)  # let some writes reach the client as separate reads

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""


def byte_pieces(data: bytes, sizes: Sequence[int]) -> Iterator[bytes]:
    start, turn = 0, 0
    while start < len(data):
        size = sizes[turn % len(sizes)]
        yield data[start : start + size]
        start, turn = start + size, turn + 1


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
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


def cuts_inside(body: bytes) -> tuple[int, int]:
    """How many write boundaries fall inside a UTF-8 sequence, and between two newlines."""
    in_utf8 = in_separator = position = 0
    for piece in byte_pieces(body, WRITE_SIZES):
        position += len(piece)
        if position < len(body):
            in_utf8 += body[position] & 0xC0 == 0x80
            in_separator += body[position - 1 : position + 1] == b"\n\n"
    return in_utf8, in_separator


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


def two_calls(prefix: str, *, corrupt: bool = False) -> list[Call]:
    """Two calls with unicode arguments, one raw UTF-8, one ``\\u``-escaped.

    ``corrupt`` drops the colon after the second call's first key, as a broken model
    output would: the stream stays well formed, only that call's JSON is not.
    """
    search = json.dumps(SEARCH)
    if corrupt:
        search = search.replace('"query": ', '"query" ', 1)
    return [
        Call(
            f"{prefix}W7gK2pXq",
            "get_weather",
            split(json.dumps(WEATHER, ensure_ascii=False), SIZES),
        ),
        Call(f"{prefix}S9mB4tZr", "search", split(search, SIZES[::-1])),
    ]


def recorded_openai(calls: Sequence[Call]) -> list[Chunk]:
    order = round_robin([1 + len(call.fragments) for call in calls])
    return openai_chunks(calls, order, text=split(TEXT, SIZES))


def recorded_anthropic(calls: Sequence[Call]) -> list[Chunk]:
    blocks: list[Block] = [TextBlock(split(TEXT, SIZES)), *calls]
    events = anthropic_events(blocks, round_robin([2 + len(block.fragments) for block in blocks]))
    # A keep-alive the SDK must swallow before it reaches the buffer.
    return [*events[:3], {"type": "ping"}, *events[3:]]


TOOLS_OPENAI: list[Any] = [
    {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object"}},
    }
    for name in ("get_weather", "search")
]
TOOLS_ANTHROPIC: list[Any] = [
    {"name": name, "input_schema": {"type": "object"}} for name in ("get_weather", "search")
]


# -- streaming through the SDK clients -----------------------------------------------------


def stream_openai(
    server: LoopbackServer, chunks: Sequence[Chunk]
) -> tuple[LLMStreamBuffer, list[Any]]:
    server.routes["/v1/chat/completions"] = openai_sse(chunks)
    buffer, received = LLMStreamBuffer(), []
    with openai.OpenAI(
        base_url=f"http://127.0.0.1:{server.port}/v1",
        api_key="test",
        max_retries=0,
        timeout=10,
        http_client=openai.DefaultHttpxClient(trust_env=False),
    ) as client:
        stream = client.chat.completions.create(
            model="gpt-4.1",
            messages=[{"role": "user", "content": "Wetter in Zürich? Et un café ?"}],
            tools=TOOLS_OPENAI,
            stream=True,
        )
        for chunk in stream:
            received.append(chunk)
            buffer.add(chunk)
    buffer.end()
    return buffer, received


def stream_anthropic(
    server: LoopbackServer, events: Sequence[Chunk]
) -> tuple[LLMStreamBuffer, list[Any]]:
    server.routes["/v1/messages"] = anthropic_sse(events)
    buffer, received = LLMStreamBuffer(), []
    with anthropic.Anthropic(
        base_url=f"http://127.0.0.1:{server.port}",
        api_key="test",
        max_retries=0,
        timeout=10,
        http_client=anthropic.DefaultHttpxClient(trust_env=False),
    ) as client:
        stream = client.messages.create(
            model="claude-loopback-test",  # no real model: nothing for the SDK to deprecate
            max_tokens=256,
            messages=[{"role": "user", "content": "Wetter in Zürich? Et un café ?"}],
            tools=TOOLS_ANTHROPIC,
            stream=True,
        )
        for event in stream:
            received.append(event)
            buffer.add(event)
    buffer.end()
    return buffer, received


def assert_streamed(server: LoopbackServer, path: str) -> None:
    """One streaming request reached the server, answered in many small writes.

    Some writes end inside a multi-byte UTF-8 character and some between the two newlines
    that close an event, so the client had to reassemble both.
    """
    assert [(p, body.get("stream")) for p, body in server.requests] == [(path, True)]
    assert server.writes > 100
    in_utf8, in_separator = cuts_inside(server.routes[path])
    assert in_utf8 > 0 and in_separator > 0


# -- the tests -----------------------------------------------------------------------------


def test_openai_client_stream_of_two_interleaved_calls_yields_the_exact_calls(
    loopback: LoopbackServer,
) -> None:
    calls = two_calls("call_")
    chunks = recorded_openai(calls)

    buffer, received = stream_openai(loopback, chunks)

    assert_streamed(loopback, "/v1/chat/completions")
    assert all(isinstance(chunk, ChatCompletionChunk) for chunk in received)
    assert [chunk.to_dict() for chunk in received] == chunks
    assert [(slot.id, slot.name, slot.arguments) for slot in buffer.slots] == [
        ("call_W7gK2pXq", "get_weather", WEATHER),
        ("call_S9mB4tZr", "search", SEARCH),
    ]
    assert buffer.executable and buffer.is_finished()
    assert buffer.findings == []
    assert buffer.as_dict() == {
        "role": "assistant",
        "content": TEXT,
        "tool_calls": [
            {
                "id": "call_W7gK2pXq",
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "arguments": json.dumps(WEATHER, ensure_ascii=False),
                },
            },
            {
                "id": "call_S9mB4tZr",
                "type": "function",
                "function": {"name": "search", "arguments": json.dumps(SEARCH)},
            },
        ],
    }


def test_anthropic_client_stream_of_two_interleaved_calls_yields_the_exact_calls(
    loopback: LoopbackServer,
) -> None:
    calls = two_calls("toolu_")
    events = recorded_anthropic(calls)

    buffer, received = stream_anthropic(loopback, events)

    assert_streamed(loopback, "/v1/messages")
    assert all(isinstance(event, anthropic.BaseModel) for event in received)
    assert [event.to_dict() for event in received] == [e for e in events if e["type"] != "ping"]
    assert [(slot.id, slot.name, slot.arguments) for slot in buffer.slots] == [
        ("toolu_W7gK2pXq", "get_weather", WEATHER),
        ("toolu_S9mB4tZr", "search", SEARCH),
    ]
    assert buffer.executable and buffer.is_finished()
    assert buffer.findings == []
    assert buffer.as_dict() == {
        "id": "msg_sdk1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": TEXT},
            {"type": "tool_use", "id": "toolu_W7gK2pXq", "name": "get_weather", "input": WEATHER},
            {"type": "tool_use", "id": "toolu_S9mB4tZr", "name": "search", "input": SEARCH},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 21, "output_tokens": 57},
    }


def test_openai_client_stream_with_a_corrupted_fragment_is_not_executable(
    loopback: LoopbackServer,
) -> None:
    buffer, _ = stream_openai(loopback, recorded_openai(two_calls("call_", corrupt=True)))

    assert_streamed(loopback, "/v1/chat/completions")
    assert buffer.is_finished()
    assert not buffer.executable
    assert buffer.turn_state == "blocked"
    assert [(f.code, f.slot) for f in buffer.findings] == [("malformed_json", 1)]
    assert buffer.slots[0].arguments == WEATHER
    assert buffer.slots[1].arguments is None


def test_anthropic_client_stream_with_a_corrupted_fragment_is_not_executable(
    loopback: LoopbackServer,
) -> None:
    buffer, _ = stream_anthropic(loopback, recorded_anthropic(two_calls("toolu_", corrupt=True)))

    assert_streamed(loopback, "/v1/messages")
    assert buffer.is_finished()
    assert not buffer.executable
    assert buffer.turn_state == "blocked"
    assert [(f.code, f.slot) for f in buffer.findings] == [("malformed_json", 2)]
    assert buffer.slots[0].arguments == WEATHER
    assert buffer.slots[1].arguments is None
