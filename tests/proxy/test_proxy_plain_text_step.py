"""The gate's short step for plain text gives exactly what its full step gives.

``GateCore.step_text`` takes a Chat text chunk that can start no markup on a quiet turn
with one scan, counting it where :meth:`GateCore.step` counts it. For any text (prose,
leaked calls, backtick-quoted markup, markers split over chunks) cut anywhere, the client's
bytes, the verdict, the calls and every count of the turn are those of the full step.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from callgate.proxy import core
from callgate.proxy.engine import Engine, Options
from callgate.proxy.sse import SSEReader
from callgate.proxy.wires.chat import ChatReader
from proxy_cases import QWEN, QWEN_MODEL, WEATHER, openai_tools
from test_proxy_play_bytes import REQUESTS

ENVELOPE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "q"}
CALL = "<tool_call>\n" + json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}})
PIECES = [
    "Hello ",
    "world. ",
    "caf\u00e9 \u2603 ",
    "\n",
    QWEN,
    CALL + "\n</tool_call>",
    "`" + CALL + "\n</tool_call>`",
    "```\n" + CALL + "\n</tool_call>\n```\n",
    "<tool",
    "_call>",
    "<",
    "{",
    "`",
    "```",
    "</tool_call>",
    '{"name": "get_weather", "arguments": {"city": "Rome"}}',
    "<tool_call>\n" + json.dumps({"name": "no_such_tool", "arguments": {}}) + "\n</tool_call>",
]
TOOLS = {
    "messages": [{"name": n, "input_schema": schema} for n, schema in WEATHER.items()],
    "responses": [
        {"type": "function", "name": n, "parameters": schema} for n, schema in WEATHER.items()
    ],
}
REQUEST = {
    "model": QWEN_MODEL,
    "messages": [{"role": "user", "content": "go"}],
    "tools": openai_tools(WEATHER),
    "stream": True,
}


def _event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    chunk = {**ENVELOPE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps({**chunk, **extra}).encode() + b"\n\n"


def _reads(text: str, cuts: list[int], parts: bool = False, usage: bool = False) -> list[bytes]:
    """The stream of ``text`` cut at ``cuts``; ``parts``: its first content as typed parts;
    ``usage``: every text chunk carries the usage so far (a server's continuous usage)."""
    edges = [0, *sorted({c for c in cuts if 0 < c < len(text)}), len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(edges) if b > a]
    first: object = [{"type": "text", "text": "Parts. "}] if parts else ""
    events = [_event({"role": "assistant", "content": first})]
    for n, piece in enumerate(pieces, 1):
        tokens = {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n}
        events.append(_event({"content": piece}, **({"usage": tokens} if usage else {})))
    return [*events, _event({}, "stop"), b"data: [DONE]\n\n"]


def _played(
    reads: list[bytes], short: bool, monkeypatch: pytest.MonkeyPatch, limit: int | None = None
) -> dict[str, Any]:
    """Everything a caller can see of the turn after ``reads``, with the short step or not.

    ``limit``: the turn's text limit in bytes, set once the first chunk made the gate.
    """
    ids = iter(range(10**6))
    monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
    turn = Engine(REQUEST, Options(on_blocked="notice"))
    turn.plain_path = short
    taken = [turn.play_bytes(reads[0])]
    if limit is not None:
        gate = turn.buffer.gate
        assert gate is not None
        gate.limits = attrs.evolve(gate.limits, max_text_bytes=limit)
        gate._max_text = limit
    for read in reads[1:]:
        before = turn.chunks
        taken.append(turn.play_bytes(read))
        assert turn.chunks - before <= 1
    taken.append(turn.close_bytes())
    taken.append(b"".join(turn.encode(c) for c in turn.finish()))
    audit = turn.audit()
    del audit["cpu_us"]
    queue = turn.buffer.text_queue
    return {
        "bytes": taken,
        "audit": audit,
        "released": turn.released,
        "counts": (queue.held, queue.declined, turn.buffer.gate.text_bytes, turn.buffer.changes.n),
        "content": turn.buffer.content_parts,
        "message": turn.buffer.message(),
        "history": turn.turn.history if turn.turn is not None else None,
    }


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=8),
    st.lists(st.integers(0, 400), max_size=30),
    st.booleans(),
    st.none() | st.integers(0, 300),
    st.booleans(),
)
@example(["Hello ", "world. "] * 3, [6, 13, 19, 26, 33], False, 15, False)  # past the limit
@example(["Hello ", "world. "], [3], False, None, True)  # usage on every text chunk
def test_the_short_step_gives_what_the_full_step_gives_at_every_split(
    pieces: list[str], cuts: list[int], parts: bool, limit: int | None, usage: bool
) -> None:
    reads = _reads("".join(pieces), cuts, parts, usage)
    with pytest.MonkeyPatch.context() as monkeypatch:
        short = _played(reads, True, monkeypatch, limit)
        full = _played(reads, False, monkeypatch, limit)
    assert short == full


