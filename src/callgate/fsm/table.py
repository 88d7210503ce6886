"""A state machine as data: states, events and transitions, checked when built.

Theory of operation: a :class:`Table` is an immutable description of one machine. Every
other view of the machine is derived from it: :mod:`callgate.fsm.interpreter` runs it
through a precomputed lookup, :mod:`callgate.fsm.export` writes and reads it as JSON,
:mod:`callgate.fsm.bridge` builds a ``transitions.Machine`` from it and
:mod:`callgate.diagrams` draws it. Nothing about a machine's behaviour lives outside its
table.

A transition is keyed by ``(source, event)``: the table is deterministic. ``guard`` and
``output`` are names, not code: ``guard`` documents the condition under which the caller
raises the event (the caller classifies its input into events; the table never evaluates
anything), ``output`` names what the transition reports (a finding code, for example).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from attrs import field, frozen

from callgate.errors import TableError


def _tags(items: Iterable[str]) -> frozenset[str]:
    return frozenset(items)


@frozen
class State:
    """One state of a machine and its properties, which the code above the tables asks.

    ``final`` marks a state where a run may end. ``tags`` name what else holds in the
    state (``holds``: the display is held; ``settled``: nothing is held; ``blocks``: the
    run is refused), so code asks ``table.tagged("holds")`` instead of listing state names.
    ``status`` is the word the state stands for outside the machine, if any (the display
    state's driver status, for example).
    """

    name: str
    doc: str
    final: bool = False
    tags: frozenset[str] = field(default=frozenset(), converter=_tags)
    status: str | None = None


@frozen
class Event:
    """One input a machine accepts in at least one state."""

    name: str
    doc: str


@frozen
class Transition:
    """``source --event--> target``, with the names of its guard and output, if any."""

    source: str
    event: str
    target: str
    doc: str
    guard: str | None = None
    output: str | None = None


def _tuple(items: Iterable[object]) -> tuple[object, ...]:
    return tuple(items)


@frozen
class Table:
    """An immutable machine definition, validated on construction (see :meth:`validate`)."""

    name: str
    doc: str
    states: tuple[State, ...] = field(converter=_tuple)
    events: tuple[Event, ...] = field(converter=_tuple)
    transitions: tuple[Transition, ...] = field(converter=_tuple)
    initial: str

    def __attrs_post_init__(self) -> None:
        self.validate()

    @property
    def state_names(self) -> tuple[str, ...]:
        """State names in definition order."""
        return tuple(s.name for s in self.states)

    @property
    def event_names(self) -> tuple[str, ...]:
        """Event names in definition order."""
        return tuple(e.name for e in self.events)

    @property
    def final_states(self) -> frozenset[str]:
        """Names of the states where a run may end."""
        return frozenset(s.name for s in self.states if s.final)

    def is_final(self, name: str) -> bool:
        """Whether the state called ``name`` is final; KeyError if the machine has none."""
        return self.state(name).final

    def tagged(self, tag: str) -> frozenset[str]:
        """Names of the states that carry ``tag`` (empty when none does)."""
        return frozenset(s.name for s in self.states if tag in s.tags)

    @property
    def tag_names(self) -> tuple[str, ...]:
        """Every tag some state carries, sorted."""
        return tuple(sorted({t for s in self.states for t in s.tags}))

    def status(self, name: str) -> str | None:
        """The status the state called ``name`` stands for (None: none)."""
        return self.state(name).status

    def state(self, name: str) -> State:
        """The state called ``name``; KeyError if the machine has none."""
        for s in self.states:
            if s.name == name:
                return s
        raise KeyError(f"machine {self.name!r} has no state {name!r}")

    def outgoing(self, source: str) -> tuple[Transition, ...]:
        """Transitions leaving ``source``, in definition order."""
        return tuple(t for t in self.transitions if t.source == source)

    def validate(self) -> None:
        """Check the definition; raise :class:`TableError` naming the first problem.

        Rules: names are unique; every transition names known states and events; the
        table is deterministic (one transition per ``(source, event)``); every event is
        used; every state is reachable from the initial one; every state can reach a final
        state; and no transition leaves the set of final states (final states absorb).
        """
        fail = self._fail
        names = self.state_names
        for kind, listed in (("state", names), ("event", self.event_names)):
            repeated = sorted({n for n in listed if listed.count(n) > 1})
            if repeated:
                fail(f"{kind} names are not unique: {', '.join(repeated)}")
        for s in self.states:
            for tag in sorted(s.tags):
                if not isinstance(tag, str) or not tag:
                    fail(f"state {s.name!r} has a tag that is not a non-empty string: {tag!r}")
                if tag == "final":
                    fail(f"state {s.name!r}: the tag 'final' is the final flag's, not a tag")
        if not any(s.final for s in self.states):
            fail("no final state")
        known_states, known_events = set(names), set(self.event_names)
        if self.initial not in known_states:
            fail(f"initial state {self.initial!r} is not a state")
        seen: set[tuple[str, str]] = set()
        used_events: set[str] = set()
        final = self.final_states
        for t in self.transitions:
            for where in (t.source, t.target):
                if where not in known_states:
                    fail(f"transition {t.source}--{t.event}-->{t.target}: unknown state {where!r}")
            if t.event not in known_events:
                fail(f"transition {t.source}--{t.event}-->{t.target}: unknown event {t.event!r}")
            if (t.source, t.event) in seen:
                fail(f"not deterministic: two transitions for event {t.event!r} in {t.source!r}")
            seen.add((t.source, t.event))
            used_events.add(t.event)
            if t.source in final and t.target not in final:
                fail(f"final state {t.source!r} is left by {t.event!r} to {t.target!r}")
        unused = [e for e in self.event_names if e not in used_events]
        if unused:
            fail(f"events never used: {', '.join(unused)}")
        reachable = self._closure({self.initial}, forward=True)
        unreachable = [n for n in names if n not in reachable]
        if unreachable:
            fail(f"states unreachable from {self.initial!r}: {', '.join(unreachable)}")
        can_finish = self._closure(set(final), forward=False)
        stuck = [n for n in names if n not in can_finish]
        if stuck:
            fail(f"states that can never reach a final state: {', '.join(stuck)}")

    def _closure(self, start: set[str], *, forward: bool) -> set[str]:
        edges: dict[str, set[str]] = {}
        for t in self.transitions:
            a, b = (t.source, t.target) if forward else (t.target, t.source)
            edges.setdefault(a, set()).add(b)
        found, todo = set(start), deque(start)
        while todo:
            for nxt in edges.get(todo.popleft(), ()):
                if nxt not in found:
                    found.add(nxt)
                    todo.append(nxt)
        return found

    def _fail(self, problem: str) -> None:
        raise TableError(self.name, problem)
