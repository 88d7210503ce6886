"""Forming calls of the text formats whose payload is a JSON call object, as bytes arrive.

``<tool_call>{"name": "write", "arguments": {...}}</tool_call>`` and its kin (see
:mod:`callgate.strategies.text.json_payloads`) hold a call's arguments as a JSON object
inside the call object. :class:`JsonObjectReader` reads the call object's head (its name
first, then the arguments' key) and feeds what follows to a
:class:`~callgate.gate.partialjson.PartialJSON`, so the arguments grow as they arrive,
not at the block's close. Only the plain head shape is read (a name key, then an
arguments key; an optional ``[`` before the object for the array forms); any other head
(arguments before the name, an ``id`` first, double-encoded arguments) shows nothing
while the block is open, and the parser still reads the call at the close. One call
object per block is shown: the first.
"""

from __future__ import annotations

import re

from callgate.gate.partialjson import PartialJSON, TextLog
from callgate.strategies.text.base import Schemas
from callgate.strategies.text.forming_call import FormingCall, _Reader

__all__ = ["JSON_READERS", "JsonObjectReader"]

_HEAD = re.compile(
    r'[ \t\n\r]*\[?[ \t\n\r]*\{[ \t\n\r]*"(?:name|tool|tool_name)"[ \t\n\r]*:[ \t\n\r]*'
    r'"([^"\\\x00-\x1f]+)"[ \t\n\r]*,[ \t\n\r]*"(?:arguments|parameters|args|input)"'
    r"[ \t\n\r]*:[ \t\n\r]*(?=\{)"
)
"""A call object's head up to its arguments' opening brace."""
_HEAD_PREFIX = re.compile(r"[ \t\n\r]*\[?[ \t\n\r]*(?:\{[^{}]*)?")
"""What may still grow into :data:`_HEAD` (no brace of the arguments yet)."""
_MAX_HEAD = 512
"""A head longer than this is not the plain shape: the block shows nothing while open."""


_MISTRAL = re.compile(
    r"[ \t\n\r]*([A-Za-z0-9_.\-]+)(?:\[CALL_ID\]([A-Za-z0-9]+))?\[ARGS\][ \t\n\r]*(?=\{)"
)
"""Mistral's ``NAME[ARGS]`` (v13) or ``NAME[CALL_ID]ID[ARGS]`` (v11) before the arguments."""
_MISTRAL_PREFIX = re.compile(r"[ \t\n\r]*[A-Za-z0-9_.\-]*(?:\[[A-Z_]*\]?[A-Za-z0-9]*)*")


class JsonObjectReader(_Reader):
    """One call object's arguments while they arrive (see the module)."""

    heads: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = ((_HEAD, _HEAD_PREFIX),)
    """The head shapes read, each with what may still grow into it."""

    def __init__(self, schemas: Schemas | None, close: str) -> None:
        super().__init__(schemas, close)
        self.json = PartialJSON(trailing=False)
        self.reading = False

    def feed(self, text: str) -> None:
        """More of the block's payload: the head waits in :attr:`buf`, the arguments do not."""
        if self.broken:
            return
        if self.reading:
            self._arguments(text)
            return
        self.buf += text
        matches = (shape.match(self.buf) for shape, _ in self.heads)
        head = next((m for m in matches if m is not None), None)
        if head is None:
            if len(self.buf) > _MAX_HEAD or not any(p.fullmatch(self.buf) for _, p in self.heads):
                self.broken = True
            return
        call = FormingCall(head.group(1), head.group(2) if head.re is _MISTRAL else None)
        call.log = TextLog()
        self.json = call._json = PartialJSON(trailing=False)
        self.calls.append(call)
        self.reading = True
        rest, self.buf = self.buf[head.end() :], ""
        self._arguments(rest)

    def _arguments(self, text: str) -> None:
        reader, call = self.json, self.current
        if reader.complete:
            return  # what follows the arguments is the parser's to judge at the close
        taken = reader.take(text)
        call.log.append(text[:taken])
        if reader.complete:
            call.complete = True
        elif reader.broken:
            self.broken = True


class MistralReader(JsonObjectReader):
    """``[TOOL_CALLS]``: a call object array (before v11), or ``NAME[ARGS]{...}`` (v11 on)."""

    heads = ((_HEAD, _HEAD_PREFIX), (_MISTRAL, _MISTRAL_PREFIX))


_OBJECT_FORMATS = ("tool_call_tag", "tools_tag", "fenced_json", "codec", "python_tag")
JSON_READERS: dict[str, type[_Reader]] = {
    **dict.fromkeys(_OBJECT_FORMATS, JsonObjectReader),
    "bracket_tool_calls": MistralReader,
}
"""The JSON-payload formats whose calls show their arguments while the block is open."""
