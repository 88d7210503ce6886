"""The ledger in one process: truthful answers for tools that fail, time out, are cancelled.

Each test plays realistic OpenAI turns (``callgate.testing.builders``) through ``run_turn``
or ``arun_turn`` with tools that record their runs, and checks what ran, how often, and
what the model is told. Every answer must say what really happened: not run, failed,
still running, or outcome unknown.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from callgate import Driver, Ledger, Tool, TurnError, arun_turn, run_turn, stream_turn
from callgate.ledger import MemoryStore, Record
from callgate.strategies.base import ExtractedCall
from callgate.testing.wires import Chunk
from ledger_turns import CITY, aiter, counted, gemini_call, one_call


def failing_after(chunks: list[Chunk], n: int) -> Iterator[Chunk]:
    """The first ``n`` chunks, then the connection drops."""
    yield from chunks[:n]
    raise ConnectionError("the connection dropped")


def play(driver: Driver, buffer: Any, chunks: list[Chunk]) -> Any:
    return asyncio.run(asyncio.wait_for(arun_turn(aiter(chunks), driver, buffer), 10))


# -- a tool's own TimeoutError is its failure, never a timeout -----------------------------


def test_a_tool_raising_timeout_error_without_a_timeout_is_answered_with_its_error() -> None:
    """Failed before: ``f"{None:g}"`` raised TypeError and arun_turn crashed (no turn)."""

    async def weather(city: str) -> str:
        raise TimeoutError(f"the station in {city} did not answer")

    driver = Driver([Tool("get_weather", CITY, weather)])
    turn = play(driver, driver.new_stream_buffer(), one_call("call_1", {"city": "Lima"}))

    (result,) = turn.results
    assert result.is_error and result.content == "TimeoutError: the station in Lima did not answer"
    assert turn.history[-1]["content"] == result.content


def test_a_tool_raising_timeout_error_at_once_is_not_said_to_have_timed_out() -> None:
    """Failed before: answered "timed out after 30 s" although it failed at once."""

    async def weather(city: str) -> str:
        raise TimeoutError("read timed out")

    driver = Driver([Tool("get_weather", CITY, weather, timeout=30)])
    turn = play(driver, driver.new_stream_buffer(), one_call("call_1", {"city": "Lima"}))

    (result,) = turn.results
    assert result.content == "TimeoutError: read timed out"
    assert "30 s" not in result.content


def test_a_coroutine_past_its_timeout_is_stopped_and_says_so() -> None:
    stopped: list[str] = []

    async def weather(city: str) -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            stopped.append(city)
            raise
        return city

    driver = Driver([Tool("get_weather", CITY, weather, timeout=0.05)])
    turn = play(driver, driver.new_stream_buffer(), one_call("call_1", {"city": "Lima"}))

    assert stopped == ["Lima"]
    assert "timed out after 0.05 s and was stopped" in turn.results[0].content


# -- threads: past their timeout they run on, and the answer says so -----------------------


def test_an_in_thread_tool_past_its_timeout_is_said_to_run_on_and_records_its_result() -> None:
    """Failed before: answered "was stopped" while the thread ran on and took effect."""
    release = threading.Event()
    effects: list[str] = []

    def weather(city: str) -> str:
        release.wait(10)
        effects.append(city)
        return f"18 C in {city}"

    driver = Driver([Tool("get_weather", CITY, weather, timeout=0.05, in_thread=True)])
    buffer = driver.new_stream_buffer()
    chunks = one_call("call_1", {"city": "Lima"})

    async def main() -> tuple[Any, Any, Any]:
        first = await arun_turn(aiter(chunks), driver, buffer)
        during = await arun_turn(aiter(chunks), driver, buffer)
        release.set()
        for _ in range(1000):
            if effects:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        after = await arun_turn(aiter(chunks), driver, buffer)
        return first, during, after

    first, during, after = asyncio.run(main())
    (answer,) = first.results
    assert "was stopped" not in answer.content
    assert "still running" in answer.content and "not run again" in answer.content
    assert "still running" in during.results[0].content and during.results[0].replayed
    assert effects == ["Lima"]
    assert [(r.content, r.replayed) for r in after.results] == [("18 C in Lima", True)]


def test_a_sync_tool_with_a_timeout_under_arun_turn_is_bounded_and_leaves_the_loop_free() -> None:
    """Failed before: the function ran on the event loop, unbounded, and blocked it."""
    release = threading.Event()

    def weather(city: str) -> str:
        release.wait(5)
        return city

    driver = Driver([Tool("get_weather", CITY, weather, timeout=0.2)])
    ticks: list[float] = []

    async def main() -> Any:
        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        tick = asyncio.create_task(ticker())
        began = time.monotonic()
        chunks = aiter(one_call("c", {"city": "Oslo"}))
        turn = await arun_turn(chunks, driver, driver.new_stream_buffer())
        took = time.monotonic() - began
        tick.cancel()
        release.set()
        return turn, took

    turn, took = asyncio.run(main())
    assert took < 2
    assert len(ticks) > 5
    assert "timed out after 0.2 s but is still running" in turn.results[0].content


def test_a_cancelled_in_thread_call_whose_thread_never_began_runs_on_the_retry() -> None:
    """Failed before: the retry was answered "started earlier but its result was lost"."""
    driver, runs = counted(in_thread=True)
    buffer = driver.new_stream_buffer()
    chunks = one_call("call_1", {"city": "Lima"})
    busy = threading.Event()

    async def cancelled_while_the_pool_is_busy() -> None:
        pool = ThreadPoolExecutor(max_workers=1)
        loop = asyncio.get_running_loop()
        loop.set_default_executor(pool)
        blocker = loop.run_in_executor(None, busy.wait, 10)
        task = asyncio.create_task(arun_turn(aiter(chunks), driver, buffer))
        for _ in range(50):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        busy.set()
        await blocker

    asyncio.run(cancelled_while_the_pool_is_busy())
    assert runs == []
    retry = play(driver, buffer, chunks)

    assert runs == ["Lima"]
    assert [(r.content, r.is_error) for r in retry.results] == [("18 C in Lima", False)]


def test_a_coroutine_cancelled_mid_run_is_answered_on_retry_and_never_reruns() -> None:
    runs: list[str] = []

    async def weather(city: str) -> str:
        runs.append(city)
        await asyncio.sleep(10)
        return city

    driver = Driver([Tool("get_weather", CITY, weather)])
    buffer = driver.new_stream_buffer()
    chunks = one_call("call_1", {"city": "Lima"})

    async def cancelled() -> None:
        task = asyncio.create_task(arun_turn(aiter(chunks), driver, buffer))
        while not runs:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    retry = play(driver, buffer, chunks)

    assert runs == ["Lima"]
    (result,) = retry.results
    assert result.replayed and result.is_error
    assert "was cancelled while it ran" in result.content and "unknown" in result.content


# -- the sync loop never ignores a timeout --------------------------------------------------


@pytest.mark.parametrize("where", ["tool", "driver"])
def test_run_turn_refuses_a_timeout_it_cannot_enforce_before_reading_the_stream(
    where: str,
) -> None:
    """Failed before: the timeout was silently ignored and the tool ran unbounded."""
    runs: list[str] = []

    def weather(city: str) -> str:
        runs.append(city)
        return city

    if where == "tool":
        driver = Driver([Tool("get_weather", CITY, weather, timeout=5)])
    else:
        driver = Driver([Tool("get_weather", CITY, weather)], tool_timeout=5)
    read: list[Chunk] = []

    def chunks() -> Iterator[Chunk]:
        for chunk in one_call("call_1", {"city": "Lima"}):
            read.append(chunk)
            yield chunk

    with pytest.raises(TypeError, match=r"get_weather has a timeout of 5 s.*arun_turn"):
        run_turn(chunks(), driver, driver.new_stream_buffer())
    assert read == [] and runs == []


def test_a_sync_step_refuses_a_tool_timeout_and_records_nothing() -> None:
    driver = Driver([Tool("get_weather", CITY, lambda city: city, timeout=5)])
    buffer = driver.new_stream_buffer()
    for chunk in one_call("call_1", {"city": "Lima"}):
        buffer.add(chunk)
    buffer.end()

    with pytest.raises(TypeError, match="get_weather has a timeout"):
        driver.process_llm_response(buffer)
    assert "call_1" not in buffer.ledger and len(buffer.ledger) == 0


# -- the mark of an answer from the ledger ---------------------------------------------------


def test_an_answer_from_the_ledger_is_marked_on_the_result_and_the_step() -> None:
    """Failed before: a repeated call's answer looked exactly like a run's."""
    driver, runs = counted()
    buffer = driver.new_stream_buffer()
    first = list(stream_turn(one_call("call_7", {"city": "Oslo"}, "a"), driver, buffer))
    again = list(stream_turn(one_call("call_7", {"city": "Oslo"}, "b"), driver, buffer))

    assert runs == ["Oslo"]
    assert [r.replayed for s in first for r in s.response.results] == [False]
    assert [s.replayed for s in first] == [()] * len(first)
    (step,) = [s for s in again if s.response.results]
    assert [(r.content, r.replayed) for r in step.replayed] == [("18 C in Oslo", True)]


# -- a running call's id is in the ledger ------------------------------------------------


def test_a_running_calls_id_is_in_the_ledger_while_its_tool_runs() -> None:
    """The docs say the ledger holds a started call's id; no test checked it while running."""
    seen: list[bool] = []
    buffer: Any = None

    def weather(city: str) -> str:
        seen.append("call_run" in buffer.ledger)
        return city

    driver = Driver([Tool("get_weather", CITY, weather)])
    buffer = driver.new_stream_buffer()
    assert "call_run" not in buffer.ledger
    run_turn(one_call("call_run", {"city": "Lima"}), driver, buffer)

    assert seen == [True]


