"""Every transition of the verdict machine: the turn machine first, then the text calls.

``verdict`` is fed each turn state with runs of text calls (ran, refused, in every order
that matters); the last tests play real streams through ``replay`` and ``run_turn``. A
transition sent to another state changes a verdict, or makes the run end in a state that
refuses the next event.
"""

from __future__ import annotations

import pytest

from callgate import Driver, Tool
from callgate.audit.trace import Recorder
from callgate.cli.replay import replay
from callgate.driver.loop import run_turn, verdict
from callgate.fsm import TURN
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall

RAN, REFUSED = False, True


@pytest.mark.parametrize(
    ("text_calls", "expected"),
    [
        ((), "not_applicable"),
        ((RAN,), "pass"),
        ((REFUSED,), "fail"),
        ((RAN, RAN), "pass"),
        ((RAN, REFUSED), "fail"),
        ((REFUSED, RAN), "fail"),
        ((RAN, RAN, REFUSED), "fail"),
        ((RAN, RAN, RAN), "pass"),
    ],
)
@pytest.mark.parametrize("turn", ["streaming", "complete", "not_applicable"])
def test_without_a_native_verdict_the_text_calls_decide(
    turn: str, text_calls: tuple[bool, ...], expected: str
) -> None:
    assert verdict(turn, text_calls) == expected


@pytest.mark.parametrize("text_calls", [(), (RAN,), (REFUSED,), (RAN, REFUSED, RAN)])
def test_native_calls_decide_whatever_the_text_calls_did(text_calls: tuple[bool, ...]) -> None:
    assert verdict("executable", text_calls) == "pass"
    assert verdict("blocked", text_calls) == "fail"


def test_every_turn_state_has_a_verdict_and_the_steps_are_the_tables() -> None:
    steps: list[tuple[str, str, str]] = []
    assert verdict("complete", [RAN, REFUSED], lambda *step: steps.append(step)) == "fail"
    assert steps == [
        ("reading", "turn_open", "by_text"),
        ("by_text", "ran", "text_passing"),
        ("text_passing", "refused", "fail"),
        ("fail", "end", "fail"),
    ]
    assert {verdict(state, ()) for state in TURN.state_names} == {
        "pass",
        "fail",
        "not_applicable",
    }


WEATHER = {"get_weather": {"type": "object", "required": ["city"]}}
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
BAD = '<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>'


@pytest.mark.parametrize(
    ("text", "status"),
    [(["Hello."], "not_applicable"), ([CALL], "pass"), ([CALL, BAD], "fail")],
)
def test_replay_and_run_turn_give_a_text_only_turn_its_verdict(
    text: list[str], status: str
) -> None:
    chunks = openai_chunks([], [], text=text)
    assert replay(chunks, WEATHER, text_formats=["tool_call_tag"])["status"] == status
    driver = Driver(
        [Tool("get_weather", WEATHER["get_weather"], lambda **_: "sunny")],
        text_formats=["tool_call_tag"],
    )
    recorder = Recorder()
    assert run_turn(chunks, driver, driver.new_stream_buffer(recorder=recorder)).status == status
    steps = recorder.of("verdict")
    assert (steps[0].source, steps[-1].event, steps[-1].target) == ("reading", "end", status)


def test_a_native_turn_is_judged_by_its_turn_machine() -> None:
    call = WireCall("call_1", "get_weather", ('{"city": "Paris"}',))
    chunks = openai_chunks([call], [0, 0], text=[CALL])
    assert replay(chunks, WEATHER, text_formats=["tool_call_tag"])["status"] == "pass"