def test_plain_prose_takes_the_short_step_and_markup_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the short step every text chunk would go through the buffer's reader."""
    stepped: list[object] = []
    full_step = Engine.step

    def counted(self: Engine, chunk: object) -> str | None:
        stepped.append(chunk)
        return full_step(self, chunk)

    monkeypatch.setattr(Engine, "step", counted)
    prose = ["Plain ", "prose ", "only."]
    reads = _reads("".join(prose), [6, 12])
    turn = Engine(REQUEST, Options(on_blocked="notice"))
    sent = [turn.play_bytes(read) for read in reads[:-2]]
    assert sent[1:] == reads[1:-2]  # each text event goes on as the upstream's bytes
    assert len(stepped) == 1  # the role chunk alone took the full step
    stepped.clear()
    turn.play_bytes(_event({"content": "<tool"}))
    assert len(stepped) == 1  # a possible marker: the full step


def _chat_event(delta: dict[str, Any], **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": None, **extra.pop("choice", {})}
    chunk = {**ENVELOPE, "choices": [choice], **extra}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@pytest.mark.parametrize("client", ["messages", "responses"])
def test_a_translated_turn_plays_plain_text_without_the_reader(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[object] = []
    full_read = ChatReader.read

    def counted(self: ChatReader, chunk: object) -> list[Any]:
        read.append(chunk)
        return full_read(self, chunk)

    monkeypatch.setattr(ChatReader, "read", counted)
    turn = Engine(REQUESTS[client], Options(on_blocked="notice"), client=client, upstream="chat")
    sent = b"".join(turn.play_bytes(r) for r in _reads("Plain prose only.", [6, 12])[:-2])
    assert len(read) == 1 and b"prose " in sent  # the role chunk alone was read in full


@pytest.mark.parametrize(
    "event",
    [
        _chat_event({"content": "x"}, choice={"finish_reason": ""}),
        _chat_event({"content": "x"}, choice={"finish_reason": "stop"}),
        _chat_event({"content": "x"}, usage={"prompt_tokens": 1, "completion_tokens": 2}),
        _chat_event({"content": "x"}, error={"message": "overloaded"}),
        _chat_event({"content": "x"}, choice={"index": 1}),
        _chat_event({"content": "x"}, choice={"logprobs": None}),
        _chat_event({"content": "x", "reasoning_content": "hm"}),
        _chat_event({"content": ["x"]}),
        _chat_event({"content": ""}),
    ],
)
@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("options", [Options(), Options(stream_args=True)])
def test_a_chunk_with_more_than_text_plays_as_the_general_path_plays_it(
    event: bytes, client: str, first: bool, options: Options, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``first``: a plain chunk opens the stream (no role chunk before it)."""
    head = [_event({"content": "Hi "})] if first else _reads("Hi ", [])[:2]
    reads = [*head, event, _event({"content": "more"}), *_reads("", [])[1:]]
    fast, general = _both(reads, client, options, monkeypatch)
    assert fast == general


def _both(
    reads: list[bytes],
    client: str,
    options: Options,
    monkeypatch: pytest.MonkeyPatch,
    request: dict[str, Any] | None = None,
) -> list[Any]:
    """What a ``client`` receives of ``reads`` by ``play_bytes``, then by ``feed_event``."""
    played = []
    monkeypatch.setattr("time.time", lambda: 1700000000.0)
    for fast in (True, False):
        monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}0")
        turn = Engine(request or REQUESTS[client], options, client=client, upstream="chat")
        if fast:
            sent = b"".join(turn.play_bytes(r) for r in reads) + turn.close_bytes()
        else:
            reader = SSEReader()
            events = [*reader.feed(b"".join(reads)), *reader.close()]
            sent = b"".join(turn.encode(c) for e in events for c in turn.feed_event(e))
        sent += b"".join(turn.encode(c) for c in turn.finish())
        played.append((_parsed(sent), turn.upstream_finish, turn.usage, turn.status))
    return played


@pytest.mark.parametrize("client", ["messages", "responses"])
def test_a_call_forming_in_the_text_streams_its_arguments_on_a_translated_wire(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``stream_args`` every chunk is read in full: its text may carry a forming call."""
    pieces = ["Sure. ", *(QWEN[i : i + 3] for i in range(0, len(QWEN), 3))]
    request = {**REQUESTS[client], "model": QWEN_MODEL, "tools": TOOLS[client]}
    reads = _reads("".join(pieces), list(range(0, 200, 3)))
    fast, general = _both(reads, client, Options(stream_args=True), monkeypatch, request)
    assert fast == general


def _parsed(data: bytes) -> list[Any]:
    out = []
    for event in data.split(b"\n\n"):
        head, _, payload = event.rpartition(b"data: ")
        if payload:
            out.append((head, payload if payload == b"[DONE]" else json.loads(payload)))
    return out
