"""The machine core: tables as data, their interpreter, export, and the machines themselves.

Importing this package loads neither ``transitions`` nor ``graphviz``.
"""

from callgate.errors import TableError, TransitionError
from callgate.fsm.detector import DETECTOR, DetectorState
from callgate.fsm.display import DISPLAY, DisplayState
from callgate.fsm.interpreter import Interpreter
from callgate.fsm.release import RELEASE, Policy, ReleaseState
from callgate.fsm.slot import SLOT, SlotState
from callgate.fsm.table import Event, State, Table, Transition
from callgate.fsm.turn import TURN, TurnState
from callgate.fsm.verdict import VERDICT, Verdict, VerdictState
from callgate.fsm.vote import VOTE, VoteState

MACHINES: dict[str, Table] = {
    "slot": SLOT,
    "turn": TURN,
    "detector": DETECTOR,
    "display": DISPLAY,
    "release": RELEASE,
    "vote": VOTE,
    "verdict": VERDICT,
}
"""Every machine callgate runs, by the name the command line uses: the four machines of a
stream, then the decisions above them (the release policy, the drivers' vote on a text
block, the verdict of a played turn)."""

__all__ = [
    "DETECTOR",
    "DISPLAY",
    "MACHINES",
    "RELEASE",
    "SLOT",
    "TURN",
    "VERDICT",
    "VOTE",
    "DetectorState",
    "DisplayState",
    "Event",
    "Interpreter",
    "Policy",
    "ReleaseState",
    "SlotState",
    "State",
    "Table",
    "TableError",
    "Transition",
    "TransitionError",
    "TurnState",
    "Verdict",
    "VerdictState",
    "VoteState",
]
