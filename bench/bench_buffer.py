"""Side-by-side cost per chunk: callgate's buffer against a bare dict accumulator.

Run: python bench/bench_buffer.py. Every stream is fed to every accumulator in the same
run; the table prints microseconds per chunk and the ratio to the bare accumulator.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from callgate import LLMStreamBuffer

Chunk = dict[str, Any]
SCHEMA = {"type": "object", "properties": {"blob": {"type": "string"}}, "required": ["blob"]}


def chunk(index: int, arguments: str, call_id: str | None = None) -> Chunk:
    """One Chat Completions chunk carrying one tool-call fragment."""
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        call.update(id=call_id, type="function")
        call["function"]["name"] = "store"
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def single_call(size: int, step: int = 4) -> list[Chunk]:
    """One call of ``size`` bytes of arguments in ``step``-character fragments."""
    text = json.dumps({"blob": "x" * (size - 12)})
    chunks = [chunk(0, "", "call_0")]
    chunks += [chunk(0, text[i : i + step]) for i in range(0, len(text), step)]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return chunks


def parallel_calls(calls: int = 3, size: int = 2048, seed: int = 7) -> list[Chunk]:
    """``calls`` calls of ``size`` bytes in 1-8 character fragments, interleaved."""
    rng = random.Random(seed)
    pending = []
    for index in range(calls):
        text = json.dumps({"blob": "y" * (size - 12)})
        parts, i = [], 0
        while i < len(text):
            n = rng.randint(1, 8)
            parts.append(text[i : i + n])
            i += n
        pending.append([chunk(index, "", f"call_{index}")] + [chunk(index, p) for p in parts])
    out = []
    while any(pending):
        lane = rng.choice([p for p in pending if p])
        out.append(lane.pop(0))
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return out


def bare(chunks: list[Chunk]) -> object:
    """The hand-written accumulator: index-keyed dict, fragment lists, json.loads at the end."""
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for choice in c["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                entry = calls.setdefault(tc["index"], {"id": None, "name": None, "args": []})
                if tc.get("id"):
                    entry["id"] = tc["id"]
                function = tc.get("function") or {}
                if function.get("name"):
                    entry["name"] = function["name"]
                if function.get("arguments"):
                    entry["args"].append(function["arguments"])
    return [json.loads("".join(e["args"])) for _, e in sorted(calls.items())]


def callgate_full(chunks: list[Chunk]) -> object:
    """The full callgate path: slot and turn machines, strict JSON and schema at terminal."""
    buffer = LLMStreamBuffer(tool_schemas={"store": SCHEMA})
    for c in chunks:
        buffer.add(c)
    buffer.end()
    assert buffer.executable, buffer.findings
    return buffer.as_dict()


def per_chunk(fn: Callable[[list[Chunk]], object], chunks: list[Chunk], repeat: int) -> float:
    """Best of ``repeat`` runs, in microseconds per chunk."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(chunks)
        best = min(best, time.perf_counter() - start)
    return best / len(chunks) * 1e6


def main() -> None:
    """Print the side-by-side table."""
    streams = {
        "3 x 2 KB, 1-8 char, interleaved": (parallel_calls(), 20),
        "1 x 20 KB, 4 char": (single_call(20_000), 10),
        "1 x 200 KB, 4 char": (single_call(200_000), 3),
        "1 x 2 MB, 4 char": (single_call(2_000_000), 1),
    }
    header = ("stream", "chunks", "bare us", "callgate us", "ratio", "total s")
    print("{:<34}{:>9}{:>10}{:>13}{:>8}{:>9}".format(*header))
    for name, (chunks, repeat) in streams.items():
        base = per_chunk(bare, chunks, repeat)
        ours = per_chunk(callgate_full, chunks, repeat)
        total = ours * len(chunks) / 1e6
        row = (name, len(chunks), base, ours, ours / base, total)
        print("{:<34}{:>9}{:>10.3f}{:>13.3f}{:>8.2f}{:>9.3f}".format(*row))


if __name__ == "__main__":
    main()
