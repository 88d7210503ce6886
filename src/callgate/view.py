"""One driver's view of a stream: the display machine's state and what the driver answered.

Also the :class:`TextBlock`, a call block found in the turn's text.

Drivers are stateless; the buffer's :class:`~callgate.textqueue.TextQueue` keeps a view per
driver, and :mod:`callgate.driver.decision` steps it through the ``display`` machine
(:mod:`callgate.fsm.display`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import define, field

from callgate.fsm.display import DISPLAY, DisplayState
from callgate.fsm.interpreter import Interpreter
from callgate.fsm.vote import VOTE, VoteState
from callgate.gate.turn import CallRef
from callgate.strategies.base import ToolResult
from callgate.strategies.text.base import TextCall

_MACHINE = Interpreter[DisplayState](DISPLAY)
_VOTE = Interpreter[VoteState](VOTE)


@define(eq=False)
class TextBlock:
    """A call block found in the content: its calls, its markup, and whether it is a call."""

    index: int
    format: str
    calls: tuple[TextCall, ...]
    markup: str
    shown: bool
    """End-of-stream formats (bare JSON): the text was shown before the block was known."""
    vote: VoteState = _VOTE.initial
    """The vote machine's state: ``owned`` once its calls entered the gate, else ``unowned``."""


@define(eq=False)
class View:
    """One driver's decisions over this stream: its display state and what it answered."""

    name: str
    state: DisplayState = _MACHINE.initial
    answered: dict[CallRef, ToolResult] = field(factory=dict)
    """Results by call reference (a native slot key or a :class:`TextRef`), in answer order."""
    seen: int = 0
    """How many blocks shown as text this driver has observed (each is ``foreign`` once)."""
    stamp: int | None = None
    """The buffer's stamp after this driver's last full step."""
    repeat: str | None = None
    """The observation to fire again while the stamp stays the same (a self-loop)."""
    reply: Any = None
    """What a quiet step answers again without firing (the driver's response), or None.

    Typed ``Any``: the response type lives in the driver's layer, above this one.
    """
    replays: ClassVar[bool] = True
    """Whether a quiet step may answer :attr:`reply` unfired (a recording view fires)."""

    def fire(self, event: str) -> DisplayState:
        """Step the display machine; an event the state does not accept raises."""
        self.state = target = _MACHINE.step(self.state, event)
        return target

    def again(self) -> DisplayState:
        """Repeat :attr:`repeat`, a self-loop the state took last step: the state stays."""
        return self.state
