"""Tools run at most once, and each started call is answered: the ledger, async tools, timeouts.

Each test plays realistic OpenAI turns (``callgate.testing.builders``) through ``run_turn`` or
``arun_turn`` with tools that count their runs, and checks what ran, how often, and what
the model gets back.
"""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from callgate import Driver, Tool, arun_turn, run_turn
from callgate.testing.builders import openai_chunks, split
from callgate.testing.wires import Chunk, WireCall

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PATH = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


class Runs:
    """Tool functions that record every run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def weather(self, city: str) -> str:
        self.runs.append(("get_weather", {"city": city}))
        return f"18 C in {city}"

    def delete(self, path: str) -> str:
        self.runs.append(("delete_file", {"path": path}))
        return f"deleted {path}"

    def driver(self, **options: Any) -> Driver:
        return Driver(
            [Tool("get_weather", CITY, self.weather), Tool("delete_file", PATH, self.delete)],
            **options,
        )


def one_call(
    call_id: str, name: str, arguments: dict[str, Any], stream: str = "chatcmpl-sdk1"
) -> list[Chunk]:
    """An OpenAI turn with one call whose arguments arrive in 4-character fragments.

    ``stream`` is the response id every chunk carries (each generation has its own).
    """
    fragments = split(json.dumps(arguments), [4])
    chunks = openai_chunks([WireCall(call_id, name, fragments)], [0] * (1 + len(fragments)))
    return [{**chunk, "id": stream} for chunk in chunks]


def text_call(name: str, arguments: dict[str, Any]) -> list[Chunk]:
    """An OpenAI turn whose content carries one Hermes-style ``<tool_call>`` block."""
    payload = json.dumps({"name": name, "arguments": arguments})
    return openai_chunks([], [], text=split(f"Sure. <tool_call>{payload}</tool_call>", [5]))


async def aiter(chunks: Iterable[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


# -- the ledger answers only the same call -------------------------------------------------


def test_a_reused_id_with_other_arguments_runs_and_is_not_answered_from_the_ledger() -> None:
    """llama.cpp numbers calls per turn: call_0 for Paris, then call_0 for Rome."""
    tools = Runs()
    driver = tools.driver()
    buffer = driver.new_stream_buffer()

    first = run_turn(one_call("call_0", "get_weather", {"city": "Paris"}), driver, buffer)
    second = run_turn(one_call("call_0", "get_weather", {"city": "Rome"}), driver, buffer)

    assert tools.runs == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert [r.content for r in first.results] == ["18 C in Paris"]
    assert [r.content for r in second.results] == ["18 C in Rome"]


def test_a_reused_id_with_another_tool_runs_that_tool() -> None:
    tools = Runs()
    driver = tools.driver()
    buffer = driver.new_stream_buffer()

    run_turn(one_call("call_0", "get_weather", {"city": "Paris"}), driver, buffer)
    second = run_turn(one_call("call_0", "delete_file", {"path": "/tmp/x"}), driver, buffer)

    assert [r.content for r in second.results] == ["deleted /tmp/x"]
    assert tools.runs[-1] == ("delete_file", {"path": "/tmp/x"})


def test_the_same_call_under_the_same_id_is_still_answered_from_the_ledger() -> None:
    tools = Runs()
    driver = tools.driver()
    buffer = driver.new_stream_buffer()

    first = run_turn(one_call("call_7", "get_weather", {"city": "Paris"}), driver, buffer)
    again = run_turn(one_call("call_7", "get_weather", {"city": "Paris"}), driver, buffer)

    assert tools.runs == [("get_weather", {"city": "Paris"})]
    assert again.results == first.results


def test_an_empty_id_is_no_id_another_call_is_never_answered_with_its_result() -> None:
    tools = Runs()
    driver = tools.driver()
    buffer = driver.new_stream_buffer()

    run_turn(one_call("", "get_weather", {"city": "Paris"}), driver, buffer)
    second = run_turn(one_call("", "delete_file", {"path": "/tmp/x"}), driver, buffer)

    assert [r.content for r in second.results] == ["deleted /tmp/x"]
    assert tools.runs == [("get_weather", {"city": "Paris"}), ("delete_file", {"path": "/tmp/x"})]


def test_an_empty_id_on_the_same_call_in_two_generations_runs_each_time() -> None:
    """Without a call id, two responses (two stream ids) are two requests: each runs."""
    tools = Runs()
    driver = tools.driver()
    buffer = driver.new_stream_buffer()

    for stream in ("chatcmpl-a", "chatcmpl-b"):
        run_turn(one_call("", "get_weather", {"city": "Paris"}, stream), driver, buffer)

    assert tools.runs == [("get_weather", {"city": "Paris"})] * 2


def test_an_id_less_call_replayed_in_the_same_stream_is_answered_from_the_ledger() -> None:
    """The same response (its stream id) played again is a retry: its calls do not rerun."""
    tools = Runs()
    driver = tools.driver()
    buffer = driver.new_stream_buffer()
    chunks = one_call("", "get_weather", {"city": "Paris"}, "chatcmpl-same")

    first = run_turn(chunks, driver, buffer)
    again = run_turn(chunks, driver, buffer)

    assert tools.runs == [("get_weather", {"city": "Paris"})]
    assert [r.content for r in again.results] == ["18 C in Paris"]
    assert [r.replayed for r in first.results + again.results] == [False, True]


# -- a call that started is recorded before it runs ----------------------------------------


def test_a_result_that_cannot_be_serialised_is_an_error_result_and_recorded() -> None:
    runs: list[int] = []

    def circular() -> list[Any]:
        runs.append(1)
        loop: list[Any] = []
        loop.append(loop)
        return loop

    driver = Driver([Tool("circular", {"type": "object"}, circular)])
    buffer = driver.new_stream_buffer()

    first = run_turn(one_call("call_c", "circular", {}), driver, buffer)
    again = run_turn(one_call("call_c", "circular", {}), driver, buffer)

    assert runs == [1]
    (result,) = first.results
    assert result.is_error and "could not be serialised" in result.content
    assert again.results == first.results
    assert first.history[-1]["tool_call_id"] == "call_c"


def test_an_interrupt_after_the_tool_ran_never_lets_a_retry_run_it_again() -> None:
    """The interrupt comes between the tool's effect and its result being recorded."""
    runs: list[str] = []

    def charge(amount: int) -> str:
        runs.append("charged")
        raise KeyboardInterrupt

    driver = Driver([Tool("charge", {"type": "object"}, charge)])
    buffer = driver.new_stream_buffer()
    chunks = one_call("call_pay", "charge", {"amount": 5})

    with pytest.raises(KeyboardInterrupt):
        run_turn(chunks, driver, buffer)
    retry = run_turn(chunks, driver, buffer)

    assert runs == ["charged"]
    (result,) = retry.results
    assert result.is_error and "not run again" in result.content
    assert retry.history[-1] == {
        "role": "tool",
        "tool_call_id": "call_pay",
        "content": result.content,
    }


