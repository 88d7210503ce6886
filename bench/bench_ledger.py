"""The ledger's cost per call, side by side in one run: each backend against memory.

Run: ``python bench/bench_ledger.py`` (``--quick``: fewer calls). Each backend answers
the same calls, each a new call (its own id), in one run:

- **memory**: the default :class:`~callgate.ledger.MemoryStore`;
- **sqlite FULL** / **sqlite NORMAL**: a SQLite file in a temporary directory, WAL, with
  ``synchronous`` FULL (the default: a start survives a power cut) or NORMAL (a crash);
- **redis**: a local redis-server on loopback (``CALLGATE_REDIS_URL``, else one started
  from PATH with no persistence; the row is left out without either), sync client;
- **redis async**: the same server through the asyncio client (``arun_turn``).

Two costs per call, in microseconds of wall time (storage waits on fsync and the
network, so CPU time would hide them), best of three rounds that run the backends in
turn: **ledger** is the ledger's own work for one call (``start``, then ``record`` of its
answer: two writes); **turn** is a whole one-call OpenAI turn through ``run_turn`` (or
``arun_turn``) with a tool that returns at once. ``x memory`` divides by the memory row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from callgate import Driver, Ledger, Tool, arun_turn, run_turn
from callgate.ledger.sqlite import SQLiteStore
from callgate.strategies.base import ExtractedCall, ToolResult

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def turn(call_id: str) -> list[dict[str, Any]]:
    """One OpenAI turn with one call (its own id) whose arguments come in two fragments."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": f"chatcmpl-{call_id}", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip

    opening = {"index": 0, "id": call_id, "type": "function",
               "function": {"name": "lookup", "arguments": ""}}  # fmt: skip
    fragments = ['{"q": ', '"paris"}']
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [opening]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments),
        chunk({}, "tool_calls"),
    ]


async def aiter(chunks: Iterable[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for chunk in chunks:
        yield chunk


def redis_url(work: Path) -> tuple[str | None, subprocess.Popen[bytes] | None]:
    """The Redis to measure: CALLGATE_REDIS_URL, else a local one started here, else None."""
    if os.environ.get("CALLGATE_REDIS_URL"):
        return os.environ["CALLGATE_REDIS_URL"], None
    program = shutil.which("redis-server")
    try:
        import redis  # noqa: F401
    except ImportError:
        return None, None
    if program is None:
        return None, None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [program, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(work),
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return f"redis://127.0.0.1:{port}/0", server


def ledger_cost(ledger: Ledger, calls: int, prefix: str) -> float:
    """Microseconds per call of ``start`` then ``record`` on fresh calls."""
    began = time.perf_counter()
    for n in range(calls):
        call = ExtractedCall(f"{prefix}-{n}", "lookup", {"q": "paris"}, 0)
        ledger.start(call)
        ledger.record(ToolResult(call, "sunny"))
    return (time.perf_counter() - began) / calls * 1e6


def turn_cost(ledger: Ledger, calls: int, prefix: str, asynchronous: bool) -> float:
    """Microseconds per call of whole one-call turns through the loop."""
    driver = Driver([Tool("lookup", SCHEMA, lambda q: "sunny")])
    buffer = driver.new_stream_buffer(ledger=ledger)
    streams = [turn(f"{prefix}-{n}") for n in range(calls)]

    async def play_all() -> None:
        for chunks in streams:
            await arun_turn(aiter(chunks), driver, buffer)

    began = time.perf_counter()
    if asynchronous:
        asyncio.run(play_all())
    else:
        for chunks in streams:
            run_turn(chunks, driver, buffer)
    return (time.perf_counter() - began) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 calls per round, not 400")
    calls = 100 if parser.parse_args().quick else 400
    work = Path(tempfile.mkdtemp(prefix="bench-ledger-"))
    url, server = redis_url(work)
    backends: dict[str, tuple[Callable[[str], Ledger], bool]] = {
        "memory": (lambda c: Ledger(conversation=c), False),
        "sqlite FULL": (lambda c: Ledger.sqlite(work / "full.db", conversation=c), False),
        "sqlite NORMAL": (
            lambda c: Ledger(SQLiteStore(work / "normal.db", synchronous="NORMAL"), conversation=c),
            False,
        ),
    }
    if url is not None:
        backends["redis"] = (lambda c: Ledger.redis(url, conversation=c, prefix="bench:"), False)
        backends["redis async"] = (
            lambda c: Ledger.redis(url, conversation=c, prefix="bench:"),
            True,
        )
    best: dict[str, list[float]] = {name: [float("inf")] * 2 for name in backends}
    try:
        for round_ in range(3):
            for name, (make, asynchronous) in backends.items():
                conversation = f"{name}-{round_}-{time.time_ns()}"
                own = 0.0 if asynchronous else ledger_cost(make(conversation), calls, "l")
                whole = turn_cost(make(conversation), calls, "t", asynchronous)
                best[name][0] = min(best[name][0], own)
                best[name][1] = min(best[name][1], whole)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    base_own, base_turn = best["memory"]
    print(f"{calls} calls per backend per round, best of 3; microseconds of wall time per call")
    print(f"{'backend':<14} {'ledger':>10} {'x memory':>9} {'turn':>10} {'x memory':>9}")
    for name, (own, whole) in best.items():
        own_text = f"{own:10.1f} {own / base_own:8.1f}x" if own else f"{'-':>10} {'-':>9}"
        print(f"{name:<14} {own_text} {whole:10.1f} {whole / base_turn:8.1f}x")
    if url is None:
        print("(redis left out: no CALLGATE_REDIS_URL, and no redis-server or redis package)")
    print(json.dumps({"calls": calls, "best_us": best}))


if __name__ == "__main__":
    main()
