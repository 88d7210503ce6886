"""The driver's cost per chunk, side by side in one run: buffer alone, the full loop, recording.

Run: ``python bench/bench_driver.py`` (``--quick`` drops the largest size; ``--rounds N``
takes the best of N rounds instead of five). Three OpenAI
streams of 20 KB, 200 KB and 2 MB: one native call whose arguments come in 4-character
fragments; prose in 1-8 character deltas with a text-embedded call every 2 KB; the same
prose without calls. Each is fed, in one run, to:

- **buffer**: ``LLMStreamBuffer.add`` only (no text formats: no detector, no driver);
- **buffer + detector**: the driver's own buffer (the detector on its text formats), fed
  with ``add`` and read with ``text()``, no driver: what the loop does minus the driver;
- **loop**: the client loop: ``add``, ``driver.process_llm_response``, ``text()``, with
  the driver's buffer and a tool that returns at once;
- **recording**: the same loop with a :class:`~callgate.audit.trace.Recorder`;
- **run_turn**: :func:`~callgate.run_turn`, the loop as callgate writes it for the user
  (a :class:`~callgate.TurnStep` per chunk, the turn gathered at the end).

Times are the best CPU time of five rounds (each round runs the five in turn, so their
ratios are taken under the same load), in microseconds per chunk; growth compares each
size with the one before (linear work shows about 10x per 10x chunks). ``loop / buffer+det`` is the
driver's own cost per chunk over the buffer it reads; ``run_turn / buffer+det`` the same
for the loop a user calls.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.audit.trace import Recorder

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
CALL = '<tool_call>{"name": "lookup", "arguments": {"q": "paris"}}</tool_call>'
WORDS = [
    "the",
    "model",
    "answers",
    "a",
    "question",
    "about",
    "the",
    "weather",
    "in",
    "Paris",
    "and",
    "then",
    "some",
    "more",
]


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def native(size: int) -> list[dict[str, Any]]:
    """One call whose ``q`` argument is ``size`` characters, in 4-character fragments."""
    text = json.dumps({"q": "x" * size})
    opening = {"index": 0, "id": "call_1", "type": "function",
               "function": {"name": "lookup", "arguments": ""}}  # fmt: skip
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [opening]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
        chunk({}, "tool_calls"),
    ]


def prose(size: int, calls: bool) -> list[dict[str, Any]]:
    """``size`` characters of prose in 1-8 character deltas, with a call every 2 KB."""
    parts, total, n = [], 0, 0
    while total < size:
        word = WORDS[n % len(WORDS)] + " "
        n += 1
        parts.append(word)
        total += len(word)
        if calls and total % 2048 < len(word):
            parts.append(CALL)
            total += len(CALL)
    text = "".join(parts)
    deltas, i, step = [], 0, 0
    while i < len(text):
        width = 1 + step % 8
        deltas.append(text[i : i + width])
        i, step = i + width, step + 1
    return [chunk({"content": d}) for d in deltas] + [chunk({}, "stop")]


def driver() -> Driver:
    """The driver of a model that writes ``<tool_call>`` blocks: its buffer's detector reads them.

    Without ``text_formats`` a driver picks the formats from the stream's model, and these
    chunks name none: the text calls would be text, and no round would decide one.
    """
    return Driver([Tool("lookup", SCHEMA, lambda q: "ok")], text_formats=("tool_call_tag",))


DRIVER = driver()
"""The driver every run uses: its tool schema is checked and compiled once, as in an
application (a driver keeps no state of a stream; the stream's buffer does)."""


def buffer_only(chunks: list[dict[str, Any]]) -> None:
    buffer = LLMStreamBuffer(tool_schemas=DRIVER.schemas)
    for c in chunks:
        buffer.add(c)
    buffer.end()


def buffer_detector(chunks: list[dict[str, Any]]) -> None:
    buffer = DRIVER.new_stream_buffer()
    for c in chunks:
        buffer.add(c)
        buffer.text()
    buffer.end()
    buffer.text()


def loop(chunks: list[dict[str, Any]], recorder: Recorder | None = None) -> None:
    d = DRIVER
    buffer = d.new_stream_buffer(recorder=recorder)
    for c in chunks:
        buffer.add(c)
        d.process_llm_response(buffer)
        buffer.text()
    buffer.end()
    d.process_llm_response(buffer)
    buffer.text()


def recording(chunks: list[dict[str, Any]]) -> None:
    loop(chunks, Recorder())


def played(chunks: list[dict[str, Any]]) -> None:
    run_turn(chunks, DRIVER, DRIVER.new_stream_buffer())


def alternating(
    runs: list[Callable[[list[dict[str, Any]]], None]],
    chunks: list[dict[str, Any]],
    rounds: int = 5,
) -> list[float]:
    """Each run's best CPU time over ``rounds`` rounds, in microseconds per chunk."""
    times = [float("inf")] * len(runs)
    for _ in range(rounds):
        for i, run in enumerate(runs):
            start = time.process_time()
            run(chunks)
            times[i] = min(times[i], time.process_time() - start)
    return [t / len(chunks) * 1e6 for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="drop the 2 MB streams")
    parser.add_argument(
        "--rounds", type=int, default=5, help="best of this many rounds (default 5)"
    )
    args = parser.parse_args()
    sizes = [20_000, 200_000] if args.quick else [20_000, 200_000, 2_000_000]
    rounds = args.rounds
    streams = {
        "native call": native,
        "prose + text calls": lambda n: prose(n, True),
        "prose only": lambda n: prose(n, False),
    }
    print("| stream | size | chunks | buffer µs | buffer+det µs | loop µs | recording µs "
          "| run_turn µs | loop / buffer | loop / buffer+det | recording / loop "
          "| run_turn / buffer+det | loop growth |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, build in streams.items():
        previous = None
        for size in sizes:
            chunks = build(size)
            plain, detected, full, rec, user = alternating(
                [buffer_only, buffer_detector, loop, recording, played], chunks, rounds
            )
            total = full * len(chunks)
            growth = f"{total / previous:.1f}x" if previous else "-"
            previous = total
            print(
                f"| {name} | {size // 1000} KB | {len(chunks):,} | {plain:.2f} | {detected:.2f} "
                f"| {full:.2f} | {rec:.2f} | {user:.2f} | {full / plain:.2f} "
                f"| {full / detected:.2f} | {rec / full:.2f} | {user / detected:.2f} | {growth} |"
            )


if __name__ == "__main__":
    main()
