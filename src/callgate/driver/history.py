"""The next request's history for one turn: the assistant message, then an answer per call.

The provider refuses a history whose assistant message has a call without an answer, or
a call without a usable id or name. :func:`turn_history` makes the turn answerable: each
native call of the message is answered once (by the result a driver gave it, else with
an error result saying why nobody did), and so is each call read from the text; a call
without a usable id carries a stand-in id in the message and in its answer, and arguments
that are not one JSON object go back as ``{}`` with the answer quoting what was received.
The loop's :class:`~callgate.driver.loop.Turn` and a driver's
:class:`~callgate.driver.responses.DriverResponse` both take it from here.

Call ids across a conversation's histories, for wires that refuse a repeated one:
Anthropic refuses a request whose history holds two ``tool_use`` blocks with one id, in
any two turns ("tool_use ids must be unique"). A server that numbers ids per turn, or a
model that repeats a call, gives a later turn an id an earlier history already carried:
that call goes back under a stand-in id, in its message and in its answer, as a call
without a usable id does. The ledger keeps the ids carried (``Ledger.carried``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve

from callgate.buffer import LLMStreamBuffer
from callgate.driver.responses import TEXT_RESULTS, in_wire_shape, shaped
from callgate.driver.results import refusal
from callgate.gate.findings import Finding, finding
from callgate.gate.strictjson import parse_arguments
from callgate.gate.turn import Slot, TextRef, TextSlot
from callgate.strategies.base import NO_NAME, ExtractedCall, HistoryCall, ToolResult, stand_in_id


def turn_history(
    buffer: LLMStreamBuffer, results: Sequence[ToolResult], answers: Sequence[dict[str, Any]]
) -> tuple[list[ToolResult], list[dict[str, Any]]]:
    """The turn's answered results and the history the provider accepts for them.

    ``results`` are the answers drivers gave; ``answers`` their result messages, used as
    they are when the message has no native call (results of calls read from text).
    With native calls every call of the message gets one result, in message order, then
    the calls of the text. A call of the text nobody answered gets an error result.
    """
    strategy = buffer.strategy
    history: list[dict[str, Any]] = []
    placed: list[HistoryCall] = []
    if strategy is not None:
        ledger = buffer.ledger
        carried = ledger.carried if strategy.unique_ids else None
        calls = _history_calls(buffer.slots, strategy.requires_id, carried, ledger.turn)
        history, placed = strategy.answerable(strategy.history(buffer.message()), calls)
        if carried is not None:
            carry(carried, placed, ledger.turn)
    unanswered = _answer_text_calls(buffer, results)
    if strategy is not None and placed:
        native = _answer_every_call(buffer, results, placed)
        text = [r for r in results if isinstance(r.call.ref, TextRef)] + unanswered
        history += shaped(strategy, native, TEXT_RESULTS, text)
        return native + text, history
    history += answers
    history += in_wire_shape(strategy, TEXT_RESULTS.result_messages(unanswered))
    return [*results, *unanswered], history


def earlier(carried: Mapping[str, int] | None, turn: int) -> frozenset[str]:
    """The ids histories of turns before ``turn`` carried (none without ``carried``).

    A turn gathered twice finds its own ids under its own turn, not as taken.
    """
    if not carried:
        return frozenset()
    return frozenset(call_id for call_id, first in carried.items() if first != turn)


def free_stand_in(slot: int, taken: Iterable[str | None]) -> str:
    """``callgate_<slot>``, or ``callgate_<slot>_<n>`` with the first ``n`` not ``taken``."""
    used = set(taken)
    candidate, n = stand_in_id(slot), 1
    while candidate in used:
        n += 1
        candidate = stand_in_id(f"{slot}_{n}")
    return candidate


def carry(carried: dict[str, int], placed: Iterable[HistoryCall], turn: int) -> None:
    """Record the ids a turn's history carries (the first turn to carry an id keeps it)."""
    for call in placed:
        if call.id is not None:
            carried.setdefault(call.id, turn)


def _history_calls(
    slots: Sequence[Slot], requires_id: bool, carried: Mapping[str, int] | None, turn: int
) -> list[HistoryCall]:
    """Each slot's call as the history carries it (see :class:`HistoryCall`).

    Where the wire requires ids, a call without a usable one gets a stand-in id; so does,
    where ids must be unique in the conversation (``carried``), one an earlier turn carried.
    """
    calls: list[HistoryCall] = []
    seen: set[str | None] = set()
    taken = earlier(carried, turn)
    for slot in slots:
        call_id = slot.id or None
        if requires_id and (call_id is None or call_id in seen or call_id in taken):
            call_id = free_stand_in(slot.key, taken | seen)
        seen.add(call_id)
        arguments = slot.arguments
        if arguments is None:
            arguments, _ = parse_arguments(slot.raw_arguments)
        name = slot.name or NO_NAME
        calls.append(HistoryCall(slot.key, call_id, name, arguments, slot.id or None))
    return calls


def _answer_text_calls(buffer: LLMStreamBuffer, results: Sequence[ToolResult]) -> list[ToolResult]:
    """An answer for each call of the text that no driver answered (nobody here owns it)."""
    answered = {r.call.ref for r in results}
    return [
        refusal(
            ExtractedCall.from_ref(slot.ref, slot.id, slot.name or NO_NAME, {}),
            _why_text(buffer, slot),
        )
        for slot in buffer.text_calls
        if slot.ref not in answered
    ]


def _why_text(buffer: LLMStreamBuffer, slot: TextSlot) -> Finding:
    """Why no driver answered a call of the text: set aside, or nobody here owns its tool."""
    own = next((f for f in buffer.findings if f.slot == slot.key), None)
    if own is not None and own.code == "text_call_set_aside":
        return own
    return finding("unknown_tool", f"{slot.name} is not available here", slot.key)


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
    by_ref = {r.call.ref: r for r in reversed(results)}
    answered = []
    for call in placed:
        slot = slots.get(call.slot) if call.slot is not None else None
        result = by_ref.get(slot.ref) if slot is not None else None
        if result is None:
            unanswered = (
                ExtractedCall.from_ref(slot.ref, call.id, call.name, {})
                if slot is not None
                else ExtractedCall(call.id, call.name, {})
            )
            result = refusal(unanswered, _why(buffer, call, slot))
        if result.call.id != call.id:
            result = evolve(result, call=evolve(result.call, id=call.id))
        raw = slot.raw_arguments if slot is not None else ""
        if call.arguments is None and raw and result.is_error:
            result = evolve(result, content=f"{result.content} The arguments received were: {raw}")
        answered.append(result)
    return answered
