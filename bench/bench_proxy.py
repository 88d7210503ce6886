"""callgate proxy, side by side in one run; and the ``--on-blocked`` modes measured.

Run: ``python bench/bench_proxy.py`` (the speed tables) or ``python bench/bench_proxy.py
--modes`` (the agent-loop measurement that chose the default ``--on-blocked`` mode).

Speed: one mock upstream (uvicorn, replaying OpenAI streams), and in front of it (a) the
client straight, (b) a byte pass-through on the same stack (raw ASGI under the same
uvicorn, the proxy's own plain-http client, the upstream's bytes unchanged:
bench_stack.LeanPassThrough),
(c) callgate proxy, (d) LiteLLM's
proxy (``--litellm-python PATH``: an interpreter that has ``litellm[proxy]``; it runs as
a subprocess with one worker, its CPU read from /proc). Per row: the CPU spent per chunk
and what the proxy added to row (a)'s, the inter-chunk latency of plain text (p50, p99),
the per-request time sequentially and at 10 and 100 concurrent streams on one worker,
the growth of the per-request time per 10x stream length, and the CPU per request and the
median time per request of a one-chunk stream (what a request costs apart from its chunks).

Modes: agent loops through the real openai client against a fake model that writes a
schema-invalid call with some probability; per mode, how many conversations reach the
model's final answer, how many upstream requests that took, and how many invalid calls
reached the client's tool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
from bench_stack import LeanPassThrough  # beside this script

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import FlakyModel, ReplayUpstream

# -- the --on-blocked modes: agent loops ---------------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": FlakyModel.SCHEMA}}]


def get_weather(city: str) -> str:
    """The client's tool (it raises on arguments its signature does not take)."""
    return f"18 °C in {city}"


def conversation(client: openai.OpenAI, name: str, rounds: int = 6) -> dict[str, Any]:
    """One agent loop as a client writes it: run every call, stop when a turn has none."""
    messages: list[Any] = [{"role": "user", "content": "What's the weather in Paris?"}]
    invalid = 0
    for _ in range(rounds):
        with client.chat.completions.stream(
            model="flaky", messages=messages, tools=TOOLS, metadata={"conversation": name}
        ) as stream:
            for _event in stream:
                pass
            message = stream.current_completion_snapshot.choices[0].message
        calls = message.tool_calls or []
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                **(
                    {
                        "tool_calls": [
                            {
                                "id": c.id,
                                "type": "function",
                                "function": {
                                    "name": c.function.name,
                                    "arguments": c.function.arguments,
                                },
                            }
                            for c in calls
                        ]
                    }
                    if calls
                    else {}
                ),
            }
        )
        if not calls:
            return {"converged": FlakyModel.ANSWER in (message.content or ""), "invalid": invalid}
        for call in calls:
            try:
                answer = get_weather(**json.loads(call.function.arguments))
            except TypeError as exc:
                invalid += 1
                answer = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
    return {"converged": False, "invalid": invalid}


def measure_mode(
    mode: str, repairs: int, invalid_rate: float, conversations: int
) -> dict[str, Any]:
    """Run ``conversations`` agent loops through the proxy under one mode."""
    model = FlakyModel(invalid_rate)
    upstream = ReplayUpstream(model.pick)
    options = Options(on_blocked=mode, repairs=repairs)  # type: ignore[arg-type]
    with (
        ServerThread(upstream) as up,
        ServerThread(create_app(ProxyConfig(upstream=up.url, options=options))) as proxy,
        openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0) as client,
    ):
        results = [conversation(client, f"c{n}") for n in range(conversations)]
    return {
        "mode": mode if mode != "repair" else f"repair {repairs}",
        "converged": sum(r["converged"] for r in results),
        "conversations": conversations,
        "upstream_requests": len(upstream.requests),
        "invalid_reached_tool": sum(r["invalid"] for r in results),
        "model": model,
        "results": results,
    }


