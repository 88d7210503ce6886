"""Guardrails that count their own CPU per chunk inside a running LiteLLM proxy.

bench/bench_guardrail.py copies this file beside each proxy's config.yaml and names its
classes there; the product carries no counter. Each stream hook's generator and the
stream LiteLLM hands it are both wrapped in :class:`Timed`, which reads the thread's CPU
clock around each step of the iterator only while that step runs (not while it waits
for the upstream), so a hook's own time per chunk is its steps' CPU less the CPU spent
inside LiteLLM's stream under it. The collector's passes are timed too, wherever they
fall (a hook's allocations can start a pass inside LiteLLM's code). At each stream's end
the totals are written to ``probe.json`` in the proxy's folder, where the benchmark reads
them back.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Generator
from pathlib import Path
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail

from callgate.integrations.litellm import CallgateGuardrail

CLOCK = time.thread_time_ns
"""CPU time of the calling thread: the event loop's, where every hook step runs."""

OUT = Path("probe.json")
"""Where the totals go: the proxy's working folder."""


GC = {"gc_ns": 0, "gc_full": 0}
"""The CPU of the collector's passes in this process, and how many were full ones."""
_gc_start = [0]


def _collecting(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_start[0] = CLOCK()
        return
    GC["gc_ns"] += CLOCK() - _gc_start[0]
    GC["gc_full"] += info["generation"] == 2


gc.callbacks.append(_collecting)


class Tally:
    """The CPU one hook spent, summed over every stream the proxy served."""

    def __init__(self) -> None:
        self.totals = {"hook_ns": 0, "under_ns": 0, "chunks_in": 0, "chunks_out": 0}
        self.totals |= {"streams": 0, "first_ns": 0}
        self.steps: list[int] = []
        """Each step's own CPU (ns) over every stream, for the percentiles."""

    def write(self) -> None:
        """Write the totals and the steps so far (the benchmark diffs successive reads)."""
        OUT.write_text(json.dumps({**self.totals, **GC, "steps": self.steps}))


class _Step:
    """One ``__anext__`` of an iterator, its CPU added to ``into`` while it runs."""

    __slots__ = ("inner", "into", "key")

    def __init__(self, inner: Awaitable[Any], into: dict[str, int], key: str) -> None:
        self.inner, self.into, self.key = inner, into, key

    def __await__(self) -> Generator[Any, Any, Any]:
        step = self.inner.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            start = CLOCK()
            try:
                signal = step.send(value) if error is None else step.throw(error)
            except StopIteration as stop:
                self.into[self.key] += CLOCK() - start
                return stop.value
            except BaseException:
                self.into[self.key] += CLOCK() - start
                raise
            self.into[self.key] += CLOCK() - start
            try:
                value, error = (yield signal), None
            except BaseException as exc:  # handed on into the step, as await would
                value, error = None, exc


class Timed:
    """An async iterator whose steps' CPU is counted (``under``: LiteLLM's stream)."""

    def __init__(self, source: AsyncIterable[Any], tally: Tally, *, under: bool) -> None:
        self.source: AsyncIterator[Any] = source.__aiter__()
        self.tally = tally
        self.under = under
        self.first = True

    def __aiter__(self) -> Timed:
        return self

    async def __anext__(self) -> Any:
        totals = self.tally.totals
        if self.under:
            item = await _Step(self.source.__anext__(), totals, "under_ns")
            totals["chunks_in"] += 1
            return item
        hook, under = totals["hook_ns"], totals["under_ns"]
        try:
            item = await _Step(self.source.__anext__(), totals, "hook_ns")
        except StopAsyncIteration:
            self.tally.steps.append(totals["hook_ns"] - hook - totals["under_ns"] + under)
            totals["streams"] += 1
            self.tally.write()
            raise
        own = totals["hook_ns"] - hook - totals["under_ns"] + under
        self.tally.steps.append(own)
        if self.first:
            self.first = False
            totals["first_ns"] += own
        totals["chunks_out"] += 1
        return item

    async def aclose(self) -> None:
        """Close the iterator under it (LiteLLM closes each hook's stream at its end)."""
        close = getattr(self.source, "aclose", None)
        if close is not None:
            await close()


def timed(hook: Any, tally: Tally, response: Any) -> Timed:
    """``hook``'s stream over ``response``, its own CPU and LiteLLM's under it counted."""
    return Timed(hook(Timed(response, tally, under=True)), tally, under=False)


class PassThroughGuardrail(CustomGuardrail):
    """The hooks callgate's guardrail defines, every chunk handed on as it came."""

    tally = Tally()

    def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> Timed:
        """Each chunk on as it came: the cost of any guardrail's stream hook in LiteLLM."""

        async def each(chunks: AsyncIterable[Any]) -> AsyncIterator[Any]:
            async for chunk in chunks:
                yield chunk

        return timed(each, self.tally, response)

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        """A whole response left alone."""
        return None


class TimedCallgateGuardrail(CallgateGuardrail):
    """callgate's guardrail as configured, its stream hook's own CPU counted."""

    tally = Tally()

    def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> Timed:
        """The guardrail's own hook over LiteLLM's stream, both counted."""
        hook = super().async_post_call_streaming_iterator_hook
        return timed(lambda chunks: hook(user_api_key_dict, chunks, request_data), self.tally,
                     response)  # fmt: skip

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        """The guardrail's own hook for a whole response."""
        return await super().async_post_call_success_hook(data, user_api_key_dict, response)
