"""Parsers for formats built from special tokens around JSON arguments (Kimi K2, Harmony).

Each parser takes the text between a block's delimiters and returns the calls only when
the whole payload, whitespace between tokens aside, is exactly its format's call syntax;
the arguments are strict JSON objects. Anything else gives None: the block is shown.

``kimi_k2`` (Kimi K2), between ``<|tool_calls_section_begin|>`` and
    ``<|tool_calls_section_end|>``: one or more ``<|tool_call_begin|>``
    ``functions.get_weather:0`` ``<|tool_call_argument_begin|>`` ``{"city": "Paris"}``
    ``<|tool_call_end|>``; the text before the argument token is the call's id,
    ``[functions.]NAME:INDEX``.
``harmony`` (gpt-oss), between ``<|channel|>`` and ``<|call|>``:
    ``commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}``;
    the channel is ``commentary`` (or ``analysis``), the recipient a ``functions.`` name,
    the content type (``<|constrain|>json`` or `` json``) optional.
``harmony_role`` (gpt-oss), between ``<|start|>`` and ``<|call|>``, the recipient in the
    role header instead: ``assistant to=functions.get_weather<|channel|>commentary json``
    ``<|message|>{"city": "Paris"}``; the same channels and content types.
"""

from __future__ import annotations

import re

from callgate.gate.strictjson import parse_arguments
from callgate.strategies.text.base import Parser, Schemas, TextCall

__all__ = [
    "HARMONY_HEAD",
    "HARMONY_ROLE_HEAD",
    "HARMONY_START",
    "KIMI_ARGUMENTS",
    "KIMI_CALL_BEGIN",
    "KIMI_CALL_END",
    "TOKEN_PARSERS",
    "parse_harmony",
    "parse_harmony_role",
    "parse_kimi_k2",
]

KIMI_CALL_BEGIN = "<|tool_call_begin|>"
KIMI_ARGUMENTS = "<|tool_call_argument_begin|>"
KIMI_CALL_END = "<|tool_call_end|>"
_KIMI_ID = re.compile(r"(?:functions\.)?([^\s:<>{}\[\]()\"'`,;=]+):([0-9]+)")
"""A Kimi call id: an optional ``functions.`` namespace, the tool's name, ``:``, an index."""

_WS = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _arguments(text: str) -> dict[str, object] | None:
    arguments, problem = parse_arguments(text.strip(" \t\n\r"))
    return arguments if problem is None else None


def parse_kimi_k2(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read Kimi K2's tool-call section: each call's id names its tool; JSON arguments."""
    # Kimi K2 chat template and vLLM's kimi_k2 parser: ids are functions.NAME:IDX (vLLM
    # also reads NAME:IDX). vLLM guesses a tool from the arguments for a bare counter id
    # ("0") and keeps the good calls of a section with a bad one; callgate reads neither.
    if _SURROGATE.search(payload):
        return None
    calls: list[TextCall] = []
    pos = _skip(payload, 0)
    while pos < len(payload):
        if not payload.startswith(KIMI_CALL_BEGIN, pos):
            return None
        start = pos + len(KIMI_CALL_BEGIN)
        middle = payload.find(KIMI_ARGUMENTS, start)
        end = payload.find(KIMI_CALL_END, start)
        if middle < 0 or end < middle:
            return None
        call_id = payload[start:middle].strip(" \t\n\r")
        match = _KIMI_ID.fullmatch(call_id)
        arguments = _arguments(payload[middle + len(KIMI_ARGUMENTS) : end])
        if match is None or arguments is None:
            return None
        calls.append(TextCall(name=match.group(1), arguments=arguments, id=call_id))
        pos = _skip(payload, end + len(KIMI_CALL_END))
    return calls or None


_HARMONY_NAME = r"to=functions\.([^\s<>{}\[\]()\"'`,;=]+)"
_HARMONY_TYPE = r"(?:[ \t]*<\|constrain\|>[ \t]*json|[ \t]+json)?[ \t]*<\|message\|>"
HARMONY_HEAD = re.compile(
    r"[ \t\n\r]*(?:commentary|analysis)[ \t]+" + _HARMONY_NAME + _HARMONY_TYPE
)
"""The header of a Harmony tool call up to its message token (group 1: the tool's name)."""
HARMONY_START = "<|start|>"
HARMONY_ROLE_HEAD = re.compile(
    r"[ \t\n\r]*assistant[ \t]+"
    + _HARMONY_NAME
    + r"[ \t]*<\|channel\|>(?:commentary|analysis)"
    + _HARMONY_TYPE
)
"""A Harmony header with the recipient after the role, up to the message token."""


def _harmony(head_pattern: re.Pattern[str], payload: str) -> list[TextCall] | None:
    """One Harmony call: the header (group 1 the tool's name), then strict JSON arguments."""
    if _SURROGATE.search(payload):
        return None
    head = head_pattern.match(payload)
    if head is None:
        return None
    arguments = _arguments(payload[head.end() :])
    if arguments is None:
        return None
    return [TextCall(name=head.group(1), arguments=arguments)]


def parse_harmony(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read one gpt-oss Harmony call: ``commentary to=functions.NAME … <|message|>{json}``."""
    # openai-harmony's renderer and vLLM's openai (gpt-oss) parser: the recipient sits in
    # the channel header, the message is the JSON arguments, <|call|> ends it. vLLM also
    # passes non-JSON or empty arguments through as they are; callgate refuses them.
    return _harmony(HARMONY_HEAD, payload)


def parse_harmony_role(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read one Harmony call whose recipient follows the role: ``assistant to=functions.NAME``."""
    # openai-harmony accepts the recipient in the role header as well as in the channel
    # header; llama.cpp's gpt-oss parser tests read both (test-chat.cpp).
    return _harmony(HARMONY_ROLE_HEAD, payload)


TOKEN_PARSERS: dict[str, Parser] = {
    "kimi_k2": parse_kimi_k2,
    "harmony": parse_harmony,
    "harmony_role": parse_harmony_role,
}
"""The special-token parsers, by their text-format contract names."""
