"""Drivers over streams: ownership, hold/release, fall-through, policies, idempotency.

Each test plays a realistic stream (OpenAI chunks or Anthropic events, built by
``callgate.testing.builders``) through a buffer and one or more drivers, chunk by chunk, and checks
what the user saw after every chunk, which tools ran (with a counter per tool), and what
each driver answered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from callgate import (
    BaseDriver,
    Driver,
    DriverMeta,
    LLMStreamBuffer,
    Orchestrator,
    SupportsNativeTools,
    SupportsStreaming,
    Tool,
    arun_turn,
    run_turn,
    stream_turn,
)
from callgate.driver.responses import DriverResponse
from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.testing.builders import WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk, WireCall

EVERY = DEFAULT_FORMATS
"""Every stream-detected text format: these tests read text calls on any model."""
OBJECT = {"type": "object"}
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


class Counter:
    """Tool functions that count their runs and echo their arguments."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def function(self, name: str) -> Callable[..., str]:
        def run(**arguments: Any) -> str:
            self.runs.append((name, arguments))
            return f"{name} ok {json.dumps(arguments, sort_keys=True)}"

        return run

    def tool(self, name: str, schema: dict[str, Any] | None = None) -> Tool:
        return Tool(name, schema if schema is not None else OBJECT, self.function(name))


def content_chunks(text: str, size: int = 5) -> list[Chunk]:
    """An OpenAI turn whose content is ``text`` cut into ``size``-character deltas."""
    return openai_chunks([], [], text=split(text, [size]))


def leak_events(text: str, size: int = 6) -> list[Chunk]:
    """An Anthropic turn with one text block (``text``) and no tool_use block."""
    block = WireText(split(text, [size]))
    return anthropic_events([block], [0] * (2 + len(block.fragments)))


def play(
    chunks: Sequence[Chunk], drivers: Sequence[Driver], buffer: LLMStreamBuffer
) -> tuple[list[str], list[list[DriverResponse]]]:
    """Per round (each chunk, then the end): the text shown, and every driver's response."""
    shown, responses = [], []
    for position in range(len(chunks) + 1):
        if position < len(chunks):
            buffer.add(chunks[position])
        else:
            buffer.end()
        responses.append([d.process_llm_response(buffer) for d in drivers])
        shown.append(buffer.text())
    return shown, responses


def statuses(responses: list[list[DriverResponse]], driver: int) -> list[str | None]:
    return [round_[driver].status for round_ in responses]


TAG = '<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


def tag(name: str, arguments: dict[str, Any]) -> str:
    return TAG.format(name=name, arguments=json.dumps(arguments))


# -- ownership and hold/release ------------------------------------------------------------


def test_a_text_call_is_held_while_forming_hidden_and_run_once_at_the_turn_end() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather", WEATHER_SCHEMA)], text_formats=EVERY)
    text = "Let me look. " + tag("get_weather", {"city": "Oslo"}) + " Back soon."
    shown, responses = play(content_chunks(text), [driver], driver.new_stream_buffer())
    assert "".join(shown) == "Let me look.  Back soon."
    assert not any("<" in piece or "{" in piece for piece in shown)
    assert counter.runs == [("get_weather", {"city": "Oslo"})]
    status = statuses(responses, 0)
    assert status[-2:] == ["call_executed", None], "run at the finish chunk, the stream's end"
    assert "call_pending" in status and "call_executed" not in status[:-2]
    assert responses[-2][0].answers == (
        {"role": "user", "content": '[result of get_weather] get_weather ok {"city": "Oslo"}'},
    )
    assert responses[-2][0].messages == (
        {"role": "assistant", "content": "Let me look. " + tag("get_weather", {"city": "Oslo"})
         + " Back soon."},
        *responses[-2][0].answers,
    ), "the history it adds starts with the assistant message the answer follows"  # fmt: skip


def test_a_text_call_naming_a_tool_nobody_owns_flows_as_text_unchanged() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    text = "Sure: " + tag("send_email", {"to": "x@example.com"}) + " done."
    shown, responses = play(content_chunks(text, 3), [driver], driver.new_stream_buffer())
    assert "".join(shown) == text
    assert counter.runs == []
    assert set(statuses(responses, 0)) <= {None, "call_pending"}
    release = next(i for i, piece in enumerate(shown) if "<tool_call>" in piece)
    assert release < len(text) // 3 - 2, "released once the name was known, before the close"


