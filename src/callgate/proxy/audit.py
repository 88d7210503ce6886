"""The proxy's audit log: one JSON line per turn, in files that rotate with a size bound.

A record holds what is needed to play the turn again exactly: the upstream's raw bytes
(as text, or base64 when they are not UTF-8), the request's ``model``, ``tools`` and
``tool_choice`` (its ``messages`` only when asked), the proxy's options, the rewrites the
request's normalization made (:mod:`callgate.proxy.normalize`); and what the
engine decided: the verdict, the findings, the formats read, the calls sent, the most
text held, timings. :func:`reproduce` plays a record's stream through a fresh engine;
``callgate replay`` reads a record file with it. Writing never raises into a request:
an audit failure is logged and the turn goes on.

Each distinct ``tools`` list is written once per file, as a line of its own
(``{"callgate_audit": 1, "tool_set": HASH, "tools": [...]}``) before the first turn that
uses it; a turn's request then names it (``"tool_set": HASH``) instead of repeating it. A
file that rotated starts its tool sets anew, so each file reads on its own;
:func:`load_records` puts the tools back into each turn's request, and reads older logs,
whose turns carry their tools inline, as they are.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from callgate.proxy.engine import BLOCKED_MODES, ENGINES, GatedCore, Options
from callgate.proxy.sse import SSEReader

__all__ = [
    "AUDIT_FILE",
    "AuditLog",
    "load_records",
    "options_of",
    "raw_stream",
    "reproduce",
    "same_turn",
    "tool_set_hash",
    "turn_id",
]

logger = logging.getLogger("callgate.proxy")

AUDIT_FILE = "callgate-audit.jsonl"
KEY = "callgate_audit"
"""The key every record carries (its format's version), by which readers know one."""
_REQUEST_KEYS = ("model", "tools", "tool_choice", "stream", "n")
TOOL_SET = "tool_set"
"""The key of a tool-set line's hash, and of a turn's reference to it."""
_FIRST_ID = re.compile(r'"id"\s*:\s*"([^"\\]{1,200})"')


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
        self._tool_sets: set[str] = set()
        """The tool sets already written in the current file."""

    @classmethod
    def configured(cls, config: Any) -> AuditLog | None:
        """The log a proxy or processor config asks for; None when it names no folder.

        ``config`` has ``audit_dir``, ``audit_max_bytes``, ``audit_files``, ``audit_messages``.
        """
        if config.audit_dir is None:
            return None
        return cls(
            config.audit_dir,
            max_bytes=config.audit_max_bytes,
            files=config.audit_files,
            messages=config.audit_messages,
        )

    def write(
        self,
        turn: _Gated,
        *,
        raw: bytes,
        request: Mapping[str, Any],
        timings: Mapping[str, Any],
        how: str,
        rewrites: Sequence[Mapping[str, str]] = (),
    ) -> None:
        """Append the record of a finished turn (failures are logged, never raised)."""
        try:
            item = record(
                turn,
                raw,
                request=request,
                timings=timings,
                how=how,
                messages=self.messages,
                rewrites=rewrites,
            )
            tools = item["request"].pop("tools", None)
            tool_set = None
            if tools is not None:
                digest = tool_set_hash(tools)
                item["request"][TOOL_SET] = digest
                defined = json.dumps({KEY: 1, TOOL_SET: digest, "tools": tools})
                tool_set = (digest, defined.encode("utf-8") + b"\n")
            self._append(json.dumps(item).encode("utf-8") + b"\n", tool_set)
        except Exception:  # the audit must never break a request
            logger.exception("callgate proxy: an audit record could not be written")

    def _append(self, line: bytes, tool_set: tuple[str, bytes] | None = None) -> None:
        """Write ``line``, after its tool set's line if this file does not hold it yet."""
        with self._lock:
            out = self._file()
            new = tool_set is not None and tool_set[0] not in self._tool_sets
            first = tool_set[1] if tool_set is not None and new else b""
            if out.tell() + len(first) + len(line) > self.max_bytes and out.tell() > 0:
                self._rotate()
                out = self._file()
            if out.tell() == 0 and tool_set is not None:  # a new file defines them anew
                self._tool_sets.clear()
                first = tool_set[1]
            if tool_set is not None:
                self._tool_sets.add(tool_set[0])
            out.write(first + line)
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
    rewrites: Sequence[Mapping[str, str]] = (),
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
    found = _FIRST_ID.search(stream) if encoding == "utf-8" else None
    return {
        KEY: 1,
        "time": time.time(),
        "served": how,
        "response_id": found.group(1) if found is not None else None,
        "request": kept,
        "options": {
            "on_blocked": options.on_blocked,
            "repairs": options.repairs,
            "stream_args": options.stream_args,
            "move_reasoning": options.move_reasoning,
            "repair_json": options.repair_json,
            "text_formats": list(options.text_formats)
            if options.text_formats is not None
            else None,
        },
        "stream": stream,
        "stream_encoding": encoding,
        "turn": turn.audit(),
        "rewrites": [dict(r) for r in rewrites],
        "timings": dict(timings),
    }


def tool_set_hash(tools: Any) -> str:
    """The hash that names a ``tools`` list in a log (of its canonical JSON)."""
    canonical = json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def load_records(text: str) -> list[dict[str, Any]]:
    """The turn records of a log file's text, each request with its tools put back.

    Lines that are not records are skipped; a turn naming a tool set the text does not
    define keeps its ``tool_set`` and gets no ``tools``.
    """
    found = []
    tool_sets: dict[str, Any] = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict) or KEY not in item:
            continue
        if "turn" not in item and isinstance(item.get(TOOL_SET), str):
            tool_sets[item[TOOL_SET]] = item.get("tools")
            continue
        request = item.get("request")
        if isinstance(request, dict) and request.get(TOOL_SET) in tool_sets:
            request = {k: v for k, v in request.items() if k != TOOL_SET}
            item["request"] = {**request, "tools": tool_sets[item["request"][TOOL_SET]]}
        found.append(item)
    return found


def turn_id(item: Mapping[str, Any]) -> str | None:
    """The id of the response a record's turn answered (its stream's first ``id``)."""
    recorded = item.get("response_id")
    if isinstance(recorded, str):
        return recorded
    found = (
        _FIRST_ID.search(str(item.get("stream", "")))
        if item.get("stream_encoding") != "base64"
        else None
    )
    return found.group(1) if found is not None else None


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
        repair_json=bool(given.get("repair_json", False)),
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


_ENGINE_OF = {"openai": "chat", "anthropic": "messages", "openai-responses": "responses"}
"""The engine that reads each recorded upstream wire (the record's ``turn.wire``)."""


def _engine(wire: str, request: Mapping[str, Any], options: Options, attempt: int) -> GatedCore:
    """The engine of the recorded upstream wire: the record holds that wire's request."""
    return ENGINES[_ENGINE_OF.get(wire, "chat")](request, options, attempt=attempt)


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
