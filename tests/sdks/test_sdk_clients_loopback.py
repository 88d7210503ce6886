"""End to end: the official SDK clients stream recorded SSE over loopback into the buffer.

The server (:mod:`loopback`) answers the SDKs' streaming requests with recorded
server-sent events in many small writes cut at arbitrary byte positions, so the clients'
own SSE parsing and decoding is exercised. Each typed chunk the SDK yields goes straight
into LLMStreamBuffer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
import pytest
from openai.types.chat import ChatCompletionChunk

from callgate import LLMStreamBuffer
from callgate.testing.wires import Chunk
from loopback import (
    SEARCH,
    TEXT,
    WEATHER,
    WRITE_SIZES,
    LoopbackServer,
    anthropic_client,
    anthropic_sse,
    byte_pieces,
    openai_client,
    openai_sse,
    recorded_anthropic,
    recorded_openai,
    serve,
    two_calls,
)

# -- the loopback server -------------------------------------------------------------------


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    with serve() as server:
        yield server


def cuts_inside(body: bytes) -> tuple[int, int]:
    """How many write boundaries fall inside a UTF-8 sequence, and between two newlines."""
    in_utf8 = in_separator = position = 0
    for piece in byte_pieces(body, WRITE_SIZES):
        position += len(piece)
        if position < len(body):
            in_utf8 += body[position] & 0xC0 == 0x80
            in_separator += body[position - 1 : position + 1] == b"\n\n"
    return in_utf8, in_separator


# -- the tools the requests declare -------------------------------------------------------

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
    with openai_client(server) as client:
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
    with anthropic_client(server) as client:
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
