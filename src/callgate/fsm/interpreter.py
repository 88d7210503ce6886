"""Run a :class:`~callgate.fsm.table.Table` through one precomputed dict lookup per event.

One :class:`Interpreter` is built per table and shared by every instance of that machine
(a slot machine per tool call shares its table, as h2 shares one stream table): the
per-instance state is a single string. An event the current state does not accept raises
:class:`TransitionError` naming the machine, the state and the event, and changes nothing.
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

from callgate.errors import TransitionError
from callgate.fsm.table import Table, Transition

S = TypeVar("S", bound=str)
"""A machine's state names (its ``Literal`` alias, such as ``SlotState``)."""


class Interpreter(Generic[S]):
    """The fast runner of one table: ``step(state, event)`` is a single dict lookup.

    Typed by the machine's state names: ``Interpreter[SlotState](SLOT)`` steps to a
    ``SlotState``. Besides stepping it answers what the table says of a state (final,
    tags, status) through lookups precomputed once.
    """

    __slots__ = ("_final", "_lookup", "_status", "_tags", "initial", "table")

    def __init__(self, table: Table) -> None:
        self.table = table
        self.initial: S = cast(S, table.initial)
        self._final = table.final_states
        self._tags = {s.name: s.tags for s in table.states}
        self._status = {s.name: s.status for s in table.states}
        self._lookup: dict[tuple[str, str], Transition] = {
            (t.source, t.event): t for t in table.transitions
        }

    def transition(self, state: str, event: str) -> Transition:
        """The transition taken from ``state`` on ``event``; raises if there is none."""
        try:
            return self._lookup[state, event]
        except KeyError:
            raise TransitionError(self.table.name, state, event) from None

    def find(self, state: str, event: str) -> Transition | None:
        """The transition taken from ``state`` on ``event``, or None if there is none."""
        return self._lookup.get((state, event))

    def step(self, state: str, event: str) -> S:
        """The state reached from ``state`` on ``event``; raises if there is none."""
        try:
            return self._lookup[state, event].target  # type: ignore[return-value]  # no cast() call
        except KeyError:
            raise TransitionError(self.table.name, state, event) from None

    def accepts(self, state: str, event: str) -> bool:
        """Whether ``state`` has a transition for ``event``."""
        return (state, event) in self._lookup

    def target(self, transition: Transition) -> S:
        """The state ``transition`` leads to, typed as this machine's state.

        A hot path (every transition): typed by an ignore rather than a ``cast()`` call.
        """
        return transition.target  # type: ignore[return-value]

    def run(self, events: list[str] | tuple[str, ...], state: str | None = None) -> S:
        """Feed ``events`` in order from ``state`` (default: initial); the state reached."""
        current: S = self.initial if state is None else cast(S, state)
        for event in events:
            current = self.step(current, event)
        return current

    def is_final(self, state: str) -> bool:
        """Whether ``state`` is one of the table's final states."""
        return state in self._final

    def has(self, state: str, tag: str) -> bool:
        """Whether ``state`` carries ``tag`` in the table."""
        return tag in self._tags[state]

    def status(self, state: str) -> str | None:
        """The status ``state`` stands for in the table (None: none)."""
        return self._status[state]
