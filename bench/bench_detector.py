"""The detector's cost per delta, side by side in one run, against writing deltas through.

Run: ``python bench/bench_detector.py``. For 10 KB, 100 KB and 1 MB of content in small
deltas (1-8 characters), three contents are fed: plain prose; prose full of near-miss
characters (``<``, ``[``, backticks, ``<tool`` prefixes that never complete); and prose
with a text-embedded call every 2 KB. Each is timed through the detector, through a bare
list append, and through a write to a text stream (what a client's display does without
callgate). The
growth column compares each size with the one before: linear work shows about 10x. A
second table does the same per newer text format, alone: a call every 2 KB, and one call
whose argument is as long as the content (the cost inside one open block), at 100 KB and
1 MB.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import random
import time

from callgate.strategies.text.detector import Detector
from callgate.strategies.text.formats import FORMATS
from callgate.strategies.text.invoke_payloads import DSML

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'

FORMAT_CALLS = {
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{{"city": "{v}"}}<|tool_call_end|><|tool_calls_section_end|>',
    "minimax_m2": '<minimax:tool_call><invoke name="get_weather"><parameter name="city">{v}'
    "</parameter></invoke></minimax:tool_call>",
    "deepseek_v32": f'<{DSML}function_calls><{DSML}invoke name="get_weather">'
    f'<{DSML}parameter name="city" string="true">{{v}}</{DSML}parameter></{DSML}invoke>'
    f"</{DSML}function_calls>",
    "deepseek_v4": f'<{DSML}tool_calls><{DSML}invoke name="get_weather">'
    f'<{DSML}parameter name="city" string="true">{{v}}</{DSML}parameter></{DSML}invoke>'
    f"</{DSML}tool_calls>",
    "harmony": "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{{"city": "{v}"}}<|call|>',
    "llama4_python": "<|python_start|>[get_weather(city='{v}')]<|python_end|>",
    "granite_tool_call": '<tool_call>[{{"name": "get_weather", "arguments": {{"city": "{v}"}}}}]'
    "</tool_call>",
    "phi4_functools": 'functools[{{"name": "get_weather", "arguments": {{"city": "{v}"}}}}]',
    "harmony_role": "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
    '<|message|>{{"city": "{v}"}}<|call|>',
    "kimi_k2_singular": "<|tool_call_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{{"city": "{v}"}}<|tool_call_end|><|tool_call_section_end|>',
    "bare_json": '{{"name": "get_weather", "arguments": {{"city": "{v}"}}}}',
    "pythonic": "[get_weather(city='{v}')]",
}
"""One call of each newer format, ``{v}`` standing for the city (see docs/text-formats.md).
Bare JSON and pythonic lists are held from the content's start: only their one long call
is measured (the whole content is the call)."""


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


def format_calls(name: str, size: int) -> str:
    """Prose with a call of format ``name`` every 2 KB (one at the end if nothing closes it)."""
    call = FORMAT_CALLS[name].format(v="Paris")
    if FORMATS[name].close is None:
        return prose(size - len(call)) + call
    chunk = prose(2048 - len(call)) + call
    return (chunk * (size // len(chunk) + 1))[:size]


def format_long_call(name: str, size: int) -> str:
    """One call of format ``name`` whose argument fills ``size`` characters."""
    empty = FORMAT_CALLS[name].format(v="")
    return FORMAT_CALLS[name].format(v="x" * max(size - len(empty), 0))


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


def detect(pieces: list[str], formats: list[str] | None = None) -> str:
    """Every delta through a detector (the default set unless ``formats`` is given)."""
    detector = Detector(formats)
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
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
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
    formats_table()


def formats_table() -> None:
    """Per newer format: calls every 2 KB, and one call as long as the content, at 10x sizes.

    Each format is detected alone (what ``formats_for_model`` picks for its models). The
    cost is per delta; the growth column is the total time at 1 MB over 100 KB: linear
    work shows about 10x.
    """
    head = ("format", "content", "us/delta 100K", "us/delta 1M", "growth", "calls")
    print()
    print("{:<19}{:<11}{:>15}{:>13}{:>8}{:>7}".format(*head))
    for name in FORMAT_CALLS:
        rows = (("calls", format_calls), ("one long", format_long_call))
        for label, make in rows[1:] if FORMATS[name].at_start else rows:
            small, large = deltas(make(name, 100_000)), deltas(make(name, 1_000_000))
            alone = functools.partial(detect, formats=[name])
            fast = best(alone, small, 5)
            slow = best(alone, large, 2)
            row = (
                name,
                label,
                fast / len(small) * 1e6,
                slow / len(large) * 1e6,
                f"{slow / fast:.1f}x",
                _count(large, name),
            )
            print("{:<19}{:<11}{:>15.3f}{:>13.3f}{:>8}{:>7}".format(*row))


def _count(pieces: list[str], name: str) -> int:
    """How many calls the detector finds: the rows measure detection, not refusal."""
    detector = Detector([name])
    steps = [detector.feed(p) for p in pieces]
    steps.append(detector.finish())
    return sum(len(b.calls) for s in steps for b in s.blocks)


if __name__ == "__main__":
    main()
