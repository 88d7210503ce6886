"""A Chat text frame read by its learned shape gives exactly what the general path gives.

Once a plain text frame went through (echoed to a Chat client, or its text written by a
translating writer), the engine keeps the bytes around its text; a later frame with the
same bytes around a JSON string (escapes allowed) is taken without parsing the frame. For any
text (prose, markup, quotes, escapes, control characters, bytes that are not UTF-8),
envelopes in any key order (the text's own bytes among them), frames cut anywhere, on every
client wire, the bytes sent, the verdict, the calls and the counts are the general path's.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import callgate.proxy.engine as engine_module
from callgate.proxy import core
from callgate.proxy.engine import Engine, Options
from proxy_cases import QWEN_MODEL
from test_proxy_plain_text_step import ENVELOPE, PIECES, REQUEST, TOOLS
from test_proxy_play_bytes import REQUESTS

MARK = "\x00mark\x00"
TEXTS = [*PIECES, 'say "hi"', "back\\slash", "tab\there", "q", "m", "\u00e9t\u00e9", "\U0001f600"]
TEXTS += ["zero\u200bwidth", "line\u2028end", "del\x7f"]  # valid raw in JSON, not printable
ENVELOPES = [
    ENVELOPE,
    {"choices": None, "model": "q", "id": "chatcmpl-1", "object": "chat.completion.chunk"},
    {**ENVELOPE, "model": "m"},
    {"choices": None, "model": "zz", "id": "chatcmpl-1", "object": "chat.completion.chunk"},
]
RAW_TOKENS = [b'"a\x01b"', b'"\xff\xfe"', b'"\xed\xa0\x80"', b'"caf\xc3\xa9"', b'""', b'"x']
RAW_TOKENS += [b'"y"z"', b'"q\x7f"']


def _frame(envelope: dict[str, Any], text: str, *, ascii_only: bool, first: bool) -> bytes:
    """A text chunk's event: ``choices`` where the envelope puts it, else last."""
    delta: dict[str, Any] = {"role": "assistant", "content": text} if first else {"content": text}
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    chunk = {k: ([choice] if k == "choices" else v) for k, v in envelope.items()}
    chunk.setdefault("choices", [choice])
    return b"data: " + json.dumps(chunk, ensure_ascii=ascii_only).encode() + b"\n\n"


def _raw(envelope: dict[str, Any], token: bytes) -> bytes:
    """A text frame whose content is ``token`` as raw bytes (perhaps not JSON at all)."""
    around = _frame(envelope, MARK, ascii_only=True, first=False)
    head, _, tail = around.partition(json.dumps(MARK).encode())
    return head + token + tail


frames = st.one_of(
    st.tuples(st.sampled_from(range(len(ENVELOPES))), st.sampled_from(TEXTS), st.booleans()).map(
        lambda t: _frame(ENVELOPES[t[0]], t[1], ascii_only=t[2], first=False)
    ),
    st.tuples(st.sampled_from(range(len(ENVELOPES))), st.sampled_from(RAW_TOKENS)).map(
        lambda t: _raw(ENVELOPES[t[0]], t[1])
    ),
)


