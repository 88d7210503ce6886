"""The turn gate: one per assistant turn; all of its calls run, or none does.

Theory of operation: the turn stays ``streaming`` while chunks arrive; every slot that
opens fires ``call``, every slot that is blocked (or a turn-wide limit) fires ``block``.
Turn-level terminal evidence fires ``done`` (a second one blocks the turn), the end of the
stream fires ``end``; either makes the turn ``complete``; the gate then fires ``pass``
when every slot validated, ``fail`` when one
did not, or ``empty`` when the turn had no tool call at all (``not_applicable``). The
gate is atomic: one blocked slot blocks every call of the turn, also after the turn was
found executable (a fragment after the end, for example).

A state's ``status`` is what ``callgate check`` reports for a turn in it: ``pass`` only
when executable, ``not_applicable`` without any call, otherwise ``fail``.
"""

from __future__ import annotations

from typing import Literal

from callgate.fsm.table import Event, State, Table, Transition

TurnState = Literal["streaming", "complete", "executable", "blocked", "not_applicable"]
"""The turn machine's state names (a test checks them against :data:`TURN`)."""

EVENTS = (
    Event("call", "a slot of this turn opened"),
    Event("block", "a slot was blocked, or a turn-wide fault was found"),
    Event("done", "turn-level terminal evidence from the provider"),
    Event("end", "the stream ended; no more input will come"),
    Event("pass", "every slot of the complete turn validated"),
    Event("fail", "some slot of the complete turn is not validated"),
    Event("empty", "the complete turn has no tool call"),
)

# fmt: off
STATES = (
    State("streaming", "chunks are arriving", tags={"receiving"}, status="fail"),
    State("complete", "the turn ended; the verdict is being taken", tags={"deciding"},
          status="fail"),
    State("executable", "every call is complete, unambiguous and valid", final=True,
          tags={"runs"}, status="pass"),
    State("blocked", "no call of this turn may run", final=True, tags={"blocks"},
          status="fail"),
    State("not_applicable", "the turn carried no tool call", final=True, tags={"no_calls"},
          status="not_applicable"),
)
# fmt: on

# fmt: off
TRANSITIONS = (
    Transition("streaming", "call", "streaming", "another call joins the turn"),
    Transition("streaming", "block", "blocked", "one blocked call blocks the turn"),
    Transition("streaming", "done", "complete", "terminal evidence for the turn"),
    Transition("streaming", "end", "complete", "the stream ended (its slots say whether in time)"),
    Transition("complete", "pass", "executable", "all calls validated"),
    Transition("complete", "fail", "blocked", "a call did not validate"),
    Transition("complete", "empty", "not_applicable", "text only"),
    Transition("complete", "block", "blocked", "a call was blocked"),
    Transition("executable", "call", "blocked", "a call opened after the turn ended",
               output="delta_after_terminal"),
    Transition("executable", "block", "blocked", "a late fault blocks the turn"),
    Transition("executable", "done", "blocked", "a second turn-level terminal event",
               output="duplicate_terminal"),
    Transition("executable", "end", "executable", "the stream ends after the turn"),
    Transition("not_applicable", "call", "blocked", "a call opened after the turn ended",
               output="delta_after_terminal"),
    Transition("not_applicable", "block", "blocked", "a late fault blocks the turn"),
    Transition("not_applicable", "done", "blocked", "a second turn-level terminal event",
               output="duplicate_terminal"),
    Transition("not_applicable", "end", "not_applicable", "the stream ends after the turn"),
    *(Transition("blocked", e.name, "blocked", "after blocked nothing changes") for e in EVENTS),
)
# fmt: on

TURN = Table(
    name="turn",
    doc="One assistant turn: streaming, complete, then executable, blocked or not_applicable.",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="streaming",
)
