"""Parsers of the tag-family text formats: Qwen3-Coder's XML and GLM-4.5's key/value tags.

Part of :mod:`callgate.strategies.text.markup_payloads` (its public names stay there, see
its docstring for both formats). Values are raw text typed by the tool's schema.
"""

from __future__ import annotations

from typing import Any

from callgate.strategies.text._markup_common import (
    _JSON_WS,
    _SURROGATE,
    _Malformed,
    _skip_ws,
    _valid_name,
)
from callgate.strategies.text.base import Schemas, TextCall
from callgate.strategies.text.coerce import (
    coerce,
    coerce_types,
    property_types,
    strict_json_value,
)

# Qwen3-Coder and Qwen3.5. As written by their chat templates (`<function=NAME>\n`, then
# per argument `<parameter=P>\n` value `\n</parameter>\n`, then `</function>`) and read by
# vLLM's qwen3_coder parser: one leading and one trailing newline of a value are the
# template's and are removed; a `</parameter>` ends a value only when the next thing
# (after whitespace) is another `<parameter=` or the `</function>`, so a value may itself
# contain the text `</parameter>`. Several functions in one block are read as several calls.
# A value holding `<parameter=` or `<function=` most likely lost its own `</parameter>`:
# vLLM and SGLang recover such a value by cutting it at the next `<parameter=`; callgate
# refuses the block instead, since the cut guesses where the model meant the value to
# end (and a value that really holds such text cannot be told apart).

_FUNCTION_OPEN = "<function="
_FUNCTION_CLOSE = "</function>"
_PARAMETER_OPEN = "<parameter="
_PARAMETER_CLOSE = "</parameter>"
_QWEN_TAGS = (_PARAMETER_OPEN, _FUNCTION_OPEN)
"""Markup that never sits inside a value: a value holding one lost its ``</parameter>``."""


def _qwen_value_end(text: str, start: int) -> int:
    """Index of the structural ``</parameter>`` ending the value that starts at ``start``."""
    search = start
    while True:
        end = text.find(_PARAMETER_CLOSE, search)
        if end < 0:
            raise _Malformed
        after = _skip_ws(text, end + len(_PARAMETER_CLOSE))
        if text.startswith(_PARAMETER_OPEN, after) or text.startswith(_FUNCTION_CLOSE, after):
            if any(text.find(tag, start, end) >= 0 for tag in _QWEN_TAGS):
                raise _Malformed
            return end
        search = end + len(_PARAMETER_CLOSE)


def _qwen_tag_name(text: str, start: int) -> tuple[str, int]:
    """Read the name of ``<function=NAME>`` / ``<parameter=NAME>`` from start up to ``>``."""
    close = text.find(">", start)
    if close < 0:
        raise _Malformed
    return text[start:close], close + 1


def _qwen_function(text: str, pos: int, schemas: Schemas | None) -> tuple[TextCall, int]:
    name, pos = _qwen_tag_name(text, pos + len(_FUNCTION_OPEN))
    if not _valid_name(name):
        raise _Malformed
    arguments: dict[str, Any] = {}
    while True:
        pos = _skip_ws(text, pos)
        if text.startswith(_FUNCTION_CLOSE, pos):
            return TextCall(name=name, arguments=arguments), pos + len(_FUNCTION_CLOSE)
        if not text.startswith(_PARAMETER_OPEN, pos):
            raise _Malformed
        key, start = _qwen_tag_name(text, pos + len(_PARAMETER_OPEN))
        if not key or "<" in key or any(c.isspace() for c in key) or key in arguments:
            raise _Malformed
        end = _qwen_value_end(text, start)
        raw = text[start:end]
        if raw.startswith("\n"):
            raw = raw[1:]
        if raw.endswith("\n"):
            raw = raw[:-1]
        ok, value = coerce(name, key, raw, schemas)
        if not ok:
            raise _Malformed
        arguments[key] = value
        pos = end + len(_PARAMETER_CLOSE)


