"""Track the bracket structure of a JSON text as its fragments arrive, in linear time.

Used where a caller wants to know, mid-stream, whether a call's arguments have closed
their top-level value (the ``parseable`` policy's early release) without re-reading the
whole text on every fragment: each fragment is scanned once, jumping between the
characters that matter (quotes, backslashes inside strings, brackets outside).
"""

from __future__ import annotations

import re

_IN_STRING = re.compile(r'["\\]')
_OUTSIDE = re.compile(r'["\[\]{}]')


class StructureScanner:
    """Depth and string state of a JSON text fed in pieces."""

    __slots__ = ("closed", "deepest", "depth", "escape", "in_string", "opened", "trailing")

    def __init__(self) -> None:
        self.depth = 0
        self.deepest = 0
        self.in_string = False
        self.escape = False
        self.opened = False
        self.closed = False
        """The top-level array or object has closed (the text may still continue)."""
        self.trailing = False
        """Text other than whitespace came after the top-level value closed."""

    def feed(self, text: str) -> int:
        """Scan one more fragment: the index in it of the top-level value's close, else -1.

        The close is the bracket that ends the top-level array or object.
        """
        position, end = 0, len(text)
        while position < end:
            if self.closed:
                self.trailing = self.trailing or not text[position:].isspace()
                return -1
            if self.in_string:
                if self.escape:
                    self.escape = False
                    position += 1
                    continue
                match = _IN_STRING.search(text, position)
                if match is None:
                    return -1
                position = match.end()
                if match.group() == "\\":
                    self.escape = True
                else:
                    self.in_string = False
                continue
            match = _OUTSIDE.search(text, position)
            if match is None:
                return -1
            position = match.end()
            char = match.group()
            if char == '"':
                self.in_string = True
            elif char in "[{":
                self.depth += 1
                self.opened = True
                self.deepest = max(self.deepest, self.depth)
            else:
                self.depth -= 1
                if self.depth == 0 and self.opened:
                    self.closed = True
                    if position < end:
                        self.trailing = not text[position:].isspace()
                    return position - 1
        return -1
