"""Reading captures: JSON arrays, JSON Lines, and raw SSE split anywhere."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.buffer import UnreadableChunk
from callgate.cli.capture import CaptureError, SSEDecoder, load_capture, sse_chunks

CHUNKS = [
    {"type": "message_start", "message": {"id": "msg_1"}},
    {"type": "content_block_delta", "delta": {"text": "héllo wörld ☃ 𝄞"}},
    {"choices": [{"index": 0, "delta": {"content": "multi\nline"}}]},
]


def sse(newline: str = "\n", done: bool = True) -> bytes:
    body = f": keep-alive{newline}{newline}"
    for chunk in CHUNKS:
        name = chunk.get("type", "message")
        body += f"event: {name}{newline}data: {json.dumps(chunk, ensure_ascii=False)}"
        body += newline * 2
    if done:
        body += f"data: [DONE]{newline}{newline}"
    return body.encode("utf-8")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_sse_with_any_line_ending_yields_the_chunks(newline: str) -> None:
    assert load_capture(sse(newline)) == CHUNKS


@given(st.data(), st.sampled_from(["\n", "\r\n", "\r"]))
def test_sse_split_anywhere_yields_the_same_chunks(data: st.DataObject, newline: str) -> None:
    raw = sse(newline)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert list(sse_chunks(pieces)) == CHUNKS


def test_a_utf8_character_split_across_reads_is_decoded_once() -> None:
    raw = 'data: {"t": "𝄞"}\n\n'.encode()
    cut = raw.index("𝄞".encode()) + 2
    decoder = SSEDecoder()
    assert decoder.feed(raw[:cut]) == []
    [event] = decoder.feed(raw[cut:])
    assert json.loads(event.data) == {"t": "𝄞"}


def test_multi_line_data_is_joined_with_newlines() -> None:
    raw = b'data: {"a":\ndata: 1}\n\n'
    assert load_capture(raw) == [{"a": 1}]


def test_an_event_without_its_blank_line_is_read_at_close() -> None:
    raw = b'data: {"a": 1}\n\ndata: {"b": 2}\n'
    assert load_capture(raw) == [{"a": 1}, {"b": 2}]
    assert load_capture(b'data: {"a": 1}\n\ndata: {"b": 2}') == [{"a": 1}, {"b": 2}]


def test_json_array_and_json_lines_are_read() -> None:
    assert load_capture(json.dumps(CHUNKS).encode()) == CHUNKS
    lines = "\n".join(json.dumps(c) for c in CHUNKS) + "\n\n"
    assert load_capture(lines.encode()) == CHUNKS


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"", "empty"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "chunk 0 is not a JSON object"),
        (b"[1, 2", "not a JSON array"),
    ],
)
def test_unreadable_capture_is_a_clear_error(raw: bytes, needle: str) -> None:
    with pytest.raises(CaptureError) as info:
        load_capture(raw)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("raw", "code", "needle"),
    [
        (b"data: {oops}\n\n", "malformed_chunk", "event 1 (message): data is not JSON"),
        (b"data: [1, 2]\n\n", "malformed_chunk", "not a JSON object"),
        (b'{"a": 1}\nnope\n', "malformed_chunk", "line 2: data is not JSON"),
        (b'data: {"a": {"n": 1, "n": 2}}\n\n', "duplicate_key", "repeats the key 'n'"),
        (b'[{"a": 1, "a": 2}]', "duplicate_key", "chunk 0: a JSON object repeats the key 'a'"),
    ],
)
def test_one_unreadable_chunk_takes_its_place_and_the_rest_is_read(
    raw: bytes, code: str, needle: str
) -> None:
    chunks = load_capture(raw + b'data: {"z": 1}\n\n' if raw.startswith(b"data") else raw)
    bad = [c for c in chunks if isinstance(c, UnreadableChunk)]
    assert len(bad) == 1
    assert bad[0].code == code
    assert needle in bad[0].reason
