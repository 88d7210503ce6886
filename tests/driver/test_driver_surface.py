"""A driver's public surface: the seeds' accessor names, one per thing; a step's findings.

Source documents 000 and 001 name the accessors ``extraction_strategies`` (the driver's
chain, passed to a buffer or called) and ``get_native_backup_strategy()`` /
``set_native_backup_strategy()``; those are the only ones. A :class:`DriverResponse`
carries the findings of the calls its step answered, so a client reacting to
``call_failed`` reads why without the buffer.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import BaseDriver, Driver, DriverResponse, LLMStreamBuffer, Orchestrator, Tool
from callgate.strategies.text.strategy import TextFormatsStrategy
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import Chunk, WireCall

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def weather(runs: list[dict[str, Any]], name: str = "get_weather") -> Tool:
    def run(**arguments: Any) -> str:
        runs.append(arguments)
        return "sunny"

    return Tool(name, WEATHER, run)


def steps(driver: Driver, chunks: list[Chunk]) -> list[DriverResponse]:
    buffer = driver.new_stream_buffer()
    played = []
    for chunk in chunks:
        buffer.add(chunk)
        played.append(driver.process_llm_response(buffer))
    buffer.end()
    played.append(driver.process_llm_response(buffer))
    return played


# -- one accessor per thing ---------------------------------------------------------------


@pytest.mark.parametrize("gone", ["strategies", "backup"])
def test_the_second_accessors_are_gone(gone: str) -> None:
    for driver in (Driver([]), BaseDriver([]), Orchestrator([Driver([])])):
        assert not hasattr(driver, gone), f"{type(driver).__name__}.{gone}"


def test_extraction_strategies_is_the_one_chain_a_buffer_is_built_from() -> None:
    driver = Driver([], text_formats=["tool_call_tag"])
    names = [s.name for s in driver.extraction_strategies]
    assert names == [s.name for s in driver.extraction_strategies()]
    assert names[-1] == "tool_call_tag" and "openai" in names and "anthropic" in names
    built = LLMStreamBuffer(driver.extraction_strategies)
    assert [s.name for s in built.chain] == names
    assert [s.name for s in driver.new_stream_buffer().chain] == names


def test_the_backup_accessor_answers_for_every_kind_of_driver() -> None:
    driver = Driver([], text_formats=["tool_call_tag"])
    assert isinstance(driver.get_native_backup_strategy(), TextFormatsStrategy)
    assert BaseDriver([]).get_native_backup_strategy() is None
    both = Orchestrator([driver, Driver([])])
    assert both.get_native_backup_strategy() is not None
    for inner in both.drivers:
        inner.set_native_backup_strategy(None)
    assert both.get_native_backup_strategy() is None
    assert driver.new_stream_buffer().leaked_calls is False, "switched off: leaks are text"


# -- DriverResponse.findings --------------------------------------------------------------


def test_a_refused_call_s_step_carries_the_finding_that_refused_it() -> None:
    runs: list[dict[str, Any]] = []
    driver = Driver([weather(runs)], text_formats=())
    bad = openai_chunks([WireCall("call_1", "get_weather", ('{"city": 3}',))], [0, 0])
    played = steps(driver, bad)
    [answered] = [r for r in played if r.results]
    assert answered.call_failed and runs == []
    assert [(f.code, f.slot) for f in answered.findings] == [("schema_invalid", 0)]
    assert all(r.findings == () for r in played if not r.results)


def test_a_call_refused_for_its_sibling_carries_the_sibling_s_error() -> None:
    runs: list[dict[str, Any]] = []
    driver = Driver([weather(runs)], text_formats=())
    calls = [
        WireCall("call_1", "get_weather", ('{"city": "Oslo"}',)),
        WireCall("call_2", "get_time", ("{",)),
    ]
    played = steps(driver, openai_chunks(calls, [0, 0, 1, 1]))
    [answered] = [r for r in played if r.results]
    assert [r.call.id for r in answered.results] == ["call_1"], "get_time is no tool here"
    assert runs == []
    codes = {(f.code, f.slot) for f in answered.findings}
    assert ("malformed_json", 1) in codes


def test_a_step_that_ran_its_calls_carries_their_warnings_only() -> None:
    runs: list[dict[str, Any]] = []
    driver = Driver([weather(runs)], text_formats=())
    chunks = openai_chunks([WireCall("call_1", "get_weather", ('{"city": "Oslo"}',))], [0, 0])
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    played = steps(driver, chunks)
    [answered] = [r for r in played if r.results]
    assert answered.call_executed and runs == [{"city": "Oslo"}]
    assert [f.code for f in answered.findings] == ["stop_finish_reason"]


def test_a_whole_message_s_response_carries_its_findings() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": NaN}'}},
        ],
    }  # fmt: skip
    runs: list[dict[str, Any]] = []
    response = Driver([weather(runs)]).process_llm_response(message)
    assert response.call_failed and runs == []
    assert [f.code for f in response.findings if f.severity == "error"] == ["non_finite_number"]


def test_an_orchestrator_s_findings_are_kept_once_each() -> None:
    runs: list[dict[str, Any]] = []
    one, two = Driver([weather(runs)], text_formats=()), Driver([weather(runs, "get_time")])
    both = Orchestrator([one, two])
    calls = [
        WireCall("call_1", "get_weather", ('{"city": 1}',)),
        WireCall("call_2", "get_time", ('{"city": "x"}',)),
    ]
    played = steps(both, openai_chunks(calls, [0, 0, 1, 1]))
    [answered] = [r for r in played if r.results]
    assert len(answered.findings) == len(set(answered.findings)) >= 1
    assert ("schema_invalid", 0) in {(f.code, f.slot) for f in answered.findings}
