"""Parsers for the text formats whose payload is not JSON (markup, special tokens, Python).

Each parser takes the text between a block's delimiters (see
:mod:`callgate.strategies.text.base`) and returns the calls only when the whole payload,
surrounding whitespace aside, is exactly its format's call syntax; anything else gives
None and the block is shown as text. They never raise, never evaluate anything, and run in
time linear in the payload. A payload holding an unpaired surrogate code point is refused.
Tool names must be non-empty, without whitespace and without any of ``<>{}[]()"'`,;=``.

``gemma_special`` (Gemma 4), between ``<|tool_call>`` and ``<tool_call|>``
    ``call:get_weather{city:<|"|>Paris<|"|>,days:3,metric:true,at:{lat:48.85},tags:[<|"|>a<|"|>]}``.
    Not JSON: keys are bare (or wrapped in ``<|"|>``), strings run verbatim from one
    ``<|"|>`` token to the next (quotes, commas, braces and newlines included), numbers are
    JSON number literals, ``true``/``false``, ``null`` or ``None`` (how the template prints
    a Python None), and objects and arrays nest. The template writes one call per block.
``deepseek`` (DeepSeek V3 and V3.1), between the tool-calls begin and end tokens
    (written here with ASCII bars; the real tokens use U+FF5C FULLWIDTH VERTICAL LINE for
    the bars and U+2581 LOWER ONE EIGHTH BLOCK for the spaces, see the constants below):
    one or more entries ``<|tool▁call▁begin|>…<|tool▁call▁end|>``, whitespace between
    them; V3 writes ``function<|tool▁sep|>get_weather`` then a newline and a fence opened
    by three backticks and ``json``, holding ``{"city": "Paris"}``; V3.1 writes
    ``get_weather<|tool▁sep|>{"city": "Paris"}``. Arguments are strict JSON objects.
``pythonic`` (Llama 3.2 / Llama 4 / ToolACE), the whole content
    ``[get_weather(city='Paris', unit="C"), get_time(tz='UTC')]``: a Python list of calls
    with keyword arguments whose values are literals (str, int, float, bool, None, lists,
    tuples, dicts with string keys, and the names ``true``/``false``/``null``).
``qwen3_coder_xml`` (Qwen3-Coder, Qwen3.5), between ``<tool_call>`` and ``</tool_call>``
    ``<function=get_weather>`` newline ``<parameter=city>`` newline ``Paris`` newline
    ``</parameter>`` newline ``</function>``; values are raw text typed by the tool's schema.
``glm45`` (GLM-4.5 / 4.6, and GLM-4.7's form without newlines), inside ``<tool_call>``
    ``get_weather`` newline ``<arg_key>city</arg_key>`` newline ``<arg_value>Paris</arg_value>``;
    values are raw text typed by the tool's schema (JSON when the schema declares no type).
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from callgate.gate.strictjson import MAX_INT_DIGITS, parse_arguments
from callgate.strategies.text._markup_common import (
    _JSON_WS,
    _SURROGATE,
    _Malformed,
    _skip_ws,
    _valid_name,
)
from callgate.strategies.text._xml_payloads import parse_glm45, parse_qwen3_coder_xml
from callgate.strategies.text.base import Parser, Schemas, TextCall

__all__ = [
    "CALLS_BEGIN",
    "CALLS_END",
    "CALL_BEGIN",
    "CALL_END",
    "GEMMA_STRING",
    "MARKUP_PARSERS",
    "MAX_DEPTH",
    "SEP",
    "parse_deepseek",
    "parse_gemma_special",
    "parse_glm45",
    "parse_pythonic",
    "parse_qwen3_coder_xml",
]

MAX_DEPTH = 128
"""Deepest nesting of objects and arrays accepted in arguments (the arguments object is 1)."""

CALLS_BEGIN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
"""DeepSeek's token opening the tool-calls section (full-width bars, U+2581 for spaces)."""
CALLS_END = "<\uff5ctool\u2581calls\u2581end\uff5c>"
"""DeepSeek's token closing the tool-calls section."""
CALL_BEGIN = "<\uff5ctool\u2581call\u2581begin\uff5c>"
"""DeepSeek's token opening one call."""
CALL_END = "<\uff5ctool\u2581call\u2581end\uff5c>"
"""DeepSeek's token closing one call."""
SEP = "<\uff5ctool\u2581sep\uff5c>"
"""DeepSeek's token between a call's type or name and the rest."""

