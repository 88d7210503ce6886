"""The client loop: chunks in, text out, calls answered; the same loop sync and async.

Per chunk: ``buffer.add(chunk)``, every driver's ``process_llm_response(buffer)``, then
``buffer.text()`` for the user. After the last chunk: ``buffer.end()`` and one more round,
which answers what the turn policy held until the end. :func:`stream_turn` yields a
:class:`TurnStep` per round; :func:`run_turn` plays a whole turn and returns what the next
request needs (:class:`Turn`). :func:`astream_turn` and :func:`arun_turn` do the same
over an async iterator of chunks (an SDK's async stream).
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from functools import partial
from typing import Any

from attrs import frozen

from callgate.buffer import LLMStreamBuffer, as_shape
from callgate.driver.drivers import Driver
from callgate.driver.history import turn_history
from callgate.driver.responses import DriverResponse, merge
from callgate.errors import TurnError
from callgate.fsm.verdict import Verdict, decide
from callgate.gate.findings import Finding
from callgate.gate.turn import turn_events
from callgate.ledger import Ledger
from callgate.partial import PartialCall
from callgate.strategies.base import ToolResult


def verdict(
    turn_state: str,
    text_calls: Iterable[bool],
    on_step: Callable[[str, str, str], None] | None = None,
) -> Verdict:
    """The verdict of a turn from its turn machine's state and its text calls.

    Runs the verdict machine (:mod:`callgate.fsm.verdict`). ``text_calls`` says, for each
    call read from the turn's text, whether it was refused. A played buffer gives its own
    (:attr:`LLMStreamBuffer.verdict`), which is what the loops, ``check`` and ``replay``
    read; this gives a turn described by hand the same events (:func:`turn_events`).
    """
    return decide(turn_events(turn_state, (not r for r in text_calls)), on_step)


@frozen
class TurnStep:
    """One round of the loop: the chunk's position (None for the end), the text, the decision."""

    chunk: int | None
    text: str
    response: DriverResponse
    partial: tuple[PartialCall, ...] = ()
    """Every call of the turn as it stands after this chunk, its arguments so far
    (:meth:`LLMStreamBuffer.partial_calls`): what a UI draws while a call forms."""

    @property
    def replayed(self) -> tuple[ToolResult, ...]:
        """The step's answers that came from the ledger: calls seen before, not run again."""
        return tuple(r for r in self.response.results if r.replayed)


@frozen
class Turn:
    """A played turn: what the user saw, the answered calls, and the next request's history."""

    text: str
    results: tuple[ToolResult, ...]
    history: tuple[Any, ...]
    """The assistant turn in the provider's request shape, then the tool results (if any).

    Plain dicts, typed ``Any`` so that ``messages += turn.history`` type-checks against an
    SDK's own message param types (``ChatCompletionMessageParam``, ``MessageParam``).
    """
    status: Verdict
    """The verdict (:func:`verdict`): ``pass``, ``fail`` or ``not_applicable``."""
    findings: tuple[Finding, ...] = ()
    """What the gate found in the turn, in the order found."""

    @property
    def called(self) -> bool:
        """Whether any call was answered (the model expects another turn)."""
        return bool(self.results)


def _drivers(drivers: Driver | Sequence[Driver]) -> list[Driver]:
    return [drivers] if isinstance(drivers, Driver) else list(drivers)


