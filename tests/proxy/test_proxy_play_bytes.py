"""Each writer's fast path writes the bytes its general path writes, on every client wire.

``play`` encodes a chunk of released text directly; encoding ``feed_event``'s chunks is
the general path. For every recorded stream of each upstream wire, whole and one
character per text delta, in front of each client wire, the two give the same bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy import core
from callgate.proxy.engine import Engine, Options
from callgate.proxy.sse import SSEReader
from callgate.testing.builders import openai_chunks
from proxy_cases import QWEN, WEATHER
from test_proxy_wire_matrix import WIRES, _captures, _qwen, body, by_char

REQUESTS: dict[str, dict[str, Any]] = {
    "chat": {"model": "m", "messages": [{"role": "user", "content": "go"}]},
    "messages": {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "go"}]},
    "responses": {"model": "m", "input": "go"},
}


def _bytes(
    client: str,
    upstream: str,
    data: bytes,
    fast: bool,
    monkeypatch: Any,
    *,
    request: dict[str, Any] | None = None,
) -> bytes:
    ids = iter(range(10**6))
    monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
    monkeypatch.setattr("time.time", lambda: 1700000000.0)
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",))
    turn = Engine(request or REQUESTS[client], options, client=client, upstream=upstream)
    reader = SSEReader()
    out = b""
    for event in [*reader.feed(data), *reader.close()]:
        if fast:
            out += turn.play(event)
        else:
            out += b"".join(turn.encode(c) for c in turn.feed_event(event))
    return out + b"".join(turn.encode(c) for c in turn.finish())


@pytest.mark.parametrize("upstream", WIRES)
@pytest.mark.parametrize("client", ["messages", "responses"])
def test_play_writes_the_bytes_that_encoding_feed_event_writes(
    client: str, upstream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    streams = [("qwen", _qwen(upstream)), *_captures(upstream)[::3]]
    for name, whole in streams:
        for stream in (whole, by_char(upstream, whole)):
            data = body(upstream, stream)
            fast = _bytes(client, upstream, data, True, monkeypatch)
            assert fast == _bytes(client, upstream, data, False, monkeypatch), name


@pytest.mark.parametrize("client", ["messages", "responses"])
def test_text_after_a_call_is_written_where_the_general_path_writes_it(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text, a call leaked into it, then text again: the bytes the general path writes.

    The fast writer keeps the bytes before a delta's text for the open item or block; the
    text around the call, whole and one character a chunk, is written as the general path
    writes it, and the call is converted.
    """
    stream = openai_chunks([], [], text=[*QWEN, " And", " then", " more."])
    tools = [
        {"name": n, "input_schema": schema}
        if client == "messages"
        else {"type": "function", "name": n, "parameters": schema}
        for n, schema in WEATHER.items()
    ]
    request = {**REQUESTS[client], "tools": tools}
    for played in (stream, by_char("chat", stream)):
        data = body("chat", played)
        fast = _bytes(client, "chat", data, True, monkeypatch, request=request)
        assert b'"get_weather"' in fast
        assert b" more." in fast or played is not stream
        assert fast == _bytes(client, "chat", data, False, monkeypatch, request=request)
