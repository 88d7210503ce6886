"""The next request's history for one turn: the assistant message, then an answer per call.

The provider refuses a history whose assistant message has a call without an answer, or
a call without a usable id or name. :func:`turn_history` makes the turn answerable: each
native call of the message is answered once (by the result a driver gave it, else with
an error result saying why nobody did), a call without a usable id carries a stand-in id
in the message and in its answer, and arguments that are not one JSON object go back as
``{}`` with the answer quoting what was received. The loop's :class:`~callgate.driver.loop.Turn`
and a driver's :class:`~callgate.driver.responses.DriverResponse` both take it from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import evolve

from callgate.buffer import LLMStreamBuffer
from callgate.driver.results import refusal
from callgate.gate.findings import Finding, finding
from callgate.gate.strictjson import parse_arguments
from callgate.gate.turn import Slot
from callgate.strategies.base import NO_NAME, ExtractedCall, HistoryCall, ToolResult, stand_in_id


def turn_history(
    buffer: LLMStreamBuffer, results: Sequence[ToolResult], answers: Sequence[dict[str, Any]]
) -> tuple[list[ToolResult], list[dict[str, Any]]]:
    """The turn's answered results and the history the provider accepts for them.

    ``results`` are the answers drivers gave; ``answers`` their result messages, used as
    they are when the message has no native call (results of calls read from text).
    With native calls every call of the message gets one result, in message order.
    """
    strategy = buffer.strategy
    if strategy is None:
        return list(results), list(answers)
    history, placed = strategy.answerable(
        strategy.history(buffer.as_dict()), _history_calls(buffer.slots, strategy.requires_id)
    )
    if not placed:
        return list(results), [*history, *answers]
    answered = _answer_every_call(buffer, results, placed)
    return answered, [*history, *strategy.result_messages(answered)]


def _history_calls(slots: Sequence[Slot], requires_id: bool) -> list[HistoryCall]:
    """Each slot's call as the history carries it (see :class:`HistoryCall`).

    Where the wire requires ids, a call without a usable one gets a stand-in id.
    """
    calls: list[HistoryCall] = []
    seen: set[str | None] = set()
    for slot in slots:
        call_id = slot.id or None
        if requires_id and (call_id is None or call_id in seen):
            call_id = stand_in_id(slot.key)
        seen.add(call_id)
        arguments = slot.arguments
        if arguments is None:
            arguments, _ = parse_arguments(slot.raw_arguments)
        name = slot.name or NO_NAME
        calls.append(HistoryCall(slot.key, call_id, name, arguments, slot.id or None))
    return calls


def _why(buffer: LLMStreamBuffer, call: HistoryCall, slot: Slot | None) -> Finding:
    """Why no driver answered ``call``: nobody here owns its tool, or the root problem."""
    if slot is not None and slot.name:
        return finding("unknown_tool", f"{slot.name} is not available here", slot.key)
    where = (slot.key if slot is not None else None, None)
    errors = (f for f in buffer.findings if f.severity == "error" and f.slot in where)
    if slot is None:
        errors = (f for f in buffer.findings if f.severity == "error")
    fallback = finding("unknown_tool", f"{call.name} is not available here")
    return next(errors, None) or fallback


def _answer_every_call(
    buffer: LLMStreamBuffer, results: Sequence[ToolResult], placed: Sequence[HistoryCall]
) -> list[ToolResult]:
    """One result per call of the message, in its order, with the ids the history carries."""
    slots = {slot.key: slot for slot in buffer.slots}
    by_slot = {r.call.slot: r for r in reversed(results) if r.call.slot in slots}
    answered = []
    for call in placed:
        slot = slots.get(call.slot) if call.slot is not None else None
        result = by_slot.get(call.slot) if call.slot is not None else None
        if result is None:
            unanswered = ExtractedCall(call.id, call.name, {}, call.slot)
            result = refusal(unanswered, _why(buffer, call, slot))
        if result.call.id != call.id:
            result = evolve(result, call=evolve(result.call, id=call.id))
        raw = slot.raw_arguments if slot is not None else ""
        if call.arguments is None and raw and result.is_error:
            result = evolve(result, content=f"{result.content} The arguments received were: {raw}")
        answered.append(result)
    return answered