class _Play:
    """One turn being played: the per-chunk bookkeeping the sync and async loops share.

    The loops differ only in how they read chunks and ask the drivers; each chunk is
    :meth:`add`-ed, the drivers' responses gathered, and :meth:`took` makes the round's
    :class:`TurnStep`. A chunk source that raises ends the turn (:attr:`failure`).
    """

    def __init__(self, buffer: LLMStreamBuffer) -> None:
        buffer.reset()
        self.buffer = buffer
        self.failure: Exception | None = None
        self.ended = False
        self._chunk: int | None = None
        self._added = 0
        self._shown: list[str] = []
        self._answered: list[DriverResponse] = []
        """The rounds that answered calls: all a played turn gathers besides its text."""

    def add(self, chunk: object) -> None:
        """Feed the next chunk (a buffer with a recorder learns which chunk it is).

        The first chunk gives the ledger the stream's identity (id-less calls' turn).
        """
        buffer = self.buffer
        self._chunk = n = self._added
        self._added = n + 1
        if buffer.recorder is not None:
            buffer.recorder.chunk = n
        if not n:
            _identify(buffer.ledger, chunk)
        buffer.add(chunk)

    def end(self, clean: bool = False) -> None:
        """No more chunks: end the buffer (its recorder's steps now belong to the end)."""
        self._chunk = None
        if self.buffer.recorder is not None:
            self.buffer.recorder.chunk = None
        self.buffer.end(clean=clean)
        self.ended = True

    def interrupted(self) -> None:
        """The turn stops before its end (a cancellation, an exception): its retry is this turn."""
        if not self.ended or self.failure is not None:
            self.buffer.ledger.repeat_turn()

    def kept(self, response: DriverResponse) -> str:
        """Keep what the round adds to the turn (its text, its answers); the text now shown."""
        text = self.buffer.text()
        if text:
            self._shown.append(text)
        if response.results or response.answers:
            self._answered.append(response)
        return text

    def took(self, response: DriverResponse) -> TurnStep:
        """The round's step: the drivers' response and the text now shown."""
        return TurnStep(self._chunk, self.kept(response), response, self.buffer.partial_calls())

    def turn(self) -> Turn:
        """The turn played so far, gathered (see :func:`finish_turn`)."""
        return _gathered(self.buffer, self._answered, "".join(self._shown))

    def close(self) -> None:
        """Raise :class:`TurnError` with the partial turn if the chunk source failed."""
        if self.failure is not None:
            self.buffer.ledger.repeat_turn()
            raise TurnError(self.turn(), self.failure) from self.failure


def _asking(
    drivers: list[Driver], buffer: LLMStreamBuffer, history: bool = True
) -> Callable[[], DriverResponse]:
    """What asks the drivers for one round: one driver directly, several merged.

    ``history``: each answering round carries the next request's messages (a
    :class:`TurnStep` shows them); :func:`run_turn` builds them once, at the turn's end.
    """
    steps = [_step_of(d, buffer, history) for d in drivers]
    if len(steps) == 1:
        return steps[0]
    return lambda: merge([step() for step in steps], buffer.strategy)


def _step_of(
    driver: Driver, buffer: LLMStreamBuffer, history: bool
) -> Callable[[], DriverResponse]:
    """How one driver answers a round: without the history when the loop builds it itself.

    A driver whose class answers a step its own way (``process_llm_response``) is asked so.
    """
    if history or type(driver).process_llm_response is not Driver.process_llm_response:
        return partial(driver.process_llm_response, buffer)
    return partial(driver._round, buffer, False)


async def _aask(drivers: list[Driver], buffer: LLMStreamBuffer, history: bool) -> DriverResponse:
    """One round of the async loop: each driver awaited in turn, merged when several."""
    own = [
        history or type(d).aprocess_llm_response is not Driver.aprocess_llm_response
        for d in drivers
    ]
    responses = [
        await (d.aprocess_llm_response(buffer) if mine else d._around(buffer, False))
        for d, mine in zip(drivers, own, strict=True)
    ]
    return responses[0] if len(responses) == 1 else merge(responses, buffer.strategy)


def _identify(ledger: Ledger, chunk: object) -> None:
    """Give ``ledger`` the identity a turn's first chunk carries (what it cannot read: none)."""
    try:
        shape = as_shape(chunk)
    except Exception:  # the buffer refuses the chunk itself, with its own error
        return
    wrapped = shape.get("chunk")
    ledger.identify(wrapped if isinstance(wrapped, Mapping) else shape)


def _read(chunks: Iterable[object], play: _Play) -> Iterator[object]:
    """The chunks until the source ends or raises (the exception is the play's failure)."""
    source = iter(chunks)
    try:
        yield from source
    except Exception as exc:  # the stream's own failure ends the turn here
        play.failure = exc


