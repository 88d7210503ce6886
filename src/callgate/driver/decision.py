"""One driver's decision on a stream buffer after one chunk: observe, answer, step the view.

The procedure behind :meth:`~callgate.driver.drivers.Driver.process_llm_response` on a
buffer: it reads the buffer's slots and text blocks, claims or declines them for its driver,
plans the answers (nothing runs here), then records what ran, fires the display machine
(:mod:`callgate.fsm.display`) and shapes the response.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, cast

from callgate.buffer import LLMStreamBuffer
from callgate.driver.responses import TEXT_RESULTS, DriverResponse, Status, shaped
from callgate.driver.results import refusal
from callgate.driver.tools import Answer
from callgate.fsm.display import DISPLAY, HOLDS, STATUS
from callgate.fsm.slot import SLOT
from callgate.fsm.turn import TURN
from callgate.gate.findings import Finding, finding
from callgate.gate.schema import ToolSchemas
from callgate.ledger import Ledger
from callgate.strategies.base import ExtractedCall, ToolResult
from callgate.strategies.text.strategy import TextStrategy
from callgate.view import TextBlock, View


class Owner(Protocol):
    """What a decision asks of the driver it decides for (every driver has it)."""

    schemas: ToolSchemas

    def owns(self, name: str | None) -> bool:
        """Whether ``name`` is one of the driver's tools."""

    def backup(self) -> TextStrategy | None:
        """The text strategy for calls leaked into native text, or None."""

    def prepare(self, call: ExtractedCall, ledger: Ledger) -> Answer:
        """What ``call`` gets: a known answer, a refusal, a dry run, or a job to run."""


CallKey = tuple[Any, ...]
_FINAL_TURN = TURN.final_states
_TURN_BLOCKS = TURN.tagged("blocks")
_ENDED = DISPLAY.final_states
"""Display states after the stream's end: the driver has nothing more to decide."""
_SELF_LOOPS = frozenset((t.source, t.event) for t in DISPLAY.transitions if t.source == t.target)
"""Display states and observations that leave the state as it is: a quiet step repeats."""
_SETTLED_SLOT = SLOT.final_states
"""Slot states in which another driver's call no longer concerns this driver."""
_SLOT_BLOCKS = SLOT.tagged("blocks")


