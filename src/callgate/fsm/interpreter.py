"""Run a :class:`~callgate.fsm.table.Table` through one precomputed dict lookup per event.

One :class:`Interpreter` is built per table and shared by every instance of that machine
(a slot machine per tool call shares its table, as h2 shares one stream table): the
per-instance state is a single string. An event the current state does not accept raises
:class:`TransitionError` naming the machine, the state and the event, and changes nothing.
"""

from __future__ import annotations

from callgate.fsm.table import Table, Transition


class TransitionError(RuntimeError):
    """The caller fed a machine an event that its current state does not accept."""

    def __init__(self, machine: str, state: str, event: str) -> None:
        super().__init__(f"machine {machine!r} cannot handle event {event!r} in state {state!r}")
        self.machine = machine
        self.state = state
        self.event = event


class Interpreter:
    """The fast runner of one table: ``step(state, event)`` is a single dict lookup."""

    __slots__ = ("_final", "_lookup", "initial", "table")

    def __init__(self, table: Table) -> None:
        self.table = table
        self.initial = table.initial
        self._final = table.final_states
        self._lookup: dict[tuple[str, str], Transition] = {
            (t.source, t.event): t for t in table.transitions
        }

    def transition(self, state: str, event: str) -> Transition:
        """The transition taken from ``state`` on ``event``; raises if there is none."""
        try:
            return self._lookup[state, event]
        except KeyError:
            raise TransitionError(self.table.name, state, event) from None

    def step(self, state: str, event: str) -> str:
        """The state reached from ``state`` on ``event``; raises if there is none."""
        try:
            return self._lookup[state, event].target
        except KeyError:
            raise TransitionError(self.table.name, state, event) from None

    def accepts(self, state: str, event: str) -> bool:
        """Whether ``state`` has a transition for ``event``."""
        return (state, event) in self._lookup

    def run(self, events: list[str] | tuple[str, ...], state: str | None = None) -> str:
        """Feed ``events`` in order from ``state`` (default: initial); the state reached."""
        current = self.initial if state is None else state
        for event in events:
            current = self.step(current, event)
        return current

    def is_final(self, state: str) -> bool:
        """Whether ``state`` is one of the table's final states."""
        return state in self._final
