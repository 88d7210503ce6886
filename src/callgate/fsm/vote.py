"""The vote machine: whether a call block found in the text is hidden, shown, or waits.

Theory of operation: several drivers may look at one stream, and a block of text that
parsed as calls is each driver's to claim or decline. When the display reaches the block
it fires one event from the votes so far: ``claim`` when some driver claimed a call of
it (the call is that driver's: its markup is hidden), ``decline`` when every driver
looking at the stream declined it or has ended (nobody owns it: it is shown as ordinary
text), otherwise ``wait`` (a driver has not voted yet: the text after it waits).
A claim wins over declines: a driver's own call is never shown as text.
"""

from __future__ import annotations

from typing import Literal

from callgate.fsm.table import Event, State, Table, Transition

VoteState = Literal["undecided", "owned", "unowned"]
"""The vote machine's state names (a test checks them against :data:`VOTE`)."""

EVENTS = (
    Event("claim", "some driver claimed a call of the block"),
    Event("decline", "every driver looking at the stream declined the block, or has ended"),
    Event("wait", "no claim yet, and some driver has not voted"),
)

# fmt: off
STATES = (
    State("undecided", "the block waits for the drivers' votes; the text after it is held",
          tags={"holds"}),
    State("owned", "a driver owns the block: its markup is never shown", final=True,
          tags={"hides"}),
    State("unowned", "nobody owns the block: it is shown as ordinary text", final=True,
          tags={"shows"}),
)

TRANSITIONS = (
    Transition("undecided", "claim", "owned", "a claim wins over any decline"),
    Transition("undecided", "decline", "unowned", "nobody claims it: it flows as text",
               guard="every_driver_declined"),
    Transition("undecided", "wait", "undecided", "wait for the drivers still to vote"),
)
# fmt: on

VOTE = Table(
    name="vote",
    doc="One call block in the text, voted on by the drivers: undecided, then owned (hidden) "
    "or unowned (shown).",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="undecided",
)
