"""Every sentence callgate itself writes into a client's answer, in one place.

The writers call these and nothing else for words a user reads, so the wording can be
changed (or translated) here alone.
"""

from __future__ import annotations

__all__ = ["withheld"]


def withheld(why: str) -> str:
    """The short assistant text after the turn's own, saying why calls were withheld."""
    return f"\n\n[callgate: {why}]"
