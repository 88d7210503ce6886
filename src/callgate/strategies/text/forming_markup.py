"""Forming calls of Gemma 4's and DeepSeek's token formats, as the bytes arrive.

Each reader follows its parser in :mod:`callgate.strategies.text.markup_payloads` a piece
at a time and shows only what the parser will make of the whole payload (a prefix, see
:func:`callgate.gate.partialjson.is_prefix`):

- ``gemma_special``: ``call:NAME{key:<|"|>text<|"|>,n:3,...}``. A top-level string value
  grows as its text arrives (up to a possible start of its closing ``<|"|>``); a number,
  word, object or array appears whole once the character after it says it ended.
- ``deepseek`` (V3 and V3.1): each ``<|tool▁call▁begin|>`` entry's name, then its JSON
  arguments (after ``<|tool▁sep|>``, or after V3's ``function`` line and fence) through an
  incremental JSON reader; the call is complete at its ``<|tool▁call▁end|>``.

Where the payload stops being the format's syntax the reader stops (``broken``).
"""

from __future__ import annotations

import re
from typing import Any

from callgate.gate.partialjson import PartialJSON, TextLog
from callgate.strategies.text._markup_common import _Malformed
from callgate.strategies.text.base import Schemas
from callgate.strategies.text.forming_call import (
    FormingCall,
    _held,
    _Reader,
    _skip,
    _valid_name,
)
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    GEMMA_STRING,
    SEP,
    _gemma_object,
)

__all__ = ["MARKUP_READERS"]

_GEMMA_CALL = "call:"
_GEMMA_BARE_KEY = re.compile(r"[^\s:,{}\[\]<>\"']+")
_GEMMA_QUOTED_KEY = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_TOKEN_END = re.compile(r"[,}\] \t\n\r]")
"""What may follow a number or a word: where the token is whole."""
_MAX_KEY = 1024
"""A quoted key still open past this many characters is not read while the block is open."""


def _gemma_value(raw: str) -> tuple[bool, Any]:
    """A whole Gemma value's text read as the parser reads it: (True, value) or (False, None)."""
    try:
        holder, end = _gemma_object("{v:" + raw + "}", 0)
    except _Malformed:
        return False, None
    return (end == len(raw) + 4, holder.get("v"))


class _Gemma(_Reader):
    """``call:NAME{key:value,...}``: one call per block (see the module)."""

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        self.state = "head"
        self.key = ""
        self.depth = 0
        self.scanned = 0
        self.in_string = False

    def step(self) -> bool:
        state = self.state
        if state == "string":
            return self._string()
        if state == "container":
            return self._container()
        buf = self.buf[_skip(self.buf, 0) :]
        self.buf = buf
        if not buf:
            return False
        if state == "head":
            if not buf.startswith(_GEMMA_CALL):
                self.broken = not _GEMMA_CALL.startswith(buf)
                return False
            self.buf, self.state = buf[len(_GEMMA_CALL) :], "name"
        elif state == "name":
            name = self.until("{")
            if name is None:
                return False
            if not _valid_name(name):
                self.broken = True
                return False
            self.calls.append(FormingCall(name))
            self.state = "first"
        elif state in ("first", "key"):
            if state == "first" and buf[0] == "}":
                return self._finish(buf)
            return self._key(buf)
        elif state == "colon":
            if buf[0] != ":" or self.key in self.current.arguments:
                self.broken = True
                return False
            self.buf, self.state = buf[1:], "value"
        elif state == "value":
            return self._value(buf)
        elif state == "after":
            if buf[0] == ",":
                self.buf, self.state = buf[1:], "key"
            elif buf[0] == "}":
                return self._finish(buf)
            else:
                self.broken = True
        else:  # done: only whitespace may follow the call
            self.broken = True
        return not self.broken

    def _finish(self, buf: str) -> bool:
        self.current.finish()
        self.buf, self.state = buf[1:], "done"
        return True

    def _key(self, buf: str) -> bool:
        if buf.startswith(GEMMA_STRING):
            end = buf.find(GEMMA_STRING, len(GEMMA_STRING))
            if end < 0:
                return False
            key, rest = buf[len(GEMMA_STRING) : end], buf[end + len(GEMMA_STRING) :]
            if not key:
                self.broken = True
                return False
        elif GEMMA_STRING.startswith(buf):
            return False
        elif buf[0] == '"':
            match = _GEMMA_QUOTED_KEY.match(buf)
            if match is None:
                self.broken = len(buf) > _MAX_KEY
                return False
            ok, key = _gemma_value(match.group())
            if not ok or not isinstance(key, str) or not key:
                self.broken = True
                return False
            rest = buf[match.end() :]
        else:
            match = _GEMMA_BARE_KEY.match(buf)
            if match is None:
                self.broken = True
                return False
            if match.end() == len(buf):
                return False  # the key may go on
            key, rest = match.group(), buf[match.end() :]
        self.key, self.buf, self.state = key, rest, "colon"
        return True

    def _value(self, buf: str) -> bool:
        if buf.startswith(GEMMA_STRING):
            self.current.open_string(self.key)
            self.buf, self.state = buf[len(GEMMA_STRING) :], "string"
            return True
        if GEMMA_STRING.startswith(buf):
            return False
        if buf[0] in "{[":
            self.depth, self.scanned, self.in_string = 0, 0, False
            self.state = "container"
            return True
        end = _TOKEN_END.search(buf)
        if end is None:
            return False  # the number or word may go on
        ok, value = _gemma_value(buf[: end.start()])
        if not ok or isinstance(value, dict | list):
            self.broken = True
            return False
        self.current.put(self.key, value)
        self.buf, self.state = buf[end.start() :], "after"
        return True

    def _string(self) -> bool:
        buf, call = self.buf, self.current
        end = buf.find(GEMMA_STRING)
        if end < 0:
            keep = _held(buf, GEMMA_STRING)
            call.text(buf[: len(buf) - keep])
            self.buf = buf[len(buf) - keep :]
            return False
        call.text(buf[:end])
        call.close_string()
        self.buf, self.state = buf[end + len(GEMMA_STRING) :], "after"
        return True

    def _container(self) -> bool:
        """Scan a nested object or array to its close (strings skipped), then read it whole."""
        buf, at = self.buf, self.scanned
        while at < len(buf):
            if self.in_string:
                end = buf.find(GEMMA_STRING, at)
                if end < 0:
                    self.scanned = max(at, len(buf) - len(GEMMA_STRING) + 1)
                    return False
                self.in_string, at = False, end + len(GEMMA_STRING)
                continue
            char = buf[at]
            if buf.startswith(GEMMA_STRING, at):
                self.in_string, at = True, at + len(GEMMA_STRING)
                continue
            if char == "<" and GEMMA_STRING.startswith(buf[at:]):
                break  # a string's token may be arriving
            if char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth == 0:
                    ok, value = _gemma_value(buf[: at + 1])
                    if not ok:
                        self.broken = True
                        return False
                    self.current.put(self.key, value)
                    self.buf, self.state = buf[at + 1 :], "after"
                    return True
            at += 1
        self.scanned = at
        return False


