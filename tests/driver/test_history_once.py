"""The loop builds the next request's history once per turn: its rounds carry answers only.

:func:`run_turn` keeps no step, so no answering round builds the history a step would show;
the turn builds it once, at its end, and it is the history :func:`stream_turn` and
:func:`finish_turn` give for the same stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import callgate.driver.drivers
import callgate.driver.history
import callgate.driver.loop
from callgate import Driver, Orchestrator, Tool, arun_turn, finish_turn, run_turn, stream_turn
from callgate.testing.builders import openai_chunks

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
CALL = '<tool_call>{"name": "%s", "arguments": {"q": "%s"}}</tool_call>'


def chunks() -> list[dict[str, Any]]:
    text = "".join(f"Looking {n}. " + CALL % ("lookup", n) for n in range(4))
    return openai_chunks([], [], text=[text[i : i + 7] for i in range(0, len(text), 7)])


def make(policy: str) -> Driver:
    return Driver(
        [Tool("lookup", SCHEMA, lambda q: q)], text_formats=("tool_call_tag",), policy=policy
    )


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    count = [0]
    real = callgate.driver.history.turn_history

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(callgate.driver.drivers, "turn_history", counting)
    monkeypatch.setattr(callgate.driver.loop, "turn_history", counting)
    return count


@pytest.mark.parametrize("policy", ["turn", "call"])
@pytest.mark.parametrize("orchestrated", [False, True])
def test_run_turn_builds_the_history_once(
    built: list[int], policy: str, orchestrated: bool
) -> None:
    driver = make(policy)
    chosen = Orchestrator([driver]) if orchestrated else driver
    turn = run_turn(chunks(), chosen, chosen.new_stream_buffer())
    assert built[0] == 1
    assert len(turn.results) == 4
    again = make(policy)
    steps = list(stream_turn(chunks(), again, buffer := again.new_stream_buffer()))
    assert finish_turn(buffer, steps).history == turn.history


def test_arun_turn_builds_the_history_once(built: list[int]) -> None:
    async def source() -> AsyncIterator[dict[str, Any]]:
        for chunk in chunks():
            yield chunk

    driver = make("call")
    turn = asyncio.run(arun_turn(source(), driver, driver.new_stream_buffer()))
    assert built[0] == 1 and len(turn.results) == 4


def test_stream_turn_steps_still_carry_their_messages(built: list[int]) -> None:
    driver = make("call")
    steps = list(stream_turn(chunks(), driver, driver.new_stream_buffer()))
    answering = [s for s in steps if s.response.results]
    assert answering and all(s.response.messages for s in answering)