def modes_table(invalid_rate: float, conversations: int) -> list[dict[str, Any]]:
    """Every mode on the same conversations (the fake model is seeded per conversation)."""
    runs = [("notice", 1), ("repair", 1), ("repair", 2), ("pass", 1)]
    return [measure_mode(mode, n, invalid_rate, conversations) for mode, n in runs]


def print_modes(rates: list[float], conversations: int) -> None:
    """The modes table for each invalid-call rate."""
    print(f"agent loops through openai-python, {conversations} conversations per row")
    print(
        f"{'invalid rate':>12} {'mode':<9} {'converged':>10} {'upstream req':>13} "
        f"{'invalid to tool':>16}"
    )
    for rate in rates:
        for row in modes_table(rate, conversations):
            print(
                f"{rate:>12.2f} {row['mode']:<9} {row['converged']:>6}/{row['conversations']:<3}"
                f" {row['upstream_requests']:>13} {row['invalid_reached_tool']:>16}"
            )


# -- speed --------------------------------------------------------------------------------


def text_chunks(n: int) -> list[dict[str, Any]]:
    """An OpenAI turn of ``n`` plain-text chunks (a word each), then the finish."""
    from callgate.testing.builders import openai_chunks

    chunks = openai_chunks([], [], text=[f"word{i % 97} " for i in range(n)])
    return chunks


