"""The gate's calls: the small per-call state, and the change count.

A native call is a :class:`Slot`, kept under the provider's own slot and referred to by a
:class:`NativeRef`; a call read from the turn's text is a :class:`TextSlot`, referred to by
its :class:`TextRef` (:mod:`callgate.gate.refs`). The tags the gate's
parts read off the slot and turn tables are named here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from callgate.fsm.interpreter import Interpreter
from callgate.fsm.release import RELEASE, Policy
from callgate.fsm.slot import SLOT, SlotState
from callgate.fsm.table import Transition
from callgate.fsm.turn import TURN, TurnState
from callgate.gate.findings import Finding
from callgate.gate.jsonscan import StructureScanner
from callgate.gate.limits import Limits
from callgate.gate.refs import CallRef, NativeRef, TextRef
from callgate.gate.schema import ToolSchemas

SlotKey = int
"""A native call's key in the gate's table: the provider's own slot (index, output index,
block index, position); the call's reference is the :class:`NativeRef` made from it."""


_SLOTS = Interpreter[SlotState](SLOT)
_TURN = Interpreter[TurnState](TURN)
_APPENDS = SLOT.tagged("appending")
"""Slot states in which an argument fragment is appended."""
_WIDEST = 4
"""The most UTF-8 bytes one character takes (a lone surrogate, written as ``surrogatepass``
writes it, takes three): a grant of characters is counted in bytes at this width."""
_APPENDING = frozenset(
    t.source
    for t in SLOT.transitions
    if t.event == "args" and t.source == t.target and t.target in _APPENDS and t.output is None
)
"""States whose ``args`` transition is a plain self-loop: the hot path appends and returns."""
_REPLAYING = SLOT.tagged("replaying")
_CHECKING = SLOT.tagged("checking")
_VALID = SLOT.tagged("valid")
_SLOT_BLOCKS = SLOT.tagged("blocks")
_RECEIVING = TURN.tagged("receiving")
_DECIDING = TURN.tagged("deciding")
_RUNS = TURN.tagged("runs")
_TURN_BLOCKS = TURN.tagged("blocks")
_TURN_FINAL = TURN.final_states
_LET_RUN = RELEASE.tagged("runs")
_SET_ASIDE = "text call {ref} ({name}) sits beside native tool calls, which are authoritative"


class BaseSlot:
    """The small per-call state: the machine's state plus what the call has carried.

    A native call is a :class:`Slot`, keyed by the provider's slot; a call read from the
    turn's text is a :class:`TextSlot`, keyed by its :class:`TextRef`. ``ref`` is the
    call's typed reference, what code tells calls apart by; ``key`` is its report form
    (the provider's index, or ``text-B.N``), as findings and reports carry it.
    """

    __slots__ = (
        "arguments",
        "aside",
        "early",
        "folds",
        "granted",
        "id",
        "key",
        "mark",
        "name",
        "nbytes",
        "parts",
        "ref",
        "rejected",
        "replay",
        "replay_pos",
        "room",
        "scan",
        "source",
        "state",
        "whole",
    )

    key: int | str
    ref: CallRef

    def __init__(self, ref: CallRef, source: str = "native") -> None:
        self.ref = ref
        self.key = ref.slot
        self.source = source
        """``native``, or the text format a call read from the turn's text was written in."""
        self.aside = False
        """A text call in a turn with native calls: it is set aside, never run."""
        self.state: SlotState = _SLOTS.initial
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.folds = 0
        """How many times ``parts`` was folded into one string (a reader's cursor resets)."""
        self.rejected = False
        """Whether a check at terminal blocked the slot (a later fragment is then reported)."""
        self.nbytes = 0
        """Argument bytes counted so far, an open grant's whole room included."""
        self.room = 0
        """Characters the common path may still append without asking (a grant, see
        TurnGate): the grant's bytes over four, the most UTF-8 bytes a character takes, so
        an append only subtracts its length."""
        self.granted = 0
        """Bytes the open grant reserved and has not counted yet (0: no grant is open)."""
        self.mark = 0
        """How many of ``parts`` hold bytes counted exactly: those before the open grant
        (a fold counts the grant's so far and leaves one part)."""
        self.replay = ""
        self.replay_pos = 0
        self.arguments: dict[str, Any] | None = None
        self.scan: StructureScanner | None = None
        self.early: dict[str, Any] | Finding | None = None
        self.whole: bool | None = None
        """Whether the arguments, once their top-level value closed, parse strictly."""

    @property
    def raw_arguments(self) -> str:
        """The argument text received so far (the parts are folded into one string).

        An open grant counts the bytes appended within it from ``mark`` on: those are
        counted here, before the fold, and the grant goes on after the one string.
        """
        parts = self.parts
        if len(parts) > 1:
            if self.granted:
                self.granted -= utf8_size("".join(parts[self.mark :]))
                self.mark = 1
            parts[:] = ["".join(parts)]
            self.folds += 1
        return parts[0] if parts else ""


def utf8_size(text: str) -> int:
    """The UTF-8 bytes of ``text``, a lone surrogate counted as ``surrogatepass`` writes it."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Slot(BaseSlot):
    """A native call: kept under the provider's own slot, referred to by its :class:`NativeRef`."""

    __slots__ = ()
    key: int
    ref: NativeRef


class TextSlot(BaseSlot):
    """A call read from the turn's text, entered whole once its block closed."""

    __slots__ = ("given",)
    key: str
    ref: TextRef

    def __init__(self, ref: TextRef, source: str, given: dict[str, Any]) -> None:
        super().__init__(ref, source)
        self.given = given
        """The arguments as the text gave them, whether or not they validated."""


class Changes:
    """A count that only grows, stepped on every change a driver's decision reads.

    A turn's gate steps it, and so does its buffer's text queue: an equal count means an
    equal decision.
    """

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class GateParts:
    """What the gate's parts (text calls, release, verdict) read of the gate they make up.

    :class:`~callgate.gate.turn.TurnGate` sets this state and defines these steps.
    """

    slots: dict[SlotKey, Slot]
    text_slots: dict[TextRef, TextSlot]
    turn: TurnState
    text_done: bool
    text_per_call: bool
    per_call_done: bool
    schemas: ToolSchemas
    limits: Limits
    findings: list[Finding]
    changes: Changes
    evidence: bool
    _ordered: list[Slot] | None

    if TYPE_CHECKING:

        def _fire(self, slot: BaseSlot, event: str, message: str) -> Transition: ...

        def _fire_turn(self, event: str, message: str = "", key: object = None) -> TurnState: ...

        def _record(self, found: Finding) -> None: ...

        def _text_evidence(self, rule: Policy) -> list[tuple[BaseSlot, str]]: ...
