"""Read a recorded stream: a JSON array, JSON Lines, or raw server-sent events.

Raw SSE is decoded incrementally, as a client receives it: bytes may be split anywhere,
a UTF-8 character included, and a line may end in LF, CR or CRLF. Each event's ``data``
lines are joined with newlines and parsed as JSON; OpenAI's ``[DONE]`` sentinel ends a
stream and is not a chunk. The decoder follows the WHATWG event-stream rules for the
fields callgate needs (``data``, ``event``, comments); it is small enough that no extra
dependency is warranted. A last event whose closing blank line never came is read, not
dropped (a recorder may cut the final newline).

One chunk that cannot be read (data that is not JSON, not an object, or an object that
repeats a key) does not abort the capture: it becomes an :class:`UnreadableChunk` in its
place, which the buffer reports as a finding for that chunk and which blocks the turn.
"""

from __future__ import annotations

import codecs
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from attrs import frozen

from callgate.buffer import UnreadableChunk
from callgate.errors import CaptureError

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


DONE = "[DONE]"
"""The sentinel of OpenAI-style streams: the server's own, clean end of the stream."""


class Capture(list[dict[str, Any]]):
    """A recorded stream's chunks, and whether the recording holds the stream's own end.

    ``ended`` is True when the server's end sentinel (``[DONE]``: an SSE event, a JSON
    Lines line, or the last element of a JSON array) was recorded: the stream was not cut
    off, so a turn without a finish reason ended cleanly (see ``LLMStreamBuffer.end``).
    """

    ended: bool = False


def captured(chunks: list[Any], ended: bool) -> Capture:
    """``chunks`` as a :class:`Capture` that ``ended`` (or not) with the stream's own end."""
    capture = Capture(chunks)
    capture.ended = ended
    return capture


def ends_with_done(stream: list[Any]) -> bool:
    """Whether a recorded array of chunks ends with the ``[DONE]`` sentinel (then dropped)."""
    if stream and isinstance(stream[-1], str) and stream[-1].strip() == DONE:
        stream.pop()
        return True
    return False


@frozen
class ServerSentEvent:
    """One dispatched event: its type (``message`` when unnamed) and its data text."""

    event: str
    data: str


class SSEDecoder:
    """Incremental event-stream decoder: feed bytes, get the events they complete."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._line: list[str] = []
        self._after_cr = False
        self._event = ""
        self._data: list[str] = []

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """Decode ``data``; return every event whose blank line has now arrived."""
        try:
            text = self._utf8.decode(data)
        except UnicodeDecodeError as exc:
            raise CaptureError(f"the event stream is not UTF-8: {exc}") from None
        return list(self._text(text))

    def close(self) -> list[ServerSentEvent]:
        """The stream ended: flush; an event without its closing blank line is read too."""
        try:
            tail = self._utf8.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise CaptureError(f"the event stream ends inside a UTF-8 character: {exc}") from None
        events = list(self._text(tail))
        if self._line:
            self._field("".join(self._line))
            self._line = []
        last = self._field("")
        if last is not None:
            events.append(last)
        return events

    def _text(self, text: str) -> Iterator[ServerSentEvent]:
        if not text:
            return
        start = 1 if self._after_cr and text[0] == "\n" else 0
        for match in _LINE_BREAK.finditer(text, start):
            self._line.append(text[start : match.start()])
            start = match.end()
            line = "".join(self._line)
            self._line = []
            event = self._field(line)
            if event is not None:
                yield event
        self._after_cr = text.endswith("\r")
        if start < len(text):
            self._line.append(text[start:])

    def _field(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = ServerSentEvent(self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def sse_chunks(pieces: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON chunks of an event stream delivered as ``pieces`` of bytes.

    An event that cannot be read becomes an :class:`UnreadableChunk` in its place.
    """
    return _sse_chunks(pieces)