# -- id-less calls keep one identity across retries of their turn ----------------------------


def test_an_id_less_call_in_a_stream_without_an_id_keeps_its_turn_across_a_failed_stream() -> None:
    """Failed before: every turn was a new turn, so the retry ran the call again."""
    driver, runs = counted()
    buffer = driver.new_stream_buffer()
    chunks = gemini_call("Oslo")
    terminal = len(chunks) - 1

    with pytest.raises(TurnError) as failed:
        run_turn(failing_after(chunks, terminal + 1), driver, buffer)
    retry = run_turn(chunks, driver, buffer)
    later = run_turn(chunks, driver, buffer)

    assert runs == ["Oslo", "Oslo"]  # the later, finished turn's call is a new request
    assert [r.content for r in failed.value.turn.results] == ["18 C in Oslo"]
    assert [(r.content, r.replayed) for r in retry.results] == [("18 C in Oslo", True)]
    assert not later.results[0].replayed


def test_an_id_less_call_keeps_its_turn_across_a_closed_stream_turn() -> None:
    driver, runs = counted()
    buffer = driver.new_stream_buffer()
    chunks = gemini_call("Oslo")

    steps = stream_turn(chunks, driver, buffer)
    for step in steps:
        if step.response.results:
            break
    steps.close()
    retry = run_turn(chunks, driver, buffer)

    assert runs == ["Oslo"]
    assert retry.results[0].replayed


