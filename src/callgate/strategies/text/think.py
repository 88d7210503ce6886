"""Reasoning kept out of the display: ``<think>…</think>`` spans dropped from shown text.

By default callgate shows ``<think>`` content like any other content (it only never runs
a call inside it). A chat UI wants the reasoning out of the answer: a driver made with
``hide_think=True`` gives its buffers a :class:`ThinkFilter`, which drops every span from
``<think>`` to ``</think>`` (and the whitespace right after the close) from the text the
buffer releases, however the deltas split the tags. The message keeps the text as it came.
A span still open when the stream ends stays hidden; a ``</think>`` without its opening
is shown.
"""

from __future__ import annotations

from callgate.strategies.text.detector import THINK_CLOSE, THINK_OPEN


def _partial(text: str, token: str) -> int:
    """The length of the longest end of ``text`` that is a proper prefix of ``token``."""
    for size in range(min(len(text), len(token) - 1), 0, -1):
        if token.startswith(text[-size:]):
            return size
    return 0


class ThinkFilter:
    """Drops ``<think>…</think>`` from display text given piece by piece (linear in it)."""

    __slots__ = ("_after", "_held", "_inside")

    def __init__(self) -> None:
        self._inside = False
        self._after = False
        """Right after a close: whitespace is dropped until other text comes."""
        self._held = ""
        """The end of the text so far that may begin the next tag (at most 8 characters)."""

    def feed(self, text: str) -> str:
        """The part of ``text`` to show, given everything fed before."""
        buf, self._held = self._held + text, ""
        shown: list[str] = []
        while buf:
            token = THINK_CLOSE if self._inside else THINK_OPEN
            at = buf.find(token)
            if at < 0:
                keep = _partial(buf, token)
                if not self._inside:
                    shown.append(self._lead(buf[: len(buf) - keep]))
                self._held = buf[len(buf) - keep :]
                break
            if not self._inside:
                shown.append(self._lead(buf[:at]))
            self._inside = not self._inside
            self._after = not self._inside
            buf = buf[at + len(token) :]
        return "".join(shown)

    def finish(self) -> str:
        """What is still held once the stream ended (nothing inside an open span)."""
        held, self._held = self._held, ""
        return "" if self._inside else self._lead(held)

    def _lead(self, text: str) -> str:
        if self._after and text:
            text = text.lstrip()
            self._after = not text
        return text