def test_fan_out_every_driver_goes_pending_and_only_the_owner_runs() -> None:
    counter = Counter()
    weather = Driver([counter.tool("get_weather")], text_formats=EVERY)
    mail = Driver([counter.tool("send_email")], text_formats=EVERY)
    buffer = Orchestrator([weather, mail]).new_stream_buffer()
    text = "A " + tag("send_email", {"to": "a@b.c"}) + " B " + tag("get_weather", {"city": "Rome"})
    shown, responses = play(content_chunks(text, 4), [weather, mail], buffer)
    assert "".join(shown) == "A  B "
    assert sorted(counter.runs) == [
        ("get_weather", {"city": "Rome"}),
        ("send_email", {"to": "a@b.c"}),
    ]
    for index in (0, 1):
        status = statuses(responses, index)
        assert "call_failed" not in status
        assert status[-2:] == ["call_executed", None]
    first_pending = [statuses(responses, i).index("call_pending") for i in (0, 1)]
    assert first_pending[0] == first_pending[1], "both drivers hold from the same chunk"


def test_an_orchestrator_answers_like_its_drivers_side_by_side() -> None:
    text = "x " + tag("a", {"n": 1}) + tag("b", {"n": 2}) + " y"
    counter_one, counter_two = Counter(), Counter()
    side = [
        Driver([counter_one.tool("a")], text_formats=EVERY),
        Driver([counter_one.tool("b")], text_formats=EVERY),
    ]
    buffer_one = Orchestrator(side).new_stream_buffer()
    shown_one, _ = play(content_chunks(text), side, buffer_one)
    orchestrator = Orchestrator(
        [
            Driver([counter_two.tool("a")], text_formats=EVERY),
            Driver([counter_two.tool("b")], text_formats=EVERY),
        ]
    )
    turn = run_turn(content_chunks(text), orchestrator, orchestrator.new_stream_buffer())
    assert turn.text == "".join(shown_one) == "x  y"
    assert counter_one.runs == counter_two.runs == [("a", {"n": 1}), ("b", {"n": 2})]
    assert [r.call.name for r in turn.results] == ["a", "b"]


def test_a_native_call_nobody_owns_blocks_the_turn_but_is_no_drivers_failure() -> None:
    counter = Counter()
    weather, idle = (
        Driver([counter.tool("get_weather")], text_formats=EVERY),
        Driver([counter.tool("get_time")], text_formats=EVERY),
    )
    calls = [
        WireCall("call_1", "get_weather", ('{"city": "Pa', 'ris"}')),
        WireCall("call_2", "nuke", ("{}",)),
    ]
    chunks = openai_chunks(calls, [0, 0, 0, 1, 1], text=("Checking.",))
    buffer = Orchestrator([weather, idle]).new_stream_buffer()
    shown, responses = play(chunks, [weather, idle], buffer)
    assert "".join(shown) == "Checking."
    assert counter.runs == []
    assert buffer.turn_state == "blocked"
    assert statuses(responses, 1) == [None] * len(responses)
    [final] = [r[0] for r in responses if r[0].results]
    assert final.status == "call_failed"
    [result] = final.results
    assert result.is_error and result.call.id == "call_1"
    assert "blocked with its turn: the call in slot 1 names an unknown tool" in result.content
    assert "unknown_tool" in result.content
    assert final.answers == ({"role": "tool", "tool_call_id": "call_1", "content": result.content},)
    assistant, *answers = final.messages
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert [a["tool_call_id"] for a in answers] == ["call_1", "call_2"]


# -- the native->text fall-through ----------------------------------------------------------


LEAK = "Calling it now. " + tag("get_weather", {"city": "Lima"}) + " Done."


def test_fall_through_on_runs_a_call_leaked_into_anthropic_text() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    shown, responses = play(leak_events(LEAK), [driver], driver.new_stream_buffer())
    assert "".join(shown) == "Calling it now.  Done."
    assert counter.runs == [("get_weather", {"city": "Lima"})]
    assert responses[-2][0].answers == (
        {"role": "user", "content": '[result of get_weather] get_weather ok {"city": "Lima"}'},
    ), "a leaked call is answered in a text-style continuation"


def test_fall_through_off_lets_the_leak_flow_as_text_and_nothing_runs() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    driver.set_native_backup_strategy(None)
    assert driver.get_native_backup_strategy() is None
    shown, responses = play(leak_events(LEAK), [driver], driver.new_stream_buffer())
    assert "".join(shown) == LEAK
    assert counter.runs == []
    assert all(r[0].status in (None, "call_pending") for r in responses)


