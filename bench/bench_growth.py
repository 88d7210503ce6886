"""Growth per doubling, side by side in one run: hostile stream and schema shapes.

Run: ``python bench/bench_growth.py [--quick] [--sizes N]``. Each shape is a stream (or
a schema check) whose size is one number: it is played at that size and at two, four and
eight times it, through ``run_turn`` with a driver that owns the tool (the path a client
takes; ``run_turn`` also builds ``as_dict()`` once at the end). The table prints the best
time of each size and its ratio to the size before: linear work shows about 2x per
doubling, quadratic about 4x.

The shapes are the ones that once grew quadratically: OpenAI-compatible servers that
restate ``id`` and ``name`` in every delta, Bedrock repeating ``contentBlockStart``,
Anthropic with many text blocks, ``signature_delta`` events, ``usage`` keys, Responses
``annotation.added`` events, and schema checks (a backtracking pattern, ``uniqueItems``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from callgate import Driver, Tool, run_turn
from callgate.gate.schema import ToolSchemas

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from growth_shapes import (
    Chunk,
    anthropic_signature,
    anthropic_text_blocks,
    anthropic_usage,
    bedrock_restarting,
    openai_restating,
    responses_annotations,
)

SCHEMA = {"type": "object"}


def play(chunks: list[Chunk]) -> object:
    """The client's path: a driver owning ``f``, ``run_turn`` over the whole stream."""
    driver = Driver([Tool("f", SCHEMA, lambda q: "ok")])
    return run_turn(chunks, driver, driver.new_stream_buffer())


def redos_pattern(n: int) -> object:
    r"""``^([a-zA-Z0-9]+\s?)*$`` against ``n`` letters and a ``!``."""
    schema = {"type": "object", "properties": {"r": {"pattern": r"^([a-zA-Z0-9]+\s?)*$"}}}
    return ToolSchemas({"f": schema}).check("f", {"r": "a" * n + "!"})


def unique_objects(n: int) -> object:
    """``uniqueItems`` over ``n`` distinct objects."""
    schema = {"type": "object", "properties": {"r": {"uniqueItems": True}}}
    return ToolSchemas({"f": schema}).check("f", {"r": [{"k": i} for i in range(n)]})


STREAMS: list[tuple[str, Callable[[int], list[Chunk]], int]] = [
    ("openai restating id+name", openai_restating, 4000),
    ("bedrock repeated contentBlockStart", bedrock_restarting, 4000),
    ("anthropic text blocks", anthropic_text_blocks, 4000),
    ("anthropic signature_delta", anthropic_signature, 16000),
    ("anthropic usage keys", anthropic_usage, 16000),
    ("responses annotation.added", responses_annotations, 16000),
]
CHECKS: list[tuple[str, Callable[[int], object], int]] = [
    ("schema pattern (backtracking)", redos_pattern, 1_000_000),
    ("schema uniqueItems objects", unique_objects, 16000),
]


def best(work: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` runs, in seconds."""
    result = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        result = min(result, time.perf_counter() - start)
    return result


def main() -> None:
    """Print one row per shape: time at each size, and the ratio per doubling."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one run each")
    parser.add_argument("--sizes", type=int, default=4, help="how many doublings (default 4)")
    args = parser.parse_args()
    scale, repeat = (4, 1) if args.quick else (1, 3)
    rows: list[tuple[str, Callable[[int], object], int]] = [
        (label, lambda n, make=make: play(make(n)), base) for label, make, base in STREAMS
    ]
    rows += CHECKS
    print(f"{'shape':<36}{'sizes':>22}  seconds per size, (ratio to the size before)")
    for label, run, base in rows:
        sizes = [max(base // scale, 1) * 2**k for k in range(args.sizes)]
        cells, previous = [], None
        for size in sizes:
            seconds = best(lambda size=size, run=run: run(size), repeat)
            ratio = f" ({seconds / previous:.1f}x)" if previous else ""
            cells.append(f"{seconds:.3f}{ratio}")
            previous = seconds
        print(f"{label:<36}{f'{sizes[0]}..{sizes[-1]}':>22}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
