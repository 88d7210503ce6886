"""The LiteLLM guardrail where it runs: LiteLLM's proxy bare, with a pass-through and callgate's.

Run: ``python bench/bench_guardrail.py [--rounds 3] [--litellm-python PATH]`` (``PATH``: an
interpreter with ``litellm[proxy]`` and callgate installed; default this one). Three LiteLLM
proxies (each its own process, one worker, logs at ERROR) in front of one mock upstream
(uvicorn in this process, replaying OpenAI streams):

- **none**: no guardrail;
- **pass-through**: a guardrail with the same hooks as callgate's whose stream hook hands
  every chunk on as it came: what any guardrail costs in LiteLLM's machinery;
- **callgate**: ``callgate.integrations.litellm.CallgateGuardrail`` (``mode: post_call``,
  ``default_on``), as docs/integrations.md configures it.

Rounds interleave the proxies (each stream to none, pass-through, callgate, then the next
stream). The CPU of each proxy's process tree (``/proc/PID/task/*/schedstat``) is read
before and after each block of sequential requests and divided by the chunks served; the
table gives the minimum and the median over rounds, and two differences taken within each
round: **any guardrail** (pass-through - none) and **callgate's own** (callgate -
pass-through), the cost callgate adds on top of LiteLLM's guardrail machinery.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import httpx
from bench_driver import native, prose  # beside this script
from bench_proxy import HEADERS, LiteLLMProxy

from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body

MODEL = "Qwen/Qwen2.5-7B-Instruct"
"""The model the proxies serve (its name tells callgate to read ``<tool_call>`` blocks)."""

PASS_THROUGH = '''
from litellm.integrations.custom_guardrail import CustomGuardrail


class PassThroughGuardrail(CustomGuardrail):
    """The hooks callgate's guardrail defines, every chunk handed on as it came."""

    def async_post_call_streaming_iterator_hook(self, user_api_key_dict, response, request_data):
        async def each():
            async for chunk in response:
                yield chunk

        return each()

    async def async_post_call_success_hook(self, data, user_api_key_dict, response):
        return None
'''
"""The pass-through guardrail's module, written beside LiteLLM's config.yaml."""


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
    "pass-through": _guardrail("pass", "pass_guardrail.PassThroughGuardrail"),
    "callgate": _guardrail("callgate", "callgate.integrations.litellm.CallgateGuardrail")
    + "      on_blocked: notice\n",
}


def streams() -> dict[str, tuple[list[dict[str, Any]], int]]:
    """Each stream's chunks and the sequential requests a round sends of it."""
    return {
        "plain text": (prose(1_500, calls=False), 4),
        "text + leaked call": (prose(1_500, calls=True), 4),
        "native call, 2 KB": (native(2_048), 3),
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


def run(rounds: int, python: str) -> dict[str, dict[str, list[float]]]:
    """µs of CPU per chunk, per stream and row, one value per round."""
    work = streams()
    bodies = {name: sse_body(chunks) for name, (chunks, _) in work.items()}
    current = {"name": next(iter(work))}
    upstream = ReplayUpstream(lambda path, body: Script(bodies[current["name"]]))
    out: dict[str, dict[str, list[float]]] = {s: {r: [] for r in ROWS} for s in work}
    with ServerThread(upstream) as up:
        proxies = {row: LiteLLMProxy(python, up.url, model=MODEL, guardrails=text)
                   for row, text in ROWS.items()}  # fmt: skip
        (Path(proxies["pass-through"].folder.name) / "pass_guardrail.py").write_text(PASS_THROUGH)
        started: list[LiteLLMProxy] = []
        try:
            for proxy in proxies.values():
                started.append(proxy.__enter__())
            for _ in range(rounds):
                for name, (chunks, count) in work.items():
                    current["name"] = name
                    for row, proxy in proxies.items():
                        url = proxy.url + "/v1/chat/completions"
                        asyncio.run(_requests(url, 1))  # warm
                        assert proxy.process is not None
                        before = tree_cpu_ns(proxy.process.pid)
                        asyncio.run(_requests(url, count))
                        spent = tree_cpu_ns(proxy.process.pid) - before
                        out[name][row].append(spent / 1e3 / (count * (len(chunks) + 1)))
        finally:
            for proxy in started:
                proxy.__exit__(None, None, None)
    return out


def report(results: dict[str, dict[str, list[float]]], rounds: int) -> None:
    def mm(values: list[float]) -> str:
        return f"{min(values):.0f} / {statistics.median(values):.0f}"

    load = "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    print(f"LiteLLM proxy CPU, µs per chunk, min / median of {rounds} rounds; {load}")
    head = ("stream", "none", "pass-through", "callgate", "any guardrail", "callgate's own")
    print("{:<20}{:>13}{:>14}{:>13}{:>15}{:>16}".format(*head))
    for name, rows in results.items():
        anyone = [p - n for p, n in zip(rows["pass-through"], rows["none"], strict=True)]
        own = [c - p for c, p in zip(rows["callgate"], rows["pass-through"], strict=True)]
        print(
            f"{name:<20}{mm(rows['none']):>13}{mm(rows['pass-through']):>14}"
            f"{mm(rows['callgate']):>13}{mm(anyone):>15}{mm(own):>16}"
        )
    print("any guardrail: pass-through - none; callgate's own: callgate - pass-through (per round)")


def main(argv: list[str] | None = None) -> int:
    """The command line of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
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
