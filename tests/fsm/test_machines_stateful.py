"""Stateful runs of the machines: interpreter and bridge in lockstep, final states absorbing."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from transitions import MachineError

from callgate.fsm import DISPLAY, SLOT, TURN, Interpreter, Table, TransitionError
from callgate.fsm.bridge import to_transitions
from callgate.fsm.display import HOLDS, STATUS
from wire_common import SLOT_RANK

BLOCKED = "blocked"
"""The absorbing state both machines share; most random events lead there at once."""


def lockstep(table: Table) -> type[RuleBasedStateMachine]:
    """A state machine test that fires events at the interpreter and the bridge together.

    Random events end in ``blocked`` within a few steps, so rules also fire accepted and
    unblocking events, and start a fresh instance (a next slot or turn) from a final state.
    """
    interpreter = Interpreter(table)

    def unblocking(state: str) -> list[str]:
        return [t.event for t in table.outgoing(state) if t.target != BLOCKED]

    class Lockstep(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.start()

        def start(self) -> None:
            self.model: Any = to_transitions(table).models[0]
            self.previous = table.initial
            self.state = table.initial

        def fire(self, event: str) -> None:
            self.previous = self.state
            try:
                self.state = interpreter.step(self.state, event)
            except TransitionError:
                try:
                    self.model.trigger(event)
                except MachineError:
                    return
                raise AssertionError(f"bridge accepted {event!r} in {self.previous!r}") from None
            self.model.trigger(event)

        @rule(event=st.sampled_from(table.event_names))
        def any_event(self, event: str) -> None:
            self.fire(event)

        @precondition(lambda self: bool(table.outgoing(self.state)))
        @rule(data=st.data())
        def accepted_event(self, data: st.DataObject) -> None:
            events = [t.event for t in table.outgoing(self.state)]
            self.fire(data.draw(st.sampled_from(events), label="accepted event"))

        @precondition(lambda self: bool(unblocking(self.state)))
        @rule(data=st.data())
        def unblocking_event(self, data: st.DataObject) -> None:
            self.fire(data.draw(st.sampled_from(unblocking(self.state)), label="unblocking event"))

        @precondition(lambda self: interpreter.is_final(self.state))
        @rule()
        def next_instance(self) -> None:
            self.start()

        @invariant()
        def states_agree(self) -> None:
            assert self.model.state == self.state

        @invariant()
        def final_states_are_never_left(self) -> None:
            if interpreter.is_final(self.previous):
                assert interpreter.is_final(self.state), (self.previous, self.state)

    Lockstep.__name__ = Lockstep.__qualname__ = f"{table.name.title()}Lockstep"
    return Lockstep


class SlotLockstep(lockstep(SLOT)):  # type: ignore[misc]
    @invariant()
    def blocked_never_changes(self) -> None:
        if self.previous == "blocked":
            assert self.state == "blocked"

    @invariant()
    def progress_rank_never_decreases(self) -> None:
        assert SLOT_RANK[self.state] >= SLOT_RANK[self.previous], (self.previous, self.state)


TurnLockstep = lockstep(TURN)


class DisplayLockstep(lockstep(DISPLAY)):  # type: ignore[misc]
    @invariant()
    def a_held_display_ends_only_through_a_decision(self) -> None:
        if self.previous in HOLDS and self.state not in HOLDS:
            assert self.state in ("executed", "failed", "released", "ended"), self.previous

    @invariant()
    def pending_never_ends_without_an_answer(self) -> None:
        if self.previous == "pending" and self.state != "pending":
            # holding: the pending block broke (no call) and another one is forming
            assert self.state in ("executed", "failed", "released", "holding"), self.state

    @invariant()
    def every_state_has_a_status(self) -> None:
        assert self.state in STATUS
        assert (STATUS[self.state] == "call_pending") == (self.state in HOLDS)


TestSlotLockstep = SlotLockstep.TestCase
TestTurnLockstep = TurnLockstep.TestCase
TestDisplayLockstep = DisplayLockstep.TestCase


def test_slot_rank_covers_every_slot_state() -> None:
    assert set(SLOT_RANK) == set(SLOT.state_names)