class _DeepSeek(_Reader):
    """Entries ``<|tool▁call▁begin|>…<|tool▁call▁end|>``, V3 or V3.1 (see the module)."""

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        self.state = "head"
        self.head = ""
        self.fenced = False
        self.json = PartialJSON(trailing=False)

    def step(self) -> bool:
        state = self.state
        if state == "args":
            return self._arguments()
        if state == "head":
            if self.expect((CALL_BEGIN,)) is None:
                return False
            self.state = "sep"
        elif state == "sep":
            head = self.until(SEP)
            if head is None:
                self.broken = CALL_END in self.buf
                return False
            self.head, self.state = head, "kind"
        elif state == "kind":
            buf = self.buf[_skip(self.buf, 0) :]
            if not buf:
                return False
            if buf[0] == "{":
                self.fenced = False
                self.buf = buf
                return self._start(self.head)
            if self.head != "function":
                self.broken = True
                return False
            self.state = "name"
        elif state == "name":
            name = self.until("\n")
            if name is None:
                return False
            self.fenced = True
            if not _valid_name(name):
                self.broken = True
                return False
            self.head, self.state = name, "fence"
        elif state == "fence":
            if self.expect(("```json",)) is None:
                return False
            return self._start(self.head)
        elif state == "fence_close":
            if self.expect(("```",)) is None:
                return False
            self.state = "end"
        else:  # end
            if self.expect((CALL_END,)) is None:
                return False
            self.current.complete = True
            self.state = "head"
        return True

    def _start(self, name: str) -> bool:
        if not _valid_name(name):
            self.broken = True
            return False
        call = FormingCall(name)
        call.log = TextLog()
        self.json = call._json = PartialJSON(trailing=False)
        self.calls.append(call)
        self.state = "args"
        return True

    def _arguments(self) -> bool:
        buf, reader, call = self.buf, self.json, self.current
        taken = reader.take(buf)
        call.log.append(buf[:taken])
        if reader.broken:
            self.broken = True
            return False
        if not reader.complete:
            self.buf = ""
            return False
        self.buf = buf[taken:]
        self.state = "fence_close" if self.fenced else "end"
        return True


MARKUP_READERS: dict[str, type[_Reader]] = {"gemma_special": _Gemma, "deepseek": _DeepSeek}
"""The token formats whose calls show their arguments while the block is open."""
