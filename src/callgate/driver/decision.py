"""One driver's decision on a stream buffer after one chunk: observe, answer, step the view.

The procedure behind :meth:`~callgate.driver.drivers.Driver.process_llm_response` on a
buffer. It observes the turn's calls (native slots and the calls read from the text alike,
all in the gate) and the open text block, answers the calls the gate has decided that its
driver owns (``buffer.releases()``: released ones get a run planned, blocked ones a
corrective result, set-aside ones a "not run" answer; nothing runs here), then records what
ran, fires the display machine (:mod:`callgate.fsm.display`) and shapes the response.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any, Protocol, cast

from callgate.buffer import LLMStreamBuffer
from callgate.driver.responses import TEXT_RESULTS, DriverResponse, Status, shaped
from callgate.driver.results import refusal
from callgate.driver.tools import Answer
from callgate.fsm.display import DISPLAY, HOLDS, OBSERVATIONS, STATUS
from callgate.fsm.release import RELEASE
from callgate.fsm.slot import SLOT
from callgate.gate.findings import Finding, finding
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import BaseSlot, CallRef, TextRef, TextSlot
from callgate.ledger import Ledger
from callgate.strategies.base import ExtractedCall, ToolResult
from callgate.strategies.text.strategy import TextStrategy
from callgate.view import View


class Owner(Protocol):
    """What a decision asks of the driver it decides for (every driver has it)."""

    schemas: ToolSchemas

    def owns(self, name: str | None) -> bool:
        """Whether ``name`` is one of the driver's tools."""

    def get_native_backup_strategy(self) -> TextStrategy | None:
        """The text strategy for calls leaked into native text, or None."""

    def prepare(self, call: ExtractedCall, ledger: Ledger, *, checked: bool = False) -> Answer:
        """What ``call`` gets: a known answer, a refusal, a dry run, or a job to run."""


QUIET = {state: DriverResponse(cast("Status | None", status)) for state, status in STATUS.items()}
"""A quiet step's response by display state: nothing answered, so one (immutable) value each."""
_ENDED = DISPLAY.final_states
"""Display states after the stream's end: the driver has nothing more to decide."""
_SELF_LOOPS = frozenset((t.source, t.event) for t in DISPLAY.transitions if t.source == t.target)
"""Display states and observations that leave the state as it is: a quiet step repeats."""
_SETTLED_SLOT = SLOT.final_states
"""Slot states in which another driver's call no longer concerns this driver."""
_SLOT_BLOCKS = SLOT.tagged("blocks")
_RUNS = RELEASE.tagged("runs")
_ASIDE = RELEASE.tagged("aside")


