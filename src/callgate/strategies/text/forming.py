"""Calls still forming in an open text block: their names and arguments as the bytes arrive.

Theory of operation: a :class:`BlockReader` is fed the payload of one open block piece by
piece and reads it with the incremental reader of the block's format (the payload's
first characters decide among the formats that share the block's opener, as the
parsers do at the close). Each reader keeps only the text it cannot decide yet (a tag
cut in two, a ``</parameter>`` whose meaning depends on what follows it, a newline that
the parser would strip), so the work per piece stays proportional to the piece.

What a :class:`FormingCall` shows is always a prefix of what the format's parser makes of
the whole block (see :func:`callgate.gate.partialjson.is_prefix`): a value grows as text
only when the tool's schema makes it a string (or gives it no type, where the parser
keeps the raw text); a value of any other type appears once its close tag is read, typed
as the parser types it. Where the payload stops being the format's call syntax the
reader stops growing (:attr:`BlockReader.broken`); it never raises. Alongside the value
each call keeps its arguments as JSON text (``json.dumps(arguments, ensure_ascii=False)``
cut at its current end), so a writer can send a converted call's argument deltas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from callgate.gate.partialjson import PartialJSON, TextLog
from callgate.strategies.text.base import Schemas
from callgate.strategies.text.coerce import coerce_types, property_types, strict_json_value
from callgate.strategies.text.forming_call import (
    FormingCall,
    _held,
    _Reader,
    _skip,
    _undecided,
    _valid_name,
)
from callgate.strategies.text.forming_json import JSON_READERS
from callgate.strategies.text.forming_markup import MARKUP_READERS
from callgate.strategies.text.invoke_payloads import INVOKE_TAGS
from callgate.strategies.text.token_payloads import (
    KIMI_ARGUMENTS,
    KIMI_CALL_BEGIN,
    KIMI_CALL_END,
)

__all__ = ["READABLE_FORMATS", "BlockReader", "FormingCall"]

_KIMI_ID = re.compile(r"(?:functions\.)?([^\s:<>{}\[\]()\"'`,;=]+):([0-9]+)")


class _Tagged(_Reader):
    """Shared by the formats whose values run to a close tag: the value's scanning."""

    value_close = ""
    strip_newlines = False

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        self.state = "head"
        self.key = ""
        self.grows = False
        self.first = True
        self.raw: list[str] = []

    def start_value(self, key: str) -> None:
        self.key, self.first, self.raw = key, True, []
        self.grows = self.begin_value(key)
        self.state = "value"

    def emit(self, text: str) -> None:
        if self.grows:
            self.current.text(text)
        else:
            self.raw.append(text)

    def value(self) -> bool:
        """Scan the value: show what is decided, keep what may still be markup."""
        buf = self.buf
        if self.first and self.strip_newlines:
            if not buf:
                return False
            if buf[0] == "\n":
                buf = buf[1:]
        self.first = False
        at = 0
        while True:
            lt = buf.find("<", at)
            if lt < 0:
                return self._hold(buf, len(buf))
            verdict = self.tag_in_value(buf, lt)
            if verdict is None:
                return self._hold(buf, lt)
            if verdict == "content":
                at = lt + 1
                continue
            if verdict == "broken":
                self.broken = True
                return False
            end = lt
            content = buf[:end]
            if self.strip_newlines and content.endswith("\n"):
                content = content[:-1]
            self.emit(content)
            self.buf = buf[end + len(self.value_close) :]
            self.end_value(self.key, "".join(self.raw), self.grows)
            self.state = "body"
            return True

    def _hold(self, buf: str, keep: int) -> bool:
        """Show ``buf`` up to ``keep`` (less a newline the parser may strip); keep the rest."""
        if self.strip_newlines and keep and buf[keep - 1] == "\n":
            keep -= 1
        self.emit(buf[:keep])
        self.buf = buf[keep:]
        return False

    def tag_in_value(self, buf: str, at: int) -> str | None:
        """What the ``<`` at ``at`` is: ``end``, ``content``, ``broken``, or None (not yet).

        ``end``: the value's close; ``broken``: markup that never sits in a value.
        """
        raise NotImplementedError


