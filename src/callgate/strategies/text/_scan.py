"""The detector's scanning parts: the tables it scans with, an open block, a payload's end.

Part of :mod:`callgate.strategies.text.detector` (its public names stay there). A choice of
formats gives one :class:`_Scanning` (built once and cached): the openers, the tokens to
hold at the end of a delta, and per opener the tokens that end or break its block
(:class:`_Stops`). An open block is a :class:`_Block`; :class:`_ValueEnd` finds where a
JSON or Python value ends in an unclosed format's payload.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

from callgate.strategies.text.formats import TextFormat, leading_name, select
from callgate.strategies.text.quoting import MARKS

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


class _Stops(NamedTuple):
    """What ends an open block: its close and every breaking marker, and how to wait for them."""

    pattern: re.Pattern[str]
    """Any of the tokens, the longest first at a position."""
    partial: frozenset[str]
    """Proper prefixes of the tokens: a head ending in one is not judged yet."""
    keep: int
    """How many characters the window between deltas keeps: the longest token minus one."""
    longer: dict[str, tuple[str, ...]]
    """Token -> the longer tokens it begins: a match that may still grow into one waits."""


def _stops(tokens: Iterable[str]) -> _Stops:
    """The stop tokens of a block, compiled once per opening delimiter."""
    ordered = sorted(set(tokens), key=lambda t: (-len(t), t))
    longer = {t: tuple(u for u in ordered if len(u) > len(t) and u.startswith(t)) for t in ordered}
    return _Stops(
        _alternation(ordered),
        frozenset(t[:k] for t in ordered for k in range(1, len(t))),
        max((len(t) for t in ordered), default=1) - 1,
        {t: grown for t, grown in longer.items() if grown},
    )


class _Block:
    """An open block: its opener, candidate formats, and the payload so far."""

    __slots__ = (
        "formats", "head", "name", "opener", "parts", "read", "size", "stops", "tail", "value",
    )  # fmt: skip

    def __init__(self, opener: str, formats: list[TextFormat], stops: _Stops) -> None:
        self.opener = opener
        self.formats = formats
        self.stops = stops
        self.parts: list[str] = []
        self.size = 0
        self.head = ""
        self.name: str | None = None
        """The tool the payload names first thing, once read (see :meth:`named`)."""
        self.read = -1
        """The head's length when :attr:`name` was last looked for."""
        self.tail = ""
        syntaxes = {f.syntax for f in formats if f.syntax is not None}
        self.value = _ValueEnd("python" in syntaxes) if syntaxes else None
        """For a block that is the whole content: where its one value ends."""

    def named(self) -> str | None:
        """The tool the payload names first thing (once streamed), read again as the head grows.

        The head stops growing at its bound, so a long payload is read once.
        """
        if self.read != len(self.head):
            self.read = len(self.head)
            self.name = leading_name(self.head)
        return self.name

    @property
    def markup_open(self) -> str:
        return "" if self.formats[0].keep_open else self.opener

    @property
    def close(self) -> str | None:
        return self.formats[0].close

    @property
    def open_ended(self) -> bool:
        """The block may also end with the stream (its close is optional for some format)."""
        return any(_may_end(f) for f in self.formats)

    def payload(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def waits(self, window: str, match: re.Match[str]) -> bool:
        """Whether the token matched at the window's end may still grow into a longer one."""
        rest = window[match.start() :]
        return any(t.startswith(rest) for t in self.stops.longer.get(match.group(), ()))


_JSON_OUTSIDE = re.compile(r'[\[\]{}"]')
_PYTHON_OUTSIDE = re.compile(r"[\[\](){}\"']")
_NON_WS = re.compile(r"\S")
_OPENS = frozenset("[({")


class _ValueEnd:
    """Where the one value of a whole-content block (a JSON value, a Python list) closes.

    Fed the payload delta by delta, it tracks bracket depth outside strings (JSON strings,
    or Python's four quote kinds with backslash escapes) and, once the value has closed,
    finds the first character after it that is not whitespace: there the content stops
    being one value, so it is no call. Quote characters at a delta's end that may still
    become a triple quote wait for the next delta. Work per delta is proportional to it.
    """

    __slots__ = ("carry", "closed", "depth", "escape", "outside", "python", "quote")

    def __init__(self, python: bool) -> None:
        self.python = python
        self.outside = _PYTHON_OUTSIDE if python else _JSON_OUTSIDE
        self.depth = 0
        self.quote = ""
        """The open string's closing quote (``"``, ``'``, ``\"\"\"``, ``'''``); empty outside."""
        self.escape = False
        self.closed = False
        self.carry = ""

    def feed(self, text: str) -> int | None:
        """Where in ``text`` the first non-blank character after the closed value is, or None."""
        buf, base = self.carry + text, len(self.carry)
        self.carry = ""
        pos = 0
        while pos < len(buf):
            if self.closed:
                match = _NON_WS.search(buf, pos)
                return None if match is None else match.start() - base
            if self.escape:
                self.escape, pos = False, pos + 1
            elif self.quote:
                pos = self._in_string(buf, pos)
            else:
                pos = self._outside(buf, pos)
            if pos < 0:
                self.carry = buf[-pos - 1 :]
                return None
        return None

    def _in_string(self, buf: str, pos: int) -> int:
        quote = self.quote
        slash, end = buf.find("\\", pos), buf.find(quote[0], pos)
        if slash >= 0 and (end < 0 or slash < end):
            self.escape = True
            return slash + 1
        if end < 0:
            return len(buf)
        if len(quote) == 1 or buf.startswith(quote, end):
            self.quote = ""
            return end + len(quote)
        if quote.startswith(buf[end:]):
            return -end - 1
        return end + 1

    def _outside(self, buf: str, pos: int) -> int:
        match = self.outside.search(buf, pos)
        if match is None:
            return len(buf)
        char, at = match.group(), match.start()
        if char in "\"'":
            if self.python and buf.startswith(char * 3, at):
                self.quote = char * 3
                return at + 3
            if self.python and len(buf) - at < 3 and buf[at:] == char * (len(buf) - at):
                return -at - 1
            self.quote = char
            return at + 1
        self.depth += 1 if char in _OPENS else -1
        if self.depth <= 0:
            self.closed = True
        return at + 1


class _Scanning(NamedTuple):
    """What a detector scans with, for one choice of formats (built once; read only)."""

    openers: dict[str, list[TextFormat]]
    at_start: dict[str, list[TextFormat]]
    held_formats: frozenset[str]
    open_re: re.Pattern[str]
    prefixes: frozenset[str]
    hold: int
    stops: dict[str, _Stops]
    reason_re: re.Pattern[str]
    starters: re.Pattern[str]
    reason_hold: int


@functools.lru_cache(maxsize=256)
def _scanning(formats: tuple[str, ...] | None) -> _Scanning:
    """The scanning tables of ``formats`` (None: the defaults), checked and built once.

    A detector per turn would otherwise rebuild them (about 40 us for one format).
    """
    chosen = select(formats)
    openers: dict[str, list[TextFormat]] = {}
    at_start: dict[str, list[TextFormat]] = {}
    for fmt in chosen:
        table = at_start if fmt.at_start else openers
        for opener in fmt.opens:
            group = table.setdefault(opener, [])
            if group and group[0].close != fmt.close:
                raise ValueError(f"formats sharing {opener!r} must share its close")
            group.append(fmt)
    tokens = [*openers, THINK_OPEN]
    for a in tokens:
        for b in tokens:
            if a != b and b.startswith(a):
                raise ValueError(f"delimiter {a!r} is a prefix of {b!r}")
    stops: dict[str, _Stops] = {}
    for opener, group in openers.items():
        inner = {t for f in group for t in f.inner}
        breakers = [o for o in openers if (o != opener or not group[0].repeats) and o not in inner]
        close = [group[0].close] if group[0].close else []
        stops[opener] = _stops([*close, *breakers])
    return _Scanning(
        openers=openers,
        at_start=at_start,
        held_formats=frozenset(f.name for f in chosen if f.at_start),
        open_re=_alternation(tokens),
        prefixes=frozenset(t[:k] for t in tokens for k in range(1, len(t))),
        hold=max(len(t) for t in tokens) - 1,
        stops=stops,
        reason_re=_alternation([THINK_CLOSE, *openers]),
        starters=re.compile("[" + re.escape("".join({t[0] for t in tokens} | set(MARKS))) + "]"),
        reason_hold=max(len(t) for t in [THINK_CLOSE, *openers]) - 1,
    )


def _may_end(fmt: TextFormat) -> bool:
    """Whether a block of ``fmt`` may end with the stream by its grammar (no close, or optional)."""
    return fmt.close is None or fmt.open_ended


_NEVER = re.compile(r"(?!)")


def _alternation(tokens: Iterable[str]) -> re.Pattern[str]:
    """One pattern matching any of ``tokens``, the longest first at a position."""
    ordered = sorted(set(tokens), key=lambda t: (-len(t), t))
    return re.compile("|".join(re.escape(t) for t in ordered)) if ordered else _NEVER


_NO_STOPS = _stops(())
