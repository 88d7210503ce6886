"""The LiteLLM guardrail where it runs: LiteLLM's proxy bare, with a pass-through and callgate's.

Run: ``python bench/bench_guardrail.py [--rounds 12] [--litellm-python PATH]`` (``PATH``: an
interpreter with ``litellm[proxy]`` and callgate installed; default this one). Three LiteLLM
proxies (each its own process, one worker, logs at ERROR) in front of one mock upstream
(uvicorn in this process, replaying OpenAI streams):

- **none**: no guardrail;
- **pass-through**: a guardrail with the same hooks as callgate's whose stream hook hands
  every chunk on as it came: what any guardrail costs in LiteLLM's machinery;
- **callgate**: ``callgate.integrations.litellm.CallgateGuardrail`` (``mode: post_call``,
  ``default_on``, ``on_blocked: notice``), as docs/integrations.md configures it.

The two guardrails are the subclasses of bench/guardrail_probe.py, which count each stream
hook's own CPU inside the proxy (its steps' thread CPU less that of LiteLLM's stream under
it) and write it to a file the benchmark reads after each request: **callgate's own** is
callgate's hook less the pass-through's, per chunk, with no other process's noise in it.

Beside it, the whole proxy: rounds interleave the proxies (one request of each stream to
each proxy, the proxies' order turned each round), and the CPU of each proxy's process
tree (``/proc/PID/task/*/schedstat``) over the request is divided by the chunks served.
Each difference (pass-through - none, callgate - pass-through) is taken within a round and
given as its mean over rounds with a 95 % bootstrap interval, and its median.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from bench_driver import native, prose  # beside this script
from bench_proxy import HEADERS, LiteLLMProxy

from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body

MODEL = "Qwen/Qwen2.5-7B-Instruct"
"""The model the proxies serve (its name tells callgate to read ``<tool_call>`` blocks)."""

PROBE = Path(__file__).with_name("guardrail_probe.py")
"""The counting guardrails, copied beside each guardrail row's config.yaml."""


def _guardrail(name: str, path: str) -> str:
    return (
        "guardrails:\n"
        f"  - guardrail_name: {name}\n"
        "    litellm_params:\n"
        f"      guardrail: {path}\n"
        "      mode: post_call\n"
        "      default_on: true\n"
    )


ROWS = {
    "none": "",
    "pass-through": _guardrail("pass", "guardrail_probe.PassThroughGuardrail"),
    "callgate": _guardrail("callgate", "guardrail_probe.TimedCallgateGuardrail")
    + "      on_blocked: notice\n",
}
PROBED = ("pass-through", "callgate")
"""The rows whose hook counts its own CPU."""


def streams() -> dict[str, list[dict[str, Any]]]:
    """Each stream's chunks."""
    return {
        "plain text": prose(1_500, calls=False),
        "text + leaked call": prose(1_500, calls=True),
        "native call, 2 KB": native(2_048),
    }


def tree_cpu_ns(pid: int) -> int:
    """CPU nanoseconds of ``pid`` and its descendants, over their live threads."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rpartition(")")[2].split()[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        one = todo.pop()
        todo += children.get(one, [])
        try:
            for task in os.listdir(f"/proc/{one}/task"):
                total += int(Path(f"/proc/{one}/task/{task}/schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total


async def _requests(url: str, count: int) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "go"}], "stream": True}
    async with httpx.AsyncClient(timeout=600) as client:
        for _ in range(count):
            async with client.stream("POST", url, json=body, headers=HEADERS) as reply:
                if reply.status_code != 200:
                    raise RuntimeError(f"{url}: HTTP {reply.status_code}")
                async for _ in reply.aiter_raw():
                    pass


def probe(proxy: LiteLLMProxy, streams_seen: int) -> dict[str, Any]:
    """The counting guardrail's totals once it has counted ``streams_seen`` streams."""
    path = Path(proxy.folder.name) / "probe.json"
    deadline = time.monotonic() + 10
    while True:
        try:
            got: dict[str, Any] = json.loads(path.read_text())
            if got["streams"] >= streams_seen:
                return got
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path}: the guardrail counted no stream {streams_seen}")
        time.sleep(0.01)


Results = dict[str, dict[str, list[float]]]
"""Per stream, per column: one value per round (``steps:ROW``: every step, in µs)."""


def run(rounds: int, python: str) -> Results:
    """Per round: µs of proxy CPU per chunk per row, and each probed hook's own µs per chunk."""
    work = streams()
    bodies = {name: sse_body(chunks) for name, chunks in work.items()}
    current = {"name": next(iter(work))}
    upstream = ReplayUpstream(lambda path, body: Script(bodies[current["name"]]))
    out: Results = {s: {} for s in work}
    with ServerThread(upstream) as up:
        proxies = {row: LiteLLMProxy(python, up.url, model=MODEL, guardrails=text)
                   for row, text in ROWS.items()}  # fmt: skip
        for row in PROBED:
            shutil.copy(PROBE, Path(proxies[row].folder.name) / PROBE.name)
        started: list[LiteLLMProxy] = []
        seen = dict.fromkeys(PROBED, 0)
        last = {row: probe_zero() for row in PROBED}
        try:
            for proxy in proxies.values():
                started.append(proxy.__enter__())
            order = list(proxies)
            for turn in range(-1, rounds):  # round -1 warms every proxy on every stream
                for name, chunks in work.items():
                    current["name"] = name
                    for row in order[turn % 3 :] + order[: turn % 3]:
                        proxy = proxies[row]
                        assert proxy.process is not None
                        before = tree_cpu_ns(proxy.process.pid)
                        asyncio.run(_requests(proxy.url + "/v1/chat/completions", 1))
                        spent = tree_cpu_ns(proxy.process.pid) - before
                        if row in PROBED:
                            seen[row] += 1
                            now = probe(proxy, seen[row])
                            if turn >= 0:
                                _probed(out[name], row, last[row], now)
                            last[row] = now
                        if turn >= 0:
                            out[name].setdefault(row, []).append(spent / 1e3 / (len(chunks) + 1))
        finally:
            for proxy in started:
                proxy.__exit__(None, None, None)
    return out