async def _aread(chunks: AsyncIterable[object], play: _Play) -> AsyncIterator[object]:
    """:func:`_read` over an async iterator of chunks."""
    source = aiter(chunks)
    try:
        async for chunk in source:
            yield chunk
    except Exception as exc:  # the stream's own failure ends the turn here
        play.failure = exc


def _sync_only(drivers: list[Driver]) -> None:
    """Refuse, before any chunk is read, tools the sync loop cannot await or bound in time."""
    for driver in drivers:
        for tool in driver.tools.values():
            if tool.is_async:
                raise TypeError(
                    f"{tool.name} is an async function: play the turn with arun_turn, "
                    "which awaits it"
                )
            if driver.timeout_of(tool) is not None:
                raise TypeError(
                    f"{tool.name} has a timeout of {driver.timeout_of(tool):g} s, which the "
                    "sync loop cannot enforce (it cannot stop a running function): play the "
                    "turn with arun_turn, which does, or give the tool no timeout"
                )


def _within_expiry(drivers: list[Driver], ledger: Ledger) -> None:
    """Refuse, before any chunk is read, a tool whose timeout the ledger's expiry does not exceed.

    A start record older than the expiry is taken as lost: a tool still within its
    timeout would be answered "lost" by another worker while it runs.
    """
    for driver in drivers:
        for tool in driver.tools.values():
            timeout = driver.timeout_of(tool)
            if timeout is not None and timeout >= ledger.expiry:
                raise ValueError(
                    f"{tool.name} has a timeout of {timeout:g} s, not shorter than the "
                    f"ledger's expiry of {ledger.expiry:g} s: make the expiry longer"
                )


def _sync_play(
    drivers: Driver | Sequence[Driver], buffer: LLMStreamBuffer, history: bool = True
) -> tuple[_Play, Callable[[], DriverResponse]]:
    """A turn for the sync loop, and what asks its drivers for one round (checked first)."""
    chosen = _drivers(drivers)
    _sync_only(chosen)
    return _Play(buffer), _asking(chosen, buffer, history)


def _async_play(
    drivers: Driver | Sequence[Driver], buffer: LLMStreamBuffer, history: bool = True
) -> tuple[_Play, Callable[[], Awaitable[DriverResponse]]]:
    """A turn for the async loop, and what asks its drivers for one round (checked first)."""
    chosen = _drivers(drivers)
    _within_expiry(chosen, buffer.ledger)
    return _Play(buffer), partial(_aask, chosen, buffer, history)


def stream_turn(
    chunks: Iterable[object],
    drivers: Driver | Sequence[Driver],
    buffer: LLMStreamBuffer,
    *,
    clean_end: bool = False,
) -> Iterator[TurnStep]:
    """Play one turn's chunks through ``buffer`` and ``drivers``, a step per chunk, then the end.

    The buffer is reset first; its ledger of answered call ids is kept, so one buffer
    serves a whole conversation. A buffer with a recorder gets each step stamped with its
    chunk (None for the end). If reading the next chunk raises, the turn is ended there:
    the end's step is yielded, then :class:`TurnError` is raised with the partial turn.
    ``clean_end``: the chunks end where the server ended the stream (its ``[DONE]`` was
    read), so a turn without a finish reason ended (``LLMStreamBuffer.end(clean=True)``);
    an SDK's iterator also stops quietly on a dropped connection, so it is off by default.
    """
    play, ask = _sync_play(drivers, buffer)
    try:
        for chunk in _read(chunks, play):
            play.add(chunk)
            yield play.took(ask())
        play.end(clean_end)
        yield play.took(ask())
    except BaseException:  # closed early, interrupted, or a tool the step refused
        play.interrupted()
        raise
    play.close()


async def astream_turn(
    chunks: AsyncIterable[object],
    drivers: Driver | Sequence[Driver],
    buffer: LLMStreamBuffer,
    *,
    clean_end: bool = False,
) -> AsyncIterator[TurnStep]:
    """:func:`stream_turn` over an async iterator of chunks."""
    play, ask = _async_play(drivers, buffer)
    try:
        async for chunk in _aread(chunks, play):
            play.add(chunk)
            yield play.took(await ask())
        play.end(clean_end)
        yield play.took(await ask())
    except BaseException:  # cancelled, closed early, or interrupted
        play.interrupted()
        raise
    play.close()


