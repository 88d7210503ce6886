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

import ast
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
    _PyReader,
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


_PY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PY_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PY_ESCAPES = {
    "\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b",
    "f": "\f", "v": "\v",
}  # fmt: skip
"""The one-character escapes a growing string reads itself (any other waits for its end)."""
_PY_STOP = re.compile(r"[\\\n\r'\"]")


class _ValueScan:
    """Where a Python value ends (its ``,`` or ``)`` at depth 0), read a piece at a time.

    Strings (any quotes, escapes), brackets and comments are stepped over.
    """

    __slots__ = ("at", "comment", "depth", "escape", "quote")

    def __init__(self) -> None:
        self.at = 0
        self.depth = 0
        self.quote = ""
        self.escape = False
        self.comment = False

    def end(self, buf: str) -> int:
        """Where in ``buf`` the value ends (-1: not yet; -2: a bracket it cannot hold)."""
        at = self.at
        size = len(buf)
        while at < size:
            char = buf[at]
            if self.comment:
                self.comment = char != "\n"
            elif self.quote:
                if self.escape:
                    self.escape = False
                elif char == "\\":
                    self.escape = True
                elif buf.startswith(self.quote, at):
                    at += len(self.quote) - 1
                    self.quote = ""
                elif char in "'\"" and len(self.quote) == 3 and size - at < 3:
                    break  # a triple quote's end may be arriving
            elif char in "'\"":
                if size - at < 3 and buf[at:] == char * (size - at):
                    break  # one, two or three quotes: not decided yet
                self.quote = char * 3 if buf.startswith(char * 3, at) else char
                at += len(self.quote) - 1
            elif char == "#":
                self.comment = True
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                if self.depth == 0:
                    return at if char == ")" else -2
                self.depth -= 1
            elif char == "," and self.depth == 0:
                return at
            at += 1
        self.at = at
        return -1


def _py_value(raw: str) -> tuple[bool, Any]:
    """A whole value's source as the pythonic parser reads it: (True, value), or (False, None)."""
    text = raw.strip()
    try:
        node = ast.parse(text, mode="eval").body
        return True, _PyReader(text).value(node, 1)
    except (_Malformed, SyntaxError, RecursionError, MemoryError, ValueError, OverflowError):
        return False, None


class _Pythonic(_Reader):
    """``[name(key='text', n=1), ...]``: a string value grows, any other appears whole."""

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        self.state = "head"
        self.key = ""
        self.raw: list[str] = []
        """The current value's source so far (a string's: from its first quote)."""
        self.shown: list[str] = []
        """What of the current string value was shown."""
        self.quote = ""
        self.scan = _ValueScan()

    def step(self) -> bool:
        state = self.state
        if state == "string":
            return self._string()
        if state == "value_tail":
            return self._tail()
        buf = self.buf[_skip(self.buf, 0) :]
        self.buf = buf
        if not buf:
            return False
        if state == "head":
            if buf[0] != "[":
                self.broken = True
                return False
            self.buf, self.state = buf[1:], "call"
        elif state == "call":
            name = self.until("(")
            if name is None:
                self.broken = any(c in self.buf for c in ")],=")
                return False
            name = name.strip()
            if _PY_NAME.fullmatch(name) is None or not _valid_name(name):
                self.broken = True
                return False
            self.calls.append(FormingCall(name))
            self.state = "arg_first"
        elif state in ("arg_first", "arg"):
            if buf[0] == ")":
                self.current.finish()
                self.buf, self.state = buf[1:], "after_call"
                return True
            key = self.until("=")
            if key is None:
                self.broken = any(c in self.buf for c in "),'\"")
                return False
            key = key.strip()
            if (
                _PY_KEY.fullmatch(key) is None
                or key in self.current.arguments
                or self.buf.startswith("=")
            ):
                self.broken = True
                return False
            self.key, self.state = key, "value"
        elif state == "value":
            return self._value(buf)
        elif state == "after_value":
            if buf[0] == ",":
                self.buf, self.state = buf[1:], "arg"
            elif buf[0] == ")":
                self.current.finish()
                self.buf, self.state = buf[1:], "after_call"
            else:
                self.broken = True
        elif state == "after_call":
            if buf[0] == ",":
                self.buf, self.state = buf[1:], "call"
            elif buf[0] == "]":
                self.buf, self.state = buf[1:], "done"
            else:
                self.broken = True
        else:  # done: only whitespace may follow the list
            self.broken = True
        return not self.broken

    def _value(self, buf: str) -> bool:
        self.raw, self.scan = [], _ValueScan()
        quote = buf[0]
        if quote in "'\"":
            if len(buf) < 3:
                return False  # a string, an empty one or a triple-quoted one: not decided yet
            if buf[1] != quote:
                self.current.open_string(self.key)
                self.raw, self.shown, self.quote = [quote], [], quote
                self.buf, self.state = buf[1:], "string"
                return True
        self.state = "value_tail"
        return True

    def _string(self) -> bool:
        """More of a plain quoted string: shown as it comes, up to anything it cannot decide."""
        buf, call = self.buf, self.current
        at = 0
        while True:
            match = _PY_STOP.search(buf, at)
            stop = len(buf) if match is None else match.start()
            if stop > at:
                call.text(buf[at:stop])
                self.shown.append(buf[at:stop])
            if match is None:
                self.raw.append(buf)
                self.buf = ""
                return False
            char = buf[stop]
            if char == "\\":
                if stop + 1 == len(buf):
                    self.raw.append(buf[:stop])
                    self.buf = buf[stop:]
                    return False
                decoded = _PY_ESCAPES.get(buf[stop + 1])
                if decoded is not None:
                    call.text(decoded)
                    self.shown.append(decoded)
                    at = stop + 2
                    continue
            elif char != self.quote and char in "'\"":  # the other quote: more text
                call.text(char)
                self.shown.append(char)
                at = stop + 1
                continue
            elif char == self.quote:
                self.raw.append(buf[: stop + 1])
                self.buf, self.state = buf[stop + 1 :], "value_tail"
                self.scan = _ValueScan()
                return True
            # any other escape, a newline, the other quote: the value is read whole at its end
            self.raw.append(buf[:stop])
            self.buf, self.state = buf[stop:], "value_tail"
            self.scan = _ValueScan()
            self.scan.quote = self.quote
            return True

    def _tail(self) -> bool:
        """The rest of a value, to its end; then read whole (a string: the rest of its text)."""
        buf = self.buf
        end = self.scan.end(buf)
        if end == -1:
            return False
        if end == -2:
            self.broken = True
            return False
        raw = "".join(self.raw) + buf[:end]
        self.buf, self.state = buf[end:], "after_value"
        ok, value = _py_value(raw)
        call = self.current
        if call._string is not None:
            shown = "".join(self.shown)
            if not ok or not isinstance(value, str) or not value.startswith(shown):
                self.broken = True
                return False
            call.text(value[len(shown) :])
            call.close_string()
        elif ok:
            call.put(self.key, value)
        else:
            self.broken = True
        return not self.broken


MARKUP_READERS: dict[str, type[_Reader]] = {
    "gemma_special": _Gemma,
    "deepseek": _DeepSeek,
    "pythonic": _Pythonic,
    "llama4_python": _Pythonic,
}
"""The formats of this module whose calls show their arguments while the block is open."""
