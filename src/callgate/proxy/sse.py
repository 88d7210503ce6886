r"""Server-sent events in and out: the upstream's bytes into events, chunks into ``data:`` lines.

:class:`SSEReader` is incremental (bytes as they arrive, cut anywhere, a line split over
reads, ``\r\n``, ``\r`` or ``\n`` line ends, one leading BOM dropped) and follows the
event-stream rules: ``data:`` lines join with newlines and an empty line ends the event;
comments and unknown fields are skipped. Each event's data is decoded as strict UTF-8.
:func:`encode` writes one chunk as one event whose payload is a single line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from attrs import frozen

DONE = "[DONE]"


@frozen
class SSEEvent:
    """One event: its name (``message`` unless told) and its data, or why it is unreadable."""

    name: str
    data: str
    broken: str | None = None
    """Why the data could not be read (not UTF-8), else None."""


class SSEReader:
    """Turns the bytes of an event stream, in reads cut anywhere, into :class:`SSEEvent` s."""

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []
        self._name = b""
        self._started = False
        self._cr = False
        """The last read ended in a carriage return: a line feed opening the next read is its."""

    def feed(self, data: bytes) -> Iterator[SSEEvent]:
        """The events completed by ``data``."""
        if not self._started:
            data = self._pending + data
            self._pending = b""
            if len(data) < 3 and b"\xef\xbb\xbf".startswith(data):
                self._pending = data
                return
            self._started = True
            data = data.removeprefix(b"\xef\xbb\xbf")
        if not data:
            return
        if self._cr and data.startswith(b"\n"):
            data = data[1:]
        self._cr = False
        buffer = self._pending + data
        start = 0
        size = len(buffer)
        while start < size:
            lf = buffer.find(b"\n", start)
            cr = buffer.find(b"\r", start, lf if lf >= 0 else size)
            if cr >= 0:
                end, after = cr, cr + 1
                if after < size and buffer[after] == 10:
                    after += 1
                elif after == size:
                    self._cr = True
            elif lf >= 0:
                end, after = lf, lf + 1
            else:
                break
            event = self._line(buffer[start:end])
            if event is not None:
                yield event
            start = after
        self._pending = buffer[start:]

    def events(self, data: bytes) -> list[SSEEvent]:
        """:meth:`feed`'s events as a list, in one pass over ``data``'s lines.

        The proxy reads every upstream read with it: a read without a carriage return (what
        model servers write) is split once on line feeds, each ``data:`` line taken in
        place; anything else goes through :meth:`feed`.
        """
        if self._cr or not self._started or b"\r" in data:
            return list(self.feed(data))
        lines = (self._pending + data if self._pending else data).split(b"\n")
        self._pending = lines.pop()
        out: list[SSEEvent] = []
        pieces = self._data
        for line in lines:
            if line[:5] == b"data:":
                pieces.append(line[6:] if line[5:6] == b" " else line[5:])
            elif not line:
                if pieces:
                    out.append(self._dispatch())
                    pieces = self._data
            else:
                self._line(line)
        return out

    def frames(self, data: bytes, *, named: bool = False) -> list[bytes] | None:
        r"""``data``'s events as their ``data: `` lines, when that is all it holds; else None.

        The common read of a model server: whole events of one ``data: `` line each, ended
        by an empty line, nothing left over from the read before. The lines are returned
        without their line ends (``data`` is those lines each followed by ``\n\n``) and the
        reader stays where it was; any other read (a cut event, a comment, an ``event:``
        line, a carriage return) is None: read it with :meth:`events`. ``named``: an event
        may also be an ``event: `` line and then its one ``data: `` line (Anthropic's and
        the Responses API's shape), returned as those two lines.
        """
        if (
            self._pending
            or self._data
            or self._name
            or self._cr
            or data[-2:] != b"\n\n"
            or b"\r" in data
        ):
            return None
        if not self._started:
            if data[:1] == b"\xef":  # perhaps a BOM: feed() drops it
                return None
            self._started = True
        frames = data.split(b"\n\n")
        frames.pop()
        for frame in frames:
            if frame[:6] == b"data: ":
                if b"\n" in frame:
                    return None
            elif (
                not named
                or frame[:7] != b"event: "
                or frame.count(b"\n") != 1
                or b"\ndata: " not in frame
            ):
                return None
        return frames

    def close(self) -> Iterator[SSEEvent]:
        """The end of the stream: an event still open without its empty line is dispatched."""
        if self._pending:
            event = self._line(self._pending)
            self._pending = b""
            if event is not None:
                yield event
        if self._data:
            yield self._dispatch()

    def _line(self, line: bytes) -> SSEEvent | None:
        if not line:
            return self._dispatch() if self._data else None
        if line.startswith(b":"):
            return None
        field, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._name = value
        return None

    def _dispatch(self) -> SSEEvent:
        raw = b"\n".join(self._data)
        name = self._name
        self._data, self._name = [], b""
        return event_of(raw, name)


def event_of(data: bytes, name: bytes = b"") -> SSEEvent:
    """The event whose data is ``data`` (named ``name``, else ``message``), decoded as UTF-8."""
    try:
        return SSEEvent(name.decode("utf-8") or "message", data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return SSEEvent(name.decode("utf-8", "replace") or "message", "", f"not UTF-8: {exc}")


def encode(chunk: Any, event: str | None = None) -> bytes:
    """One chunk as one event: ``data: <json>`` on one line, then the empty line."""
    try:
        payload = json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a string: the escaped form is valid
        payload = json.dumps(chunk, separators=(",", ":")).encode("ascii")
    head = b"event: " + event.encode("utf-8") + b"\n" if event else b""
    return head + b"data: " + payload + b"\n\n"


DONE_EVENT = b"data: [DONE]\n\n"
