"""The release machine: when one tool call may run, under each release policy.

Theory of operation: a policy is the first event of this table (``turn``, ``call`` or
``parseable``); it leads to the state that waits for that policy's evidence. The caller
then fires the evidence it has for the call: the turn's verdict (``turn_pass``,
``turn_block``) or the call's own (``call_valid``: its own done arrived and it
validated; ``args_valid``: its arguments closed, parse and validate before any terminal
evidence). ``released`` means the call may run now; ``blocked`` that it never will; ``set_aside``
that a call read from the text of a turn with native calls does not run: native calls
win, and this transition is the only place that says so.

Each waiting state accepts only the evidence its policy reads: under ``turn`` (the
default, safe) only the turn's verdict, so every call of a turn runs together or none
does. Under ``call`` also a call's own done, in formats that have one; atomicity then
covers only calls not yet released. ``parseable`` also reads arguments that parse:
document 000's rule, unsafe and opt-in. A :class:`Policy` is the value built from the
table for one policy; the caller gathers only the evidence it accepts.
"""

from __future__ import annotations

from typing import Literal, cast

from attrs import frozen

from callgate.fsm.table import Event, State, Table, Transition

ReleaseState = Literal[
    "choosing", "at_turn_end", "at_call_done", "at_parse", "released", "blocked", "set_aside"
]
"""The release machine's state names (a test checks them against :data:`RELEASE`)."""

EVENTS = (
    Event("turn", "the policy: calls run after the turn's terminal evidence, all together"),
    Event("call", "the policy: a call runs at its own done, where the format has one"),
    Event("parseable", "the policy: a call runs once its arguments parse (unsafe)"),
    Event("turn_pass", "the turn is executable: every call validated"),
    Event("turn_block", "the turn is blocked: no call not yet run may run"),
    Event("call_valid", "the call's own terminal evidence arrived and it validated"),
    Event("args_valid", "the call's arguments closed, parse and validate; no terminal yet"),
    Event("set_aside", "a call read from the text of a turn whose native calls are decided"),
)

# fmt: off
STATES = (
    State("choosing", "no policy chosen yet"),
    State("at_turn_end", "waits for the turn's verdict", tags={"waiting"}),
    State("at_call_done", "waits for the call's own done, or the turn's verdict",
          tags={"waiting"}),
    State("at_parse", "waits for the call's arguments to parse (unsafe)", tags={"waiting"}),
    State("released", "the call may run now", final=True, tags={"runs"}),
    State("blocked", "the call must never run", final=True, tags={"blocks"}),
    State("set_aside", "a text call beside native calls: never run, answered as not run",
          final=True, tags={"aside"}),
)

_WAITING = tuple(s.name for s in STATES if "waiting" in s.tags)

TRANSITIONS = (
    Transition("choosing", "turn", "at_turn_end", "the default policy"),
    Transition("choosing", "call", "at_call_done", "per-call release"),
    Transition("choosing", "parseable", "at_parse", "early release, unsafe", guard="preview"),
    *(
        t
        for source in _WAITING
        for t in (
            Transition(source, "turn_pass", "released", "the turn validated: every call runs"),
            Transition(source, "turn_block", "blocked", "the turn blocked: nothing more runs"),
            Transition(source, "set_aside", "set_aside",
                       "native calls win: a call in the text beside them does not run"),
        )
    ),
    Transition("at_call_done", "call_valid", "released", "its own done released it",
               guard="per_call_done"),
    Transition("at_parse", "call_valid", "released", "done and valid: it runs"),
    Transition("at_parse", "args_valid", "released", "it parses: it runs (unsafe)"),
)
# fmt: on

RELEASE = Table(
    name="release",
    doc="When one tool call may run: a release policy, then the evidence, then released or "
    "blocked.",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="choosing",
)

_RUNS = RELEASE.tagged("runs")
_FINAL = RELEASE.final_states
_TARGET: dict[tuple[str, str], ReleaseState] = {
    (t.source, t.event): cast(ReleaseState, t.target) for t in RELEASE.transitions
}


def _releases(waiting: str, event: str) -> bool:
    return _TARGET.get((waiting, event)) in _RUNS


@frozen
class Policy:
    """One release policy, read off the table: where it waits, and what releases a call.

    ``per_call``: the policy reads a call's own done (a text block's close included);
    ``early``: it reads arguments that parse, before any terminal evidence.
    """

    name: str
    waiting: str
    per_call: bool
    early: bool

    def reads(self, event: str) -> bool:
        """Whether a call waiting under this policy accepts ``event`` as evidence."""
        return (self.waiting, event) in _TARGET

    def releases(self, event: str) -> bool:
        """Whether ``event`` releases a call waiting under this policy (False if unread)."""
        return _releases(self.waiting, event)

    def outcome(self, event: str) -> ReleaseState | None:
        """The final state ``event`` leads a waiting call to, or None (it waits, or unread)."""
        target = _TARGET.get((self.waiting, event))
        return target if target is not None and target in _FINAL else None


POLICIES: dict[str, Policy] = {
    t.event: Policy(
        t.event,
        t.target,
        (t.target, "call_valid") in _TARGET,
        (t.target, "args_valid") in _TARGET,
    )
    for t in RELEASE.transitions
    if t.source == RELEASE.initial
}
"""Every release policy by name, in the table's order (the default, ``turn``, first)."""


def policy(name: str) -> Policy:
    """The policy called ``name``; ValueError naming the choices for any other."""
    try:
        return POLICIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}") from None
