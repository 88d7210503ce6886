"""The detector's cost per delta, side by side in one run, against writing deltas through.

Run: ``python bench/bench_detector.py``. For 10 KB, 100 KB and 1 MB of content in small
deltas (1-8 characters), three contents are fed: plain prose; prose full of near-miss
characters (``<``, ``[``, backticks, ``<tool`` prefixes that never complete); and prose
with a text-embedded call every 2 KB. Each is timed through the detector, through a bare
list append, and through a write to a text stream (what a client's display does without
callgate). The
growth column compares each size with the one before: linear work shows about 10x.
"""

from __future__ import annotations

import io
import json
import random
import time

from callgate.detector import Detector

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def prose(size: int, seed: int = 3) -> str:
    """Plain sentences."""
    rng = random.Random(seed)
    words = ["the", "model", "answers", "a", "question", "about", "weather", "in", "Paris"]
    out: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(words)
        out.append(word)
        total += len(word) + 1
    return " ".join(out)[:size]


def near_misses(size: int) -> str:
    """Prose that keeps starting delimiters and never finishing them."""
    unit = "a <tools are> [TOOL x] ``` code <|tool_ <tool_result> {json} "
    return (unit * (size // len(unit) + 1))[:size]


def with_calls(size: int) -> str:
    """Prose with a call every 2 KB."""
    chunk = prose(2048 - len(CALL)) + CALL
    return (chunk * (size // len(chunk) + 1))[:size]


def deltas(text: str, seed: int = 5) -> list[str]:
    """``text`` cut into 1-8 character deltas."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 8)
        out.append(text[i : i + n])
        i += n
    return out


def through(pieces: list[str]) -> str:
    """The baseline: write every delta straight to the display."""
    shown: list[str] = []
    for piece in pieces:
        shown.append(piece)
    return "".join(shown)


def write(pieces: list[str]) -> str:
    """A client's display: every delta written to a text stream."""
    out = io.StringIO()
    for piece in pieces:
        out.write(piece)
    return out.getvalue()


def detect(pieces: list[str]) -> str:
    """Every delta through a default detector."""
    detector = Detector()
    shown = [detector.feed(piece).shown for piece in pieces]
    shown.append(detector.finish().shown)
    return "".join(shown)


def best(fn: object, pieces: list[str], repeat: int) -> float:
    """Best wall time of ``repeat`` runs, in seconds."""
    assert callable(fn)
    result = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(pieces)
        result = min(result, time.perf_counter() - start)
    return result


def main() -> None:
    """Print the table."""
    head = ("content", "size", "deltas", "append us", "write us", "detector us", "/write", "growth")
    print("{:<12}{:>9}{:>9}{:>11}{:>10}{:>13}{:>8}{:>8}".format(*head))
    for label, make in (("prose", prose), ("near-miss", near_misses), ("with calls", with_calls)):
        previous = None
        for size, repeat in ((10_000, 20), (100_000, 5), (1_000_000, 2)):
            pieces = deltas(make(size))
            base = best(through, pieces, repeat)
            written = best(write, pieces, repeat)
            ours = best(detect, pieces, repeat)
            growth = "" if previous is None else f"{ours / previous:.1f}x"
            previous = ours
            n = len(pieces)
            row = (
                label,
                size,
                n,
                base / n * 1e6,
                written / n * 1e6,
                ours / n * 1e6,
                ours / written,
                growth,
            )
            print("{:<12}{:>9}{:>9}{:>11.3f}{:>10.3f}{:>13.3f}{:>8.1f}{:>8}".format(*row))
    assert json.loads(CALL[len("<tool_call>") : -len("</tool_call>")])


if __name__ == "__main__":
    main()