def _reads(envelope: int, body: list[bytes], cuts: list[int]) -> list[bytes]:
    """The role frame, ``body``, the finish and ``[DONE]``, cut at ``cuts``."""
    first = _frame(ENVELOPES[envelope], "", ascii_only=True, first=True)
    finish = {**ENVELOPE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    data = first + b"".join(body) + b"data: " + json.dumps(finish).encode() + b"\n\n"
    data += b"data: [DONE]\n\n"
    edges = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


def request_for(client: str) -> dict[str, Any]:
    """The Qwen request with the weather tool, on ``client``'s wire."""
    if client == "chat":
        return REQUEST
    return {**REQUESTS[client], "model": QWEN_MODEL, "tools": TOOLS[client]}


def _played(
    reads: list[bytes], client: str, shaped: bool, options: Options | None = None
) -> dict[str, Any]:
    ids = iter(range(10**6))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
        monkeypatch.setattr("time.time", lambda: 1700000000.0)
        turn = Engine(
            request_for(client),
            options or Options(on_blocked="notice"),
            client=client,
            upstream="chat",
        )
        turn.shape_path = shaped
        sent = [turn.play_bytes(read) for read in reads]
        sent.append(turn.close_bytes())
        sent.append(b"".join(turn.encode(c) for c in turn.finish()))
    audit = turn.audit()
    del audit["cpu_us"]
    queue = turn.buffer.text_queue
    gate = turn.buffer.gate
    return {
        "bytes": sent,
        "audit": audit,
        "released": turn.released,
        "counts": (queue.held, queue.declined, gate.text_bytes if gate else None),
        "message": turn.buffer.message(),
    }


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(range(len(ENVELOPES))),
    st.lists(frames, min_size=1, max_size=10),
    st.lists(st.integers(0, 2000), max_size=12),
    st.sampled_from(["chat", "messages", "responses"]),
)
@example(0, [_frame(ENVELOPE, t, ascii_only=False, first=False) for t in ("a ", "b ")], [], "chat")
@example(1, [_frame(ENVELOPES[e], "q", ascii_only=True, first=False) for e in (1, 3)], [], "chat")
@example(
    1, [_frame(ENVELOPES[e], "q", ascii_only=True, first=False) for e in (1, 3)], [], "responses"
)
def test_a_shaped_frame_gives_what_the_general_path_gives_at_every_split(
    envelope: int, body: list[bytes], cuts: list[int], client: str
) -> None:
    reads = _reads(envelope, body, cuts)
    assert _played(reads, client, True) == _played(reads, client, False)


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_a_shaped_frame_moves_reasoning_as_the_general_path_does(client: str) -> None:
    """With reasoning moved out of the text, a frame read by its shape is split alike."""
    texts = ("a ", "b ", "<think>", "why", "</think>", " c", "d")
    body = [_frame(ENVELOPE, t, ascii_only=True, first=False) for t in texts]
    options = Options(on_blocked="notice", move_reasoning=True)
    reads = _reads(0, body, [])
    shaped = _played(reads, client, True, options)
    assert shaped == _played(reads, client, False, options)
    if client == "chat":  # a chat client gets the reasoning apart, as reasoning_content
        assert b"<think>" not in b"".join(shaped["bytes"])


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The frames the engine parses as JSON from now on (``fast_object`` counted)."""
    parsed: list[bytes] = []
    parse = engine_module.fast_object

    def counted(data: bytes) -> dict[str, Any] | None:
        parsed.append(data)
        return parse(data)

    monkeypatch.setattr(engine_module, "fast_object", counted)
    return parsed


@pytest.mark.parametrize("client", ["chat", "messages"])
def test_plain_text_frames_after_the_second_are_not_parsed(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the shape every text frame would be parsed as JSON (it is learned from the
    second, a turn of one text frame never needing it)."""
    parsed = count_parses(monkeypatch)
    texts = ["Plain ", "prose ", "only, ", "no markup."]
    body = [_frame(ENVELOPE, t, ascii_only=False, first=False) for t in texts]
    reads = _reads(0, body, [])
    chunks = [read for read in b"".join(reads).split(b"\n\n") if read]
    request = REQUEST if client == "chat" else {**REQUESTS[client], "model": QWEN_MODEL}
    turn = Engine(request, Options(on_blocked="notice"), client=client, upstream="chat")
    sent = [turn.play_bytes(chunk + b"\n\n") for chunk in chunks[:5]]
    assert len(parsed) == 3 + 2  # the role frame, the first two text frames, two probes
    if client == "chat":
        assert sent[1:] == [chunk + b"\n\n" for chunk in chunks[1:5]]
    else:
        assert all(t.encode() in s for t, s in zip(texts, sent[1:], strict=True))
    turn.play_bytes(_frame(ENVELOPE, "<tool", ascii_only=False, first=False))
    assert len(parsed) == 6  # a possible marker: the general path reads it


def _grouped(envelope: int, body: list[bytes], sizes: list[int]) -> list[bytes]:
    """The events of :func:`_reads` uncut, handed over ``sizes[i]`` whole events a read.

    A pooled upstream client gives whatever arrived since the last read: often several
    whole events, each read starting and ending where the learned shape does.
    """
    events = [e + b"\n\n" for e in b"".join(_reads(envelope, body, [])).split(b"\n\n") if e]
    reads, at = [], 0
    for size in itertools.cycle(sizes or [1]):
        if at >= len(events):
            return reads
        reads.append(b"".join(events[at : at + size]))
        at += size
    return reads


def _plain_turn(texts: list[str]) -> tuple[Engine, list[bytes]]:
    """A Chat turn and its reads: the role frame, then one plain text frame per read."""
    body = [_frame(ENVELOPES[1], t, ascii_only=False, first=False) for t in texts]
    turn = Engine(REQUEST, Options(on_blocked="notice"), client="chat", upstream="chat")
    return turn, _grouped(1, body, [1])


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(range(len(ENVELOPES))),
    st.lists(frames, max_size=10),
    st.lists(st.integers(1, 4), min_size=1, max_size=6),
    st.sampled_from(["chat", "messages", "responses"]),
)
@example(0, [], [1], "chat")
@example(2, [_frame(ENVELOPES[2], t, ascii_only=True, first=False) for t in "xyz"], [99], "chat")
@example(0, [_frame(ENVELOPE, t, ascii_only=False, first=False) for t in "abcdef"], [2], "chat")
@example(
    0, [_frame(ENVELOPE, t, ascii_only=False, first=False) for t in "abcdef"], [1, 1, 3], "messages"
)
def test_reads_of_several_whole_events_give_what_the_general_path_gives(
    envelope: int, body: list[bytes], sizes: list[int], client: str
) -> None:
    """A read of whole events that starts and ends like one shaped frame is no one frame."""
    reads = _grouped(envelope, body, sizes)
    assert _played(reads, client, True) == _played(reads, client, False)