class LiteLLMProxy:
    """LiteLLM's proxy as a subprocess of ``python`` in front of ``upstream``: row (d).

    One worker, its logs at ERROR (no access log, as the other rows), a model
    ``gpt-4.1`` routed to ``upstream``'s ``/v1``. :meth:`cpu` is the process's CPU time.
    """

    KEY = "sk-bench-0123456789abcdef"

    def __init__(
        self, python: str, upstream: str, *, model: str = "gpt-4.1", guardrails: str = ""
    ) -> None:
        self.python = python
        self.upstream = upstream
        self.model = model
        self.guardrails = guardrails
        """config.yaml's ``guardrails:`` section, if any (bench_guardrail's rows)."""
        self.process: subprocess.Popen[bytes] | None = None
        self.folder = tempfile.TemporaryDirectory(prefix="bench-litellm-")

    @staticmethod
    def unavailable(python: str | None) -> str | None:
        """Why row (d) cannot run with ``python`` (None: it can)."""
        if python is None:
            return "no --litellm-python given"
        try:
            probe = subprocess.run(
                [python, "-c", "import litellm.proxy.proxy_server"],
                check=False,
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{python} does not run: {exc}"
        if probe.returncode != 0:
            lines = (probe.stderr or probe.stdout).strip().splitlines() or ["(no output)"]
            return f"litellm's proxy does not import under {python}: {lines[-1]}"
        return None

    def __enter__(self) -> LiteLLMProxy:
        folder = Path(self.folder.name)
        config = folder / "config.yaml"
        config.write_text(
            "model_list:\n"
            f"  - model_name: {self.model}\n"
            "    litellm_params:\n"
            f"      model: openai/{self.model}\n"
            f"      api_base: {self.upstream}/v1\n"
            "      api_key: sk-upstream\n" + self.guardrails,
            encoding="utf-8",
        )
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "LITELLM_MASTER_KEY": self.KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_LOG": "ERROR",
        }
        command = [self.python, "-m", "litellm.proxy.proxy_cli", "--config", str(config)]
        command += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
        log = (folder / "litellm.log").open("wb")
        self.process = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = (folder / "litellm.log").read_text(errors="replace").splitlines()[-5:]
                raise RuntimeError("litellm's proxy stopped: " + " / ".join(tail))
            try:
                if httpx.get(self.url + "/health/liveliness", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError("litellm's proxy did not start within 300 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.folder.cleanup()

    def cpu(self) -> float:
        """The subprocess's CPU seconds so far (user and system, its children's included)."""
        assert self.process is not None
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        ticks = sum(int(fields[n]) for n in (11, 12, 13, 14))
        return ticks / os.sysconf("SC_CLK_TCK")


def _cpu() -> float:
    return time.process_time()


REQUEST = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "stream": True}
HEADERS = {"authorization": f"Bearer {LiteLLMProxy.KEY}"}


async def _one(client: httpx.AsyncClient, url: str, gaps: list[float] | None) -> float:
    started = time.perf_counter()
    last = None
    async with client.stream("POST", url, json=REQUEST, headers=HEADERS) as reply:
        async for _ in reply.aiter_raw():
            now = time.perf_counter()
            if gaps is not None and last is not None:
                gaps.append(now - last)
            last = now
    return time.perf_counter() - started


async def _run(url: str, requests: int, concurrent: int, gaps: list[float] | None) -> list[float]:
    limits = httpx.Limits(max_connections=concurrent, max_keepalive_connections=concurrent)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        await _one(client, url, None)  # warm the connection and the servers
        times: list[float] = []
        for _ in range(0, requests, concurrent):
            batch = [_one(client, url, gaps) for _ in range(concurrent)]
            times += await asyncio.gather(*batch)
        return times


def _measure(url: str, chunks: int, requests: int, cpu: Callable[[], float]) -> dict[str, Any]:
    """One row: CPU per chunk (sequential requests), gaps, per-request times."""
    row: dict[str, Any] = {}
    gaps: list[float] = []
    spent = cpu()
    seq = asyncio.run(_run(url, requests, 1, gaps))
    row["cpu"] = (cpu() - spent) / (requests * chunks)
    row["seq"] = statistics.median(seq)
    row["gap50"] = statistics.median(gaps) if gaps else 0.0
    row["gap99"] = _p99(gaps)
    row["c10"] = statistics.median(asyncio.run(_run(url, requests, 10, None)))
    row["c100"] = statistics.median(asyncio.run(_run(url, 100, 100, None)))
    return row


def speed(chunks: int, requests: int, litellm_python: str | None) -> None:
    """The side-by-side table (see the module's docstring), every server but LiteLLM's here.

    CPU per chunk is the CPU time of this process (client, upstream and the in-process
    proxies alike), plus LiteLLM's subprocess for row (d), divided by the chunks sent;
    "added" subtracts the straight row's: what the proxy added.
    """
    from callgate.proxy.upstream import Script, sse_body

    streams = {n: sse_body(text_chunks(n)) for n in (1, chunks, chunks * 10)}
    current = {"n": chunks}
    upstream = ReplayUpstream(lambda path, body: Script(streams[current["n"]]))
    skipped = LiteLLMProxy.unavailable(litellm_python)
    with ServerThread(upstream) as up:
        bare = ServerThread(LeanPassThrough(up.url))
        gated = ServerThread(create_app(ProxyConfig(upstream=up.url)))
        litellm = LiteLLMProxy(litellm_python, up.url) if litellm_python and not skipped else None
        with bare, gated:
            targets: list[tuple[str, str, Callable[[], float]]] = [
                ("(a) straight", up.url, _cpu),
                ("(b) byte pass-through", bare.url, _cpu),
                ("(c) callgate proxy", gated.url, _cpu),
            ]
            if litellm is not None:
                litellm.__enter__()
                child = litellm.cpu
                targets.append(("(d) LiteLLM proxy", litellm.url, lambda: _cpu() + child()))
            try:
                rows = {
                    name: _measure(base + "/v1/chat/completions", chunks, requests, cpu)
                    for name, base, cpu in targets
                }
                current["n"] = chunks * 10
                for name, base, _ in targets:
                    long = asyncio.run(
                        _run(base + "/v1/chat/completions", max(4, requests // 4), 1, None)
                    )
                    rows[name]["growth"] = statistics.median(long) / rows[name]["seq"]
                current["n"] = 1
                for name, base, cpu in targets:
                    spent = cpu()
                    one = asyncio.run(_run(base + "/v1/chat/completions", requests, 1, None))
                    rows[name]["cpu_req"] = (cpu() - spent) / (requests + 1)
                    rows[name]["one50"] = statistics.median(one)
            finally:
                if litellm is not None:
                    litellm.__exit__(None, None, None)
    _print_speed(rows, chunks, requests, skipped)


def _print_speed(
    rows: dict[str, dict[str, Any]], chunks: int, requests: int, skipped: str | None
) -> None:
    base = rows["(a) straight"]
    print(
        f"{chunks} chunks of plain text per stream, {requests} requests per column; "
        "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    )
    print(
        f"{'':<20} {'CPU µs/chunk':>13} {'added':>8} {'gap p50':>9} {'gap p99':>9} "
        f"{'req seq':>9} {'added':>8} {'req @10':>9} {'req @100':>9} {'10x len':>8} "
        f"{'CPU/req':>8} {'added':>8} {'1-chunk p50':>12} {'added':>8}"
    )
    for name, row in rows.items():
        added = (row["cpu"] - base["cpu"]) * 1e6
        print(
            f"{name:<20} {row['cpu'] * 1e6:>13.1f} {added:>8.1f} {row['gap50'] * 1e6:>8.0f}µ "
            f"{row['gap99'] * 1e6:>8.0f}µ {row['seq'] * 1e3:>8.2f}m "
            f"{(row['seq'] - base['seq']) * 1e3:>7.2f}m {row['c10'] * 1e3:>8.2f}m "
            f"{row['c100'] * 1e3:>8.2f}m {row['growth']:>7.1f}x "
            f"{row['cpu_req'] * 1e3:>7.2f}m {(row['cpu_req'] - base['cpu_req']) * 1e3:>7.2f}m "
            f"{row['one50'] * 1e3:>11.2f}m {(row['one50'] - base['one50']) * 1e3:>7.2f}m"
        )
    if skipped:
        print(f"(d) LiteLLM proxy: skipped, {skipped}")
    bare_added = rows["(b) byte pass-through"]["cpu"] - base["cpu"]
    gated_added = rows["(c) callgate proxy"]["cpu"] - base["cpu"]
    print(f"callgate's added CPU per chunk / the pass-through's: {gated_added / bare_added:.2f}x")
    print(
        "callgate's own CPU per chunk over the pass-through: "
        f"{(gated_added - bare_added) * 1e6:.1f} µs"
    )
    gated, bare = rows["(c) callgate proxy"], rows["(b) byte pass-through"]
    print(
        "callgate's own time per request over the pass-through (a one-chunk stream, p50): "
        f"{(gated['one50'] - bare['one50']) * 1e3:.2f} ms; CPU: "
        f"{(gated['cpu_req'] - bare['cpu_req']) * 1e3:.2f} ms"
    )
    if "(d) LiteLLM proxy" in rows:
        litellm_added = rows["(d) LiteLLM proxy"]["cpu"] - base["cpu"]
        print(f"LiteLLM's added CPU per chunk / callgate's: {litellm_added / gated_added:.2f}x")


def _p99(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def engine_only(chunks: int) -> None:
    """The engine alone, in process, no HTTP: CPU µs per chunk of plain text."""
    from callgate.proxy.engine import GatedTurn

    stream = text_chunks(chunks)
    turn = GatedTurn({"model": "gpt-4.1"})
    started = time.process_time()
    for chunk in stream:
        turn.feed(chunk)
    turn.finish()
    spent = time.process_time() - started
    print(f"engine alone, plain text: {spent / len(stream) * 1e6:.1f} µs per chunk")


def main(argv: list[str] | None = None) -> int:
    """The command line of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", action="store_true", help="measure the --on-blocked modes")
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument(
        "--litellm-python",
        help="an interpreter with litellm[proxy] installed, for row (d) (else it is skipped)",
    )
    args = parser.parse_args(argv)
    if args.modes:
        print_modes([0.2, 0.5, 0.8], args.conversations)
        return 0
    engine_only(args.chunks * 10)
    speed(args.chunks, args.requests, args.litellm_python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
