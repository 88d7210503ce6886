"""Where a one-chunk streamed request's CPU goes in the proxy's app, beside a byte pass-through.

Run: ``python bench/profile_request.py [--requests 2000] [--profile] [--top 30]``
``[--paced 300 [--pause 300]] [--created]``.

In one process and one event loop: a raw asyncio model server (bench_stack's one-chunk
Chat turn, one HTTP chunk per event) on 127.0.0.1, and two ASGI apps called directly (no
ASGI server between, the request's ``receive`` and ``send`` plain coroutines): the lean
byte pass-through (``tests/pass_through.py``'s ``LeanPassThrough``, the upstream's bytes
unchanged) and callgate's proxy app, both on :mod:`callgate.proxy.http1`. Requests
alternate in blocks; the figure is the process CPU per request by the median of the
blocks, and callgate's over the pass-through's. ``--profile`` then runs callgate's
requests under cProfile and prints the functions by their own and cumulative time.
``--paced N``: each request is bench_stack's paced stream instead (``N`` text events, each
written alone, ``--pause`` µs apart, so each reaches the app in a read of its own), and the
figures are per chunk. ``--created``: the chunks carry ``created`` (bench_stack's option).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stack import PACED, _model

from callgate.proxy.app import Proxy, ProxyConfig, create_app
from pass_through import LeanPassThrough

BODY = b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "1"}]}'
PACED_BODY = BODY.replace(b'"1"', b'"' + PACED.encode() + b'"')


def _scope(body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }


async def one(app: Any, body: bytes = BODY) -> bytes:
    """One request through ``app``: the body the client receives."""
    given = [False]
    out = bytearray()
    never = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, Any]:
        if not given[0]:
            given[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        out.extend(message.get("body", b""))

    await app(_scope(body), receive, send)
    return bytes(out)


async def run(args: argparse.Namespace) -> None:
    """Serve the model, then time and profile the two apps."""
    port = 0
    ready = asyncio.get_running_loop().create_future()
    model = asyncio.ensure_future(
        _serve_model(ready, args.paced, args.pause / 1e6, created=args.created)
    )
    port = await ready
    body, per_unit, unit = BODY, 1, "request"
    if args.paced:
        body, per_unit, unit = PACED_BODY, args.paced + 3, "chunk"
    upstream = f"http://127.0.0.1:{port}"
    apps = {
        "pass-through": LeanPassThrough(upstream),
        "callgate": create_app(ProxyConfig(upstream)),
    }
    for app in apps.values():
        for _ in range(50 if not args.paced else 2):
            await one(app, body)
    per: dict[str, list[float]] = {name: [] for name in apps}
    block = 100 if not args.paced else 2
    for _ in range(max(1, args.requests // block)):
        for name, app in apps.items():
            started = time.process_time()
            for _ in range(block):
                await one(app, body)
            per[name].append((time.process_time() - started) / (block * per_unit) * 1e6)
    base = statistics.median(per["pass-through"])
    for name, times in per.items():
        mid = statistics.median(times)
        print(
            f"{name:<13} {mid:7.1f} µs per {unit} (min {min(times):.1f}), "
            f"{mid - base:+7.1f} µs, {mid / base:.2f}x"
        )
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.requests):
            await one(apps["callgate"], body)
        profile.disable()
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
    lean, proxy = apps["pass-through"], apps["callgate"]
    if isinstance(lean, LeanPassThrough) and lean.client is not None:
        await lean.client.aclose()  # (the model's handlers then end as their clients go)
    if isinstance(proxy, Proxy):
        await proxy.stop()
    await asyncio.sleep(0.05)
    model.cancel()


async def _serve_model(
    ready: asyncio.Future[int], paced: int, pause: float, *, created: bool
) -> None:
    """bench_stack's model server on a free port, its port given to ``ready``."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    task = asyncio.ensure_future(_model(port, paced, pause, created))
    for _ in range(100):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.05)
    ready.set_result(port)
    await task


def main() -> int:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--paced", type=int, default=0, help="text events of a paced stream")
    parser.add_argument("--pause", type=float, default=300, help="µs between paced events")
    parser.add_argument("--created", action="store_true", help="chunks carry 'created'")
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