def test_openai_needs_no_fall_through_the_chain_reads_its_text() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    driver.set_native_backup_strategy(None)
    shown, _ = play(content_chunks(LEAK), [driver], driver.new_stream_buffer())
    assert "".join(shown) == "Calling it now.  Done."
    assert counter.runs == [("get_weather", {"city": "Lima"})]


def test_whole_messages_use_the_same_rules() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    anthropic_message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": LEAK}],
        "stop_reason": "end_turn",
    }
    response = driver.process_llm_response(anthropic_message)
    assert response.status == "call_executed"
    assert counter.runs == [("get_weather", {"city": "Lima"})]
    driver.set_native_backup_strategy(None)
    assert driver.process_llm_response(anthropic_message) == DriverResponse()
    assert driver.process_llm_response(LEAK).status == "call_executed"
    assert driver.process_llm_response("plain prose") == DriverResponse()
    assert (
        Driver([counter.tool("other")], text_formats=EVERY).process_llm_response(LEAK)
        == DriverResponse()
    )


# -- policies ------------------------------------------------------------------------------


def native_anthropic() -> list[Chunk]:
    calls = [
        WireCall("toolu_1", "get_weather", ('{"city"', ': "Oslo"}')),
        WireCall("toolu_2", "get_time", ('{"tz": ', '"UTC"}')),
    ]
    blocks = [WireText(("Let me check.",)), *calls]
    # text block; call 1 whole; call 2 whole: stops at positions known below
    return anthropic_events(blocks, [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])


def run_rounds(policy: str) -> tuple[Counter, dict[str, int], list[list[DriverResponse]]]:
    counter = Counter()
    driver = Driver(
        [counter.tool("get_weather"), counter.tool("get_time")], policy=policy, text_formats=EVERY
    )
    chunks = native_anthropic()
    _, responses = play(chunks, [driver], driver.new_stream_buffer())
    ran_at = {r.call.name: i for i, round_ in enumerate(responses) for r in round_[0].results}
    return counter, ran_at, responses


def event_index(kind: str, index: int | None = None) -> int:
    events = native_anthropic()
    return next(
        i
        for i, e in enumerate(events)
        if e["type"] == kind and (index is None or e.get("index") == index)
    )


def test_turn_policy_runs_every_call_together_after_the_turn_terminal() -> None:
    counter, ran_at, _ = run_rounds("turn")
    stop = event_index("message_stop")
    assert ran_at == {"get_weather": stop, "get_time": stop}
    assert [name for name, _ in counter.runs] == ["get_weather", "get_time"]


def test_call_policy_runs_each_call_at_its_own_stop() -> None:
    _, ran_at, responses = run_rounds("call")
    assert ran_at == {
        "get_weather": event_index("content_block_stop", 1),
        "get_time": event_index("content_block_stop", 2),
    }
    assert responses[ran_at["get_weather"]][0].status == "call_executed"
    assert responses[ran_at["get_weather"] + 1][0].status == "call_pending"


def test_parseable_policy_runs_a_call_as_soon_as_its_arguments_parse() -> None:
    _, ran_at, _ = run_rounds("parseable")
    assert ran_at == {
        "get_weather": event_index("content_block_stop", 1) - 1,
        "get_time": event_index("content_block_stop", 2) - 1,
    }


def test_policies_for_text_calls_turn_waits_for_the_end_call_runs_at_the_close() -> None:
    text = "a " + tag("t", {"k": 1}) + " b c d e f g h"
    chunks = content_chunks(text, 4)
    closed = next(i for i in range(len(chunks)) if "</tool_call>" in text[: 4 * (i + 1) - 4])
    ran = {}
    for policy in ("turn", "call", "parseable"):
        driver = Driver([Counter().tool("t")], policy=policy, text_formats=EVERY)
        _, responses = play(chunks, [driver], driver.new_stream_buffer())
        ran[policy] = [i for i, r in enumerate(responses) if r[0].results]
    assert ran["turn"] == [len(chunks) - 1], "text calls wait for the finish (bare JSON too)"
    assert ran["call"] == ran["parseable"] == [closed]


# -- refusals ------------------------------------------------------------------------------


