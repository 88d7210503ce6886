"""An Anthropic text delta the client receives unchanged goes out as the upstream's own bytes.

On the Messages wire an event carries an ``event:`` line; ``Engine.play_bytes`` forwards a
``content_block_delta`` of text as it was written (its name, its spacing, its key order)
when the client's event would be that very event: the writer's text block open at the
upstream block's index, the text released as it came. Held text, a call converted from
the text, the message's end, a translated wire and every event the writer would write
differently are the writer's. Whatever the path, the client's events are those of the
general path, at every split of the upstream's bytes.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.proxy import core
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Engine, Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.sse import SSEReader
from callgate.proxy.upstream import ReplayUpstream, Script
from callgate.testing.wires.anthropic import message_start
from proxy_cases import QWEN, QWEN_MODEL, WEATHER

REQUEST = {"model": QWEN_MODEL, "max_tokens": 99, "messages": [{"role": "user", "content": "go"}]}
TOOLS = [
    {"name": name, "description": "d", "input_schema": schema} for name, schema in WEATHER.items()
]
START = message_start("msg_1")


def _named(chunk: dict[str, Any], name: str | None = None) -> bytes:
    """One event as no encoder of callgate's writes it: spaced, its keys reversed."""
    data = json.dumps(dict(reversed(list(chunk.items()))))
    return f"event: {name or chunk['type']}\ndata: {data}\n\n".encode()