_FUNCTION_OPEN = "<function="
_FUNCTION_CLOSE = "</function>"
_PARAMETER_OPEN = "<parameter="
_PARAMETER_CLOSE = "</parameter>"


class _Qwen(_Tagged):
    """``<function=NAME><parameter=KEY>value</parameter></function>``, calls in a row."""

    value_close = _PARAMETER_CLOSE
    strip_newlines = True

    def step(self) -> bool:
        state = self.state
        if state == "value":
            return self.value()
        if state in ("head", "after"):
            if self.expect((_FUNCTION_OPEN,)) is None:
                return False
            self.state = "name"
        elif state in ("name", "key"):
            name = self.until(">")
            if name is None:
                return False
            if state == "name":
                if not _valid_name(name):
                    self.broken = True
                    return False
                self.calls.append(FormingCall(name))
                self.state = "body"
            elif any(c.isspace() for c in name):
                self.broken = True
            else:
                self.start_value(name)
        else:
            token = self.expect((_PARAMETER_OPEN, _FUNCTION_CLOSE))
            if token is None:
                return False
            if token == _FUNCTION_CLOSE:
                self.current.finish()
                self.state = "after"
            else:
                self.state = "key"
        return True

    def tag_in_value(self, buf: str, at: int) -> str | None:
        rest = buf[at:]
        if rest.startswith(_PARAMETER_CLOSE):
            after = buf[_skip(buf, at + len(_PARAMETER_CLOSE)) :]
            if after.startswith((_PARAMETER_OPEN, _FUNCTION_CLOSE)):
                return "end"
            if not after or _undecided(after, (_PARAMETER_OPEN, _FUNCTION_CLOSE, self.close)):
                return None
            return "content"
        if rest.startswith((_PARAMETER_OPEN, _FUNCTION_OPEN)):
            return "broken"
        if _undecided(rest, (_PARAMETER_CLOSE, _PARAMETER_OPEN, _FUNCTION_OPEN, self.close)):
            return None
        return "content"


_ARG_KEY = "<arg_key>"
_ARG_KEY_CLOSE = "</arg_key>"
_ARG_VALUE = "<arg_value>"
_ARG_VALUE_CLOSE = "</arg_value>"
_GLM_NAME = re.compile(r"[^\s<>{}\[\]()\"'`,;=]*")
"""The characters a tool name may hold: the name runs to the first other one."""


class _Glm(_Tagged):
    """``NAME<arg_key>k</arg_key><arg_value>v</arg_value>…``: one call per block."""

    value_close = _ARG_VALUE_CLOSE
    untyped_text = False

    def typed(self, key: str, raw: str) -> tuple[bool, Any]:
        """Typed by the schema where it declares a type, else strict JSON, else the text."""
        types = property_types(self.current.name, key, self.schemas)
        if types is not None:
            return coerce_types(types, raw)
        ok, value = strict_json_value(raw.strip(" \t\n\r"))
        return (True, value) if ok else (True, raw)

    def step(self) -> bool:
        state = self.state
        if state == "value":
            return self.value()
        if state == "head":
            buf = self.buf[_skip(self.buf, 0) :]
            name = _GLM_NAME.match(buf)
            assert name is not None
            rest = buf[name.end() :].lstrip(" \t\r")
            self.buf = buf
            if not rest or (rest[0] != "\n" and _undecided(rest, (_ARG_KEY,))):
                return False  # the name may go on (its characters are read once each)
            if not (rest[0] == "\n" or rest.startswith(_ARG_KEY)) or not name.group():
                self.broken = True
                return False
            self.calls.append(FormingCall(name.group()))
            self.buf = rest
            self.state = "body"
        elif state == "body":
            if self.expect((_ARG_KEY,)) is None:
                return False
            self.state = "key"
        elif state == "key":
            key = self.until(_ARG_KEY_CLOSE)
            if key is None:
                return False
            self.key = key.strip()
            self.state = "gap"
        else:
            if self.expect((_ARG_VALUE,)) is None:
                return False
            self.start_value(self.key)
        return True

    def tag_in_value(self, buf: str, at: int) -> str | None:
        rest = buf[at:]
        if rest.startswith(_ARG_VALUE_CLOSE):
            after = buf[_skip(buf, at + len(_ARG_VALUE_CLOSE)) :]
            if after.startswith(_ARG_KEY):
                return "end"
            if not after or _undecided(after, (_ARG_KEY, self.close)):
                return None
            return "content"
        if _undecided(rest, (_ARG_VALUE_CLOSE, self.close)):
            return None
        return "content"


