"""The verdict machine: a played turn's verdict from its turn machine and its text calls.

Theory of operation: the turn machine speaks first (``turn_runs``: it is executable,
``turn_blocked``: it blocked; any other state, ``turn_open``, leaves the verdict to the
text). Calls read from the text enter the same gate: one that is refused blocks the turn
machine of a turn of text calls, and beside native calls they are set aside by the
release table (:mod:`callgate.fsm.release`), so once the turn machine decided, no text
call is read. Otherwise each call read from the turn's text fires ``ran`` or
``refused``, and ``end`` closes the run: ``pass`` when every text call ran, ``fail`` when
one was refused, ``not_applicable`` when the turn had no call at all. These are the words
of ``callgate check``, ``callgate replay``, ``LLMStreamBuffer.verdict`` and the loops: the
gate gathers the events (``TurnGate.verdict_events``) and :func:`decide` runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal, cast

from callgate.fsm.interpreter import Interpreter
from callgate.fsm.table import Event, State, Table, Transition

Verdict = Literal["pass", "fail", "not_applicable"]
"""A played turn's verdict: the final states of :data:`VERDICT` (a test checks them)."""

VerdictState = Literal["reading", "by_text", "text_passing", "pass", "fail", "not_applicable"]
"""The verdict machine's state names (a test checks them against :data:`VERDICT`)."""

EVENTS = (
    Event("turn_runs", "the turn machine is executable"),
    Event("turn_blocked", "the turn machine is blocked"),
    Event("turn_open", "the turn machine decided nothing: the text calls decide"),
    Event("ran", "a call read from the turn's text ran"),
    Event("refused", "a call read from the turn's text was refused"),
    Event("end", "no more text calls"),
)

_TEXT_EVENTS = ("ran", "refused", "end")

# fmt: off
STATES = (
    State("reading", "the turn machine's state is read first"),
    State("by_text", "no native verdict and no text call yet"),
    State("text_passing", "no native verdict; every text call so far ran"),
    State("pass", "every call ran", final=True, tags={"runs", "applicable"}),
    State("fail", "a call was refused, or the turn blocked", final=True,
          tags={"applicable"}),
    State("not_applicable", "the turn had no call", final=True),
)

TRANSITIONS = (
    Transition("reading", "turn_runs", "pass", "native calls decide: they ran"),
    Transition("reading", "turn_blocked", "fail", "native calls decide: they were refused"),
    Transition("reading", "turn_open", "by_text", "the text calls decide"),
    Transition("by_text", "ran", "text_passing", "a text call ran"),
    Transition("by_text", "refused", "fail", "a text call was refused"),
    Transition("by_text", "end", "not_applicable", "no call at all"),
    Transition("text_passing", "ran", "text_passing", "another text call ran"),
    Transition("text_passing", "refused", "fail", "a text call was refused"),
    Transition("text_passing", "end", "pass", "every text call ran"),
    *(Transition(final, e, final, "the verdict stands") for final in ("pass", "fail")
      for e in _TEXT_EVENTS),
)
# fmt: on

VERDICT = Table(
    name="verdict",
    doc="A played turn's verdict: the turn machine first, then the text calls; pass, fail "
    "or not_applicable.",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="reading",
)

_VERDICT = Interpreter[VerdictState](VERDICT)


def decide(
    events: Iterable[str], on_step: Callable[[str, str, str], None] | None = None
) -> Verdict:
    """Run the verdict machine over ``events``; ``on_step(source, event, target)`` sees each."""
    state = _VERDICT.initial
    for event in events:
        target = _VERDICT.step(state, event)
        if on_step is not None:
            on_step(state, event, target)
        state = target
    return cast(Verdict, state)