def _delta(text: str, index: int = 0) -> dict[str, Any]:
    delta = {"type": "text_delta", "text": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stream(pieces: list[str]) -> list[bytes]:
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    block["content_block"]["text"] = ""
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
    return [
        _named(START),
        _named(block),
        *(_named(_delta(p)) for p in pieces),
        _named({"type": "content_block_stop", "index": 0}),
        _named({**end, "usage": {"output_tokens": 9}}),
        _named({"type": "message_stop"}),
    ]


def _turn(**request: Any) -> Engine:
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",))
    return Engine({**REQUEST, **request}, options, client="messages")


def _fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(range(10**6))
    monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")


def _events(data: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in data.split(b"\n\n") if e]


def _by_bytes(turn: Engine, reads: list[bytes]) -> list[bytes]:
    out = b"".join(turn.play_bytes(r) for r in reads) + turn.close_bytes()
    return _events(out + b"".join(turn.encode(c) for c in turn.finish()))


def _general(turn: Engine, data: bytes) -> list[bytes]:
    reader = SSEReader()
    out = b""
    for event in [*reader.feed(data), *reader.close()]:
        out += b"".join(turn.encode(c) for c in turn.feed_event(event))
    return _events(out + b"".join(turn.encode(c) for c in turn.finish()))


def _values(events: list[bytes]) -> list[tuple[bytes, Any]]:
    """Each event as its name line and its JSON value (bytes written differently compare equal)."""
    out = []
    for event in events:
        head, _, data = event.rpartition(b"data: ")
        out.append((head, json.loads(data)))
    return out


def test_text_released_as_it_came_is_sent_as_the_upstreams_own_bytes() -> None:
    upstream = _stream(["Hello", " w\u00f6rld", " \u2603 ", "done."])
    sent = _by_bytes(_turn(), upstream)
    # the writer opens its own text block; every delta after the first is the upstream's
    assert [e for e in upstream if e in sent] == upstream[3:6]
    assert _values(sent) == _values(_general(_turn(), b"".join(upstream)))


def test_a_read_of_unchanged_events_goes_out_as_the_same_object() -> None:
    upstream = _stream(["a", "b", "c", "d"])
    turn = _turn()
    turn.play_bytes(b"".join(upstream[:3]))
    read = b"".join(upstream[3:6])
    assert turn.play_bytes(read) is read


def test_held_text_and_a_converted_call_are_never_forwarded_raw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pieces = ["Sure. ", "Here: ", *(QWEN[i : i + 7] for i in range(0, len(QWEN), 7))]
    upstream = _stream(pieces)
    _fixed(monkeypatch)
    sent = _by_bytes(_turn(tools=TOOLS), upstream)
    _fixed(monkeypatch)
    assert _values(sent) == _values(_general(_turn(tools=TOOLS), b"".join(upstream)))
    forwarded = [e for e in upstream if e in sent]
    assert forwarded == upstream[3:5]  # "Here: ", "Let me ": then the markup is held
    uses = [v for _, v in _values(sent) if v.get("content_block", {}).get("type") == "tool_use"]
    assert [u["content_block"]["name"] for u in uses] == ["get_weather"]
    assert upstream[-1] not in sent and upstream[-2] not in sent  # the end is the writer's


@pytest.mark.parametrize(
    ("chunk", "name"),
    [
        ({**_delta("x"), "usage": None}, None),  # a field the writer does not write
        (_delta("x", index=1), None),  # another block's index
        ({**_delta("x"), "index": True}, None),
        ({**_delta("x"), "delta": {"type": "text_delta", "text": "x", "cache": 1}}, None),
        (_delta("x"), "message"),  # a name the writer does not give it
        (_delta(""), None),  # nothing to show: nothing is sent
    ],
)
def test_an_event_the_writer_writes_otherwise_is_written_by_it(
    chunk: dict[str, Any], name: str | None
) -> None:
    head = b"".join(_stream(["open"])[:3])
    event = _named(chunk, name)
    turn, general = _turn(), _turn()
    turn.play_bytes(head)
    out = turn.play_bytes(event)
    assert out != event
    reader = SSEReader()
    for e in reader.feed(head):
        general.feed_event(e)
    expected = b"".join(
        general.encode(c) for e in reader.feed(event) for c in general.feed_event(e)
    )
    assert _values(_events(out)) == _values(_events(expected))


def test_an_unnamed_text_event_goes_out_named() -> None:
    head = b"".join(_stream(["open"])[:3])
    event = b"data: " + json.dumps(_delta("x")).encode() + b"\n\n"
    turn = _turn()
    turn.play_bytes(head)
    assert turn.play_bytes(event).startswith(b"event: content_block_delta\ndata: ")


@pytest.mark.parametrize("options", [Options(move_reasoning=True), Options(stream_args=True)])
def test_the_turns_options_keep_what_the_general_path_sends(options: Options) -> None:
    pieces = ["<think>", "hm", "</think>", "Sure. ", *(QWEN[i : i + 6] for i in range(0, 60, 6))]
    upstream = _stream(pieces)
    request = {**REQUEST, "tools": TOOLS}
    with pytest.MonkeyPatch.context() as patch:
        _fixed(patch)
        sent = _by_bytes(Engine(request, options, client="messages"), upstream)
        _fixed(patch)
        expected = _general(Engine(request, options, client="messages"), b"".join(upstream))
    assert _values(sent) == _values(expected)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=2000), max_size=12))
def test_any_split_of_the_upstreams_bytes_sends_the_same_events(cuts: list[int]) -> None:
    pieces = ["Sure. ", *(QWEN[i : i + 5] for i in range(0, len(QWEN), 5)), " Bye"]
    data = b"".join(_stream(pieces))
    points = sorted({c % len(data) for c in cuts} - {0})
    reads = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    with pytest.MonkeyPatch.context() as patch:
        _fixed(patch)
        sent = _by_bytes(_turn(tools=TOOLS), reads)
        _fixed(patch)
        expected = _general(_turn(tools=TOOLS), data)
    assert _values(sent) == _values(expected)


def test_the_proxy_forwards_unchanged_text_events_byte_for_byte() -> None:
    upstream_events = _stream(["one ", "two ", "three"])
    script = Script(b"".join(upstream_events))
    with ServerThread(ReplayUpstream(lambda path, request: script)) as upstream:
        proxy = create_app(ProxyConfig(upstream=upstream.url))
        with ServerThread(proxy) as served:
            reply = httpx.post(served.url + "/v1/messages", json={**REQUEST, "stream": True})
    assert reply.status_code == 200
    sent = _events(reply.content)
    assert [e for e in upstream_events if e in sent] == upstream_events[3:5]
    assert sent[-1].startswith(b"event: message_stop\n")