def test_a_malformed_native_call_blocks_the_turn_and_both_get_corrective_results() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather"), counter.tool("get_time")], text_formats=EVERY)
    calls = [
        WireCall("call_1", "get_weather", ('{"city": "Oslo"}',)),
        WireCall("call_2", "get_time", ('{"tz" "UTC"}',)),
    ]
    turn = run_turn(openai_chunks(calls, [0, 0, 1, 1]), driver, driver.new_stream_buffer())
    assert counter.runs == []
    assert turn.status == "fail"
    first, second = turn.results
    assert first.is_error
    assert "blocked with its turn: the call in slot 1 has arguments that are not valid JSON" in (
        first.content
    )
    assert second.is_error and "malformed_json" in second.content
    assert "valid JSON object" in second.content
    assert [m["tool_call_id"] for m in turn.history[1:]] == ["call_1", "call_2"]


def test_a_text_call_that_fails_its_schema_is_refused_not_run() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather", WEATHER_SCHEMA)], text_formats=EVERY)
    text = tag("get_weather", {"town": "Oslo"})
    turn = run_turn(content_chunks(text), driver, driver.new_stream_buffer())
    assert counter.runs == []
    [result] = turn.results
    assert result.is_error and "schema_invalid" in result.content
    assert turn.text == ""


def test_a_tool_that_raises_is_answered_with_its_error() -> None:
    def broken(**_: Any) -> str:
        raise RuntimeError("disk full")

    driver = Driver([Tool("save", OBJECT, broken)], text_formats=EVERY)
    turn = run_turn(content_chunks(tag("save", {})), driver, driver.new_stream_buffer())
    [result] = turn.results
    assert result.is_error and result.content == "RuntimeError: disk full"


# -- idempotency ---------------------------------------------------------------------------


def test_a_call_id_runs_once_per_conversation_however_often_it_comes_back() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    buffer = driver.new_stream_buffer()
    call = WireCall("call_same", "get_weather", ('{"city": ', '"Oslo"}'))
    first = run_turn(openai_chunks([call], [0, 0, 0]), driver, buffer)
    second = run_turn(openai_chunks([call], [0, 0, 0]), driver, buffer)
    assert counter.runs == [("get_weather", {"city": "Oslo"})]
    assert first.results == second.results
    assert "call_same" in buffer.ledger


def test_a_new_id_with_the_same_arguments_runs_again() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    buffer = driver.new_stream_buffer()
    for call_id in ("call_a", "call_b"):
        call = WireCall(call_id, "get_weather", ('{"city": "Oslo"}',))
        run_turn(openai_chunks([call], [0, 0]), driver, buffer)
    assert len(counter.runs) == 2


def test_a_repeated_call_within_one_stream_runs_once() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather")], text_formats=EVERY)
    call = WireCall("call_dup", "get_weather", ('{"city": "Oslo"}',))
    chunks = openai_chunks([call], [0, 0])
    repeat = [c for c in chunks if c["choices"][0]["delta"].get("tool_calls")]
    turn = run_turn([*chunks[:-1], *repeat, chunks[-1]], driver, driver.new_stream_buffer())
    assert counter.runs == [("get_weather", {"city": "Oslo"})]
    assert len(turn.results) == 1


# -- capabilities, async, bad input --------------------------------------------------------


def test_capabilities_resolve_on_drivers_that_have_them() -> None:
    driver = Driver(text_formats=EVERY)
    assert DriverMeta.resolve_capability(driver, SupportsStreaming) is driver
    assert DriverMeta.resolve_capability(driver, SupportsNativeTools) is driver
    plain = BaseDriver()
    assert DriverMeta.resolve_capability(plain, SupportsStreaming) is None
    streamer = DriverMeta.resolve_capability(driver, SupportsStreaming)
    assert streamer is not None
    names = [s.name for s in streamer.extraction_strategies]
    assert names.index("openai") < names.index("tool_call_tag")
    assert isinstance(streamer.new_stream_buffer(), LLMStreamBuffer)


def test_the_async_loop_gives_the_same_turn_as_the_sync_one() -> None:
    text = "Hi. " + tag("get_weather", {"city": "Quito"}) + " Bye."

    async def chunks() -> AsyncIterator[Chunk]:
        for chunk in content_chunks(text):
            await asyncio.sleep(0)
            yield chunk

    sync_counter, async_counter = Counter(), Counter()
    sync_driver = Driver([sync_counter.tool("get_weather")], text_formats=EVERY)
    async_driver = Driver([async_counter.tool("get_weather")], text_formats=EVERY)
    expected = run_turn(content_chunks(text), sync_driver, sync_driver.new_stream_buffer())
    got = asyncio.run(arun_turn(chunks(), async_driver, async_driver.new_stream_buffer()))
    assert got == expected
    assert sync_counter.runs == async_counter.runs == [("get_weather", {"city": "Quito"})]