class Decision:
    """One driver's decision on a buffer after one chunk (or after the end)."""

    def __init__(self, driver: Owner, buffer: LLMStreamBuffer) -> None:
        self.driver = driver
        self.buffer = buffer
        self.queue = buffer.text_queue
        self.view: View = self.queue.view(driver)
        self.refused = False
        self.text_path = False
        self.observation = "text"

    def plan(self) -> list[tuple[CallKey, Answer]]:
        """Observe the buffer and decide every call this step answers (nothing runs yet)."""
        if self.view.state in _ENDED:
            return []
        self.text_path = self._text_path()
        self.observation = self._observe(self.text_path)
        return self._answer_native() + (self._answer_text() if self.text_path else [])

    def finish(
        self, plan: Sequence[tuple[CallKey, Answer]], answers: Sequence[tuple[CallKey, ToolResult]]
    ) -> DriverResponse:
        """Record the answers, step the display machine, and shape the response."""
        view = self.view
        if view.state in _ENDED:
            return DriverResponse()
        for key, result in answers:
            self._record(key, result)
        native = [r for key, r in answers if key[0] == "slot"]
        text = [r for key, r in answers if key[0] == "text"]
        observation = self.observation
        view.fire(observation)
        results = native + text
        if results:
            view.fire("refuse" if self.refused else "allow")
        status = cast("Status | None", STATUS[view.state])
        if self.buffer.ended and view.state not in HOLDS:
            view.fire("end")
        quiet = (
            not results and (view.state, observation) in _SELF_LOOPS and not self.queue.forming()[0]
        )
        view.repeat = observation if quiet and not self.buffer.policy_rule.early else None
        view.stamp = self.buffer.stamp()
        backup = self.driver.backup() or TEXT_RESULTS
        messages = shaped(self.buffer.strategy, native, backup, text)
        return DriverResponse(status, tuple(results), tuple(messages))

    # -- what the driver sees ---------------------------------------------------------

    def _text_path(self) -> bool:
        """Whether calls in this turn's text are calls (see the module's docstring)."""
        wire = self.buffer.strategy
        if self.buffer.slots or wire is None:
            return False
        return not wire.leaks_into_text or self.driver.backup() is not None

    def _observe(self, text_path: bool) -> str:
        driver, view, queue = self.driver, self.view, self.queue
        ours = forming = foreign = False
        for slot in self.buffer.slots:
            if ("slot", slot.key) in view.answered or (
                slot.state in _SLOT_BLOCKS and not slot.name
            ):
                continue
            if slot.name is None:
                forming = True
            elif driver.owns(slot.name):
                ours = True
            elif slot.state not in _SETTLED_SLOT:
                foreign = True
        me = id(driver)
        for block in queue.undecided(driver):
            if text_path and any(driver.owns(c.name) for c in block.calls):
                block.claims.add(me)
                view.claimed.append(block)
                view.open_text += sum(driver.owns(c.name) for c in block.calls)
            else:
                block.declines.add(me)
                foreign = True
        ours = ours or (text_path and view.open_text > 0)
        is_open, name = queue.forming()
        if is_open and not text_path:
            queue.decline_forming(driver)
        elif is_open and name is None:
            forming = True
        elif is_open and driver.owns(name):
            ours = True
        elif is_open:
            queue.decline_forming(driver)
            foreign = True
        if ours:
            return "owned"
        if forming:
            return "forming"
        if foreign:
            return "foreign"
        return "broken" if view.state in HOLDS else "text"

    def _open_text_calls(self) -> list[tuple[CallKey, ExtractedCall]]:
        """The owned calls of claimed blocks not answered yet (answered blocks drop out)."""
        answered, open_calls, still = self.view.answered, [], []
        for block in self.view.claimed:
            calls = [
                (("text", block.index, n), call)
                for n, call in enumerate(block.calls)
                if self.driver.owns(call.name) and ("text", block.index, n) not in answered
            ]
            if calls:
                still.append(block)
            open_calls += [
                (key, ExtractedCall(call.id, call.name, call.arguments, _slot(block, key[2])))
                for key, call in calls
            ]
        self.view.claimed[:] = still
        return open_calls

    # -- answering --------------------------------------------------------------------

    def _answer_native(self) -> list[tuple[CallKey, Answer]]:
        buffer, driver, view = self.buffer, self.driver, self.view
        gate = buffer.gate
        if gate is None:
            return []
        answers: list[tuple[CallKey, Answer]] = []
        for slot in buffer.releasable():
            key = ("slot", slot.key)
            arguments = slot.arguments if slot.arguments is not None else slot.early
            if driver.owns(slot.name) and key not in view.answered and isinstance(arguments, dict):
                call = ExtractedCall(slot.id, cast(str, slot.name), arguments, slot.key)
                answers.append((key, driver.prepare(call, buffer.ledger)))
        if gate.turn in _TURN_BLOCKS:
            first = _first_error(buffer.findings)
            planned = {key for key, _ in answers}
            for slot in buffer.slots:
                key = ("slot", slot.key)
                if not driver.owns(slot.name) or key in view.answered or key in planned:
                    continue
                own = _first_error(f for f in buffer.findings if f.slot == slot.key)
                call = ExtractedCall(slot.id, cast(str, slot.name), {}, slot.key)
                problem = own or first or finding("malformed_chunk", "the turn was blocked")
                answers.append((key, refusal(call, problem, sibling=own is None)))
        return answers

    def _answer_text(self) -> list[tuple[CallKey, Answer]]:
        buffer, driver = self.buffer, self.driver
        turn = buffer.turn_state
        if turn in _TURN_BLOCKS:
            problem = _first_error(buffer.findings) or finding(
                "malformed_chunk", "the turn was blocked"
            )
            return [(key, refusal(call, problem)) for key, call in self._open_text_calls()]
        per_call = buffer.policy_rule.per_call
        if not per_call and (turn not in _FINAL_TURN or not buffer.text_queue.ended):
            return []
        pending = list(self._open_text_calls())
        if not per_call:
            problems = [driver.schemas.check(c.name, c.arguments, c.slot) for _, c in pending]
            first = next((p for p in problems if p is not None), None)
            if first is not None:
                return [
                    (
                        key,
                        refusal(call, problem)
                        if problem is not None
                        else refusal(call, first, sibling=True),
                    )
                    for (key, call), problem in zip(pending, problems, strict=True)
                ]
        return [(key, driver.prepare(call, buffer.ledger)) for key, call in pending]

    def _record(self, key: CallKey, result: ToolResult) -> None:
        self.view.answered[key] = result
        if key[0] == "text":
            self.view.open_text -= 1
        self.refused = self.refused or result.refused


def _slot(block: TextBlock, n: int) -> str:
    return f"text-{block.index}.{n}"


def _first_error(findings: Iterable[Finding]) -> Finding | None:
    return next((f for f in findings if f.severity == "error"), None)
