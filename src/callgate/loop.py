"""The client loop: chunks in, text out, calls answered; the same loop sync and async.

Per chunk: ``buffer.add(chunk)``, every driver's ``process_llm_response(buffer)``, then
``buffer.text()`` for the user. After the last chunk: ``buffer.end()`` and one more round,
which answers what the turn policy held until the end. :func:`stream_turn` yields a
:class:`TurnStep` per round; :func:`run_turn` plays a whole turn and returns what the next
request needs (:class:`Turn`). :func:`astream_turn` and :func:`arun_turn` do the same
over an async iterator of chunks (an SDK's async stream).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from attrs import frozen

from callgate.buffer import LLMStreamBuffer
from callgate.driver import Driver, DriverResponse, merge
from callgate.strategies.base import ToolResult


@frozen
class TurnStep:
    """One round of the loop: the chunk's position (None for the end), the text, the decision."""

    chunk: int | None
    text: str
    response: DriverResponse


@frozen
class Turn:
    """A played turn: what the user saw, the answered calls, and the next request's history."""

    text: str
    results: tuple[ToolResult, ...]
    history: tuple[dict[str, Any], ...]
    """The assistant turn in the provider's request shape, then the tool results (if any)."""
    status: str
    """The turn machine's verdict: executable, blocked or not_applicable."""

    @property
    def called(self) -> bool:
        """Whether any call was answered (the model expects another turn)."""
        return bool(self.results)


def _drivers(drivers: Driver | Sequence[Driver]) -> list[Driver]:
    return [drivers] if isinstance(drivers, Driver) else list(drivers)


def _stamp(buffer: LLMStreamBuffer, chunk: int | None) -> None:
    """Tell the buffer's recorder, if any, which chunk the next steps belong to."""
    if buffer.recorder is not None:
        buffer.recorder.chunk = chunk


def _round(buffer: LLMStreamBuffer, drivers: list[Driver], chunk: int | None) -> TurnStep:
    response = merge([d.process_llm_response(buffer) for d in drivers], buffer.strategy)
    return TurnStep(chunk, buffer.text(), response)


async def _around(buffer: LLMStreamBuffer, drivers: list[Driver], chunk: int | None) -> TurnStep:
    responses = [await d.aprocess_llm_response(buffer) for d in drivers]
    return TurnStep(chunk, buffer.text(), merge(responses, buffer.strategy))


def _sync_only(drivers: list[Driver]) -> None:
    """Refuse, before any chunk is read, drivers with a tool the sync loop cannot await."""
    for driver in drivers:
        for tool in driver.tools.values():
            if tool.is_async:
                raise TypeError(
                    f"{tool.name} is an async function: play the turn with arun_turn, "
                    "which awaits it"
                )


def stream_turn(
    chunks: Iterable[object], drivers: Driver | Sequence[Driver], buffer: LLMStreamBuffer
) -> Iterator[TurnStep]:
    """Play one turn's chunks through ``buffer`` and ``drivers``, a step per chunk, then the end.

    The buffer is reset first; its ledger of answered call ids is kept, so one buffer
    serves a whole conversation. A buffer with a recorder gets each step stamped with its
    chunk (None for the end).
    """
    chosen = _drivers(drivers)
    _sync_only(chosen)
    buffer.reset()
    for position, chunk in enumerate(chunks):
        _stamp(buffer, position)
        buffer.add(chunk)
        yield _round(buffer, chosen, position)
    _stamp(buffer, None)
    buffer.end()
    yield _round(buffer, chosen, None)


async def astream_turn(
    chunks: AsyncIterable[object], drivers: Driver | Sequence[Driver], buffer: LLMStreamBuffer
) -> AsyncIterator[TurnStep]:
    """:func:`stream_turn` over an async iterator of chunks."""
    chosen = _drivers(drivers)
    buffer.reset()
    position = 0
    async for chunk in chunks:
        _stamp(buffer, position)
        buffer.add(chunk)
        yield await _around(buffer, chosen, position)
        position += 1
    _stamp(buffer, None)
    buffer.end()
    yield await _around(buffer, chosen, None)


def finish_turn(buffer: LLMStreamBuffer, steps: Sequence[TurnStep]) -> Turn:
    """Gather a played turn's steps into a :class:`Turn`."""
    results = tuple(r for step in steps for r in step.response.results)
    history: list[dict[str, Any]] = []
    if buffer.strategy is not None:
        history += buffer.strategy.history(buffer.as_dict())
    history += [m for step in steps for m in step.response.messages]
    text = "".join(step.text for step in steps)
    return Turn(text, results, tuple(history), buffer.turn_state)


def run_turn(
    chunks: Iterable[object], drivers: Driver | Sequence[Driver], buffer: LLMStreamBuffer
) -> Turn:
    """Play one whole turn (see :func:`stream_turn`) and gather it."""
    return finish_turn(buffer, list(stream_turn(chunks, drivers, buffer)))


async def arun_turn(
    chunks: AsyncIterable[object], drivers: Driver | Sequence[Driver], buffer: LLMStreamBuffer
) -> Turn:
    """:func:`run_turn` over an async iterator of chunks."""
    return finish_turn(buffer, [step async for step in astream_turn(chunks, drivers, buffer)])
