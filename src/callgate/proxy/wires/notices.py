"""The notices the writers put into a client's answer, worded by :mod:`callgate.proxy.notices`.

The words live there alone (the integrations and the Envoy processor say the same); this
module only places them after the turn's own text.
"""

from __future__ import annotations

from callgate.proxy.notices import NoticeTurn, turn_notice, upstream_notice

__all__ = ["broken", "broken_line", "stream_error", "withheld"]

_AFTER = "\n\n"
"""What separates a notice from the turn's own text."""


def withheld(turn: NoticeTurn) -> str:
    """The line after the turn's own text naming the withheld calls and why ('' when none)."""
    line = turn_notice(turn)
    return _AFTER + line if line else ""


def broken_line(why: str | None = None) -> str:
    """What the client's turn says when the upstream stopped answering in the middle.

    ``why`` is the engine's reason (its ``broken``): a timeout is worded as one.
    """
    timed_out = why is not None and ("timeout" in why.lower() or "timed out" in why.lower())
    return upstream_notice("timeout" if timed_out else "broken")


def broken(why: str | None = None) -> str:
    """:func:`broken_line` as the text after the turn's own."""
    return _AFTER + broken_line(why)


def stream_error(why: str) -> dict[str, str]:
    """The ``error`` object of a Chat Completions stream's final chunk when the upstream broke.

    OpenRouter ends a stream that failed midway with such an object beside
    ``finish_reason: "error"``; the openai SDKs (Python and npm) raise it as an ``APIError``,
    so a client built on them ends in error instead of taking the turn for an answer.
    """
    timed_out = broken_line(why) == upstream_notice("timeout")
    code = "upstream_timeout" if timed_out else "upstream_error"
    return {"message": broken_line(why), "type": "upstream_error", "code": code}
