"""Parsers for the ``<invoke name=…><parameter name=…>value</parameter></invoke>`` family.

MiniMax-M2 and DeepSeek V3.2 / V4 write calls in the same XML-like shape and differ in
their tag spelling (DeepSeek prefixes every tag with ``|DSML|``, written here with ASCII
bars: the real tokens use U+FF5C FULLWIDTH VERTICAL LINE, see :data:`DSML`)
and in how a value says its type. Each parser takes the text between a block's delimiters
and returns the calls only when the whole payload, whitespace between tags aside, is
exactly that shape; anything else gives None and the block is shown as text.

``minimax_m2`` (MiniMax-M2), between ``<minimax:tool_call>`` and ``</minimax:tool_call>``
    ``<invoke name="get_weather">`` ``<parameter name="city">Paris</parameter>``
    ``</invoke>``, one or more invokes; values are raw text typed by the tool's schema.
``deepseek_v32`` / ``deepseek_v4`` (DSML), between ``<|DSML|function_calls>`` (V3.2)
    or ``<|DSML|tool_calls>`` (V4) and the matching close:
    ``<|DSML|invoke name="get_weather">``
    ``<|DSML|parameter name="city" string="true">Paris</|DSML|parameter>``
    ``</|DSML|invoke>``; ``string="true"`` marks raw text (typed by the schema),
    ``string="false"`` a strict JSON value.
"""

from __future__ import annotations

import re
from typing import Any

from attrs import frozen

from callgate.strategies.text.base import Parser, Schemas, TextCall
from callgate.strategies.text.coerce import coerce, strict_json_value

__all__ = ["DSML", "INVOKE_PARSERS", "INVOKE_TAGS", "parse_dsml", "parse_minimax_m2"]

DSML = "\uff5cDSML\uff5c"
"""DeepSeek's markup prefix: ``DSML`` between two U+FF5C FULLWIDTH VERTICAL LINE bars."""

_WS = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BAD_NAME = re.compile(r"[\s<>{}\[\]()\"'`,;=]")


@frozen
class _Tags:
    """One spelling of the invoke family: its tags, compiled once."""

    invoke: re.Pattern[str]
    """``<invoke name="NAME">`` (group 1: the name)."""
    invoke_close: str
    parameter: re.Pattern[str]
    """``<parameter name="KEY" …>`` (group 1: the key; group 2: the string flag, if any)."""
    parameter_close: str


def _tags(prefix: str, *, typed_flag: bool) -> _Tags:
    """The tags with ``prefix``; ``typed_flag``: each parameter says ``string="true|false"``."""
    flag = r'\s+string="(true|false)"' if typed_flag else r"()"
    return _Tags(
        invoke=re.compile(rf'<{prefix}invoke\s+name="([^"<>]*)"\s*>'),
        invoke_close=f"</{prefix}invoke>",
        parameter=re.compile(rf'<{prefix}parameter\s+name="([^"<>]*)"{flag}\s*>'),
        parameter_close=f"</{prefix}parameter>",
    )


_MINIMAX = _tags("", typed_flag=False)
_DSML = _tags(DSML, typed_flag=True)
INVOKE_TAGS = {"minimax_m2": _MINIMAX, "deepseek_v32": _DSML, "deepseek_v4": _DSML}
"""Each format's tags by its contract name (the forming calls' reader reads the same ones)."""


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _valid(name: str) -> bool:
    return bool(name) and _BAD_NAME.search(name) is None


_BAD = object()


def _value(call: str, key: str, flag: str, raw: str, schemas: Schemas | None) -> Any:
    """The argument's value, or ``_BAD`` when it does not read."""
    if flag == "false":
        ok, value = strict_json_value(raw.strip(" \t\n\r"))
    else:
        ok, value = coerce(call, key, raw, schemas)
    return value if ok else _BAD


def _parse(tags: _Tags, payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    if _SURROGATE.search(payload):
        return None
    calls: list[TextCall] = []
    pos = _skip(payload, 0)
    while pos < len(payload):
        head = tags.invoke.match(payload, pos)
        if head is None or not _valid(head.group(1)):
            return None
        name = head.group(1)
        arguments: dict[str, Any] = {}
        pos = _skip(payload, head.end())
        while not payload.startswith(tags.invoke_close, pos):
            param = tags.parameter.match(payload, pos)
            if param is None:
                return None
            key, flag = param.group(1), param.group(2)
            end = payload.find(tags.parameter_close, param.end())
            if not key or key in arguments or end < 0:
                return None
            raw = payload[param.end() : end]
            if tags.parameter.search(raw) or tags.invoke.search(raw):
                return None
            value = _value(name, key, flag, raw, schemas)
            if value is _BAD:
                return None
            arguments[key] = value
            pos = _skip(payload, end + len(tags.parameter_close))
        calls.append(TextCall(name=name, arguments=arguments))
        pos = _skip(payload, pos + len(tags.invoke_close))
    return calls or None


def parse_minimax_m2(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read MiniMax-M2's ``<invoke name=…>`` calls; values are raw text typed by the schema."""
    # MiniMax-M2 chat template and vLLM's minimax_m2 parser: one or more
    # <invoke name="NAME"> blocks, each holding <parameter name="KEY">VALUE</parameter>.
    return _parse(_MINIMAX, payload, schemas)


def parse_dsml(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read DeepSeek's DSML invokes (V3.2 and V4 share them); ``string=`` types each value."""
    # DeepSeek V3.2's encoding (encoding_dsv32.py) and vLLM's deepseekv32 / deepseek_v4
    # parsers: string="true" values are raw text, string="false" values are JSON.
    return _parse(_DSML, payload, schemas)


INVOKE_PARSERS: dict[str, Parser] = {
    "minimax_m2": parse_minimax_m2,
    "deepseek_v32": parse_dsml,
    "deepseek_v4": parse_dsml,
}
"""The invoke-family parsers, by their text-format contract names."""