def probe_zero() -> dict[str, Any]:
    """A probe's totals before any stream."""
    zero = dict.fromkeys(("hook_ns", "under_ns", "chunks_in", "first_ns", "gc_ns", "gc_full"), 0)
    return {**zero, "steps": []}


def _probed(
    into: dict[str, list[float]], row: str, then: dict[str, Any], now: dict[str, Any]
) -> None:
    """One request's counts: the hook's own µs per chunk in, its first step, every step."""
    chunks = now["chunks_in"] - then["chunks_in"]
    own = (now["hook_ns"] - then["hook_ns"]) - (now["under_ns"] - then["under_ns"])
    into.setdefault(f"own:{row}", []).append(own / 1e3 / chunks)
    into.setdefault(f"first:{row}", []).append((now["first_ns"] - then["first_ns"]) / 1e3)
    into.setdefault(f"gc:{row}", []).append((now["gc_ns"] - then["gc_ns"]) / 1e3 / chunks)
    into.setdefault(f"full:{row}", []).append(now["gc_full"] - then["gc_full"])
    into.setdefault(f"steps:{row}", []).extend(n / 1e3 for n in now["steps"][len(then["steps"]) :])


def interval(values: list[float], draws: int = 4_000) -> tuple[float, float, float]:
    """The mean of ``values`` with a 95 % bootstrap interval (seeded: the same each run)."""
    pick = random.Random(0)
    means = sorted(statistics.fmean(pick.choices(values, k=len(values))) for _ in range(draws))
    return statistics.fmean(values), means[int(draws * 0.025)], means[int(draws * 0.975)]


def _ci(values: list[float]) -> str:
    mean, low, high = interval(values)
    return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}] / {statistics.median(values):+.1f}"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(results: Results, rounds: int) -> None:
    """The two tables: the whole proxy's CPU per chunk, and each hook's own inside it."""
    load = "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    print(f"LiteLLM proxy process CPU, µs per chunk, {rounds} interleaved rounds; {load}")
    head = ("stream", "none", "pass-through", "callgate", "pass - none", "callgate - pass")
    print("{:<20}{:>6}{:>14}{:>10}{:>32}{:>32}".format(*head))
    for name, rows in results.items():
        anyone = [p - n for p, n in zip(rows["pass-through"], rows["none"], strict=True)]
        own = [c - p for c, p in zip(rows["callgate"], rows["pass-through"], strict=True)]
        cells = [f"{statistics.median(rows[r]):.0f}" for r in ROWS]
        print(f"{name:<20}{cells[0]:>6}{cells[1]:>14}{cells[2]:>10}{_ci(anyone):>32}{_ci(own):>32}")
    print("medians; differences within each round: mean [95 % interval] / median")
    print()
    print("Each stream hook's own CPU inside its proxy (thread CPU of its steps less LiteLLM's")
    print("stream under it), µs per chunk; callgate's own = callgate's hook - the pass-through's")
    head = ("stream", "pass hook", "callgate hook", "callgate's own", "p50/p99 step", "first")
    print("{:<20}{:>10}{:>15}{:>32}{:>16}{:>8}".format(*head))
    for name, rows in results.items():
        own = [c - p for c, p in zip(rows["own:callgate"], rows["own:pass-through"], strict=True)]
        steps = rows["steps:callgate"]
        print(
            f"{name:<20}{statistics.median(rows['own:pass-through']):>10.1f}"
            f"{statistics.median(rows['own:callgate']):>15.1f}{_ci(own):>32}"
            f"{f'{_pct(steps, 0.5):.0f}/{_pct(steps, 0.99):.0f}':>16}"
            f"{statistics.median(rows['first:callgate']):>8.0f}"
        )
    print("hooks: medians over rounds; own: mean [95 % interval] / median; step: callgate's own")
    print("per step of its stream, every round (a held call's step reads many chunks);")
    print("first: its first step (the turn's set-up and first chunk), µs")
    print()
    print("The collector's passes in each guardrail's proxy, wherever they fall")
    head = ("stream", "pass µs/chunk", "callgate µs/chunk", "callgate - pass", "full passes")
    print("{:<20}{:>14}{:>18}{:>32}{:>13}".format(*head))
    for name, rows in results.items():
        more = [c - p for c, p in zip(rows["gc:callgate"], rows["gc:pass-through"], strict=True)]
        full = f"{sum(rows['full:pass-through']):.0f} / {sum(rows['full:callgate']):.0f}"
        print(
            f"{name:<20}{statistics.median(rows['gc:pass-through']):>14.1f}"
            f"{statistics.median(rows['gc:callgate']):>18.1f}{_ci(more):>32}{full:>13}"
        )
    print("medians over rounds; full passes: pass / callgate, all rounds")


def main(argv: list[str] | None = None) -> int:
    """The command line of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument(
        "--litellm-python",
        default=sys.executable,
        help="an interpreter with litellm[proxy] and callgate installed (default: this one)",
    )
    args = parser.parse_args(argv)
    missing = LiteLLMProxy.unavailable(args.litellm_python)
    if missing:
        print(f"bench_guardrail: {missing}", file=sys.stderr)
        return 2
    report(run(args.rounds, args.litellm_python), args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
