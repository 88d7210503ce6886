"""A chunk the client receives unchanged goes out as the upstream's own bytes; no other does.

``Engine.play_bytes`` forwards an upstream event as it was written when the client's event
would be that very chunk (one wire, text the display released as it came); every other
event (held text, a call converted from the text, a translated wire, a field the writer
drops) is written by the writer. Whatever the path, the client's events are those of the
general path (encoding ``feed_event``'s chunks), at every split of the upstream's bytes.
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
from proxy_cases import QWEN, QWEN_MODEL
from test_gateway_behaviours import block, end, start
from test_proxy_play_bytes import REQUESTS
from test_proxy_wire_matrix import WIRES, _captures, _qwen, body, by_char

ENVELOPE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {**ENVELOPE, "model": QWEN_MODEL, "choices": [choice], **extra}


def _choice(text: str) -> dict[str, Any]:
    return {"index": 0, "delta": {"content": text}, "finish_reason": None}


def _loose(chunks: list[dict[str, Any]]) -> list[bytes]:
    """Each chunk as an event written as no encoder of callgate's writes it (spaced, reordered)."""
    return [
        b"data: " + json.dumps(dict(reversed(list(c.items()))), indent=None).encode() + b"\n\n"
        for c in chunks
    ]


def _text_stream(pieces: list[str]) -> list[dict[str, Any]]:
    return [
        _chunk({"role": "assistant", "content": ""}),
        *(_chunk({"content": p}) for p in pieces),
        _chunk({}, "stop"),
    ]


def _turn(client: str = "chat", upstream: str = "chat", **request: Any) -> Engine:
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",))
    return Engine({**REQUESTS[client], **request}, options, client=client, upstream=upstream)


def _fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(range(10**6))
    monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
    monkeypatch.setattr("time.time", lambda: 1700000000.0)


def _by_bytes(turn: Engine, reads: list[bytes]) -> list[bytes]:
    """The client's events, each as sent, from reads played by ``play_bytes``."""
    out = b"".join(turn.play_bytes(r) for r in reads) + turn.close_bytes()
    out += b"".join(turn.encode(c) for c in turn.finish())
    return _events(out)


def _general(turn: Engine, data: bytes) -> list[bytes]:
    """The client's events from the general path: ``feed_event``'s chunks, encoded."""
    reader = SSEReader()
    out = b""
    for event in [*reader.feed(data), *reader.close()]:
        out += b"".join(turn.encode(c) for c in turn.feed_event(event))
    out += b"".join(turn.encode(c) for c in turn.finish())
    return _events(out)


def _events(data: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in data.split(b"\n\n") if e]


def _values(events: list[bytes]) -> list[Any]:
    """Each event as its name line and its JSON value (bytes written differently compare equal)."""
    out = []
    for event in events:
        head, _, data = event.rpartition(b"data: ")
        payload = data.strip()
        out.append((head, payload if payload == b"[DONE]" else json.loads(payload)))
    return out


def test_text_released_as_it_came_is_sent_as_the_upstreams_own_bytes() -> None:
    upstream = _loose(_text_stream(["Hello", " wörld", " \u2603 ", "done."]))
    sent = _by_bytes(_turn(), [b"".join(upstream[:1]), *upstream[1:]])
    # the role chunk and every text chunk are the upstream's bytes, spaced and reordered
    assert sent[:5] == upstream[:5]
    assert json.loads(sent[5][6:])["choices"][0]["finish_reason"] == "stop"
    assert upstream[5] not in sent  # the final chunk is the writer's (its callgate field)


def test_a_read_of_unchanged_events_goes_out_as_the_same_object() -> None:
    upstream = _loose(_text_stream(["a", "b", "c"]))
    turn = _turn()
    turn.play_bytes(upstream[0])
    read = b"".join(upstream[1:4])
    assert turn.play_bytes(read) is read


