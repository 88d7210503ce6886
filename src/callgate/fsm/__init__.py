"""The machine core: tables as data, their interpreter, export, and the machines themselves.

Importing this package loads neither ``transitions`` nor ``graphviz``.
"""

from callgate.fsm.detector import DETECTOR
from callgate.fsm.display import DISPLAY
from callgate.fsm.interpreter import Interpreter, TransitionError
from callgate.fsm.slot import SLOT
from callgate.fsm.table import Event, State, Table, TableError, Transition
from callgate.fsm.turn import TURN

MACHINES: dict[str, Table] = {
    "slot": SLOT,
    "turn": TURN,
    "detector": DETECTOR,
    "display": DISPLAY,
}
"""Every machine callgate runs, by the name the command line uses."""

__all__ = [
    "DETECTOR",
    "DISPLAY",
    "MACHINES",
    "SLOT",
    "TURN",
    "Event",
    "Interpreter",
    "State",
    "Table",
    "TableError",
    "Transition",
    "TransitionError",
]