GEMMA_STRING = '<|"|>'
"""Gemma 4's string delimiter token: a string runs verbatim from one to the next."""


# Gemma 4. Format as written by the Gemma 4 chat template (its format_argument macro, keys
# unescaped in tool calls) and read by vLLM's gemma4 tool parser: one
# `call:NAME{...}` per `<|tool_call>` block, several calls as several blocks.

_GEMMA_CALL = "call:"
_GEMMA_BARE_KEY = re.compile(r"[^\s:,{}\[\]<>\"']+")
_GEMMA_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_GEMMA_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None, "None": None}
_GEMMA_WORD = re.compile(r"true|false|null|None")
_GEMMA_QUOTED_KEY = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
"""A key written as a JSON string (``"command":``), as some Gemma outputs quote their keys."""


def _number(literal: str, is_float: bool) -> int | float:
    """Convert a JSON number literal, refusing overlong integers and infinities."""
    if not is_float:
        if len(literal.lstrip("-")) > MAX_INT_DIGITS:
            raise _Malformed
        return int(literal)
    value = float(literal)
    if not math.isfinite(value):
        raise _Malformed
    return value


def _gemma_string(text: str, pos: int) -> tuple[str, int]:
    """Read a ``<|"|>``-delimited string starting at pos; return it and the position after."""
    start = pos + len(GEMMA_STRING)
    end = text.find(GEMMA_STRING, start)
    if end < 0:
        raise _Malformed
    return text[start:end], end + len(GEMMA_STRING)


def _gemma_key(text: str, pos: int) -> tuple[str, int]:
    if text.startswith(GEMMA_STRING, pos):
        key, pos = _gemma_string(text, pos)
        if not key:
            raise _Malformed
        return key, pos
    quoted = _GEMMA_QUOTED_KEY.match(text, pos)
    if quoted is not None:
        try:
            key = json.loads(quoted.group())
        except ValueError:
            raise _Malformed from None
        if not key or _SURROGATE.search(key):
            raise _Malformed
        return key, quoted.end()
    match = _GEMMA_BARE_KEY.match(text, pos)
    if match is None:
        raise _Malformed
    return match.group(), match.end()


def _gemma_scalar(text: str, pos: int) -> tuple[Any, int]:
    """Read a string, number or word at pos; return the value and the position after."""
    if text.startswith(GEMMA_STRING, pos):
        return _gemma_string(text, pos)
    match = _GEMMA_NUMBER.match(text, pos)
    if match is not None:
        is_float = match.group(1) is not None or match.group(2) is not None
        return _number(match.group(), is_float), match.end()
    match = _GEMMA_WORD.match(text, pos)
    if match is not None:
        return _GEMMA_WORDS[match.group()], match.end()
    raise _Malformed


def _gemma_item(text: str, pos: int, container: dict[str, Any] | list[Any]) -> tuple[Any, int]:
    """Read one member (``key:value``) or element at pos into container; return the value read.

    A nested object or array is returned empty (and already stored): the caller opens it.
    """
    key = ""
    if isinstance(container, dict):
        key, pos = _gemma_key(text, pos)
        pos = _skip_ws(text, pos)
        if not text.startswith(":", pos) or key in container:
            raise _Malformed
        pos = _skip_ws(text, pos + 1)
    value: Any
    if text.startswith("{", pos):
        value, pos = {}, pos + 1
    elif text.startswith("[", pos):
        value, pos = [], pos + 1
    else:
        value, pos = _gemma_scalar(text, pos)
    if isinstance(container, dict):
        container[key] = value
    else:
        container.append(value)
    return value, pos


def _gemma_object(text: str, pos: int) -> tuple[dict[str, Any], int]:
    """Read the object opening at ``text[pos] == "{"``, without recursion; return it and the end.

    A stack holds the open containers and their closing brackets; ``expect`` is what may
    come next: ``first`` (an item or the closing bracket), ``item`` (after a comma) or
    ``after`` (a comma or the closing bracket).
    """
    root: dict[str, Any] = {}
    stack: list[tuple[dict[str, Any] | list[Any], str]] = [(root, "}")]
    expect = "first"
    pos += 1
    while stack:
        pos = _skip_ws(text, pos)
        container, closer = stack[-1]
        if expect != "item" and text.startswith(closer, pos):
            stack.pop()
            pos += 1
            expect = "after"
        elif expect == "after":
            if not text.startswith(",", pos):
                raise _Malformed
            pos += 1
            expect = "item"
        else:
            value, pos = _gemma_item(text, pos, container)
            expect = "after"
            if isinstance(value, dict | list) and not value:
                if len(stack) >= MAX_DEPTH:
                    raise _Malformed
                stack.append((value, "}" if isinstance(value, dict) else "]"))
                expect = "first"
    return root, pos


