"""Markdown code in the printed text: a code span or a fenced block quotes, it never calls.

Prose that explains a format writes its markup in backticks (``the model emits
`<tool_call>…</tool_call>` in its output``), or in a fenced block of some language. The
detector reads that text: while :class:`Quotes` says the text is code, no opening
delimiter is looked for. The rules follow CommonMark closely enough for a model's prose:

- a run of backticks opens a code span, closed by the next run of exactly as many
  backticks; a blank line ends it as well (a span never crosses a paragraph);
- a run of three or more at the start of a line (after at most three spaces) opens a fenced
  block, whatever its info string, closed by a run at least as long at the start of a line;
  it may run to the end of the content.

A run is judged only once it has ended, so one that a delta boundary cuts is the same run
(the backticks are shown meanwhile: a run is text either way). A fence whose info string
makes it an opening delimiter of the detector's formats (```` ```json ```` for the opt-in
``fenced_json``) is that format's block, decided before a run is read here. Work per delta
is proportional to the delta: the only look back is at most four characters of the current
line, asked of the ``indent`` callback.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Indent = Callable[[str, int], int]
"""Given the text read and a position in it, the spaces between the last line break (or
the content's start) and that position, or -1 if other text or more than three spaces
stand there (it looks back at most four characters)."""

_CODE_STOP = re.compile(r"[`\n]")


class Quotes:
    """Where the printed text is Markdown code; fed only the text the detector prints."""

    __slots__ = ("closer", "fence", "run", "run_at_line")

    def __init__(self) -> None:
        self.closer = 0
        """The open code's backtick count (0: prose)."""
        self.fence = False
        """The open code is a fenced block (else a code span)."""
        self.run = 0
        """Backticks of a run not yet ended (the last delta ended inside it)."""
        self.run_at_line = False
        """That run started a line."""

    @property
    def busy(self) -> bool:
        """Whether the text now read is code, or continues a run of backticks."""
        return self.closer > 0 or self.run > 0

    def read(self, buf: str, indent: Indent) -> int:
        """Read ``buf`` as code or backticks from its start; return where prose resumes.

        ``len(buf)`` when all of it was code (or a run still open at its end).
        """
        pos, size = 0, len(buf)
        while pos < size:
            if buf[pos] == "`":
                if not self.run:
                    self.run_at_line = indent(buf, pos) >= 0
                end = pos
                while end < size and buf[end] == "`":
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
            match = _CODE_STOP.search(buf, pos)
            if match is None:
                return size
            pos = match.start()
            if match.group() == "\n":
                blank = not self.fence and indent(buf, pos) >= 0
                pos += 1
                if blank:
                    self.closer = 0
                    return pos
        return pos

    def _settle(self) -> None:
        """A run of backticks ended: it opens code, closes it, or stays inside it."""
        run, at_line = self.run, self.run_at_line
        self.run = 0
        if not self.closer:
            self.fence = run >= 3 and at_line
            self.closer = run
        elif self.fence:
            if run >= self.closer and at_line:
                self.closer = 0
        elif run == self.closer:
            self.closer = 0