# -- records started elsewhere, the expiry, a store that fails -------------------------------


def records(store: MemoryStore) -> dict[Any, Record]:
    return dict(store._records)


def started_elsewhere(at: float) -> tuple[Ledger, Driver, list[str]]:
    """A ledger whose store holds another worker's start record of call_1, made at ``at``."""
    store = MemoryStore()
    driver, runs = counted()
    mine = Ledger(store, conversation="conv-1", expiry=60, owner="worker-1")
    key = mine.key(ExtractedCall("call_1", "get_weather", {"city": "Oslo"}, 0))
    store.start("conv-1", key, Record("started", "worker-2", at))
    return mine, driver, runs


@pytest.mark.parametrize(
    ("age", "says"),
    [(5, "is running in another worker (worker-2)"), (600, "its result was lost")],
)
def test_a_call_started_by_another_worker_is_never_run_again(age: float, says: str) -> None:
    mine, driver, runs = started_elsewhere(time.time() - age)
    buffer = driver.new_stream_buffer()
    buffer.ledger = mine

    turn = run_turn(one_call("call_1", {"city": "Oslo"}), driver, buffer)

    assert runs == []
    (result,) = turn.results
    assert says in result.content and "not run again" in result.content and result.replayed


class Broken(MemoryStore):
    """A store whose server is down until ``up`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.up = False

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        if not self.up:
            raise ConnectionError("Connection refused")
        return super().start(conversation, key, record)

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        return self.start(conversation, key, record)


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_a_store_that_cannot_be_written_fails_closed_and_loses_nothing(loop: str) -> None:
    driver, runs = counted()
    store = Broken()
    buffer = driver.new_stream_buffer()
    buffer.ledger = Ledger(store, conversation="conv-down")
    chunks = one_call("call_1", {"city": "Oslo"})

    turn = run_turn(chunks, driver, buffer) if loop == "sync" else play(driver, buffer, chunks)

    assert runs == []
    (result,) = turn.results
    assert result.refused and result.is_error
    assert "was not run: the ledger could not record it (ConnectionError" in result.content
    assert turn.history[-1] == {"role": "tool", "tool_call_id": "call_1", "content": result.content}
    assert records(store) == {}

    store.up = True
    retry = run_turn(chunks, driver, buffer) if loop == "sync" else play(driver, buffer, chunks)
    assert runs == ["Oslo"] and retry.results[0].content == "18 C in Oslo"


def test_a_ledger_is_refused_when_its_settings_cannot_keep_the_promise() -> None:
    with pytest.raises(ValueError, match="needs conversation="):
        Ledger(MemoryStore())
    with pytest.raises(ValueError, match="expiry must be"):
        Ledger(expiry=0)
    with pytest.raises(ValueError, match="conversation must be a non-empty string"):
        Ledger(MemoryStore(), conversation="")


def test_arun_turn_refuses_a_timeout_not_shorter_than_the_expiry_before_reading() -> None:
    driver = Driver([Tool("get_weather", CITY, lambda city: city, timeout=60)])
    buffer = driver.new_stream_buffer()
    buffer.ledger = Ledger(expiry=60)

    with pytest.raises(ValueError, match="timeout of 60 s, not shorter than the ledger's expiry"):
        play(driver, buffer, one_call("c", {"city": "Oslo"}))
    assert not buffer.slots


def test_importing_callgate_imports_no_redis_client() -> None:
    code = "import sys, callgate, callgate.ledger; print('redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class SlowToAnswer(MemoryStore):
    """A store whose async write of an answer never returns (a stalled connection)."""

    async def afinish(self, conversation: str, key: str, record: Record) -> None:
        await asyncio.sleep(10)


def test_a_turn_cancelled_while_its_answer_is_written_still_records_the_answer() -> None:
    driver, runs = counted()
    store = SlowToAnswer()
    chunks = one_call("call_1", {"city": "Oslo"})
    buffer = driver.new_stream_buffer(ledger=Ledger(store, conversation="conv-slow"))

    async def cancelled_after_the_run() -> None:
        task = asyncio.create_task(arun_turn(aiter(chunks), driver, buffer))
        while not runs:
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled_after_the_run())
    other = driver.new_stream_buffer(ledger=Ledger(store, conversation="conv-slow"))
    retry = run_turn(chunks, driver, other)

    assert runs == ["Oslo"]
    assert [(r.content, r.replayed) for r in retry.results] == [("18 C in Oslo", True)]
