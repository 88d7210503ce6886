"""One driver's view of a stream, step by step: the status it reports, what runs, its answers.

Each test plays a stream chunk by chunk through a driver (or two) and reads, after every
chunk and after the end, the driver's status (``call_pending`` while it holds,
``call_executed`` or ``call_failed`` in the step its calls were answered, None while prose
flows), the tools that ran and the answers each step carries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Orchestrator, Tool
from callgate.driver.responses import DriverResponse
from callgate.gate.limits import Limits
from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.testing.builders import openai_chunks, split
from callgate.testing.wires import Chunk, WireCall

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
TIME = {
    "type": "object",
    "properties": {"tz": {"type": "string"}},
    "required": ["tz"],
    "additionalProperties": False,
}


class Runs:
    """Tool functions that record each run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str, schema: dict[str, Any]) -> Tool:
        def run(**arguments: Any) -> str:
            self.runs.append((name, arguments))
            return f"{name} ran"

        return Tool(name, schema, run)


def tag(name: str, arguments: dict[str, Any]) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(arguments)}}}</tool_call>'


def text_chunks(text: str, size: int = 6) -> list[Chunk]:
    return openai_chunks([], [], text=split(text, [size]))


def play(
    chunks: Sequence[Chunk], drivers: Sequence[Driver]
) -> tuple[list[list[DriverResponse]], list[str]]:
    """Each driver's response after every chunk and after the end, and the text shown."""
    buffer = (drivers[0] if len(drivers) == 1 else Orchestrator(list(drivers))).new_stream_buffer()
    steps, shown = [], []
    for chunk in [*chunks, None]:
        if chunk is None:
            buffer.end()
        else:
            buffer.add(chunk)
        steps.append([d.process_llm_response(buffer) for d in drivers])
        shown.append(buffer.text())
    return steps, shown


def statuses(steps: list[list[DriverResponse]], driver: int = 0) -> list[str | None]:
    return [step[driver].status for step in steps]


def runs_of(statuses: list[str | None]) -> list[tuple[str | None, int]]:
    """The statuses with repeats folded: (status, how many steps in a row)."""
    folded: list[tuple[str | None, int]] = []
    for status in statuses:
        if folded and folded[-1][0] == status:
            folded[-1] = (status, folded[-1][1] + 1)
        else:
            folded.append((status, 1))
    return folded


def weather_driver(runs: Runs, policy: str = "turn") -> Driver:
    return Driver([runs.tool("get_weather", WEATHER)], policy=policy, text_formats=DEFAULT_FORMATS)


# -- policy call: a text call runs when its block closes, then prose flows again -------------------


def test_under_policy_call_the_view_flows_again_once_a_text_call_ran() -> None:
    runs = Runs()
    text = "Before. " + tag("get_weather", {"city": "Oslo"}) + " After that, more text here."
    steps, shown = play(text_chunks(text), [weather_driver(runs, "call")])
    assert [s for s, _ in runs_of(statuses(steps))] == [
        None,
        "call_pending",
        "call_executed",
        None,
    ]
    assert statuses(steps)[-1] is None
    assert runs.runs == [("get_weather", {"city": "Oslo"})]
    answered = [n for n, step in enumerate(steps) if step[0].results]
    assert len(answered) == 1 and steps[answered[0]][0].status == "call_executed"
    assert "".join(shown) == "Before.  After that, more text here."


