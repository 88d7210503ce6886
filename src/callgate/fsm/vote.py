"""The vote machine: whether a call block found in the text is hidden or shown.

Theory of operation: the detector found a block of text that parsed as calls. It is a
call block when one of its calls names a tool of the turn (a tool the buffer's schemas
declare, the union of every driver's in an ``Orchestrator``): its calls then enter the
turn's gate as whole calls and the block fires ``claim`` (its markup is never shown).
Otherwise it fires ``decline``: nobody owns it, and it is shown as ordinary text, never a
call and never a failure. The decision is the turn's, not a driver's: it is the same
from every entry point (``check``, ``replay``, the bare buffer, the loops).
"""

from __future__ import annotations

from typing import Literal

from callgate.fsm.table import Event, State, Table, Transition

VoteState = Literal["undecided", "owned", "unowned"]
"""The vote machine's state names (a test checks them against :data:`VOTE`)."""

EVENTS = (
    Event("claim", "a call of the block names a tool of the turn: the calls entered the gate"),
    Event("decline", "no call of the block names a tool of the turn"),
)

# fmt: off
STATES = (
    State("undecided", "the block was just found", tags={"holds"}),
    State("owned", "a call block: its markup is never shown", final=True, tags={"hides"}),
    State("unowned", "nobody owns the block: it is shown as ordinary text", final=True,
          tags={"shows"}),
)

TRANSITIONS = (
    Transition("undecided", "claim", "owned", "its calls are the turn's: hidden"),
    Transition("undecided", "decline", "unowned", "nobody owns it: it flows as text"),
)
# fmt: on

VOTE = Table(
    name="vote",
    doc="One call block in the text: undecided, then owned (hidden) or unowned (shown).",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="undecided",
)