def parse_gemma_special(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read Gemma 4's ``call:NAME{key:value,...}`` payload (not JSON) into one call, or None.

    Gemma 4 writes calls in its own token syntax; this reads exactly that, strictly.
    """
    if _SURROGATE.search(payload):
        return None
    start = _skip_ws(payload, 0)
    if not payload.startswith(_GEMMA_CALL, start):
        return None
    brace = payload.find("{", start)
    if brace < 0:
        return None
    name = payload[start + len(_GEMMA_CALL) : brace]
    if not _valid_name(name):
        return None
    try:
        arguments, end = _gemma_object(payload, brace)
    except _Malformed:
        return None
    if _skip_ws(payload, end) != len(payload):
        return None
    return [TextCall(name=name, arguments=arguments)]


# DeepSeek. V3 (and V3-0324, R1-0528) as in vLLM's deepseek_v3 parser and the model's
# chat template: `TYPE<sep>NAME\n` then a ```json fence; V3.1 as in vLLM's deepseek_v31
# parser: `NAME<sep>ARGS`. Entries follow one another, separated by optional whitespace.

_FENCE_OPEN = "```json"
_FENCE_CLOSE = "```"


def _deepseek_entry(body: str) -> TextCall | None:
    """Read what lies between one call's begin and end tokens."""
    sep = body.find(SEP)
    if sep < 0:
        return None
    head = body[:sep]
    rest = body[sep + len(SEP) :]
    if rest.lstrip(_JSON_WS).startswith("{"):
        name, args_text = head, rest
    elif head == "function":
        newline = rest.find("\n")
        if newline < 0:
            return None
        name = rest[:newline]
        fenced = rest[newline + 1 :].strip(_JSON_WS)
        if (
            len(fenced) < len(_FENCE_OPEN) + len(_FENCE_CLOSE)
            or not fenced.startswith(_FENCE_OPEN)
            or not fenced.endswith(_FENCE_CLOSE)
        ):
            return None
        args_text = fenced[len(_FENCE_OPEN) : -len(_FENCE_CLOSE)]
    else:
        return None
    if not _valid_name(name):
        return None
    arguments, problem = parse_arguments(args_text, max_depth=MAX_DEPTH)
    if problem is not None or arguments is None:
        return None
    return TextCall(name=name, arguments=arguments)


def parse_deepseek(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read the calls between DeepSeek's tool-calls begin/end tokens (V3 or V3.1), or None.

    DeepSeek marks calls with its own special tokens; each entry's arguments are strict JSON.
    """
    if _SURROGATE.search(payload):
        return None
    calls: list[TextCall] = []
    pos = _skip_ws(payload, 0)
    while pos < len(payload):
        if not payload.startswith(CALL_BEGIN, pos):
            return None
        start = pos + len(CALL_BEGIN)
        end = payload.find(CALL_END, start)
        if end < 0:
            return None
        call = _deepseek_entry(payload[start:end])
        if call is None:
            return None
        calls.append(call)
        pos = _skip_ws(payload, end + len(CALL_END))
    return calls or None


# Pythonic. As read by vLLM's pythonic parser (Llama 3.2, Llama 4, ToolACE): the output
# must be a Python list whose items are all calls; a bare call without the brackets is
# not accepted there, nor here. Beyond vLLM, dotted names (`ns.tool(...)`) are accepted.

_PY_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _py_string(value: str) -> str:
    if _SURROGATE.search(value):
        raise _Malformed
    return value


def _py_constant(value: Any) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Malformed
        return value
    if isinstance(value, str):
        return _py_string(value)
    raise _Malformed


class _PyReader:
    """Turns the parsed list into calls, checking identifiers against the source text.

    Python folds identifiers to NFKC while parsing (``get`` with a full-width g becomes
    plain ``get``),
    so every identifier that matters (tool names, argument names, true/false/null) must be
    spelled in ASCII in the source itself; ``ast`` positions are UTF-8 byte offsets.
    """

    def __init__(self, text: str) -> None:
        self.lines = _LINE_BREAK.split(text)
        self.ascii = text.isascii()
        self._encoded: dict[int, bytes] = {}

    def _line(self, lineno: int) -> bytes:
        encoded = self._encoded.get(lineno)
        if encoded is None:
            encoded = self.lines[lineno - 1].encode("utf-8")
            self._encoded[lineno] = encoded
        return encoded

    def spans_all(self, node: ast.expr) -> bool:
        """Tell whether the node covers the whole text (no trailing comment, no parens)."""
        return (
            node.lineno == 1
            and node.col_offset == 0
            and node.end_lineno == len(self.lines)
            and node.end_col_offset == len(self._line(len(self.lines)))
        )

    def _spelled_ascii(self, node: ast.expr | ast.keyword, length: int | None = None) -> bool:
        """Tell whether the node's source (its first ``length`` bytes if given) is ASCII."""
        if self.ascii:
            return True
        end_lineno, end_col = node.end_lineno, node.end_col_offset
        if end_lineno is None or end_col is None:
            return False
        if length is not None:
            end_lineno, end_col = node.lineno, node.col_offset + length
        if node.lineno == end_lineno:
            return self._line(node.lineno)[node.col_offset : end_col].isascii()
        parts = [self._line(node.lineno)[node.col_offset :]]
        parts.extend(self._line(n) for n in range(node.lineno + 1, end_lineno))
        parts.append(self._line(end_lineno)[:end_col])
        return all(part.isascii() for part in parts)

    def name(self, node: ast.expr) -> str:
        """The dotted name of a call's function: a Name or a chain of Attributes on one."""
        if not self._spelled_ascii(node):
            raise _Malformed
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            raise _Malformed
        parts.append(node.id)
        return ".".join(reversed(parts))

    def value(self, node: ast.expr, depth: int) -> Any:
        """Convert a literal node to a JSON value; depth counts enclosing containers."""
        if isinstance(node, ast.Constant):
            return _py_constant(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = node.operand
            if (
                isinstance(operand, ast.Constant)
                and isinstance(operand.value, int | float)
                and not isinstance(operand.value, bool)
            ):
                return _py_constant(-operand.value)
            raise _Malformed
        if isinstance(node, ast.Name):
            if node.id in _PY_WORDS and self._spelled_ascii(node):
                return _PY_WORDS[node.id]
            raise _Malformed
        if depth >= MAX_DEPTH:
            raise _Malformed
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(item, depth + 1) for item in node.elts]
        if isinstance(node, ast.Dict):
            result: dict[str, Any] = {}
            for key_node, value_node in zip(node.keys, node.values, strict=True):
                if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
                    raise _Malformed
                key = _py_string(key_node.value)
                if key in result:
                    raise _Malformed
                result[key] = self.value(value_node, depth + 1)
            return result
        raise _Malformed

    def call(self, node: ast.expr) -> TextCall:
        """Read one call: keyword arguments only, each a literal."""
        if not isinstance(node, ast.Call) or node.args:
            raise _Malformed
        name = self.name(node.func)
        if not _valid_name(name):
            raise _Malformed
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            arg = keyword.arg
            if arg is None or arg in arguments or not self._spelled_ascii(keyword, len(arg)):
                raise _Malformed
            arguments[arg] = self.value(keyword.value, 1)
        return TextCall(name=name, arguments=arguments)


def parse_pythonic(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read a pythonic call list ``[f(a='x'), g(b=1)]`` with :mod:`ast` (never evaluated), or None.

    Llama 3.2/4 and ToolACE write calls as Python; only literal keyword arguments are read.
    Identifiers (tool and argument names) must be spelled in ASCII: Python folds other
    identifiers to NFKC, so a look-alike name could otherwise run a tool other than the
    one shown.
    """
    if _SURROGATE.search(payload):
        return None
    text = payload.strip()
    if not text.startswith("["):
        return None
    try:
        tree = ast.parse(text, mode="eval")
        body = tree.body
        reader = _PyReader(text)
        if not isinstance(body, ast.List) or not body.elts or not reader.spans_all(body):
            return None
        return [reader.call(item) for item in body.elts]
    except (_Malformed, SyntaxError, RecursionError, MemoryError, ValueError, OverflowError):
        return None


MARKUP_PARSERS: dict[str, Parser] = {
    "gemma_special": parse_gemma_special,
    "deepseek": parse_deepseek,
    "pythonic": parse_pythonic,
    "qwen3_coder_xml": parse_qwen3_coder_xml,
    "glm45": parse_glm45,
}
"""The non-JSON payload parsers, by their text-format contract names."""
