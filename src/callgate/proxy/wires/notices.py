"""Every sentence callgate itself writes into a client's answer, in one place.

The writers call these and nothing else for words a user reads, so the wording can be
changed (or translated) here alone.
"""

from __future__ import annotations

__all__ = ["broken", "broken_line", "withheld"]


def withheld(why: str) -> str:
    """The short assistant text after the turn's own, saying why calls were withheld."""
    return f"\n\n[callgate: {why}]"


def broken_line() -> str:
    """What the client's turn says when the upstream stopped answering in the middle."""
    return "the upstream stopped before the answer was complete; please try again"


def broken() -> str:
    """:func:`broken_line` as the text after the turn's own."""
    return f"\n\n[callgate: {broken_line()}]"