def test_held_text_and_a_converted_call_are_never_forwarded_raw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fixed(monkeypatch)
    pieces = [QWEN[i : i + 7] for i in range(0, len(QWEN), 7)]
    upstream = _loose(_text_stream(pieces))
    request = {"model": QWEN_MODEL, "tools": TOOLS}
    sent = _by_bytes(_turn(**request), upstream)
    _fixed(monkeypatch)
    forwarded = [e for e in upstream if e in sent]
    assert forwarded, "the prose before the call goes out as it came"
    for event in forwarded:
        content = json.loads(event[6:])["choices"][0]["delta"].get("content", "")
        assert "<" not in content and "{" not in content  # no markup, no held prefix
    calls = [
        c for e in sent for c in json.loads(e[6:])["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert _values(sent) == _values(_general(_turn(**request), b"".join(upstream)))


def test_text_held_then_shown_goes_out_rewritten() -> None:
    upstream = _loose(_text_stream(["a <to", "ol> is a tag", " shown"]))
    sent = _by_bytes(_turn(model=QWEN_MODEL), upstream)
    assert upstream[1] not in sent and upstream[2] not in sent
    assert upstream[3] in sent
    contents = [json.loads(e[6:])["choices"][0]["delta"].get("content") for e in sent]
    assert "".join(c for c in contents if c) == "a <tool> is a tag shown"


@pytest.mark.parametrize(
    "chunk",
    [
        _chunk({"content": "x"}, logprobs=None),  # a field the writer does not write
        _chunk({"content": "x"}, choices=[{**_choice("x"), "index": False}]),
        _chunk({"content": "x"}, choices=[{**_choice("x"), "index": 0.0}]),
        _chunk({"content": "x"}, usage=None),
        _chunk({"content": "x"}, created=1700000001),
        _chunk({"content": "x"}, choices=[{**_choice("x"), "logprobs": None}]),
        _chunk({"content": "x"}, choices=[_choice("x"), _choice("y")]),
        _chunk({"content": "x"}, choices=[{**_choice("x"), "finish_reason": ""}]),
        _chunk({"content": "x"}, choices=[{**_choice("x"), "finish_reason": False}]),
        _chunk({"content": ""}),  # nothing to show: nothing is sent
    ],
)
def test_a_chunk_the_writer_writes_otherwise_is_written_by_it(chunk: dict[str, Any]) -> None:
    head = _loose(_text_stream([])[:1])
    event = _loose([chunk])[0]
    turn = _turn()
    turn.play_bytes(head[0])
    out = turn.play_bytes(event)
    assert out != event
    general = _turn()
    general.play_bytes(head[0])
    reader = SSEReader()
    expected = b"".join(
        general.encode(c) for e in reader.feed(event) for c in general.feed_event(e)
    )
    assert _values(_events(out)) == _values(_events(expected))


@pytest.mark.parametrize(
    "options",
    [Options(move_reasoning=True), Options(stream_args=True), Options(on_blocked="pass")],
)
def test_the_turns_options_keep_what_the_general_path_sends(options: Options) -> None:
    pieces = ["<think>", "hm", "</think>", "Sure. ", *(QWEN[i : i + 6] for i in range(0, 60, 6))]
    upstream = _loose(_text_stream(pieces))
    request = {**REQUESTS["chat"], "model": QWEN_MODEL, "tools": TOOLS}
    with pytest.MonkeyPatch.context() as patch:
        _fixed(patch)
        sent = _by_bytes(Engine(request, options), upstream)
        _fixed(patch)
        expected = _general(Engine(request, options), b"".join(upstream))
    assert _values(sent) == _values(expected)


@pytest.mark.parametrize("upstream", WIRES)
@pytest.mark.parametrize("client", WIRES)
def test_every_wire_pair_sends_the_events_of_the_general_path(
    client: str, upstream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fixed(monkeypatch)
    streams = [("qwen", _qwen(upstream)), *_captures(upstream)[::2]]
    for name, whole in streams:
        for stream in (whole, by_char(upstream, whole)):
            data = body(upstream, stream)
            _fixed(monkeypatch)
            reads = [e + b"\n\n" for e in data.split(b"\n\n") if e]
            sent = _by_bytes(_turn(client, upstream), reads)
            _fixed(monkeypatch)
            assert _values(sent) == _values(_general(_turn(client, upstream), data)), name
            if client != upstream:  # a translated wire: every event is the writer's
                assert not set(sent) & set(reads), name


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12))
def test_any_split_of_the_upstreams_bytes_sends_the_same_events(cuts: list[int]) -> None:
    pieces = [QWEN[i : i + 5] for i in range(0, len(QWEN), 5)]
    data = b"".join(_loose(_text_stream(["Sure. ", *pieces, " Bye"]))) + b"data: [DONE]\n\n"
    points = sorted({c % len(data) for c in cuts} - {0})
    reads = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    request = {"model": QWEN_MODEL, "tools": TOOLS}
    with pytest.MonkeyPatch.context() as patch:
        _fixed(patch)
        sent = _by_bytes(_turn(**request), reads)
        _fixed(patch)
        expected = _general(_turn(**request), data)
    assert _values(sent) == _values(expected)


def test_an_unreadable_event_reads_as_on_the_general_path() -> None:
    head = _loose(_text_stream([])[:1])
    for bad in (b'data: {"a": "\xff"}\n\n', b'data: {"a": 1e400}\n\n', b"data: [1]\n\n"):
        turn, general = _turn(), _turn()
        sent = _by_bytes(turn, [head[0], bad])
        assert _values(sent) == _values(_general(general, head[0] + bad)), bad
        assert turn.status == general.status == "fail"


def test_the_proxy_forwards_unchanged_text_events_byte_for_byte() -> None:
    upstream_events = [*_loose(_text_stream(["one ", "two ", "three"])), b"data: [DONE]\n\n"]
    script = Script(b"".join(upstream_events))
    with ServerThread(ReplayUpstream(lambda path, request: script)) as upstream:
        proxy = create_app(ProxyConfig(upstream=upstream.url))
        with ServerThread(proxy) as served:
            request = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
            reply = httpx.post(
                served.url + "/v1/chat/completions", json={**request, "stream": True}
            )
    assert reply.status_code == 200
    sent = _events(reply.content)
    assert sent[:4] == upstream_events[:4]
    assert upstream_events[4] not in sent and sent[-1] == b"data: [DONE]\n\n"


def _named(events: list[dict[str, Any]]) -> list[bytes]:
    """Anthropic events, each an ``event:`` line and a data line no callgate encoder writes."""
    return [
        b"event: "
        + e["type"].encode()
        + b"\ndata: "
        + json.dumps(dict(reversed(e.items()))).encode()
        + b"\n\n"
        for e in events
    ]


def test_a_named_text_event_is_sent_as_the_upstreams_own_bytes() -> None:
    """A Messages text delta released as it came goes out as written, its name line too."""
    pieces = [{"type": "text_delta", "text": t} for t in ["Hello", " w\u00f6rld", " done."]]
    upstream = _named([start(), *block(0, {"type": "text", "text": ""}, *pieces), *end()])
    sent = _by_bytes(_turn("messages", "messages"), upstream)
    # the block's first delta opens the writer's block; the ones after go out as they came
    assert [e for e in upstream[3:5] if e in sent] == upstream[3:5]