def finish_turn(buffer: LLMStreamBuffer, steps: Sequence[TurnStep]) -> Turn:
    """Gather a played turn's steps into a :class:`Turn` whose history the provider accepts.

    Every native call of the assistant message is answered once: by the driver that ran
    or refused it, else (no driver here owns it, or it never had a name) with an error
    result saying why. A call without a usable id carries a stand-in id in the history and
    in its answer; arguments that are not one JSON object go back as ``{}`` and the answer
    quotes what was received; a call read from the text that no driver answered gets an
    error result too (:func:`~callgate.driver.history.turn_history`).
    """
    return _gathered(buffer, [step.response for step in steps], "".join(s.text for s in steps))


def _gathered(
    buffer: LLMStreamBuffer, responses: Sequence[DriverResponse], text_shown: str
) -> Turn:
    """The :class:`Turn` of a played buffer, from its rounds' responses and the text shown."""
    results, history = _answered(buffer, responses)
    return Turn(text_shown, tuple(results), tuple(history), *turn_verdict(buffer))


def turn_verdict(buffer: LLMStreamBuffer) -> tuple[Verdict, tuple[Finding, ...]]:
    """A played buffer's verdict (stepped on its recorder, if any) and its findings.

    What :func:`finish_turn` settles of a turn; a caller that needs the rest only later
    gathers it with :func:`gathered_turn` (the buffer no longer changes).
    """
    recorder = buffer.recorder
    stepper = recorder.stepper("verdict", "verdict") if recorder is not None else None
    return buffer.verdict_of(stepper), tuple(buffer.findings)


def gathered_turn(
    buffer: LLMStreamBuffer,
    steps: Sequence[TurnStep],
    settled: tuple[Verdict, tuple[Finding, ...]],
) -> Turn:
    """:func:`finish_turn` with the verdict and findings :func:`turn_verdict` settled earlier."""
    results, history = _answered(buffer, [step.response for step in steps])
    text = "".join(step.text for step in steps)
    return Turn(text, tuple(results), tuple(history), *settled)


def _answered(
    buffer: LLMStreamBuffer, responses: Sequence[DriverResponse]
) -> tuple[list[ToolResult], list[Any]]:
    """The rounds' results and the history that answers every call (see :func:`finish_turn`)."""
    return turn_history(
        buffer, [r for x in responses for r in x.results], [m for x in responses for m in x.answers]
    )


def run_turn(
    chunks: Iterable[object],
    drivers: Driver | Sequence[Driver],
    buffer: LLMStreamBuffer,
    *,
    clean_end: bool = False,
) -> Turn:
    """Play one whole turn (see :func:`stream_turn`) and gather it.

    The rounds are :func:`stream_turn`'s; only what the turn gathers is kept (the text
    shown, the rounds that answered), not a :class:`TurnStep` per chunk. The rounds carry
    their answers; the next request's history is built once, from them, at the turn's end.
    """
    play, ask = _sync_play(drivers, buffer, history=False)
    try:
        for chunk in _read(chunks, play):
            play.add(chunk)
            play.kept(ask())
        play.end(clean_end)
        play.kept(ask())
    except BaseException:  # interrupted, or a tool the step refused
        play.interrupted()
        raise
    play.close()
    return play.turn()


async def arun_turn(
    chunks: AsyncIterable[object],
    drivers: Driver | Sequence[Driver],
    buffer: LLMStreamBuffer,
    *,
    clean_end: bool = False,
) -> Turn:
    """:func:`run_turn` over an async iterator of chunks."""
    play, ask = _async_play(drivers, buffer, history=False)
    try:
        async for chunk in _aread(chunks, play):
            play.add(chunk)
            play.kept(await ask())
        play.end(clean_end)
        play.kept(await ask())
    except BaseException:  # cancelled, or interrupted
        play.interrupted()
        raise
    play.close()
    return play.turn()
