"""Markdown code in the printed text: a code span or a fenced block quotes, it never calls.

Prose that explains a format writes its markup in backticks (``the model emits
`<tool_call>…</tool_call>` in its output``), or in a fenced block of some language. The
detector reads that text: while :class:`Quotes` says the text is code, no opening
delimiter is looked for. The rules follow CommonMark closely enough for a model's prose:

- a run of backticks opens a code span, closed by the next run of exactly as many
  backticks; a blank line ends it as well (a span never crosses a paragraph);
- a run of three or more backticks or tildes that starts a line opens a fenced block,
  whatever its info string, closed by a run of the same character at least as long that
  starts a line; it may run to the end of the content. A run starts a line when only
  spaces, tabs, list markers (``-``, ``*``, ``+``, ``1.``, ``1)``, each before a space) and
  block-quote markers (``>``) stand between it and the line's start, so a fence inside a
  list item or a quote is one too; a run of tildes anywhere else is plain text.

A run is judged only once it has ended, so one that a delta boundary cuts is the same run
(the run is shown meanwhile: it is text either way). A fence whose info string makes it an
opening delimiter of the detector's formats (```` ```json ```` for the opt-in
``fenced_json``) is that format's block, decided before a run is read here. Work per delta
is proportional to the delta: the only look back is at most :data:`LOOK` characters of the
current line, asked of the ``line`` callback.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["LOOK", "MARKS", "Line", "Quotes", "blank_before", "starts_line"]

LOOK = 32
"""How far back, at most, the text before a run is read to tell whether it starts a line."""

MARKS = "`~"
"""The characters whose runs make code: backticks (spans and fences) and tildes (fences)."""

Line = Callable[[str, int], "str | None"]
"""Given the text read and a position in it, the text between the last line break (or the
content's start) and that position, or None when that is longer than :data:`LOOK`."""

_LEAD = re.compile(r"(?:[ \t]|>|(?:[-*+]|\d{1,9}[.)])(?=[ \t]))*")
"""What may stand before a fence on its line: indentation, list and block-quote markers."""
_STOPS = {"`": re.compile(r"[`\n]"), "~": re.compile(r"[~\n]")}
"""Inside code of each mark: where its text may end (a run of the mark, or a line break)."""


def starts_line(before: str | None) -> bool:
    """Whether a run with ``before`` on its line before it may be a fence."""
    return before is not None and _LEAD.fullmatch(before) is not None


def blank_before(before: str | None) -> bool:
    """Whether a line break with ``before`` on its line ends a blank line (ends a span)."""
    return before is not None and before.strip(" \t") == ""


class Quotes:
    """Where the printed text is Markdown code; fed only the text the detector prints."""

    __slots__ = ("closer", "fence", "mark", "run", "run_at_line", "run_mark")

    def __init__(self) -> None:
        self.closer = 0
        """The open code's run length (0: prose)."""
        self.mark = "`"
        """The open code's character."""
        self.fence = False
        """The open code is a fenced block (else a code span)."""
        self.run = 0
        """Characters of a run not yet ended (the last delta ended inside it)."""
        self.run_mark = "`"
        """That run's character."""
        self.run_at_line = False
        """That run started a line."""

    @property
    def busy(self) -> bool:
        """Whether the text now read is code, or continues a run of backticks or tildes."""
        return self.closer > 0 or self.run > 0

    def read(self, buf: str, line: Line) -> int:
        """Read ``buf`` as code or a run from its start; return where prose resumes.

        ``len(buf)`` when all of it was code (or a run still open at its end).
        """
        pos, size = 0, len(buf)
        while pos < size:
            char = buf[pos]
            wanted = MARKS if not self.closer else self.mark
            if char in wanted and (not self.run or char == self.run_mark):
                if not self.run:
                    self.run_mark = char
                    self.run_at_line = starts_line(line(buf, pos))
                end = pos
                while end < size and buf[end] == char:
                    end += 1
                self.run += end - pos
                pos = end
                if pos == size:
                    return size
            if self.run:
                self._settle()
                if not self.closer:
                    return pos
                continue
            if not self.closer:
                return pos
            match = _STOPS[self.mark].search(buf, pos)
            if match is None:
                return size
            pos = match.start()
            if match.group() == "\n":
                blank = not self.fence and blank_before(line(buf, pos))
                pos += 1
                if blank:
                    self.closer = 0
                    return pos
        return pos

    def _settle(self) -> None:
        """A run ended: it opens code, closes it, stays inside it, or (tildes) is text."""
        run, mark, at_line = self.run, self.run_mark, self.run_at_line
        self.run = 0
        if not self.closer:
            fence = run >= 3 and at_line
            if fence or mark == "`":
                self.closer, self.mark, self.fence = run, mark, fence
        elif self.fence:
            if run >= self.closer and at_line:
                self.closer = 0
        elif run == self.closer:
            self.closer = 0
