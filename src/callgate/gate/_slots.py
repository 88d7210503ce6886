"""The gate's calls: their references, the small per-call state, and the change count.

A native call is a :class:`Slot`, keyed by the provider's own slot; a call read from the
turn's text is a :class:`TextSlot`, keyed by its :class:`TextRef`. The tags the gate's
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
from callgate.gate.schema import ToolSchemas

SlotKey = int
"""A native call's key: the provider's own slot (index, output index, block index, position)."""


class TextRef(str):
    """Where a call read from the turn's text sits: its block, and its place in the block.

    A string (``text-B.N``), so that reports, findings and ``ExtractedCall.slot`` hold it
    unchanged; only this module builds one, and readers use ``block`` and ``n``, never the text.
    """

    block: int
    n: int

    def __new__(cls, block: int, n: int) -> TextRef:
        ref = super().__new__(cls, f"text-{block}.{n}")
        ref.block, ref.n = block, n
        return ref


CallRef = SlotKey | TextRef
"""A call of the turn, native or read from its text."""


def call_order(ref: object) -> tuple[int, int, int]:
    """Native calls by slot, then text calls by block and place; anything else last."""
    if isinstance(ref, TextRef):
        return (1, ref.block, ref.n)
    if isinstance(ref, int):
        return (0, ref, 0)
    return (2, 0, 0)


_SLOTS = Interpreter[SlotState](SLOT)
_TURN = Interpreter[TurnState](TURN)
_APPENDS = SLOT.tagged("appending")
"""Slot states in which an argument fragment is appended."""
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
    turn's text is a :class:`TextSlot`, keyed by its :class:`TextRef`.
    """

    __slots__ = (
        "arguments",
        "aside",
        "early",
        "folds",
        "id",
        "key",
        "name",
        "nbytes",
        "parts",
        "rejected",
        "replay",
        "replay_pos",
        "room",
        "scan",
        "source",
        "state",
        "whole",
    )

    key: CallRef

    def __init__(self, key: CallRef, source: str = "native") -> None:
        self.key = key
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
        """Bytes the common path may still append without asking (a grant, see TurnGate)."""
        self.replay = ""
        self.replay_pos = 0
        self.arguments: dict[str, Any] | None = None
        self.scan: StructureScanner | None = None
        self.early: dict[str, Any] | Finding | None = None
        self.whole: bool | None = None
        """Whether the arguments, once their top-level value closed, parse strictly."""

    @property
    def raw_arguments(self) -> str:
        """The argument text received so far."""
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
            self.folds += 1
        return self.parts[0] if self.parts else ""


class Slot(BaseSlot):
    """A native call: keyed by the provider's own slot."""

    __slots__ = ()
    key: SlotKey


class TextSlot(BaseSlot):
    """A call read from the turn's text, entered whole once its block closed."""

    __slots__ = ("given",)
    key: TextRef

    def __init__(self, key: TextRef, source: str, given: dict[str, Any]) -> None:
        super().__init__(key, source)
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
