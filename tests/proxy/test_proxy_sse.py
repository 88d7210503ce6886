"""The proxy's event-stream reader and writer: any split of the bytes, every line end."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from callgate.proxy.sse import DONE_EVENT, SSEEvent, SSEReader, encode
from callgate.testing.cuts import byte_splits


def read(pieces: list[bytes], *, lists: bool = False) -> list[SSEEvent]:
    """The events of the pieces, read by ``feed`` (``lists``: by ``events``, as the proxy does)."""
    reader = SSEReader()
    events = [e for p in pieces for e in (reader.events(p) if lists else reader.feed(p))]
    return events + list(reader.close())


STREAM = (
    b'\xef\xbb\xbfdata: {"a": 1}\n\n'
    b": a comment\r\n"
    b'event: message_start\r\ndata: {"b":\r\ndata: 2}\r\n\r\n'
    b'data: {"c": "\xc3\xa9\xe2\x82\xac"}\r\r'
    b"id: 7\nretry: 100\ndata: [DONE]\n\n"
)
WANT = [
    SSEEvent("message", '{"a": 1}'),
    SSEEvent("message_start", '{"b":\n2}'),
    SSEEvent("message", '{"c": "é€"}'),
    SSEEvent("message", "[DONE]"),
]


def test_a_stream_reads_as_its_events() -> None:
    assert read([STREAM]) == WANT


@given(byte_splits(STREAM))
def test_any_split_of_the_bytes_reads_the_same_events(pieces: list[bytes]) -> None:
    assert read(pieces) == WANT


def test_bad_utf8_is_an_unreadable_event_and_the_stream_goes_on() -> None:
    """Its data is the empty string (an event's data is always a string), its name kept."""
    events = read([b'event: delta\ndata: {"a": "\xff"}\n\ndata: {}\n\n'])
    assert events[0].broken is not None and "UTF-8" in events[0].broken
    assert (events[0].name, events[0].data) == ("delta", "")
    assert events[1] == SSEEvent("message", "{}")


def test_an_event_cut_off_at_the_end_is_still_dispatched() -> None:
    assert read([b'data: {"a": 1}']) == [SSEEvent("message", '{"a": 1}')]


@given(st.recursive(st.none() | st.booleans() | st.text(), lambda c: st.lists(c, max_size=3)))
def test_a_chunk_is_one_event_on_one_line_that_reads_back(value: object) -> None:
    event = encode({"v": value})
    assert event.endswith(b"\n\n") and event.count(b"\n") == 2
    [back] = read([event])
    assert json.loads(back.data) == {"v": value}


def test_a_lone_surrogate_is_written_escaped_and_valid() -> None:
    event = encode({"v": "\ud800"})
    event.decode("utf-8")
    assert json.loads(read([event])[0].data) == {"v": "\ud800"}
    assert DONE_EVENT == b"data: [DONE]\n\n"


LF_STREAM = (
    b'data: {"a": 1}\n\n'
    b": a comment\n"
    b'event: message_start\ndata: {"b":\ndata:2}\n\n'
    b'data: {"c": "\xc3\xa9\xe2\x82\xac"}\n\n'
    b"id: 7\nretry: 100\ndata:  [DONE]\n\n"
    b"data\n\n"
    b"data: last"
)
LF_WANT = [
    SSEEvent("message", '{"a": 1}'),
    SSEEvent("message_start", '{"b":\n2}'),
    SSEEvent("message", '{"c": "é€"}'),
    SSEEvent("message", " [DONE]"),
    SSEEvent("message", ""),
    SSEEvent("message", "last"),
]


@given(byte_splits(STREAM))
def test_the_list_reader_reads_any_split_as_the_reader_does(pieces: list[bytes]) -> None:
    """Carriage returns, a BOM and lines split anywhere: the same events as :meth:`feed`."""
    assert read(pieces, lists=True) == WANT


@given(byte_splits(LF_STREAM))
def test_the_list_reader_takes_data_lines_as_the_rules_say(pieces: list[bytes]) -> None:
    """One space after ``data:`` dropped, a bare ``data`` line an empty piece, names kept."""
    assert read(pieces) == LF_WANT
    assert read(pieces, lists=True) == LF_WANT


def test_only_the_streams_first_bytes_may_be_a_bom() -> None:
    """A read that starts with U+FEFF's bytes later in the stream is data, kept."""
    reader = SSEReader()
    assert list(reader.feed(b'data: "a')) == []
    assert list(reader.feed(b'\xef\xbb\xbfb"\n\n')) == [SSEEvent("message", '"a\ufeffb"')]
    assert list(reader.feed(b"\xef\xbb")) == []
    assert list(reader.feed(b'\xbfdata: "c"\n\n')) == []
    assert list(reader.feed(b'data: "d"\n\n')) == [SSEEvent("message", '"d"')]


def test_an_empty_line_without_data_is_no_event_and_a_broken_events_name_is_read() -> None:
    assert read([b": ping\n\n\n\ndata: 1\n\n"]) == [SSEEvent("message", "1")]
    [broken] = read([b"data: \xff\n\n"])
    assert (broken.name, broken.data) == ("message", "")
    [named] = read([b"event: \xffend\ndata: \xff\n\n"])
    assert (named.name, named.data) == ("\ufffdend", "") and named.broken is not None
