"""The display's rules beside its table: which observation wins, which status is strongest,
and that a call which ran and raised failed. The driver reads them from there."""

from __future__ import annotations

from callgate import Driver, Tool
from callgate.driver.responses import DriverResponse, merge
from callgate.fsm.display import DISPLAY, HOLDS, OBSERVATIONS, ON_ERROR, STATUS, STATUS_RANK

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_every_observation_is_an_event_of_the_table_that_holds_or_releases() -> None:
    events = {e.name for e in DISPLAY.events}
    assert set(OBSERVATIONS) <= events
    for observation in OBSERVATIONS:
        (target,) = [
            t.target
            for t in DISPLAY.transitions
            if t.source == "flowing" and t.event == observation
        ]
        assert target in HOLDS or target == "released", observation


def test_the_ranking_covers_exactly_the_statuses_the_table_carries() -> None:
    assert set(STATUS_RANK) == {None, *STATUS.values()}
    assert sorted(STATUS_RANK, key=STATUS_RANK.__getitem__) == [
        None,
        "call_pending",
        "call_executed",
        "call_failed",
    ]
    assert set(ON_ERROR) <= set(STATUS_RANK) and set(ON_ERROR.values()) <= set(STATUS_RANK)


def test_merged_steps_say_the_strongest_status() -> None:
    for weak, strong in [(None, "call_pending"), ("call_pending", "call_executed")]:
        merged = merge([DriverResponse(weak), DriverResponse(strong), DriverResponse(weak)])
        assert merged.status == strong
    assert merge([DriverResponse("call_failed"), DriverResponse("call_executed")]).status == (
        "call_failed"
    )


def test_a_call_that_ran_and_raised_failed() -> None:
    def boom(q: str) -> str:
        raise RuntimeError("down")

    driver = Driver([Tool("lookup", SCHEMA, boom)])
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": "x"}'},
            }
        ],
    }
    response = driver.process_llm_response(message)
    assert response.status == ON_ERROR["call_executed"] == "call_failed"
    assert [r.is_error for r in response.results] == [True]