class _MiniMax(_Tagged):
    """``<invoke name="NAME"><parameter name="KEY">value</parameter></invoke>``, in a row.

    The tags are the format parser's own (:mod:`~callgate.strategies.text.invoke_payloads`).
    """

    tags = INVOKE_TAGS["minimax_m2"]
    value_close = tags.parameter_close

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        tags = self.tags
        self.words = tuple("<" + close[2:-1] for close in (tags.invoke_close, tags.parameter_close))
        """How an invoke tag and a parameter tag begin (``<invoke``, ``<parameter``)."""
        self.flag = ""
        """The open value's ``string=`` flag (DSML's; empty where the format has none)."""

    def step(self) -> bool:
        state = self.state
        if state == "value":
            return self.value()
        tags = self.tags
        buf = self.buf[_skip(self.buf, 0) :]
        self.buf = buf
        if state == "body" and buf.startswith(tags.invoke_close):
            self.buf = buf[len(tags.invoke_close) :]
            self.current.finish()
            self.state = "head"
            return True
        pattern = tags.parameter if state == "body" else tags.invoke
        word = self.words[state == "body"]
        end = buf.find(">", self.searched)
        if end < 0:
            self.searched = len(buf)
            tokens = (word, tags.invoke_close if state == "body" else "", self.close)
            if buf and not (buf.startswith(word) or _undecided(buf, tokens)):
                self.broken = True
            return False
        self.searched = 0
        match = pattern.fullmatch(buf, 0, end + 1)
        if match is None:
            self.broken = True
            return False
        self.buf = buf[end + 1 :]
        if state == "body":
            self.flag = match.group(2)
            self.start_value(match.group(1))
        elif _valid_name(match.group(1)):
            self.calls.append(FormingCall(match.group(1)))
            self.state = "body"
        else:
            self.broken = True
        return True

    def raw_text(self, key: str) -> bool:
        """A ``string="false"`` value is JSON (whole at its close), any other as the base's."""
        return self.flag != "false" and super().raw_text(key)

    def typed(self, key: str, raw: str) -> tuple[bool, Any]:
        """As the parser types it: ``string="false"`` strict JSON, else by the schema."""
        if self.flag == "false":
            return strict_json_value(raw.strip(" \t\n\r"))
        return super().typed(key, raw)

    def tag_in_value(self, buf: str, at: int) -> str | None:
        rest = buf[at:]
        tags = self.tags
        if rest.startswith(tags.parameter_close):
            return "end"
        if rest.startswith(self.words):
            end = rest.find(">")
            if end < 0:
                return None
            markup = rest[: end + 1]
            opens = tags.parameter.fullmatch(markup) or tags.invoke.fullmatch(markup)
            return "broken" if opens else "content"
        if _undecided(rest, (tags.parameter_close, *self.words, self.close)):
            return None
        return "content"


