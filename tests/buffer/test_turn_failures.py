"""A stream that fails mid-turn keeps its turn; chunks from the SDKs' helpers are read.

The failing streams are realistic Anthropic and OpenAI turns (``callgate.testing.builders``) whose
source raises part-way, as an SDK does when the connection drops.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

from callgate import (
    Driver,
    LLMStreamBuffer,
    Tool,
    TurnError,
    UnrecognizedStreamError,
    arun_turn,
    run_turn,
)
from callgate.testing.builders import anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk, WireCall
from provider_rules import validate_anthropic, validate_openai

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
OSLO, LIMA = json.dumps({"city": "Oslo"}), json.dumps({"city": "Lima"})


def breaking(chunks: Sequence[Chunk], at: int) -> Iterator[Chunk]:
    """``chunks`` up to ``at``, then the connection drops."""
    yield from chunks[:at]
    raise ConnectionError("peer closed the connection")


async def abreaking(chunks: Sequence[Chunk], at: int) -> AsyncIterator[Chunk]:
    for chunk in chunks[:at]:
        yield chunk
    raise ConnectionError("peer closed the connection")


def two_calls_anthropic() -> tuple[list[Chunk], int]:
    """Two tool_use blocks, the first complete before the second opens; where to cut."""
    calls = [
        WireCall("toolu_a", "get_weather", split(OSLO, (4,))),
        WireCall("toolu_b", "get_weather", split(LIMA, (4,))),
    ]
    first = 2 + len(calls[0].fragments)
    events = anthropic_events(calls, [0] * first + [1] * (2 + len(calls[1].fragments)))
    return events, 1 + first + 3


def weather_driver(runs: list[str], policy: str = "call") -> Driver:
    def weather(city: str) -> str:
        runs.append(city)
        return f"18 C in {city}"

    return Driver([Tool("get_weather", CITY, weather)], policy=policy)


def assert_partial_turn(error: TurnError, runs: list[str]) -> None:
    turn = error.turn
    assert isinstance(error.__cause__, ConnectionError)
    assert runs == ["Oslo"]
    assert [(r.call.id, r.is_error) for r in turn.results] == [
        ("toolu_a", False),
        ("toolu_b", True),
    ]
    assert "missing_terminal" in turn.results[1].content
    assert "missing_terminal" in {f.code for f in turn.findings}
    assert turn.status == "fail"
    validate_anthropic([{"role": "user", "content": "Weather?"}, *turn.history])


def test_a_stream_that_breaks_mid_turn_raises_with_the_partial_turn() -> None:
    runs: list[str] = []
    driver = weather_driver(runs)
    events, at = two_calls_anthropic()

    with pytest.raises(TurnError) as caught:
        run_turn(breaking(events, at), driver, driver.new_stream_buffer())

    assert "ConnectionError" in str(caught.value)
    assert_partial_turn(caught.value, runs)


def test_an_async_stream_that_breaks_mid_turn_raises_with_the_partial_turn() -> None:
    runs: list[str] = []
    driver = weather_driver(runs)
    events, at = two_calls_anthropic()

    with pytest.raises(TurnError) as caught:
        asyncio.run(arun_turn(abreaking(events, at), driver, driver.new_stream_buffer()))

    assert_partial_turn(caught.value, runs)


def test_the_text_shown_before_the_break_is_in_the_partial_turn() -> None:
    chunks = openai_chunks([], [], text=split("Hello there, friend.", (4,)))
    driver = weather_driver([], policy="turn")

    with pytest.raises(TurnError) as caught:
        run_turn(breaking(chunks, 3), driver, driver.new_stream_buffer())

    assert caught.value.turn.text == "Hello th"
    validate_openai([{"role": "user", "content": "Hi"}, *caught.value.turn.history])


def test_a_break_before_any_chunk_gives_an_empty_turn() -> None:
    driver = weather_driver([], policy="turn")

    with pytest.raises(TurnError) as caught:
        run_turn(breaking([], 0), driver, driver.new_stream_buffer())

    assert (caught.value.turn.text, caught.value.turn.results, caught.value.turn.history) == (
        "",
        (),
        (),
    )


def test_a_tool_error_is_not_taken_for_a_stream_failure() -> None:
    """Only the chunk source's exceptions end the turn; a refused async tool raises as is."""

    async def weather(city: str) -> str:
        return city

    driver = Driver([Tool("get_weather", CITY, weather)])
    chunks = openai_chunks([WireCall("call_1", "get_weather", (OSLO,))], [0, 0])

    with pytest.raises(TypeError):
        run_turn(chunks, driver, driver.new_stream_buffer())


# -- chunks from the SDKs' helpers ---------------------------------------------------------


class ChunkEvent:
    """The shape of openai's ``ChunkEvent``: ``type == "chunk"``, the raw ``chunk``, and
    a ``snapshot`` that must never be read (it grows with the stream)."""

    type = "chunk"

    def __init__(self, chunk: Chunk) -> None:
        self.chunk = chunk

    @property
    def snapshot(self) -> Any:
        raise AssertionError("the snapshot was read")


def test_openai_helper_chunk_events_are_read_and_its_other_events_skipped() -> None:
    runs: list[str] = []
    driver = weather_driver(runs, policy="turn")
    call = WireCall("call_1", "get_weather", split(OSLO, (3,)))
    chunks = openai_chunks([call], [0] * (1 + len(call.fragments)))
    events: list[Any] = []
    for chunk in chunks:
        events.append(ChunkEvent(chunk))
        events.append({"type": "tool_calls.function.arguments.delta", "name": "get_weather"})
    events.append({"type": "content.done", "content": ""})

    turn = run_turn(events, driver, driver.new_stream_buffer())

    assert runs == ["Oslo"] and turn.status == "pass"


def test_a_chunk_nobody_recognises_says_what_to_pass() -> None:
    buffer = LLMStreamBuffer()

    with pytest.raises(UnrecognizedStreamError, match="raw stream chunks or events"):
        buffer.add({"delta": "hello"})


@pytest.mark.parametrize("kind", [[], {}, 7, None])
def test_a_chunk_whose_type_is_not_a_string_is_not_taken_for_a_helper_event(kind: Any) -> None:
    buffer = LLMStreamBuffer()
    buffer.add(openai_chunks([], [], text=("Hi",))[0])

    buffer.add({"type": kind, "choices": []})

    assert buffer.turn_state == "streaming"
