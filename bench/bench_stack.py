"""The proxy's server stack chosen by measurement: uvicorn's HTTP parser and event loop.

Run: ``python bench/bench_stack.py [--rounds 5] [--paced 300] [--paceds 3] [--pause 300]``
``[--created] [--beside OLD/src]``
(needs ``uvloop`` and ``httptools`` for their rows; a missing one is skipped and named).
``--beside`` serves the proxy of another checkout's ``src`` too (rows ``beside``), in the
same run.

For every stack (``h11`` or ``httptools``, ``asyncio`` or ``uvloop``) four servers, each its
own process on 127.0.0.1, in front of one raw asyncio model server that writes one HTTP
chunk per event (its chunks without ``created``, so callgate writes each chunk itself,
adding it; ``--created``: with it, as OpenAI's, so a text chunk goes out as the upstream's
bytes): two byte pass-throughs (raw ASGI, the upstream's bytes unchanged; one on httpx,
``bytes-h1`` on the lean HTTP/1.1 client of ``callgate.proxy.http1``), callgate proxy as it
runs (the lean client for this plain-http upstream) and ``cg-httpx``, callgate asking the
upstream through httpx. Rounds interleave every server. Per server: the
median wall time of a one-chunk streamed request, its server CPU per request, and the
server CPU per chunk of a 1000-chunk text stream that the model server writes at once
(from /proc, the server's process alone), so a proxy's read holds many events. Every
figure is also given as a ratio to the h11 + asyncio pass-through on httpx of the same
run (the stack a plain ``pip install starlette uvicorn httpx`` gets).

Then the paced stream, as a model delivers it: ``--paced`` text events (300; 0 skips it),
each in its own write, the model server draining it and pausing ``--pause`` µs (300)
before the next, so each event reaches the proxy in a read of its own. After each round's
blocks, ``--paceds`` times (3), one paced stream through every server in turn (its
connection opened before). Per server: its CPU per chunk (the request's own cost spread
over its chunks) by the median and the least of its streams; the ratio to the same
stack's lean pass-through (``bytes-h1``) streamed just before or after, the median of
those ratios and their range, and the ratio of the two least; the pieces the client
received per event (1.00: every event came in a read of its own and went out in a write
of its own; far fewer: reads held several events, the pause too short for this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pass_through import BytePassThrough, LeanPassThrough

HTTPS = ("h11", "httptools")
LOOPS = ("asyncio", "uvloop")
LONG = 1000
PACED = "paced"
"""The request's text that asks the model server for the paced stream."""


