"""Progress of a long command-line run, on a terminal only.

A :class:`Progress` rewrites one line on stderr (``replay: 5,000 of 40,000 chunks``) while
a run lasts longer than a moment, and erases it at the end. When stderr is not a
terminal (piped, redirected, under CI) it writes nothing, so output stays clean.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO, TypeVar, overload

T = TypeVar("T")

DELAY = 0.5
"""Seconds a run must last before its progress shows (short runs never flicker)."""

INTERVAL = 0.1
"""The least number of seconds between two redraws."""


class Progress:
    """Counts done items of a known total; draws ``label: done of total unit`` on a terminal."""

    def __init__(
        self,
        label: str,
        total: int,
        unit: str,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = sys.stderr if stream is None else stream
        self.on = self.stream.isatty()
        self.clock = clock
        self.done = 0
        self._start = clock()
        self._drawn_at: float | None = None
        self._width = 0

    def advance(self, count: int = 1) -> None:
        """Count ``count`` more items done; redraw if the run is long and a moment passed."""
        self.done += count
        if not self.on:
            return
        now = self.clock()
        if now - self._start < DELAY:
            return
        if self._drawn_at is not None and now - self._drawn_at < INTERVAL:
            return
        self._drawn_at = now
        line = f"{self.label}: {self.done:,} of {self.total:,} {self.unit}"
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def close(self) -> None:
        """Erase the line, if one was drawn."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


class Counted(Sequence[T]):
    """A sequence that advances a :class:`Progress` as it is iterated (indexing is free)."""

    def __init__(self, items: Sequence[T], progress: Progress) -> None:
        self.items, self.progress = items, progress

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self.items[index]

    def __iter__(self) -> Iterator[T]:
        for item in self.items:
            yield item
            self.progress.advance()
