"""The display machine: one driver's hold/release decision over one stream.

Theory of operation: after each chunk the driver looks at the turn once and fires one
observation, the strongest that holds: ``owned`` (a call naming one of its tools has
not run yet), ``forming`` (a call is coming whose tool is not known yet), ``foreign``
(the call names a tool this driver does not own), ``broken`` (the held block was no
call after all) or ``text`` (nothing of this driver's is forming). Then, when the policy
lets its complete calls run, ``allow`` (they ran) or ``refuse`` (they were blocked and
answered with a corrective result). ``holding`` and ``pending`` hold the display;
``released`` lets held text through as text. ``end`` comes once the stream is over and
nothing of the driver's is pending: a pending call must be allowed or refused first.

The state after a step is the driver's status for that step (:data:`STATUS`).
"""

from __future__ import annotations

from typing import Literal

from callgate.fsm.table import Event, State, Table, Transition

DisplayState = Literal["flowing", "holding", "pending", "released", "executed", "failed", "ended"]
"""The display machine's state names (a test checks them against :data:`DISPLAY`)."""

EVENTS = (
    Event("text", "nothing of this driver's is forming: prose flows"),
    Event("forming", "a call is forming; its tool is not known yet"),
    Event("owned", "a call names a tool of this driver and has not run yet"),
    Event("foreign", "the call names a tool this driver does not own"),
    Event("broken", "the held block turned out to be no call"),
    Event("allow", "the policy lets this driver's complete calls run: they ran"),
    Event("refuse", "this driver's call was blocked: answered with a corrective result"),
    Event("end", "the stream is over and nothing of this driver's is pending"),
)

# fmt: off
STATES = (
    State("flowing", "prose flows to the user", tags={"settled"}),
    State("holding", "a call is forming: the display is held until its tool is known",
          tags={"holds"}, status="call_pending"),
    State("pending", "the call is this driver's: held until the policy lets it run",
          tags={"holds"}, status="call_pending"),
    State("released", "the call is not this driver's, or was no call: held text flows",
          tags={"settled"}),
    State("executed", "this driver's calls ran in this step", tags={"settled"},
          status="call_executed"),
    State("failed", "this driver's call was blocked and answered with an error result",
          tags={"settled"}, status="call_failed"),
    State("ended", "the stream is over", final=True),
)
# fmt: on

_SETTLED = tuple(s.name for s in STATES if "settled" in s.tags)
"""States in which nothing of the driver's is held (tag ``settled``): each new observation
starts afresh."""

# fmt: off
TRANSITIONS = (
    *(
        t
        for source in _SETTLED
        for t in (
            Transition(source, "text", "flowing", "prose flows"),
            Transition(source, "forming", "holding", "a call starts forming: hold"),
            Transition(source, "owned", "pending", "a call of ours: hold until it may run"),
            Transition(source, "foreign", "released", "not our tool: it flows as text"),
            Transition(source, "broken", "released", "no call: the held text flows"),
            Transition(source, "end", "ended", "the stream is over"),
        )
    ),
    Transition("holding", "forming", "holding", "still forming"),
    Transition("holding", "owned", "pending", "the name is one of our tools"),
    Transition("holding", "foreign", "released", "the name is not ours: release as text"),
    Transition("holding", "broken", "released", "it was no call: release as text"),
    Transition("holding", "text", "released", "what formed was not ours to hold"),
    Transition("holding", "end", "ended", "the stream ended before a name; nothing runs"),
    Transition("pending", "owned", "pending", "ours, and not yet allowed to run"),
    Transition("pending", "broken", "released", "our block broke: it was no call"),
    Transition("pending", "forming", "holding", "our block broke and another is forming"),
    Transition("pending", "foreign", "released", "our block broke; what follows is not ours"),
    Transition("pending", "allow", "executed", "the policy allows it: it runs"),
    Transition("pending", "refuse", "failed", "blocked: a corrective result, nothing runs"),
    Transition("ended", "end", "ended", "the end is reported once more"),
)
# fmt: on

DISPLAY = Table(
    name="display",
    doc="One driver over one stream: flowing, holding, pending, then executed, failed or released.",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="flowing",
)

STATUS: dict[str, str | None] = {s.name: s.status for s in STATES}
"""The driver status each display state stands for (``None``: no call), from the table."""

HOLDS = DISPLAY.tagged("holds")
"""States in which the driver holds the display (tag ``holds``)."""

OBSERVATIONS = ("owned", "forming", "foreign")
"""A step's observations, strongest first: the first one that holds fires; when none does,
``broken`` fires in a state that holds the display and ``text`` elsewhere."""
STATUS_RANK: dict[str | None, int] = {
    None: 0,
    "call_pending": 1,
    "call_executed": 2,
    "call_failed": 3,
}
"""The statuses from weakest to strongest: several drivers' (or steps') status is the strongest."""
ON_ERROR: dict[str | None, str | None] = {"call_executed": "call_failed"}
"""A step's status when one of its results is an error: a call that ran and raised failed."""