def _event(delta: dict[str, Any], finish: str | None = None, *, created: bool = False) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk: dict[str, Any] = {"id": "b", "object": "chat.completion.chunk", "model": "m"}
    if created:
        chunk = {"id": "b", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
    chunk["choices"] = [choice]
    event = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


def events(n: int, *, created: bool = False) -> list[bytes]:
    """An OpenAI text turn of ``n`` content chunks, one HTTP chunk per event (the last ends it).

    ``created``: every chunk carries a ``created`` time, as OpenAI's do (without it callgate
    adds one, so it writes each chunk itself rather than forwarding the upstream's bytes).
    """
    parts = [_event({"role": "assistant", "content": ""}, created=created)]
    parts += [_event({"content": f"word{i % 97} "}, created=created) for i in range(n)]
    parts.append(_event({}, "stop", created=created))
    done = b"data: [DONE]\n\n"
    parts.append(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
    return parts


def stream(n: int, *, created: bool = False) -> bytes:
    """:func:`events` as one body (what the model server writes at once)."""
    return b"".join(events(n, created=created))


async def _model(port: int, paced: int = 0, pause: float = 0.0, created: bool = False) -> None:
    bodies = {n: stream(n, created=created) for n in (1, LONG)}
    timed = events(paced, created=created) if paced else []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = json.loads(await reader.readexactly(length))
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                asked = request["messages"][-1]["content"]
                if asked != PACED:
                    writer.write(bodies[int(asked)])
                    await writer.drain()
                    continue
                for piece in timed:
                    await writer.drain()
                    await asyncio.sleep(pause)
                    writer.write(piece)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def _serve(kind: str, http: str, loop: str, port: int, upstream: str) -> None:
    from callgate.proxy.app import ProxyConfig, create_app
    from callgate.proxy.serving import bound_socket, run

    apps = {
        "bytes": lambda: BytePassThrough(upstream),
        "bytes-h1": lambda: LeanPassThrough(upstream),
        "callgate": lambda: create_app(ProxyConfig(upstream)),
        "cg-httpx": lambda: create_app(ProxyConfig(upstream, http1=False)),
    }
    app = apps[kind]()
    run(app, bound_socket("127.0.0.1", port), http=http, loop=loop)


def _free() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _cpu_ns(pid: int) -> int:
    tasks = Path(f"/proc/{pid}/task")
    return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks.iterdir())


def _start(argv: list[str], port: int, source: str = "") -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": source} if source else None
    process = subprocess.Popen([sys.executable, __file__, *argv], env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{argv} did not start")


async def _one(client: Any, url: str, asked: int | str) -> tuple[float, int]:
    """One streamed request for ``asked`` (a chunk count, or :data:`PACED`): wall, pieces."""
    request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": str(asked)}]}
    pieces = 0
    started = time.perf_counter()
    async with client.stream("POST", url + "/v1/chat/completions", json=request) as reply:
        async for _ in reply.aiter_raw():
            pieces += 1
    return time.perf_counter() - started, pieces


async def _block(url: str, pid: int, ones: int, longs: int) -> dict[str, Any]:
    import httpx

    async with httpx.AsyncClient(timeout=600) as client:
        await _one(client, url, 1)
        spent = _cpu_ns(pid)
        walls = [(await _one(client, url, 1))[0] for _ in range(ones)]
        per_request = (_cpu_ns(pid) - spent) / ones
        spent = _cpu_ns(pid)
        for _ in range(longs):
            await _one(client, url, LONG)
        per_chunk = (_cpu_ns(pid) - spent) / (longs * (LONG + 3))
    return {"wall": statistics.median(walls), "cpu_req": per_request, "cpu_chunk": per_chunk}


async def _paced(servers: dict[str, tuple[str, int]], paced: int) -> dict[str, tuple[float, float]]:
    """One paced stream through every server in turn: its CPU per chunk, client pieces per event.

    Each server's connection is opened and used once before (its set-up is not counted).
    """
    import httpx

    out = {}
    async with httpx.AsyncClient(timeout=600) as client:
        for name, (url, pid) in servers.items():
            await _one(client, url, 1)
            spent = _cpu_ns(pid)
            pieces = (await _one(client, url, PACED))[1]
            out[name] = ((_cpu_ns(pid) - spent) / (paced + 3), pieces / (paced + 3))
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line of the benchmark (``serve`` and ``model`` are its own servers)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ones", type=int, default=40, help="one-chunk requests per round")
    parser.add_argument("--longs", type=int, default=2, help="1000-chunk requests per round")
    parser.add_argument(
        "--paced", type=int, default=300, help="text events of the paced stream (0: none)"
    )
    parser.add_argument("--paceds", type=int, default=3, help="paced streams per round")
    parser.add_argument(
        "--pause", type=float, default=300, help="µs the model server waits between paced events"
    )
    parser.add_argument(
        "--created", action="store_true", help="every chunk carries 'created', as OpenAI's do"
    )
    parser.add_argument(
        "--beside",
        default="",
        help="a src folder of another callgate (an older checkout): its proxy is served too",
    )
    parser.add_argument("role", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role and args.role[0] == "model":
        port, paced, pause, created = args.role[1:]
        asyncio.run(_model(int(port), int(paced), float(pause) / 1e6, created == "created"))
        return 0
    if args.role and args.role[0] == "serve":
        kind, http, loop, port, upstream = args.role[1:]
        _serve(kind, http, loop, int(port), upstream)
        return 0
    missing = [m for m in ("uvloop", "httptools") if importlib.util.find_spec(m) is None]
    stacks = [(h, lp) for h in HTTPS for lp in LOOPS if h not in missing and lp not in missing]
    model_port = _free()
    created = "created" if args.created else "-"
    model = ["model", str(model_port), str(args.paced), str(args.pause), created]
    processes = [_start(model, model_port)]
    servers: dict[str, tuple[str, int]] = {}
    try:
        kinds = [("bytes", ""), ("bytes-h1", ""), ("callgate", ""), ("cg-httpx", "")]
        if args.beside:
            kinds.append(("beside", args.beside))
        for http, loop in stacks:
            for kind, source in kinds:
                port = _free()
                upstream = f"http://127.0.0.1:{model_port}"
                serve = "callgate" if kind == "beside" else kind
                argv = ["serve", serve, http, loop, str(port), upstream]
                process = _start(argv, port, source)
                processes.append(process)
                name = f"{kind:<9} {http:<9} {loop:<7}"
                servers[name] = (f"http://127.0.0.1:{port}", process.pid)
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
        paced: list[dict[str, tuple[float, float]]] = []
        loads = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            for name, (url, pid) in servers.items():
                rows[name].append(asyncio.run(_block(url, pid, args.ones, args.longs)))
            for _ in range(args.paceds if args.paced else 0):
                paced.append(asyncio.run(_paced(servers, args.paced)))
            loads.append(os.getloadavg()[0])
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=20)
    _print(rows, missing, loads)
    if paced:
        _print_paced(paced, args.paced, args.pause)
    return 0


def _print(rows: dict[str, list[dict[str, Any]]], missing: list[str], loads: list[float]) -> None:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[name])

    base = next(iter(rows))
    print(f"load average (1 min) per round: {' '.join(f'{x:.1f}' for x in loads)}")
    if missing:
        print(f"skipped: the stacks with {', '.join(missing)} (not installed)")
    print(
        f"{'server   http      loop':<28} {'1-chunk p50':>12} {'ratio':>6} {'CPU/req':>9} "
        f"{'ratio':>6} {'CPU/chunk':>10} {'ratio':>6}"
    )
    for name in rows:
        wall, req, chunk = med(name, "wall"), med(name, "cpu_req"), med(name, "cpu_chunk")
        print(
            f"{name:<28} {wall * 1e3:>10.2f}ms {wall / med(base, 'wall'):>5.2f}x "
            f"{req / 1e3:>7.0f}µs {req / med(base, 'cpu_req'):>5.2f}x "
            f"{chunk / 1e3:>8.1f}µs {chunk / med(base, 'cpu_chunk'):>5.2f}x"
        )


def _print_paced(rounds: list[dict[str, tuple[float, float]]], paced: int, pause: float) -> None:
    """The paced streams' rows: CPU per chunk, and its ratio to the same stack's ``bytes-h1``."""
    print(
        f"\npaced: {paced} text events, each its own write, {pause:.0f} µs apart; "
        f"{len(rounds)} streams per server, interleaved"
    )
    print(
        f"{'server   http      loop':<28} {'CPU/chunk':>10} {'min':>8} {'x bytes-h1':>11} "
        f"{'(streams)':>13} {'min/min':>8} {'pieces/event':>13}"
    )
    for name in rounds[0]:
        lean = f"{'bytes-h1':<9} {name[10:]}"
        mine = [r[name][0] for r in rounds]
        base = [r[lean][0] for r in rounds]
        ratios = sorted(m / b for m, b in zip(mine, base, strict=True))
        pieces = statistics.median(r[name][1] for r in rounds)
        print(
            f"{name:<28} {statistics.median(mine) / 1e3:>8.1f}µs {min(mine) / 1e3:>6.1f}µs "
            f"{statistics.median(ratios):>10.2f}x {ratios[0]:>6.2f}-{ratios[-1]:<6.2f} "
            f"{min(mine) / min(base):>7.2f}x {pieces:>13.2f}"
        )


if __name__ == "__main__":
    sys.exit(main())