def parse_qwen3_coder_xml(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read Qwen3-Coder's ``<function=NAME><parameter=P>value</parameter></function>`` calls.

    Values are raw text, so each is typed by the tool's schema (see :mod:`.coerce`);
    a value that does not fit its declared type makes the whole payload None.
    """
    if _SURROGATE.search(payload):
        return None
    calls: list[TextCall] = []
    pos = _skip_ws(payload, 0)
    try:
        while True:
            if not payload.startswith(_FUNCTION_OPEN, pos):
                return None
            call, pos = _qwen_function(payload, pos, schemas)
            calls.append(call)
            pos = _skip_ws(payload, pos)
            if pos == len(payload):
                return calls
    except _Malformed:
        return None


# GLM-4.5 / GLM-4.6, as written by their chat template (`NAME\n`, then per argument
# `<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n`; GLM-4.7 drops the newlines) and read
# by vLLM's glm4_moe parser: the name runs to the first newline or `<arg_key>`, keys are
# stripped; a value whose schema type is "string" is kept verbatim, any other value is
# decoded (vLLM: JSON, else a Python literal, else the text). Here a typed value goes
# through coerce (strict), and an untyped one is strict JSON if it parses, else the text.
# The template writes one call per `<tool_call>` block.

_ARG_KEY_OPEN = "<arg_key>"
_ARG_KEY_CLOSE = "</arg_key>"
_ARG_VALUE_OPEN = "<arg_value>"
_ARG_VALUE_CLOSE = "</arg_value>"


def _glm_value_end(text: str, start: int) -> int:
    """Index of the ``</arg_value>`` followed by another key or by the end of the payload."""
    search = start
    while True:
        end = text.find(_ARG_VALUE_CLOSE, search)
        if end < 0:
            raise _Malformed
        after = _skip_ws(text, end + len(_ARG_VALUE_CLOSE))
        if after == len(text) or text.startswith(_ARG_KEY_OPEN, after):
            return end
        search = end + len(_ARG_VALUE_CLOSE)


def _glm_value(name: str, key: str, raw: str, schemas: Schemas | None) -> Any:
    types = property_types(name, key, schemas)
    if types is None:
        ok, value = strict_json_value(raw.strip(_JSON_WS))
        return value if ok else raw
    ok, value = coerce_types(types, raw)
    if not ok:
        raise _Malformed
    return value


def _glm_arguments(text: str, pos: int, name: str, schemas: Schemas | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    while True:
        pos = _skip_ws(text, pos)
        if pos == len(text):
            return arguments
        if not text.startswith(_ARG_KEY_OPEN, pos):
            raise _Malformed
        key_start = pos + len(_ARG_KEY_OPEN)
        key_end = text.find(_ARG_KEY_CLOSE, key_start)
        if key_end < 0:
            raise _Malformed
        key = text[key_start:key_end].strip()
        if not key or "<" in key or ">" in key or key in arguments:
            raise _Malformed
        pos = _skip_ws(text, key_end + len(_ARG_KEY_CLOSE))
        if not text.startswith(_ARG_VALUE_OPEN, pos):
            raise _Malformed
        start = pos + len(_ARG_VALUE_OPEN)
        end = _glm_value_end(text, start)
        arguments[key] = _glm_value(name, key, text[start:end], schemas)
        pos = end + len(_ARG_VALUE_CLOSE)


def parse_glm45(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read GLM-4.5's ``NAME<arg_key>k</arg_key><arg_value>v</arg_value>...`` payload, or None.

    Values are raw text: typed by the tool's schema where it declares a type, else read
    as JSON when they are strict JSON (as vLLM does), else kept as the text.
    """
    if _SURROGATE.search(payload):
        return None
    start = _skip_ws(payload, 0)
    key_at = payload.find(_ARG_KEY_OPEN, start)
    newline = payload.find("\n", start)
    cut = min((i for i in (key_at, newline) if i >= 0), default=len(payload))
    name = payload[start:cut].strip()
    if not _valid_name(name):
        return None
    try:
        arguments = _glm_arguments(payload, cut, name, schemas)
    except _Malformed:
        return None
    return [TextCall(name=name, arguments=arguments)]