class Decision:
    """One driver's decision on a buffer after one chunk (or after the end)."""

    def __init__(self, driver: Owner, buffer: LLMStreamBuffer) -> None:
        self.driver = driver
        self.buffer = buffer
        self.queue = buffer.text_queue
        self.view: View = self.queue.view(driver)
        self.refused = False
        self.observation = "text"
        self.once = False
        """Whether the observation held for this step only (a block shown as text)."""

    def plan(self) -> list[tuple[CallRef, Answer]]:
        """Observe the buffer and decide every call this step answers (nothing runs yet)."""
        if self.view.state in _ENDED:
            return []
        gate = self.buffer.gate
        calls = chain(gate.ordered_slots(), gate.text_slots.values()) if gate is not None else ()
        self.observation = self._observe(calls)
        return self._answer()

    def finish(
        self, plan: Sequence[tuple[CallRef, Answer]], answers: Sequence[tuple[CallRef, ToolResult]]
    ) -> DriverResponse:
        """Record the answers, step the display machine, and shape the response."""
        view = self.view
        if view.state in _ENDED:
            return DriverResponse()
        for key, result in answers:
            view.answered[key] = result
            self.refused = self.refused or result.refused
        native = [r for key, r in answers if not isinstance(key, TextRef)]
        text = [r for key, r in answers if isinstance(key, TextRef)]
        observation = self.observation
        view.fire(observation)
        results = native + text
        if results:
            view.fire("refuse" if self.refused else "allow")
        status = cast("Status | None", STATUS[view.state])
        if self.buffer.ended and view.state not in HOLDS:
            view.fire("end")
        quiet = not results and not self.once and (view.state, observation) in _SELF_LOOPS
        view.repeat = observation if quiet and not self.buffer.policy_rule.early else None
        view.reply = QUIET[view.state] if view.repeat is not None and view.replays else None
        view.stamp = self.buffer.stamp()
        backup = self.driver.get_native_backup_strategy() or TEXT_RESULTS
        messages = shaped(self.buffer.strategy, native, backup, text)
        return DriverResponse(status, tuple(results), tuple(messages))

    # -- what the driver sees ---------------------------------------------------------

    def _observe(self, calls: Iterable[BaseSlot]) -> str:
        """The step's observation; the first unanswered call of this driver's decides it.

        An owned call outranks every other observation, so the walk stops there: a turn
        whose text calls wait for its end costs one look per round, not one per call.
        """
        driver, view, queue = self.driver, self.view, self.queue
        answered = view.answered
        ours = forming = foreign = False
        for slot in calls:
            if slot.ref in answered or (slot.state in _SLOT_BLOCKS and not slot.name):
                continue
            if slot.name is None:
                forming = True
            elif driver.owns(slot.name):
                ours = True
                break
            elif slot.state not in _SETTLED_SLOT:
                foreign = True
        if queue.declined > view.seen:
            view.seen = queue.declined
            foreign = self.once = True
        is_open, name = queue.forming()
        if is_open and name is None:
            forming = True
        elif is_open and driver.owns(name):
            ours = True
        elif is_open:
            foreign = True
        seen = {"owned": ours, "forming": forming, "foreign": foreign}
        strongest = next((o for o in OBSERVATIONS if seen[o]), None)
        if strongest is not None:
            return strongest
        return "broken" if view.state in HOLDS else "text"

    # -- answering --------------------------------------------------------------------

    def _answer(self) -> list[tuple[CallRef, Answer]]:
        """What the gate decided, for the calls this driver owns and has not answered."""
        buffer, driver, answered = self.buffer, self.driver, self.view.answered
        decided = buffer.releases()
        if not decided:
            return []
        checked = buffer.schemas is driver.schemas
        answers: list[tuple[CallRef, Answer]] = []
        blocked: list[BaseSlot] = []
        asides: dict[object, Finding] | None = None
        for slot, outcome in decided:
            key = slot.ref
            if key in answered or not driver.owns(slot.name):
                continue
            name = cast(str, slot.name)
            if outcome in _RUNS:
                arguments = slot.arguments if slot.arguments is not None else slot.early
                if isinstance(arguments, dict):
                    call = ExtractedCall.from_ref(key, slot.id, name, arguments)
                    answers.append((key, driver.prepare(call, buffer.ledger, checked=checked)))
            elif outcome in _ASIDE:
                if asides is None:
                    asides = _first_by_call(buffer.findings, _set_aside)
                call = ExtractedCall.from_ref(key, slot.id, name, _given(slot))
                answers.append((key, refusal(call, asides.get(slot.key) or _not_run(key))))
            else:
                blocked.append(slot)
        if blocked:
            findings = buffer.findings
            first = _first_error(findings)
            errors = _first_by_call(findings, _error)
            for slot in blocked:
                own = errors.get(slot.key)
                call = ExtractedCall.from_ref(slot.ref, slot.id, cast(str, slot.name), _given(slot))
                problem = own or first or finding("malformed_chunk", "the turn was blocked")
                answers.append((slot.ref, refusal(call, problem, sibling=own is None)))
        return answers


def _first_by_call(
    findings: Iterable[Finding], keep: Callable[[Finding], bool]
) -> dict[object, Finding]:
    """The first finding ``keep`` accepts of each call, read in one pass over ``findings``."""
    first: dict[object, Finding] = {}
    for f in findings:
        if f.slot is not None and keep(f):
            first.setdefault(f.slot, f)
    return first


def _set_aside(f: Finding) -> bool:
    """The warning that set a text call aside (the gate records one per call)."""
    return f.code == "text_call_set_aside"


def _error(f: Finding) -> bool:
    """A finding that blocks: what a refused call's answer quotes."""
    return f.severity == "error"


def _not_run(key: CallRef) -> Finding:
    """A set-aside text call's warning, should the findings' limit have dropped its own."""
    return finding("text_call_set_aside", f"text call {key} was not run")


def _given(slot: BaseSlot) -> dict[str, Any]:
    """The arguments a refused call carries back: a text call's as written, else none."""
    return slot.given if isinstance(slot, TextSlot) else {}


def _first_error(findings: Iterable[Finding]) -> Finding | None:
    return next((f for f in findings if _error(f)), None)
