"""Every text format cut every way at 1, 2 and 3 characters per delta, alone and by default.

Each sample call sits between prose; whatever the cut (and whatever phase the cut starts
at), the prose is shown exactly, nothing of the markup is, and the calls are the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.strategies.text.detector import Detector
from callgate.strategies.text.formats import DEFAULT_FORMATS, END_FORMATS, FORMATS
from callgate.testing.cuts import fixed
from callgate.testing.text import AFTER, BEFORE, SAMPLES, TAIL_SAMPLES

CASES = [
    (fmt, n, BEFORE + markup + AFTER, BEFORE + AFTER, calls)
    for fmt, samples in SAMPLES.items()
    for n, (markup, calls) in enumerate(samples)
] + [
    (fmt, n, BEFORE + markup, BEFORE, calls)
    for fmt, samples in TAIL_SAMPLES.items()
    for n, (markup, calls) in enumerate(samples)
]
SPLITS = [(size, phase) for size in (1, 2, 3) for phase in range(size)]


def run(formats: list[str] | None, pieces: list[str]) -> tuple[str, list[Any]]:
    detector = Detector(formats)
    steps = [detector.feed(p) for p in pieces]
    steps.append(detector.finish())
    calls = [(c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
    return "".join(s.shown for s in steps), calls


def test_every_stream_format_has_a_sample() -> None:
    stream = {name for name in FORMATS if name not in END_FORMATS}
    assert stream == set(SAMPLES) | set(TAIL_SAMPLES)


@pytest.mark.parametrize(("fmt", "n", "content", "prose", "calls"), CASES)
def test_every_cut_at_one_two_and_three_characters_gives_the_same_result(
    fmt: str, n: int, content: str, prose: str, calls: list[Any]
) -> None:
    sets: list[list[str] | None] = [[fmt]]
    if fmt in DEFAULT_FORMATS:
        sets.append(None)
    for formats in sets:
        assert run(formats, [content]) == (prose, calls)
        for size, phase in SPLITS:
            assert run(formats, fixed(content, size, phase)) == (prose, calls), (
                formats,
                size,
                phase,
            )


STOPPED = [
    (fmt, n, markup[: -len(FORMATS[fmt].close or "")], calls)
    for fmt, samples in SAMPLES.items()
    for n, (markup, calls) in enumerate(samples)
    if FORMATS[fmt].close and markup.endswith(FORMATS[fmt].close or "")
]
"""Every sample of a format with a close, the close taken by the server as its stop."""


def test_every_format_with_a_close_has_a_stopped_sample() -> None:
    closed = {name for name in SAMPLES if FORMATS[name].close}
    assert closed == {fmt for fmt, *_ in STOPPED}


@pytest.mark.parametrize(("fmt", "n", "markup", "calls"), STOPPED)
def test_a_block_whose_close_was_the_stop_sequence_is_a_call_unless_the_stream_was_cut(
    fmt: str, n: int, markup: str, calls: list[Any]
) -> None:
    content = BEFORE + markup
    sets: list[list[str] | None] = [[fmt]]
    if fmt in DEFAULT_FORMATS:
        sets.append(None)
    for formats in sets:
        for size, phase in [(len(content), 0), *SPLITS]:
            pieces = fixed(content, size, phase)
            assert run(formats, pieces) == (BEFORE, calls), (formats, size, phase)
            detector = Detector(formats)
            steps = [detector.feed(p) for p in pieces]
            steps.append(detector.finish(cut=True))
            shown = "".join(s.shown for s in steps)
            found = [(c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
            if FORMATS[fmt].open_ended:
                assert (shown, found) == (BEFORE, calls), "its close is optional"
            else:
                assert (shown, found) == (content, []), (formats, size, phase)