def test_under_policy_call_each_text_call_runs_in_its_own_step() -> None:
    runs = Runs()
    text = (
        "One: "
        + tag("get_weather", {"city": "Oslo"})
        + " and then some prose between the calls, two: "
        + tag("get_weather", {"city": "Lima"})
        + " done now."
    )
    steps, _ = play(text_chunks(text), [weather_driver(runs, "call")])
    assert [s for s, _ in runs_of(statuses(steps))] == [
        None,
        "call_pending",
        "call_executed",
        None,
        "call_pending",
        "call_executed",
        None,
    ]
    assert runs.runs == [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Lima"})]
    assert [len(step[0].results) for step in steps if step[0].results] == [1, 1]


def test_two_drivers_under_policy_call_run_a_text_call_when_its_block_closes() -> None:
    """An orchestrator of drivers that all say ``call`` releases under ``call`` too."""
    runs = Runs()
    text = "Before. " + tag("get_weather", {"city": "Oslo"}) + " After that, more text here."
    chunks = text_chunks(text)
    other = Driver(
        [runs.tool("get_time", {"type": "object"})], policy="call", text_formats=DEFAULT_FORMATS
    )
    steps, _ = play(chunks, [weather_driver(runs, "call"), other])
    seen = statuses(steps)
    assert seen.index("call_executed") < len(chunks) - 1, "run at its block's close"
    assert runs.runs == [("get_weather", {"city": "Oslo"})]


def test_an_orchestrator_takes_the_policy_its_drivers_share_or_asks_for_one() -> None:
    runs = Runs()
    calls = [weather_driver(runs, "call"), Driver([runs.tool("t", {})], policy="call")]
    assert Orchestrator(calls).new_stream_buffer().policy == "call"
    assert Orchestrator([]).new_stream_buffer().policy == "turn"
    assert Orchestrator(calls, policy="turn").new_stream_buffer().policy == "turn"
    mixed = [weather_driver(runs, "call"), Driver([runs.tool("t", {})])]
    with pytest.raises(ValueError, match=r"policies differ \(call, turn\).*policy=\.\.\."):
        Orchestrator(mixed)
    assert Orchestrator(mixed, policy="call").policy == "call"


def test_under_policy_turn_a_text_call_waits_for_the_end() -> None:
    runs = Runs()
    text = "Before. " + tag("get_weather", {"city": "Oslo"}) + " After that, more text here."
    chunks = text_chunks(text)
    steps, _ = play(chunks, [weather_driver(runs)])
    seen = statuses(steps)
    assert [s for s, _ in runs_of(seen)] == [None, "call_pending", "call_executed", None]
    # the stream's own end (its finish chunk) settles the turn: the call runs there, once
    assert seen.index("call_executed") == len(chunks) - 1
    assert runs.runs == [("get_weather", {"city": "Oslo"})]
    assert steps[len(chunks) - 1][0].answers == (
        {"role": "user", "content": "[result of get_weather] get_weather ran"},
    )


# -- calls that do not run -------------------------------------------------------------------


def test_a_text_call_that_breaks_its_schema_is_answered_with_the_error_and_never_runs() -> None:
    runs = Runs()
    text = "Sure. " + tag("get_weather", {"town": "Oslo"}) + " Bye."
    steps, _ = play(text_chunks(text), [weather_driver(runs, "call")])
    assert runs.runs == []
    failed = [step[0] for step in steps if step[0].status == "call_failed"]
    assert len(failed) == 1
    [result] = failed[0].results
    assert result.is_error and result.refused
    assert "city" in result.content
    assert result.call.arguments == {"town": "Oslo"}, "a refused text call carries what it said"
    assert statuses(steps)[-1] is None


def test_a_text_call_of_another_drivers_tool_is_that_drivers_and_flows_past_this_one() -> None:
    runs = Runs()
    weather = weather_driver(runs, "call")
    clock = Driver([runs.tool("get_time", TIME)], policy="call", text_formats=DEFAULT_FORMATS)
    text = "Now: " + tag("get_time", {"tz": "UTC"}) + " then the rest of it."
    steps, _ = play(text_chunks(text), [weather, clock])
    assert runs.runs == [("get_time", {"tz": "UTC"})]
    assert "call_executed" in statuses(steps, 1)
    assert set(statuses(steps, 0)) <= {None, "call_pending"}
    assert all(not step[0].results for step in steps)


def test_native_calls_of_two_drivers_are_each_answered_by_their_owner_once() -> None:
    runs = Runs()
    weather = weather_driver(runs)
    clock = Driver([runs.tool("get_time", TIME)], text_formats=DEFAULT_FORMATS)
    calls = [
        WireCall("call_1", "get_weather", ('{"city": "Pa', 'ris"}')),
        WireCall("call_2", "get_time", ('{"tz": "UTC"}',)),
    ]
    steps, _ = play(openai_chunks(calls, [0, 1, 0, 1, 0]), [weather, clock])
    assert sorted(runs.runs) == [("get_time", {"tz": "UTC"}), ("get_weather", {"city": "Paris"})]
    assert "call_executed" in statuses(steps, 0) and "call_executed" in statuses(steps, 1)
    assert [r.call.id for step in steps for r in step[0].results] == ["call_1"]
    assert [r.call.id for step in steps for r in step[1].results] == ["call_2"]
    [native] = [step[0].answers for step in steps if step[0].results]
    assert native == ({"role": "tool", "tool_call_id": "call_1", "content": "get_weather ran"},), (
        native
    )


def test_a_blocked_native_turn_answers_every_call_and_runs_none() -> None:
    runs = Runs()
    driver = Driver(
        [runs.tool("get_weather", WEATHER), runs.tool("get_time", TIME)],
        text_formats=DEFAULT_FORMATS,
    )
    calls = [
        WireCall("call_1", "get_weather", ('{"city": "Paris"}',)),
        WireCall("call_2", "get_time", ('{"tz": 5}',)),
    ]
    steps, _ = play(openai_chunks(calls, [0, 1, 0, 1]), [driver])
    assert runs.runs == []
    assert [s for s, _ in runs_of(statuses(steps))] == [None, "call_pending", "call_failed", None]
    results = {r.call.id: r for step in steps for r in step[0].results}
    assert set(results) == {"call_1", "call_2"}
    assert all(r.refused for r in results.values())
    assert [(r.call.name, r.content.split(" was ")[0]) for r in results.values()] == [
        ("get_weather", "The call to get_weather"),
        ("get_time", "The call to get_time"),
    ]
    assert "tz" in results["call_2"].content
    assert "tz" in results["call_1"].content, "the sibling is told which call blocked it"


def test_a_text_call_beside_native_calls_is_answered_not_run() -> None:
    runs = Runs()
    driver = weather_driver(runs)
    calls = [WireCall("call_1", "get_weather", ('{"city": "Paris"}',))]
    text = split("First " + tag("get_weather", {"city": "Oslo"}) + " then", [7])
    steps, _ = play(openai_chunks(calls, [0, 0], text=text), [driver])
    assert runs.runs == [("get_weather", {"city": "Paris"})]
    results = [r for step in steps for r in step[0].results]
    assert len(results) == 2
    [aside] = [r for r in results if r.call.id != "call_1"]
    assert aside.call.arguments == {"city": "Oslo"}
    assert aside.call.slot == "text-0.0"
    assert aside.call.name == "get_weather"
    assert aside.refused and "not run" in aside.content


@pytest.mark.parametrize("policy", ["turn", "call", "parseable"])
def test_after_the_end_a_driver_answers_nothing_more(policy: str) -> None:
    runs = Runs()
    driver = weather_driver(runs, policy)
    buffer: LLMStreamBuffer = driver.new_stream_buffer()
    for chunk in text_chunks("Hi. " + tag("get_weather", {"city": "Oslo"})):
        buffer.add(chunk)
        driver.process_llm_response(buffer)
    buffer.end()
    last = driver.process_llm_response(buffer)
    again = driver.process_llm_response(buffer)
    assert runs.runs == [("get_weather", {"city": "Oslo"})]
    assert again.status is None and again.results == () and again.answers == ()
    assert last.status in (None, "call_executed")


def test_a_driver_asked_before_any_chunk_and_after_an_empty_stream_answers_nothing() -> None:
    runs = Runs()
    driver = weather_driver(runs)
    buffer = driver.new_stream_buffer()
    before = driver.process_llm_response(buffer)
    buffer.end()
    after = driver.process_llm_response(buffer)
    for response in (before, after):
        assert (response.status, response.results, response.answers) == (None, (), ())
    assert runs.runs == []


def test_each_text_call_set_aside_is_told_its_own_reason() -> None:
    runs = Runs()
    driver = weather_driver(runs)
    calls = [WireCall("call_1", "get_weather", ('{"city": "Paris"}',))]
    text = (
        "A " + tag("get_weather", {"city": "Oslo"}) + " B " + tag("get_weather", {"city": "Lima"})
    )
    steps, _ = play(openai_chunks(calls, [0, 0], text=split(text, [7])), [driver])
    aside = [r for step in steps for r in step[0].results if r.call.id != "call_1"]
    assert [r.call.slot for r in aside] == ["text-0.0", "text-1.0"]
    for result in aside:
        assert f"text call {result.call.slot} (get_weather) sits beside native" in result.content
        assert "(text_call_set_aside)" in result.content


def test_another_drivers_text_call_stops_holding_this_driver_once_its_name_is_read() -> None:
    runs = Runs()
    weather = weather_driver(runs, "call")
    clock = Driver([runs.tool("get_time", TIME)], policy="call", text_formats=DEFAULT_FORMATS)
    text = "Now: " + tag("get_time", {"tz": "UTC"}) + " then the rest of it."
    chunks = text_chunks(text, 4)
    steps, _ = play(chunks, [weather, clock])
    received = ""
    named = None
    for n, chunk in enumerate(chunks):
        received += chunk["choices"][0]["delta"].get("content") or ""
        if named is None and '"get_time",' in received:
            named = n
    assert named is not None
    seen = statuses(steps, 0)
    assert "call_pending" in seen[:named], "held while the block's tool was not known"
    assert set(seen[named:]) == {None}, "the name is another driver's: nothing more is held"
    assert runs.runs == [("get_time", {"tz": "UTC"})]


def test_a_native_call_whose_name_comes_after_its_id_holds_the_display_until_then() -> None:
    runs = Runs()
    driver = weather_driver(runs)
    buffer = driver.new_stream_buffer()
    opening = {"index": 0, "id": "call_1", "type": "function", "function": {"arguments": ""}}
    naming = {"index": 0, "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    chunks: list[Chunk] = [
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [opening]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [naming]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    seen = []
    for chunk in chunks:
        buffer.add(chunk)
        seen.append(driver.process_llm_response(buffer).status)
    assert seen == ["call_pending", "call_pending", "call_executed"]
    assert runs.runs == [("get_weather", {"city": "Oslo"})]


def test_each_blocked_native_call_is_answered_with_its_own_error() -> None:
    runs = Runs()
    driver = Driver(
        [runs.tool("get_weather", WEATHER), runs.tool("get_time", TIME)],
        text_formats=DEFAULT_FORMATS,
    )
    calls = [
        WireCall("call_1", "get_weather", ('{"city": 5}',)),
        WireCall("call_2", "get_time", ('{"tz": 5}',)),
    ]
    steps, _ = play(openai_chunks(calls, [0, 1, 0, 1]), [driver])
    results = {r.call.id: r for step in steps for r in step[0].results}
    assert runs.runs == []
    assert "at $.city" in results["call_1"].content and "$.tz" not in results["call_1"].content
    assert "at $.tz" in results["call_2"].content and "$.city" not in results["call_2"].content


def test_a_buffer_made_without_the_drivers_tools_still_has_its_calls_checked() -> None:
    runs = Runs()
    driver = weather_driver(runs)
    buffer = LLMStreamBuffer(text_formats=DEFAULT_FORMATS)
    calls = [WireCall("call_1", "get_weather", ('{"town": "Oslo"}',))]
    answered = []
    for chunk in openai_chunks(calls, [0, 0]):
        buffer.add(chunk)
        answered += driver.process_llm_response(buffer).results
    assert runs.runs == []
    [result] = answered
    assert result.refused and "fail the schema" in result.content and "city" in result.content


def test_a_text_call_set_aside_is_told_so_even_when_its_arguments_are_also_wrong() -> None:
    runs = Runs()
    calls = [WireCall("call_1", "get_weather", ('{"city": "Paris"}',))]
    text = "A " + tag("get_weather", {"town": "Oslo"}) + " B"
    steps, _ = play(openai_chunks(calls, [0, 0], text=split(text, [7])), [weather_driver(runs)])
    [aside] = [r for step in steps for r in step[0].results if r.call.id != "call_1"]
    assert "sits beside native tool calls" in aside.content
    assert "(text_call_set_aside)" in aside.content and "schema" not in aside.content


def test_a_text_call_whose_set_aside_warning_the_findings_limit_dropped_is_still_told() -> None:
    runs = Runs()
    driver = Driver(
        [runs.tool("get_weather", WEATHER)],
        text_formats=DEFAULT_FORMATS,
        limits=Limits(max_findings=1),
    )
    calls = [WireCall("call_1", "get_weather", ('{"city": "Paris"}',))]
    text = (
        "A " + tag("get_weather", {"city": "Oslo"}) + " B " + tag("get_weather", {"city": "Lima"})
    )
    steps, _ = play(openai_chunks(calls, [0, 0], text=split(text, [7])), [driver])
    assert runs.runs == []
    answers = {r.call.slot: r for step in steps for r in step[0].results}
    assert "sits beside native tool calls" in answers["text-0.0"].content
    assert answers["text-1.0"].content == (
        "The call to get_weather was not run: text call text-1.0 was not run "
        "(text_call_set_aside). Make every call of a turn a native tool call."
    )
