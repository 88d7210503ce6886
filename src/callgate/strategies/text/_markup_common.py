"""What the markup payload parsers share: whitespace, tool names, and their one failure.

Part of :mod:`callgate.strategies.text.markup_payloads` and its tag-family parsers
(:mod:`callgate.strategies.text._xml_payloads`).
"""

from __future__ import annotations

import re

_WS = re.compile(r"[ \t\n\r]*")
_JSON_WS = " \t\n\r"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BAD_NAME = re.compile(r"[\s<>{}\[\]()\"'`,;=]")


class _Malformed(Exception):
    """Internal: the payload is not the format's call syntax."""


def _skip_ws(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _valid_name(name: str) -> bool:
    return bool(name) and _BAD_NAME.search(name) is None
