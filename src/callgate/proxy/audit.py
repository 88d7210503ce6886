"""The proxy's audit log: one JSON line per turn, in files that rotate with a size bound.

A record holds what is needed to play the turn again exactly: the upstream's raw bytes
(as text, or base64 when they are not UTF-8), the request's ``model``, ``tools`` and
``tool_choice`` (its ``messages`` only when asked), the proxy's options; and what the
engine decided: the verdict, the findings, the formats read, the calls sent, the most
text held, timings. :func:`reproduce` plays a record's stream through a fresh engine;
``callgate replay`` reads a record file with it. Writing never raises into a request:
an audit failure is logged and the turn goes on.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from callgate.proxy.engine import BLOCKED_MODES, GatedCore, GatedTurn, Options
from callgate.proxy.sse import SSEReader

__all__ = ["AUDIT_FILE", "AuditLog", "load_records", "options_of", "reproduce", "same_turn"]

logger = logging.getLogger("callgate.proxy")

AUDIT_FILE = "callgate-audit.jsonl"
KEY = "callgate_audit"
"""The key every record carries (its format's version), by which readers know one."""
_REQUEST_KEYS = ("model", "tools", "tool_choice", "stream", "n")


class _Gated(Protocol):
    """A finished gated turn of either wire (what a record is written from)."""

    wire: str
    options: Options

    def audit(self) -> dict[str, Any]:
        """The engine's account of the turn."""


class AuditLog:
    """Appends records to ``DIR/callgate-audit.jsonl``; past ``max_bytes`` it rotates.

    Rotation renames the file to ``.1`` (and ``.1`` to ``.2``, …), keeping ``files`` of
    them: the log never holds more than about ``(files + 1) * max_bytes``. One lock per
    log: a server's threads and tasks write whole lines.
    """

    def __init__(
        self, directory: Path, *, max_bytes: int, files: int, messages: bool = False
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / AUDIT_FILE
        self.max_bytes = max_bytes
        self.files = files
        self.messages = messages
        self._lock = threading.Lock()
        self._out = self.path.open("ab")

    def write(
        self,
        turn: _Gated,
        *,
        raw: bytes,
        request: Mapping[str, Any],
        timings: Mapping[str, Any],
        how: str,
    ) -> None:
        """Append the record of a finished turn (failures are logged, never raised)."""
        try:
            line = json.dumps(
                record(turn, raw, request=request, timings=timings, how=how, messages=self.messages)
            )
            self._append(line.encode("utf-8") + b"\n")
        except Exception:  # the audit must never break a request
            logger.exception("callgate proxy: an audit record could not be written")

    def _append(self, line: bytes) -> None:
        with self._lock:
            out = self._file()
            if out.tell() + len(line) > self.max_bytes and out.tell() > 0:
                self._rotate()
                out = self._file()
            out.write(line)
            out.flush()

    def _file(self) -> Any:
        """The open log file; after a failure closed it, opened again (its folder made anew).

        A rotation that failed (its directory was removed under the server) leaves the
        file closed; the next record reopens it instead of the log staying shut for good.
        """
        if self._out.closed:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._out = self.path.open("ab")
        return self._out

    def _rotate(self) -> None:
        self._out.close()
        oldest = self.path.with_name(f"{AUDIT_FILE}.{self.files}")
        if oldest.exists():
            oldest.unlink()
        for n in range(self.files - 1, 0, -1):
            older = self.path.with_name(f"{AUDIT_FILE}.{n}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{AUDIT_FILE}.{n + 1}"))
        if self.files > 0:
            os.replace(self.path, self.path.with_name(f"{AUDIT_FILE}.1"))
        else:
            self.path.unlink()
        self._out = self.path.open("ab")

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._out.close()


def record(
    turn: _Gated,
    raw: bytes,
    *,
    request: Mapping[str, Any],
    timings: Mapping[str, Any],
    how: str,
    messages: bool,
) -> dict[str, Any]:
    """One turn's audit record (see the module's docstring)."""
    try:
        stream, encoding = raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        stream, encoding = base64.b64encode(raw).decode("ascii"), "base64"
    kept = {k: request[k] for k in _REQUEST_KEYS if k in request}
    if messages:
        kept["messages"] = request.get("messages")
    options = turn.options
    return {
        KEY: 1,
        "time": time.time(),
        "served": how,
        "request": kept,
        "options": {
            "on_blocked": options.on_blocked,
            "repairs": options.repairs,
            "stream_args": options.stream_args,
            "move_reasoning": options.move_reasoning,
            "text_formats": list(options.text_formats)
            if options.text_formats is not None
            else None,
        },
        "stream": stream,
        "stream_encoding": encoding,
        "turn": turn.audit(),
        "timings": dict(timings),
    }


def load_records(text: str) -> list[dict[str, Any]]:
    """The audit records of a log file's text (lines that are not records are skipped)."""
    found = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and KEY in item:
            found.append(item)
    return found


def options_of(item: Mapping[str, Any]) -> Options:
    """The proxy options a record was written under."""
    given = item.get("options") or {}
    mode = given.get("on_blocked", "notice")
    formats = given.get("text_formats")
    return Options(
        on_blocked=mode if mode in BLOCKED_MODES else "notice",
        repairs=int(given.get("repairs", 1)),
        stream_args=bool(given.get("stream_args", False)),
        move_reasoning=bool(given.get("move_reasoning", False)),
        text_formats=tuple(formats) if formats is not None else None,
    )


def raw_stream(item: Mapping[str, Any]) -> bytes:
    """The upstream's bytes as recorded."""
    stream = str(item.get("stream", ""))
    if item.get("stream_encoding") == "base64":
        return base64.b64decode(stream)
    return stream.encode("utf-8")


def reproduce(item: Mapping[str, Any]) -> dict[str, Any]:
    """Play a record's upstream stream through a fresh engine: its audit, as recorded.

    The result's ``turn`` equals the record's ``turn`` except the fresh ids of calls read
    from text and the timings (``cpu_us``); ``output`` is what the client received.
    """
    request = dict(item.get("request") or {})
    wire = (item.get("turn") or {}).get("wire", "openai")
    attempt = int((item.get("turn") or {}).get("attempt", 0))
    turn = _engine(wire, request, options_of(item), attempt)
    data = raw_stream(item)
    output: list[dict[str, Any]] = []
    if request.get("stream") is True and b"data:" in data:
        reader = SSEReader()
        for event in [*reader.feed(data), *reader.close()]:
            output += turn.feed_event(event)
        output += turn.finish()
    else:
        try:
            body = json.loads(data) if data else None
        except ValueError:
            body = None
        output += turn.whole_chunks(body)
    return {"turn": turn.audit(), "output": output}


def _engine(wire: str, request: Mapping[str, Any], options: Options, attempt: int) -> GatedCore:
    if wire == "anthropic":
        from callgate.proxy.messages import GatedMessages

        return GatedMessages(request, options, attempt=attempt)
    return GatedTurn(request, options, attempt=attempt)


def same_turn(recorded: Mapping[str, Any], again: Mapping[str, Any]) -> bool:
    """Whether a replayed turn is the recorded one: all but timings and fresh text-call ids."""

    def comparable(turn: Mapping[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in turn.items() if k != "cpu_us"}
        kept["calls"] = [
            {k: v for k, v in c.items() if k != "id" or c.get("source") == "native"}
            for c in turn.get("calls", [])
        ]
        return kept

    return comparable(recorded) == comparable(again)