def _sse_chunks(pieces: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    decoder = SSEDecoder()
    count = 0
    for piece in pieces:
        for event in decoder.feed(piece):
            count += 1
            chunk = _event_chunk(event, count)
            if chunk is not None:
                yield chunk
    for event in decoder.close():
        count += 1
        chunk = _event_chunk(event, count)
        if chunk is not None:
            yield chunk


def _event_chunk(event: ServerSentEvent, count: int) -> dict[str, Any] | None:
    if event.data.strip() == DONE:
        return None
    return read_chunk(event.data, f"event {count} ({event.event})")


class _DuplicateKeys(dict[str, Any]):
    """A JSON object that repeated a key (the repeated names are kept)."""

    repeated: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    marked = _DuplicateKeys(value)
    marked.repeated = [key for key, count in Counter(k for k, _ in pairs).items() if count > 1]
    return marked


def _repeated_keys(value: Any) -> list[str]:
    """The keys some object inside ``value`` repeats (it was parsed by :func:`_pairs`)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _DuplicateKeys):
            return item.repeated
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return []


def loads(text: str) -> Any:
    """JSON text as data; objects that repeat a key are marked for :func:`checked_chunk`."""
    return json.loads(text, object_pairs_hook=_pairs)


def checked_chunk(value: Any, where: str) -> dict[str, Any]:
    """One parsed chunk as it may enter a buffer, else an :class:`UnreadableChunk`.

    A chunk must be an object in which no object repeats a key.
    """
    if not isinstance(value, dict):
        return UnreadableChunk("malformed_chunk", f"{where}: not a JSON object: {value!r:.60}")
    repeated = _repeated_keys(value)
    if repeated:
        return UnreadableChunk(
            "duplicate_key", f"{where}: a JSON object repeats the key {repeated[0]!r}"
        )
    return value


def read_chunk(text: str, where: str) -> dict[str, Any]:
    """One chunk's JSON text as a chunk, or an :class:`UnreadableChunk` saying why not."""
    try:
        value = loads(text)
    except ValueError as exc:
        return UnreadableChunk("malformed_chunk", f"{where}: data is not JSON: {exc}")
    except RecursionError:
        return UnreadableChunk("malformed_chunk", f"{where}: its JSON nests too deeply to read")
    return checked_chunk(value, where)


def _looks_like_sse(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped.startswith(("data:", "event:", ":", "id:", "retry:"))
    return False


def _one_object(text: str) -> dict[str, Any] | None:
    """The capture as one JSON object, if that is what it is (not JSON Lines)."""
    if not text.startswith("{"):
        return None
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _fixture_chunks(value: dict[str, Any]) -> list[Any]:
    """A fixture's stream (its ``chunks`` or ``events``), or the one chunk the object is."""
    stream = value.get("chunks", value.get("events"))
    if stream is None:
        return [value]
    if not isinstance(stream, list):
        raise CaptureError("a fixture's 'chunks' or 'events' must be a JSON array")
    return stream


def load_capture(raw: bytes) -> Capture:
    """Chunks from a capture file's bytes: a JSON array, JSON Lines, raw SSE, or a fixture.

    A fixture (a JSON object with ``chunks`` or ``events``, as ``callgate check`` reads)
    gives its stream; a single JSON object on one line is one chunk. A leading
    byte-order mark is ignored. A capture that holds no chunk is an error.
    """
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaptureError(f"the capture is not UTF-8: {exc}") from None
    if not text.strip():
        raise CaptureError("the capture is empty")
    try:
        chunks = _chunks(raw, text)
    except RecursionError:
        raise CaptureError("the capture's JSON nests too deeply to read") from None
    if not chunks:
        raise CaptureError("the capture holds no chunk")
    return chunks


def _chunks(raw: bytes, text: str) -> Capture:
    """The chunks of a capture in whichever of the accepted forms it is."""
    stripped = text.lstrip()
    if _looks_like_sse(text):
        decoder = SSEDecoder()
        events = decoder.feed(raw) + decoder.close()
        chunks = [_event_chunk(e, n) for n, e in enumerate(events, 1)]
        ended = any(e.data.strip() == DONE for e in events)
        return captured([c for c in chunks if c is not None], ended)
    whole = _one_object(stripped)
    if whole is not None:
        chunks = _fixture_chunks(whole)
    elif stripped.startswith("["):
        try:
            value = loads(stripped)
        except ValueError as exc:
            raise CaptureError(f"the capture is not a JSON array: {exc}") from None
        if not isinstance(value, list):
            raise CaptureError("the capture must be a JSON array of objects")
        chunks = value
    else:
        # Lines end at CR, LF or CRLF only (never at U+2028 and the like, which JSON
        # strings may hold raw): str.splitlines would cut a chunk in two.
        lines = [
            (number, line) for number, line in enumerate(_LINE_BREAK.split(text), 1) if line.strip()
        ]
        ended = bool(lines) and lines[-1][1].strip() == DONE
        return captured(
            [read_chunk(line, f"line {n}") for n, line in lines[: len(lines) - ended]], ended
        )
    chunks = list(chunks)
    ended = ends_with_done(chunks)
    for position, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            raise CaptureError(f"chunk {position} is not a JSON object")
    return captured(
        [checked_chunk(chunk, f"chunk {position}") for position, chunk in enumerate(chunks)],
        ended,
    )