def test_two_drivers_that_own_one_tool_run_an_id_less_text_call_once() -> None:
    tools = Runs()
    formats = {"text_formats": ["tool_call_tag"]}
    drivers = [tools.driver(**formats), tools.driver(**formats)]
    buffer = drivers[0].new_stream_buffer()

    turn = run_turn(text_call("get_weather", {"city": "Oslo"}), drivers, buffer)

    assert tools.runs == [("get_weather", {"city": "Oslo"})]
    assert [r.content for r in turn.results] == ["18 C in Oslo"]
    assert [m["role"] for m in turn.history] == ["assistant", "user"]


def test_two_drivers_that_own_one_tool_run_an_id_call_once_and_answer_it_once() -> None:
    tools = Runs()
    drivers = [tools.driver(), tools.driver()]
    buffer = drivers[0].new_stream_buffer()

    turn = run_turn(one_call("call_1", "get_weather", {"city": "Oslo"}), drivers, buffer)

    assert tools.runs == [("get_weather", {"city": "Oslo"})]
    assert [m.get("tool_call_id") for m in turn.history] == [None, "call_1"]


# -- async tools ---------------------------------------------------------------------------


def test_arun_turn_awaits_an_async_tool_and_sends_its_value() -> None:
    seen: list[str] = []

    async def weather(city: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        seen.append(city)
        return {"city": city, "temp": 18}

    driver = Driver([Tool("get_weather", CITY, weather)])
    chunks = one_call("call_a", "get_weather", {"city": "Lima"})

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turn = asyncio.run(arun_turn(aiter(chunks), driver, driver.new_stream_buffer()))

    assert seen == ["Lima"]
    (result,) = turn.results
    assert (result.content, result.is_error) == ('{"city": "Lima", "temp": 18}', False)


def test_an_async_tool_that_raises_is_an_error_result() -> None:
    async def broken(city: str) -> str:
        raise LookupError(f"no station in {city}")

    driver = Driver([Tool("get_weather", CITY, broken)])
    chunks = one_call("call_b", "get_weather", {"city": "Lima"})

    turn = asyncio.run(arun_turn(aiter(chunks), driver, driver.new_stream_buffer()))

    (result,) = turn.results
    assert result.is_error and result.content == "LookupError: no station in Lima"


def test_run_turn_refuses_an_async_tool_before_reading_the_stream() -> None:
    async def weather(city: str) -> str:
        return city

    driver = Driver([Tool("get_weather", CITY, weather)])
    read: list[Chunk] = []

    def chunks() -> Iterable[Chunk]:
        for chunk in one_call("call_s", "get_weather", {"city": "Lima"}):
            read.append(chunk)
            yield chunk

    with pytest.raises(TypeError, match=r"get_weather is an async function.*arun_turn"):
        run_turn(chunks(), driver, driver.new_stream_buffer())
    assert read == []


def test_a_sync_step_refuses_an_async_tool_with_a_clear_error() -> None:
    async def weather(city: str) -> str:
        return city

    driver = Driver([Tool("get_weather", CITY, weather)])
    buffer = driver.new_stream_buffer()
    for chunk in one_call("call_s", "get_weather", {"city": "Lima"}):
        buffer.add(chunk)
    buffer.end()

    with pytest.raises(TypeError, match="get_weather is an async function"):
        driver.process_llm_response(buffer)
    assert "call_s" not in buffer.ledger


def test_a_sync_tool_asked_to_run_in_a_thread_does_not_block_the_event_loop() -> None:
    threads: list[str] = []

    def weather(city: str) -> str:
        threads.append(threading.current_thread().name)
        return city

    driver = Driver([Tool("get_weather", CITY, weather, in_thread=True)])
    chunks = one_call("call_t", "get_weather", {"city": "Lima"})

    turn = asyncio.run(arun_turn(aiter(chunks), driver, driver.new_stream_buffer()))

    assert [r.content for r in turn.results] == ["Lima"]
    assert threads and threads[0] != threading.main_thread().name


# -- timeouts ------------------------------------------------------------------------------


def test_an_async_tool_past_its_timeout_is_an_error_result_recorded_once() -> None:
    started: list[str] = []

    async def never(city: str) -> str:
        started.append(city)
        await asyncio.Event().wait()
        return city

    driver = Driver([Tool("get_weather", CITY, never, timeout=0.05)])
    buffer = driver.new_stream_buffer()
    chunks = one_call("call_t", "get_weather", {"city": "Lima"})

    async def twice() -> tuple[Any, Any]:
        first = await asyncio.wait_for(arun_turn(aiter(chunks), driver, buffer), 10)
        again = await asyncio.wait_for(arun_turn(aiter(chunks), driver, buffer), 10)
        return first, again

    first, again = asyncio.run(twice())

    (result,) = first.results
    assert result.is_error and "timed out after 0.05 s" in result.content
    assert again.results == first.results
    assert started == ["Lima"]


def test_the_driver_default_timeout_applies_to_tools_without_their_own() -> None:
    async def never(city: str) -> str:
        await asyncio.Event().wait()
        return city

    async def quick(path: str) -> str:
        return path

    driver = Driver(
        [Tool("get_weather", CITY, never), Tool("delete_file", PATH, quick, timeout=5)],
        tool_timeout=0.05,
    )
    assert driver.timeout_of(driver.tools["get_weather"]) == 0.05
    assert driver.timeout_of(driver.tools["delete_file"]) == 5
    chunks = one_call("call_d", "get_weather", {"city": "Lima"})

    turn = asyncio.run(
        asyncio.wait_for(arun_turn(aiter(chunks), driver, driver.new_stream_buffer()), 10)
    )

    assert "timed out after 0.05 s" in turn.results[0].content


def test_a_negative_timeout_is_refused_when_the_tool_is_made() -> None:
    with pytest.raises(ValueError, match="timeout"):
        Tool("get_weather", CITY, timeout=-1)


def test_a_tool_that_raises_is_logged_with_its_traceback_and_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def weather(city: str) -> str:
        raise ConnectionError(f"station {city} offline")

    driver = Driver([Tool("get_weather", CITY, weather)])
    chunks = one_call("call_l", "get_weather", {"city": "Lima"})

    with caplog.at_level("ERROR", logger="callgate"):
        turn = run_turn(chunks, driver, driver.new_stream_buffer())

    (record,) = caplog.records
    assert record.name == "callgate" and "get_weather" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ConnectionError
    assert "in weather" in caplog.text  # the traceback names the tool's own frame
    assert turn.results[0].content == "ConnectionError: station Lima offline"