def test_two_tools_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        Driver([Tool("a"), Tool("a")], text_formats=EVERY)


@pytest.mark.parametrize("name", ["", None, 7])
def test_a_tool_needs_a_non_empty_name(name: object) -> None:
    with pytest.raises(ValueError, match="a tool's name must be a non-empty string"):
        Tool(name)  # type: ignore[arg-type]


def test_an_unknown_text_format_is_refused() -> None:
    with pytest.raises(ValueError, match="nope"):
        Driver([Tool("a")], text_formats=["nope"]).new_stream_buffer()


def test_after_the_end_a_driver_answers_nothing_more() -> None:
    counter = Counter()
    driver = Driver([counter.tool("t")], text_formats=EVERY)
    buffer = driver.new_stream_buffer()
    steps = list(stream_turn(content_chunks(tag("t", {})), driver, buffer))
    assert [s.response.status for s in steps[-2:]] == ["call_executed", None]
    assert driver.process_llm_response(buffer) == DriverResponse()
    assert counter.runs == [("t", {})]


def test_a_whole_message_with_a_malformed_call_gets_a_corrective_result_in_call_order() -> None:
    counter = Counter()
    driver = Driver([counter.tool("get_weather"), counter.tool("get_time")], text_formats=EVERY)
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{"}},
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            },
            {"id": "c3", "type": "function", "function": {"name": "other", "arguments": "nope"}},
        ],
    }
    response = driver.process_llm_response(message)
    assert response.status == "call_failed"
    assert counter.runs == [], "a turn runs all of its calls or none, as its stream does"
    assert [(r.call.id, r.refused) for r in response.results] == [("c1", True), ("c2", True)]
    assert "malformed_json" in response.results[0].content
    assert "blocked with its turn: the call in slot 0 has arguments" in response.results[1].content
    assert [m["tool_call_id"] for m in response.answers] == ["c1", "c2"]
    assert [m.get("tool_call_id") for m in response.messages] == [None, "c1", "c2", "c3"]


def test_a_whole_responses_message_with_unreadable_arguments_is_refused() -> None:
    driver = Driver([Counter().tool("get_weather")], text_formats=EVERY)
    message = {
        "object": "response",
        "output": [
            {"type": "function_call", "call_id": "call_9", "name": "get_weather",
             "arguments": '{"city": NaN}'},
        ],
    }  # fmt: skip
    response = driver.process_llm_response(message)
    [result] = response.results
    assert result.refused and "non_finite_number" in result.content
    assert response.answers == (
        {"type": "function_call_output", "call_id": "call_9", "output": result.content},
    )


def test_a_message_no_strategy_recognises_is_no_call() -> None:
    driver = Driver([Counter().tool("get_weather")], text_formats=EVERY)
    assert driver.process_llm_response({"unexpected": True}) == DriverResponse()


def test_several_drivers_answer_in_call_order_in_one_provider_message() -> None:
    counter = Counter()
    weather, clock = (
        Driver([counter.tool("get_weather")], text_formats=EVERY),
        Driver([counter.tool("get_time")], text_formats=EVERY),
    )
    calls = [
        WireCall("toolu_1", "get_time", ('{"tz": "UTC"}',)),
        WireCall("toolu_2", "get_weather", ('{"city": "Oslo"}',)),
    ]
    events = anthropic_events(calls, [0, 0, 0, 1, 1, 1])
    orchestrator = Orchestrator([weather, clock])
    turn = run_turn(events, orchestrator, orchestrator.new_stream_buffer())
    assert [r.call.id for r in turn.results] == ["toolu_1", "toolu_2"]
    [assistant, results] = turn.history
    assert assistant["role"] == "assistant"
    assert results["role"] == "user"
    assert [b["tool_use_id"] for b in results["content"]] == ["toolu_1", "toolu_2"]
    side_by_side = run_turn(events, [weather, clock], orchestrator.new_stream_buffer())
    assert side_by_side.history[1:] == turn.history[1:], "a list of drivers merges the same"


def test_an_unknown_policy_is_refused_when_the_driver_is_made() -> None:
    with pytest.raises(ValueError, match="unknown policy 'soon'; choose one of turn, call"):
        Driver([Tool("a")], policy="soon", text_formats=EVERY)


def test_an_orchestrator_refuses_two_drivers_with_the_same_tool() -> None:
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        Orchestrator(
            [Driver([Tool("a")], text_formats=EVERY), Driver([Tool("a")], text_formats=EVERY)]
        )