class _Dsml(_MiniMax):
    """DeepSeek V3.2 / V4: MiniMax's invokes, each tag prefixed, each value flagged.

    The prefix is ``|DSML|`` (full-width bars); ``string="true"`` is raw text typed by the
    schema, ``string="false"`` strict JSON.
    """

    tags = INVOKE_TAGS["deepseek_v32"]
    value_close = tags.parameter_close


class _Kimi(_Reader):
    """``<|tool_call_begin|>ID<|tool_call_argument_begin|>{json}<|tool_call_end|>``, in a row."""

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        self.state = "head"
        self.json = PartialJSON()

    def step(self) -> bool:
        state = self.state
        if state == "head":
            if self.expect((KIMI_CALL_BEGIN,)) is None:
                return False
            self.state = "id"
        elif state == "id":
            since = max(self.searched - len(KIMI_CALL_END) + 1, 0)
            call_id = self.until(KIMI_ARGUMENTS)
            if KIMI_CALL_END in (self.buf if call_id is None else call_id)[since:]:
                self.broken = True  # the call ends before its arguments begin
                return False
            if call_id is None:
                return False
            match = _KIMI_ID.fullmatch(call_id.strip(" \t\n\r"))
            if match is None:
                self.broken = True
                return False
            call = FormingCall(match.group(1), call_id.strip(" \t\n\r"))
            call.log = TextLog()
            self.json = call._json = PartialJSON()
            self.calls.append(call)
            self.state = "args"
        else:
            return self.arguments()
        return True

    def arguments(self) -> bool:
        buf, reader, call = self.buf, self.json, self.current
        end = buf.find(KIMI_CALL_END)
        keep = len(buf) if end >= 0 else _held(buf, KIMI_CALL_END)
        text = buf[:end] if end >= 0 else buf[: len(buf) - keep] if keep else buf
        call.log.append(text[: reader.take(text)])
        if end < 0:
            self.buf = buf[len(text) :]
            return False
        self.buf = buf[end + len(KIMI_CALL_END) :]
        if not reader.complete:
            self.broken = True
            return False
        call.complete = True
        self.state = "head"
        return True


_READERS: dict[str, type[_Reader]] = {
    "qwen3_coder_xml": _Qwen,
    "glm45": _Glm,
    "minimax_m2": _MiniMax,
    "deepseek_v32": _Dsml,
    "deepseek_v4": _Dsml,
    "kimi_k2": _Kimi,
    "kimi_k2_singular": _Kimi,
    **JSON_READERS,
    **MARKUP_READERS,
}

READABLE_FORMATS = frozenset(_READERS)
"""The text formats whose calls show their arguments while the block is open."""


class BlockReader:
    """The forming calls of one open block, read by each candidate format until one is left.

    A candidate that cannot read the payload drops out; the calls shown are those of the
    first candidate (in the block's order) still reading.
    """

    __slots__ = ("_readers",)

    def __init__(self, formats: Iterable[str], schemas: Schemas | None, close: str | None) -> None:
        self._readers = [_READERS[n](schemas, close or "") for n in formats if n in _READERS]
        for reader, name in zip(self._readers, [n for n in formats if n in _READERS], strict=True):
            reader.name = name

    def feed(self, text: str) -> None:
        """More of the block's payload."""
        for reader in self._readers:
            reader.feed(text)
        if len(self._readers) > 1:
            self._readers = [r for r in self._readers if not (r.broken and not r.calls)]

    def _reading(self) -> _Reader | None:
        for reader in self._readers:
            if reader.calls or not reader.broken:
                return reader
        return None

    @property
    def calls(self) -> list[FormingCall]:
        """The calls read so far (the last may still be forming)."""
        reader = self._reading()
        return reader.calls if reader is not None else []

    @property
    def format(self) -> str:
        """The format the calls are read in (the first candidate still reading)."""
        reader = self._reading()
        return reader.name if reader is not None else ""

    @property
    def broken(self) -> bool:
        """No candidate reads the payload any more: nothing more will grow."""
        return all(r.broken for r in self._readers)