def test_two_text_events_in_one_read_both_reach_the_client() -> None:
    """After the shape is learned, a read of two text events sends both texts."""
    texts = ["one ", "two ", "three ", "four ", "five"]
    body = [_frame(ENVELOPE, t, ascii_only=False, first=False) for t in texts]
    reads = _grouped(0, body, [1, 1, 1, 2, 1])
    sent = b"".join(_played(reads, "chat", True)["bytes"])
    shown = [
        json.loads(line[6:])["choices"][0]["delta"].get("content", "")
        for line in sent.split(b"\n\n")
        if line.startswith(b"data: {")
    ]
    assert "".join(shown) == "".join(texts)


def test_shaped_text_to_a_chat_client_that_needs_its_own_chunk_is_not_encoded_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without ``created`` the client's chunk is not the upstream's (callgate adds it), so
    its text is written on the chunk's fixed part, not by encoding a whole chunk per frame."""
    from callgate.proxy.wires.chat import ChatWriter

    encoded: list[object] = []
    encode = ChatWriter.encode

    def counted(self: ChatWriter, chunk: Any) -> bytes:
        encoded.append(chunk)
        return encode(self, chunk)

    monkeypatch.setattr(ChatWriter, "encode", counted)
    texts = ["Plain ", "prose ", "only, ", "no ", "markup."]
    turn, reads = _plain_turn(texts)
    sent = [turn.play_bytes(read) for read in reads[:6]]
    assert turn._shape is not None and not turn._shape[2]  # learned, the writer's own chunks
    assert encoded == []
    shown = [json.loads(s[6:])["choices"][0]["delta"] for s in sent]
    assert shown == [{"role": "assistant", "content": ""}] + [{"content": t} for t in texts]
    assert all(json.loads(s[6:])["created"] == json.loads(sent[0][6:])["created"] for s in sent)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(range(len(ENVELOPES))),
    st.lists(frames, max_size=12),
    st.sampled_from(["chat", "messages", "responses"]),
    st.sampled_from(
        [
            Options(on_blocked="notice"),
            Options(on_blocked="notice", move_reasoning=True),
            Options(on_blocked="notice", stream_args=True),
        ]
    ),
)
@example(1, [_frame(ENVELOPES[1], t, ascii_only=True, first=False) for t in "abc"], "chat", None)
@example(
    3,
    [_frame(ENVELOPES[3], t, ascii_only=False, first=False) for t in ("a ", "b ", "<tool", "x")],
    "chat",
    None,
)
def test_one_event_per_read_gives_what_the_general_path_gives(
    envelope: int, body: list[bytes], client: str, options: Options | None
) -> None:
    """Each event in a read of its own, as a model writes them: the learned shape's text,
    written around its own token where the writer adds ``created``, is the general path's."""
    reads = _grouped(envelope, body, [1])
    assert _played(reads, client, True, options) == _played(reads, client, False, options)


def test_plain_shaped_text_is_sent_as_its_own_token_between_fixed_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once the shape is learned, a plain text frame (no escape) the writer must rewrite
    (no ``created``) is neither read through :meth:`Engine._shaped` nor written by
    ``play_text``: its JSON string goes between the writer's fixed bytes; a frame with an
    escape, and markup that opens a call, still take those."""
    from callgate.proxy.wires.chat import ChatWriter

    calls: list[str] = []
    shaped, play_text = Engine._shaped, ChatWriter.play_text

    def counted_shaped(self: Engine, token: bytes) -> str | None:
        calls.append("shaped")
        return shaped(self, token)

    def counted_play(self: ChatWriter, text: str) -> bytes:
        calls.append("play_text")
        return play_text(self, text)

    monkeypatch.setattr(Engine, "_shaped", counted_shaped)
    monkeypatch.setattr(ChatWriter, "play_text", counted_play)
    texts = ["Plain ", "prose ", "only, ", "caf\u00e9 ", "no markup."]
    turn, reads = _plain_turn(texts)
    sent = [turn.play_bytes(read) for read in reads[:4]]
    calls.clear()  # the shape is learned from the second text frame, used from the third
    sent += [turn.play_bytes(read) for read in reads[4:6]]
    assert calls == []
    shown = [json.loads(s[6:])["choices"][0]["delta"] for s in sent]
    assert shown == [{"role": "assistant", "content": ""}] + [{"content": t} for t in texts]
    assert turn.released == "".join(texts) and turn.chunks == 6
    turn.play_bytes(_frame(ENVELOPES[1], 'say "hi"', ascii_only=False, first=False))
    assert calls == ["shaped", "play_text"]
