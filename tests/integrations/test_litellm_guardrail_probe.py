"""The benchmark's counting guardrails count each hook's own CPU and change nothing it sends.

bench/bench_guardrail.py names these guardrails in LiteLLM's config to read callgate's own
CPU per chunk inside a running proxy: the hook's steps on the thread's CPU clock, less the
CPU of LiteLLM's stream under it, and none of what other tasks run while the stream waits.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from integrations_upstream import framework

litellm = framework("litellm")

from litellm.types.utils import ModelResponseStream  # noqa: E402

from callgate.integrations.common import as_dict  # noqa: E402
from callgate.integrations.litellm import CallgateGuardrail  # noqa: E402

PROBE = Path(__file__).resolve().parents[2] / "bench" / "guardrail_probe.py"
BURN = 30_000_000
"""Nanoseconds of CPU a test spends on purpose, far above what the hooks spend on a chunk."""
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
REQUEST = {"model": "Qwen/Qwen2.5-7B-Instruct", "tools": TOOLS}


def load_probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guardrail_probe", PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.chdir(tmp_path)  # probe.json is written in the working folder
    module = load_probe()
    yield module
    gc.callbacks.remove(module._collecting)


def chunk(delta: dict[str, Any], finish: str | None = None) -> ModelResponseStream:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return ModelResponseStream(id="c", created=1, model="m", choices=[choice])


def turn() -> list[ModelResponseStream]:
    leaked = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    words = [chunk({"content": w}) for w in ("Hello", " there", leaked, " bye")]
    return [chunk({"role": "assistant", "content": ""}), *words, chunk({}, "stop")]


def burn(nanoseconds: int) -> None:
    end = time.thread_time_ns() + nanoseconds
    while time.thread_time_ns() < end:
        pass


async def each(items: list[Any], work: int = 0) -> AsyncIterator[Any]:
    for item in items:
        burn(work)
        yield item


def shown(made: Any) -> str:
    """A chunk as JSON, its stamps (id, time, a call's minted id) left out."""
    fields = {k: v for k, v in as_dict(made).items() if k not in ("id", "created")}
    return re.sub(r'"call_[0-9a-f]+"', '"call"', json.dumps(fields))


def run(guard: Any, items: list[Any], work: int = 0) -> list[Any]:
    async def go() -> list[Any]:
        hooked = guard.async_post_call_streaming_iterator_hook(None, each(items, work), REQUEST)
        return [c async for c in hooked]

    return asyncio.run(go())


def test_the_counting_guardrail_sends_what_callgates_sends(probe: ModuleType) -> None:
    counted = probe.TimedCallgateGuardrail(guardrail_name="callgate", on_blocked="notice")
    counted.tally = probe.Tally()
    plain = CallgateGuardrail(guardrail_name="callgate", on_blocked="notice")
    got, expected = run(counted, turn()), run(plain, turn())
    assert [shown(c) for c in got] == [shown(c) for c in expected]
    assert "tool_calls" in shown(got[-2])
    totals = json.loads(Path("probe.json").read_text())
    assert totals["streams"] == 1 and totals["chunks_in"] == len(turn())
    assert totals["chunks_out"] == len(got)
    assert len(totals["steps"]) == len(got) + 1  # each chunk handed on, and the end


def test_the_pass_through_hands_every_chunk_on_as_it_came(probe: ModuleType) -> None:
    guard = probe.PassThroughGuardrail(guardrail_name="pass")
    guard.tally = probe.Tally()
    items = turn()
    out = run(guard, items)
    assert len(out) == len(items) and all(a is b for a, b in zip(out, items, strict=True))
    run(guard, items)
    assert guard.tally.totals["streams"] == 2 and guard.tally.totals["chunks_in"] == 2 * len(items)


@pytest.mark.parametrize("kind", ["TimedCallgateGuardrail", "PassThroughGuardrail"])
def test_litellms_stream_under_the_hook_is_not_the_hooks_own(probe: ModuleType, kind: str) -> None:
    guard = getattr(probe, kind)(guardrail_name="g")
    guard.tally = probe.Tally()
    run(guard, turn(), work=BURN // 6)
    totals = guard.tally.totals
    assert totals["under_ns"] >= 6 * (BURN // 6)
    assert totals["hook_ns"] >= totals["under_ns"]
    assert totals["hook_ns"] - totals["under_ns"] < BURN // 2


def test_what_runs_while_the_stream_waits_is_counted_nowhere(probe: ModuleType) -> None:
    guard = probe.TimedCallgateGuardrail(guardrail_name="g")
    guard.tally = probe.Tally()

    async def go() -> int:
        ready = asyncio.Event()

        async def waiting() -> AsyncIterator[Any]:
            await ready.wait()
            for item in turn():
                yield item

        async def elsewhere() -> None:
            burn(BURN)
            ready.set()

        other = asyncio.create_task(elsewhere())
        hooked = guard.async_post_call_streaming_iterator_hook(None, waiting(), REQUEST)
        out = [c async for c in hooked]
        await other
        return len(out)

    assert asyncio.run(go()) > 0
    assert guard.tally.totals["streams"] == 1
    assert guard.tally.totals["hook_ns"] < BURN
