"""Cancelled or failed at every point of a turn, then retried: no call runs twice, all answered.

On all seven wires and with text calls, a turn with two calls is stopped at each of its
points: ``arun_turn`` cancelled at every await (each chunk's read, each await inside the
tools), ``run_turn``'s stream failing at every chunk (a ``TurnError``), a
``KeyboardInterrupt`` from the stream at every chunk, ``stream_turn`` closed after every
step. Then the same stream is played again on the same buffer. Every tool ran at most
once, and the retry answers every call with what happened: its result, or "cancelled
while it ran ... unknown" for a run that was cut short.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from callgate import Driver, Ledger, Tool, TurnError, arun_turn, run_turn, stream_turn
from callgate.testing.wires import Chunk
from ledger_turns import CITY, WIRES, text_turn, wire_turn
from redis_server import redis_url  # noqa: F401 (a fixture)

CITIES = ("Paris", "Rome")
CASES = (*WIRES, "text")


def chunks_of(case: str) -> list[Chunk]:
    return text_turn(CITIES) if case == "text" else wire_turn(case, CITIES)


class Effects:
    """The tools' runs: ("start", city) when a run begins, ("done", city) when it ends."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    def driver(self, case: str, *, sync: bool) -> Driver:
        async def weather(city: str) -> str:
            self.log.append(("start", city))
            await asyncio.sleep(0)
            self.log.append(("done", city))
            return f"18 C in {city}"

        def sync_weather(city: str) -> str:
            self.log.append(("start", city))
            self.log.append(("done", city))
            return f"18 C in {city}"

        formats = {"text_formats": ["tool_call_tag"]} if case == "text" else {}
        return Driver([Tool("get_weather", CITY, sync_weather if sync else weather)], **formats)

    def check(self, retry: Any, where: str) -> None:
        """At most one run per call; the retry's answer to each says what happened."""
        for city in CITIES:
            assert self.log.count(("start", city)) == 1, (where, city, self.log)
        told = {r.call.arguments.get("city") or _city(r): r for r in retry.results}
        assert sorted(told) == sorted(CITIES), (where, retry.results)
        for city, result in told.items():
            if ("done", city) in self.log:
                assert result.content == f"18 C in {city}", (where, result)
            else:
                assert "cancelled while it ran" in result.content, (where, result)
                assert "unknown" in result.content and result.replayed, (where, result)
        assert len(retry.results) == len(CITIES)


def _city(result: Any) -> str:
    return next(c for c in CITIES if c in result.content)


async def network(chunks: list[Chunk], fail_at: int | None = None) -> AsyncIterator[Chunk]:
    """The chunks as a network stream: an await before each; a dropped connection at ``fail_at``."""
    for n, chunk in enumerate(chunks):
        await asyncio.sleep(0)
        if n == fail_at:
            raise ConnectionError("the connection dropped")
        yield chunk


def failing(chunks: list[Chunk], at: int, error: BaseException) -> Iterator[Chunk]:
    yield from chunks[:at]
    raise error


async def cancelled_after(awaits: int, turn: Any) -> bool:
    """Play ``turn`` in a task cancelled after ``awaits`` turns of the loop: was it cut?"""
    task = asyncio.create_task(turn)
    for _ in range(awaits):
        await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


@pytest.mark.parametrize("case", CASES)
def test_arun_turn_cancelled_at_every_await_then_retried(case: str) -> None:
    chunks = chunks_of(case)
    points = 0
    while True:
        effects = Effects()
        driver = effects.driver(case, sync=False)
        buffer = driver.new_stream_buffer()

        stopped = asyncio.run(cancelled_after(points, arun_turn(network(chunks), driver, buffer)))
        retry = asyncio.run(arun_turn(network(chunks), driver, buffer))
        effects.check(retry, f"{case}, cancelled after {points} awaits")
        if not stopped:
            break
        points += 1
    assert points > len(chunks)  # every chunk's await, and the tools' own, were cut


@pytest.mark.parametrize("case", CASES)
def test_arun_turn_failing_at_every_chunk_then_retried(case: str) -> None:
    chunks = chunks_of(case)
    for at in range(len(chunks)):
        effects = Effects()
        driver = effects.driver(case, sync=False)
        buffer = driver.new_stream_buffer()

        with pytest.raises(TurnError) as failed:
            asyncio.run(arun_turn(network(chunks, at), driver, buffer))
        partial = failed.value.turn
        retry = asyncio.run(arun_turn(network(chunks), driver, buffer))

        effects.check(retry, f"{case}, failed at chunk {at}")
        for result in partial.results:
            if not result.is_error:
                assert ("done", _city(result)) in effects.log


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("how", ["turn_error", "interrupt", "closed"])
def test_run_turn_stopped_at_every_chunk_then_retried(case: str, how: str) -> None:
    chunks = chunks_of(case)
    for at in range(len(chunks) + 1):
        effects = Effects()
        driver = effects.driver(case, sync=True)
        buffer = driver.new_stream_buffer()

        if how == "closed":
            steps = stream_turn(chunks, driver, buffer)
            for _ in zip(range(at), steps, strict=False):
                pass
            steps.close()
        elif how == "interrupt":
            with pytest.raises(KeyboardInterrupt):
                run_turn(failing(chunks, at, KeyboardInterrupt()), driver, buffer)
        else:
            with pytest.raises(TurnError):
                run_turn(failing(chunks, at, ConnectionError("dropped")), driver, buffer)
        retry = run_turn(chunks, driver, buffer)

        effects.check(retry, f"{case}, {how} at chunk {at}")


@pytest.mark.parametrize("case", ["openai", "gemini"])
def test_arun_turn_on_redis_cancelled_at_every_await_then_retried_by_another_worker(
    case: str, request: pytest.FixtureRequest
) -> None:
    """The awaits of the Redis client are cut too; the retry is another worker's ledger."""
    url = request.getfixturevalue("redis_url")
    chunks = chunks_of(case)
    points = 0
    while True:
        effects = Effects()
        driver = effects.driver(case, sync=False)
        conversation = f"{request.node.name}-{points}-{time.time_ns()}"
        first = driver.new_stream_buffer(ledger=Ledger.redis(url, conversation=conversation))
        stopped = asyncio.run(cancelled_after(points, arun_turn(network(chunks), driver, first)))
        other = driver.new_stream_buffer(ledger=Ledger.redis(url, conversation=conversation))
        retry = asyncio.run(arun_turn(network(chunks), driver, other))
        effects.check(retry, f"{case} on Redis, cancelled after {points} awaits")
        if not stopped:
            break
        points += 1
    assert points > len(chunks)
