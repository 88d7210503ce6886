"""The gateway engine's CPU per chunk, same wire against translated, side by side in one run.

Run: ``python bench/bench_gateway.py`` (``--rounds N`` takes the best of N rounds instead of
five; ``--quick`` drops the largest size). One Chat Completions upstream stream of prose in
1-8 character deltas with a call leaked into the text every 2 KB, at three sizes, is
played through :class:`callgate.proxy.engine.Engine` as the proxy plays it
(``play_bytes`` per upstream read of one event, then ``finish``), in one run:

- **chat→chat**: the client speaks the upstream's wire (today's default);
- **chat→messages**: an Anthropic Messages client in front of it (Claude Code's case);
- **chat→responses**: a Responses client in front of it (Codex's case).

Each row is the best CPU time of the rounds in microseconds per upstream chunk (each
round runs the three in turn, so their ratios are taken under the same load); ``x same``
is the translated row over the same-wire row (the target is at most 1.2); growth compares
each size with the one before (linear work shows about 10x per 10x chunks).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import time
from typing import Any

from callgate.proxy.engine import Engine, Options
from callgate.proxy.upstream import sse_body

CALL = '<tool_call>{"name": "lookup", "arguments": {"q": "paris"}}</tool_call>'
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
WORDS = ["the", "model", "answers", "a", "question", "about", "the", "weather", "in", "Paris"]
PAIRS = (("chat", "chat"), ("messages", "chat"), ("responses", "chat"))
REQUESTS: dict[str, dict[str, Any]] = {
    "chat": {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}],
    },
    "messages": {
        "model": "qwen3",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "lookup", "input_schema": SCHEMA}],
    },
    "responses": {
        "model": "qwen3",
        "input": "go",
        "tools": [{"type": "function", "name": "lookup", "parameters": SCHEMA}],
    },
}


def stream(size: int) -> bytes:
    """``size`` characters of prose in 1-8 character deltas, a leaked call every 2 KB."""
    rng = random.Random(size)
    text: list[str] = []
    length = 0
    while length < size:
        piece = " ".join(rng.choice(WORDS) for _ in range(40)) + " "
        if length // 2048 != (length + len(piece)) // 2048:
            piece += CALL
        text.append(piece)
        length += len(piece)
    whole = "".join(text)
    chunks: list[dict[str, Any]] = []
    at = 0
    while at < len(whole):
        step = rng.randint(1, 8)
        delta = {"content": whole[at : at + step]}
        chunks.append(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "qwen3",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )
        at += step
    chunks.append(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "qwen3",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    return sse_body(chunks)


def play(client: str, upstream: str, events: list[bytes]) -> float:
    """CPU seconds to play ``events`` (one upstream read each) through one engine of the pair."""
    started = time.process_time()
    engine = Engine(
        REQUESTS[client], Options(on_blocked="notice"), client=client, upstream=upstream
    )
    for read in events:
        engine.play_bytes(read)
    engine.close_bytes()
    engine.finish()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="drop the largest size")
    args = parser.parse_args()
    sizes = (20_000, 200_000) if args.quick else (20_000, 200_000, 2_000_000)
    rows: dict[str, dict[int, float]] = {}
    for size in sizes:
        events = [event + b"\n\n" for event in stream(size).split(b"\n\n") if event]
        best = {pair: float("inf") for pair in PAIRS}
        for _ in range(args.rounds):
            for pair in PAIRS:
                best[pair] = min(best[pair], play(*pair, events))
        for (client, upstream), seconds in best.items():
            name = f"{upstream}→{client}"
            rows.setdefault(name, {})[size] = seconds * 1e6 / len(events)
    same = rows["chat→chat"]
    print(f"{'row':<18}" + "".join(f"{size:>12,}" for size in sizes) + "   x same   growth")
    for name, by_size in rows.items():
        cells = "".join(f"{by_size[size]:>12.2f}" for size in sizes)
        ratio = max(by_size[s] / same[s] for s in sizes)
        growth = ", ".join(
            f"{by_size[b] * b / (by_size[a] * a):.1f}x" for a, b in itertools.pairwise(sizes)
        )
        print(f"{name:<18}{cells}   {ratio:>6.2f}   {growth}")
    print(json.dumps({"us_per_chunk": rows}, ensure_ascii=False))


if __name__ == "__main__":
    main()
