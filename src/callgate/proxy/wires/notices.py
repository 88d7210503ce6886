"""The notices the writers put into a client's answer, worded by :mod:`callgate.proxy.notices`.

The words live there alone (the integrations and the Envoy processor say the same); this
module only places them after the turn's own text.
"""

from __future__ import annotations

from callgate.proxy.notices import NoticeTurn, turn_notice, upstream_notice

__all__ = ["broken", "broken_line", "withheld"]

_AFTER = "\n\n"
"""What separates a notice from the turn's own text."""


def withheld(turn: NoticeTurn) -> str:
    """The line after the turn's own text naming the withheld calls and why ('' when none)."""
    line = turn_notice(turn)
    return _AFTER + line if line else ""


def broken_line() -> str:
    """What the client's turn says when the upstream stopped answering in the middle."""
    return upstream_notice("broken")


def broken() -> str:
    """:func:`broken_line` as the text after the turn's own."""
    return _AFTER + broken_line()
