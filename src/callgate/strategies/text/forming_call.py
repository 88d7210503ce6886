"""A call forming in an open text block, and the base of the formats' incremental readers.

:class:`FormingCall` holds one call's name, id, arguments so far and their JSON text;
``_Reader`` is what each format's reader builds on (see
:mod:`callgate.strategies.text.forming` for the formats and the block's reader).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from callgate.gate.partialjson import PartialJSON, Pieces, Shot, TextLog, decoded
from callgate.strategies.text.base import Schemas
from callgate.strategies.text.coerce import coerce, property_types

__all__ = ["FormingCall"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_WS = re.compile(r"[ \t\n\r]*")
_BAD_NAME = re.compile(r"[\s<>{}\[\]()\"'`,;=]")


def _valid_name(name: str) -> bool:
    return bool(name) and _BAD_NAME.search(name) is None


def _undecided(rest: str, tokens: Iterable[str]) -> bool:
    """Whether ``rest`` (the end of what arrived) may still grow into one of ``tokens``."""
    return any(len(rest) < len(t) and t.startswith(rest) for t in tokens if t)


class FormingCall:
    """One call of an open block: its name, id, arguments so far, and their JSON text."""

    __slots__ = (
        "_json", "_pieces", "_size", "_string", "arguments", "complete", "id", "log", "name",
    )  # fmt: skip

    def __init__(self, name: str, call_id: str | None = None) -> None:
        self.name = name
        self.id = call_id
        self.arguments: dict[str, Any] = {}
        self.complete = False
        self.log = TextLog()
        """The arguments as JSON text so far (``json.dumps`` of the final, cut at its end)."""
        self._string: str | None = None
        self._pieces: list[str] = []
        self._size = 0
        self._json: PartialJSON | None = None
        self.log.append("{")

    def shot(self) -> Shot:
        """The arguments now (O(1) to take; see :data:`~callgate.gate.partialjson.Shot`)."""
        if self._json is not None:
            return self._json.shot()
        string = (self._pieces, self._size, self._string) if self._string is not None else None
        return ((self.arguments, len(self.arguments)),), string

    def _key(self, key: str) -> None:
        comma = ", " if self.arguments else ""
        self.log.append(comma + json.dumps(key, ensure_ascii=False) + ": ")

    def open_string(self, key: str) -> None:
        """A string value starts under ``key``; its text grows with :meth:`text`."""
        self._key(key)
        self.log.append('"')
        self._string, self._pieces, self._size = key, Pieces(), 0

    def text(self, chars: str) -> None:
        """More text of the open string value."""
        if chars:
            escaped = json.dumps(chars, ensure_ascii=False)[1:-1]  # pieces are JSON text
            self._pieces.append(escaped)
            self._size += len(escaped)
            self.log.append(escaped)

    def close_string(self) -> None:
        """The open string value is whole."""
        key = self._string
        assert key is not None
        pieces = self._pieces
        self.arguments[key] = decoded(pieces[0] if len(pieces) == 1 else "".join(pieces))
        self._string, self._pieces, self._size = None, [], 0
        self.log.append('"')

    def put(self, key: str, value: Any) -> None:
        """A whole value (typed at its close tag)."""
        self._key(key)
        self.arguments[key] = value
        self.log.append(json.dumps(value, ensure_ascii=False))

    def finish(self) -> None:
        """The call's arguments are whole."""
        self.complete = True
        self.log.append("}")


class _Reader:
    """A format's incremental reader: what is not decided yet waits in :attr:`buf`."""

    close = ""

    name = ""

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        self.schemas = schemas
        self.close = close
        self.buf = ""
        self.searched = 0
        """How much of :attr:`buf` :meth:`until` has searched without finding its token."""
        self.calls: list[FormingCall] = []
        self.broken = False

    def feed(self, text: str) -> None:
        if self.broken:
            return
        if _SURROGATE.search(text):
            self.broken = True
            return
        self.buf += text
        while not self.broken and self.step():
            pass

    def step(self) -> bool:
        """Read what can be decided from :attr:`buf`; False once it needs more text."""
        raise NotImplementedError

    def expect(self, tokens: tuple[str, ...]) -> str | None:
        """Skip whitespace and take one of ``tokens``; None: wait (or broken)."""
        buf = self.buf
        at = _skip(buf, 0)
        rest = buf[at:]
        for token in tokens:
            if rest.startswith(token):
                self.buf = rest[len(token) :]
                return token
        self.buf = rest
        if rest and not _undecided(rest, (*tokens, self.close)):
            self.broken = True
        return None

    def until(self, token: str) -> str | None:
        """The text before ``token`` (taken with it), or None while ``token`` has not come.

        What was searched already is not searched again (a long name costs O(its size)).
        """
        buf = self.buf
        at = buf.find(token, max(self.searched - len(token) + 1, 0))
        if at < 0:
            self.searched = len(buf)
            return None
        text, self.buf = buf[:at], buf[at + len(token) :]
        self.searched = 0
        return text

    @property
    def current(self) -> FormingCall:
        return self.calls[-1]

    def begin_value(self, key: str) -> bool:
        """A value under ``key`` starts; True when it grows as text (else typed at its end)."""
        call = self.current
        if not key or "<" in key or ">" in key or key in call.arguments:
            self.broken = True
            return False
        if self.raw_text(key):
            call.open_string(key)
            return True
        return False

    def raw_text(self, key: str) -> bool:
        """Whether the parser keeps the value under ``key`` as the text written (it grows)."""
        types = property_types(self.current.name, key, self.schemas)
        return types == ("string",) or (types is None and self.untyped_text)

    untyped_text = True
    """Whether the parser keeps a value the schema gives no type as its raw text."""

    def typed(self, key: str, raw: str) -> tuple[bool, Any]:
        """A value's raw text typed as the format's parser types it."""
        return coerce(self.current.name, key, raw, self.schemas)

    def end_value(self, key: str, raw: str, grows: bool) -> None:
        """The value's close tag: a growing string closes; any other is typed now."""
        call = self.current
        if grows:
            call.close_string()
            return
        ok, value = self.typed(key, raw)
        if ok:
            call.put(key, value)
        else:
            self.broken = True


def _held(buf: str, token: str) -> int:
    """How many characters at the end of ``buf`` may begin ``token``."""
    for keep in range(min(len(buf), len(token) - 1), 0, -1):
        if token.startswith(buf[-keep:]):
            return keep
    return 0


def _skip(text: str, at: int) -> int:
    match = _WS.match(text, at)
    return match.end() if match else at
