"""The turn's gate: one slot machine per tool call plus the turn machine, driven by wire primitives.

Theory of operation: a wire strategy reports the tool-call primitives it reads from each
chunk (``identity``, ``fragment``, ``close``, ``turn_done``, ``finish``) together with the
provider's slot key. The gate classifies each primitive into an event of the slot table
(:mod:`callgate.fsm.slot`) from the slot's data (is this id the slot's? does the repeat
match the original?) and from which events the table lets its state accept, and steps
that slot through the shared interpreter. Each
transition that names an output records that finding. A slot that reaches ``blocked``
fires ``block`` on the turn table (:mod:`callgate.fsm.turn`); turn-level done fires
``end`` and the verdict. The checks (strict JSON, tool known, schema) run once per slot,
when it reaches ``terminal``.

Arguments are stored as a list of fragments and joined once, at terminal, so the work per
chunk does not grow with what came before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from callgate.fsm.interpreter import Interpreter
from callgate.fsm.release import POLICIES as _POLICIES
from callgate.fsm.release import RELEASE, Policy, ReleaseState
from callgate.fsm.release import policy as release_policy
from callgate.fsm.slot import SLOT, SlotState
from callgate.fsm.table import Transition
from callgate.fsm.turn import TURN, TurnState
from callgate.gate.findings import Finding, finding
from callgate.gate.jsonscan import StructureScanner
from callgate.gate.limits import Limits
from callgate.gate.repair import REPAIRABLE, repair_arguments
from callgate.gate.schema import ToolSchemas
from callgate.gate.strictjson import is_complete_object, parse_arguments

SlotKey = int
"""A native call's key: the provider's own slot (index, output index, block index, position)."""


class TextRef(str):
    """Where a call read from the turn's text sits: its block, and its place in the block.

    It is a string (``text-B.N``) so that reports, findings and ``ExtractedCall.slot``
    carry it is; it is built here only, and read by its attributes, never parsed.
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


_MESSAGES = {
    "orphan_event": "slot {key}: an event for a call that never opened",
    "duplicate_terminal": "slot {key}: a second terminal for this call",
}
"""Messages for findings whose cause the table already says, by finding code."""
POLICIES = tuple(_POLICIES)
"""When calls are released (the release table, :mod:`callgate.fsm.release`): after the
turn's terminal evidence (default, safe), after each call's own done (formats that have
one), or as soon as arguments parse (unsafe)."""
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


class TurnGate:
    """Slot machines and the turn machine of one assistant turn, with their findings."""

    appends_in_place: ClassVar[bool] = True
    """Whether a wire's reader may append an arguments fragment within a slot's grant
    itself, as :meth:`fragment` does (``Slot.room``); False for a gate that records each
    append."""

    def __init__(
        self,
        *,
        schemas: ToolSchemas | None = None,
        limits: Limits | None = None,
        per_call_done: bool = False,
        requires_id: bool = True,
        empty_arguments_object: bool = False,
        preview: bool = False,
        strict_finish: bool = False,
        text_per_call: bool = False,
        changes: Changes | None = None,
        max_tokens: int | None = None,
        repair: str | None = None,
    ) -> None:
        self.schemas = schemas if schemas is not None else ToolSchemas.any_tool()
        self.limits = limits if limits is not None else Limits()
        self._max_argument_bytes = self.limits.max_argument_bytes
        self._max_turn = self.limits.max_turn_bytes
        self._shares = 2 * self.limits.max_slots
        """How many grants the turn's unreserved room is cut into (see :meth:`_grant`)."""
        self._max_text = self.limits.max_text_bytes
        self.per_call_done = per_call_done
        self.requires_id = requires_id
        self.empty_arguments_object = empty_arguments_object
        self.preview = preview
        self.strict_finish = strict_finish
        """The seed validator's rule: only a tool-use reason ends a turn with calls (a wire
        whose servers also end complete calls otherwise, OpenAI's ``stop``, reads it)."""
        self.text_per_call = text_per_call
        """Whether a text call is decided when its block closes (policies ``call`` and
        ``parseable``) rather than once the turn's text is settled."""
        self.slots: dict[SlotKey, Slot] = {}
        self.text_slots: dict[TextRef, TextSlot] = {}
        """The calls read from the turn's text, each entered whole once its block closed."""
        self.text_done = False
        """Whether the turn's text is settled (the stream ended): no text call comes."""
        self._ordered: list[Slot] | None = None
        self.turn: TurnState = _TURN.initial
        self.changes = changes if changes is not None else Changes()
        """Stepped by every transition outside the appending hot path (see :attr:`version`);
        a buffer shares it with its text queue."""
        self.findings: list[Finding] = []
        self.turn_bytes = 0
        self.text_bytes = 0
        self.text_over = False
        """Whether the turn's text passed ``limits.max_text_bytes`` (nothing more is kept)."""
        self.done_seen = False
        """Whether turn-level terminal evidence has arrived (the slots close on the first)."""
        self.done_reason: str | None = None
        """The reason the first turn-level terminal event gave (``stop``, ``length``, …)."""
        self.evidence = False
        """Whether any tool-call evidence arrived, a refused slot key included."""
        self._ids: dict[str, CallRef] = {}
        self._refused: set[object] = set()
        self.on_stray: Callable[[Mapping[str, Any]], None] | None = None
        """What :meth:`stray` asks (the buffer sets it); alone, a gate knows no other wire."""
        self.on_text_over: Callable[[], None] | None = None
        """What :meth:`text` calls once, when the turn's text first passes its limit."""
        self._end_options(max_tokens, repair)

    def _end_options(self, max_tokens: int | None, repair: str | None) -> None:
        """What decides how the turn ends and how its arguments are read: usage, repair."""
        self.max_tokens = max_tokens
        """The request's output token limit: usage that reaches it means the turn was cut."""
        self.repair = repair
        """``lossless``: broken argument JSON is repaired where no value changes and the
        schema confirms it (:mod:`callgate.gate.repair`), each edit a warning finding."""
        self.output_tokens: int | None = None
        """The output tokens the wire's usage report gave (None: no report yet)."""
        self._held: tuple[bool, str | None] | None = None
        self.cut = False
        """Whether the usage report reached ``max_tokens`` (``token_limit``, once)."""
        self.on_done: Callable[[], None] | None = None
        """What :meth:`usage` calls when it lets a held turn end go (the buffer finishes)."""

    @property
    def version(self) -> int:
        """Counts the transitions taken outside the appending hot path.

        A reader that saw the same version saw the same slots, identities and verdict (only
        more fragments).
        """
        return self.changes.n

    # -- what the wire strategies call ------------------------------------------------

    def identity(self, key: object, call_id: str | None, name: str | None) -> None:
        """A slot's id and/or name arrived (first sighting, a late one, or a repeat).

        An empty string after the slot has its id or name means absent: providers repeat
        ``""`` in continuation fragments.
        """
        slot = self._slot(key)
        if slot is None:
            return
        if call_id == "" and slot.id is not None:
            call_id = None
        if name == "" and slot.name is not None:
            name = None
        for what, value in (("id", call_id), ("name", name)):
            if value is not None and not isinstance(value, str):
                self.refuse(
                    "malformed_chunk", f"slot {slot.key}: the call {what} is not text", slot.key
                )
                return
        clash = self._clash(slot, call_id, name)
        if clash:
            self._fire(slot, "conflict", clash)
            return
        if (
            _SLOTS.accepts(slot.state, "restart")
            and call_id is not None
            and name is not None
            and call_id == slot.id
            and name == slot.name
            and self._arguments_complete(slot)
        ):
            slot.replay, slot.replay_pos = slot.raw_arguments, 0
            self._fire(slot, "restart", "")
            return
        if call_id is not None and slot.id is None:
            slot.id = call_id
            self._ids[call_id] = slot.key
        if name is not None and slot.name is None:
            slot.name = name
        self._fire(slot, "identity", "")

    def fragment(self, key: object, text: str) -> None:
        """An argument fragment for a slot; an empty one only opens an unseen slot."""
        slot = self.slots.get(key) if type(key) is int else None
        if slot is not None and type(text) is str and text:
            size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
            room = slot.room - size
            if room >= 0:  # the plain self-loop within the slot's grant: nothing to record
                slot.parts.append(text)
                slot.room = room
                return
        if type(text) is not str:  # bytes would pass for text as far as the appends go
            self.refuse("malformed_chunk", f"slot {key!r}: an arguments fragment is not text", key)
            return
        if slot is None:
            slot = self._slot(key)
            if slot is None:
                return
        state = slot.state
        if slot.rejected and text:
            self._late_fragment(slot, text)
        if _SLOTS.accepts(state, "replay_args"):
            self._replay(slot, text)
            return
        if not text:
            if state == _SLOTS.initial:
                self._fire(slot, "args", "")
            return
        self._settle(slot)  # the checks below count every byte
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        limits = self.limits
        if slot.nbytes + size > limits.max_argument_bytes:
            self._fire(slot, "overflow", f"arguments exceed {limits.max_argument_bytes} bytes")
            return
        if self.turn_bytes + size > limits.max_turn_bytes:
            for other in self.slots.values():  # the others' unused grants are not bytes yet
                self._settle(other)
            if self.turn_bytes + size > limits.max_turn_bytes:
                self._fire(slot, "overflow", f"the turn exceeds {limits.max_turn_bytes} bytes")
                return
        transition = _SLOTS.find(state, "args") or self._transition(slot, "args")
        if transition.target in _APPENDS:
            slot.parts.append(text)
            slot.nbytes += size
            self.turn_bytes += size
            scan = slot.scan
            if scan is not None:
                scan.feed(text)
                if scan.deepest > limits.max_depth:
                    self._fire(slot, "overflow", f"arguments nest deeper than {limits.max_depth}")
                    return
            if transition.source in _APPENDS:
                self._grant(slot)
                return  # the self-loop: nothing else to record
        self._apply(slot, transition, f"fragment {text[:40]!r} after terminal")
        self._grant(slot)

    def confirm(self, key: object, arguments: str) -> None:
        """The provider restated a call's full arguments; they must equal the fragments."""
        slot = self._slot(key)
        if slot is None:
            return
        received = slot.replay if slot.state in _REPLAYING else slot.raw_arguments
        if arguments == received:
            self._fire(slot, "restate", f"full arguments for slot {slot.key}, never opened")
            return
        self._fire(
            slot,
            "mismatch",
            f"slot {slot.key}: the full arguments ({len(arguments)} characters) differ "
            f"from the {len(received)} characters the fragments built",
        )

    def disagree(self, key: object, what: str, message: str) -> None:
        """Two accounts of one call disagree; the slot is blocked.

        ``identity`` (a restated opening differs) is an identity collision; ``arguments``
        (a restated input differs) is an args mismatch.
        """
        slot = self._slot(key)
        if slot is None:
            return
        self._fire(slot, "conflict" if what == "identity" else "mismatch", message)

    def close(self, key: object) -> None:
        """Provider terminal evidence for one call; runs the checks."""
        slot = self._slot(key)
        if slot is None:
            return
        if self._fire(slot, "close", "").target in _CHECKING:
            self._check(slot)

    def turn_done(self, tool_reason: bool, reason: str | None) -> None:
        """Turn-level terminal evidence; ``tool_reason`` says it ends with tool use.

        Under ``max_tokens`` the end waits for the wire's usage report (or the stream's
        end): whatever the reason says, usage at the limit is a cut (:meth:`usage`).
        """
        if self._held is not None:
            self._let_go()
        first = not self.done_seen
        self.done_seen = True
        if first:
            self.done_reason = reason
            if self.max_tokens is not None and self.output_tokens is None:
                self._held = (tool_reason, reason)
                return
        self._ended(first, tool_reason, reason)

    @property
    def holds_end(self) -> bool:
        """Whether the turn's end arrived and waits for the usage report (``max_tokens``)."""
        return self._held is not None

    def _let_go(self) -> None:
        """The held turn end takes effect (usage came, or nothing more will)."""
        held, self._held = self._held, None
        if held is not None:
            self._ended(True, *held)

    def usage(self, output_tokens: object) -> None:
        """The wire's usage report: its output tokens at ``max_tokens`` cut the turn.

        A count that is not an int is no report. A held turn end then takes effect, and
        :attr:`on_done` is told.
        """
        if type(output_tokens) is not int:
            return
        self.output_tokens = output_tokens
        limit = self.max_tokens
        if limit is not None and output_tokens >= limit and not self.cut:
            self.cut = True
            self.refuse(
                "token_limit",
                f"the turn used {output_tokens} output tokens, the request's limit of "
                f"{limit}: it was cut short, whatever its finish reason says",
            )
        if self._held is not None:
            self._let_go()
            if self.on_done is not None:
                self.on_done()

    def clean_end(self) -> None:
        """The stream ended cleanly (``[DONE]``, or a whole response) with no turn end.

        TGI ends its tool-call streams so: the turn ends here, as with a ``stop`` (a
        ``no_finish_reason`` warning when it has calls); ``strict_finish`` refuses them.
        """
        if self.done_seen:
            return
        if self.slots and not self.strict_finish:
            self.note(
                "no_finish_reason",
                "the stream ended cleanly without a finish reason; its calls are checked "
                "as complete (strict_finish refuses them)",
            )
        self.turn_done(not self.strict_finish, None)
        self._let_go()

    def _ended(self, first: bool, tool_reason: bool, reason: str | None) -> None:
        """Turn-level terminal evidence takes effect: the slots close, the verdict follows."""
        self._fire_turn("done", f"a second turn-level terminal event ({reason!r})")
        if not first:
            return
        for slot in list(self.slots.values()):
            if not tool_reason:
                self._fire(
                    slot,
                    "bad_terminal",
                    f"the turn ended with reason {reason!r}, not a tool-call reason",
                )
            elif self.per_call_done:
                self._fire(slot, "turn_end", "the turn ended before this call's done")
            else:
                self.close(slot.key)
        self._verdict()

    def finish(self) -> None:
        """The stream ended: nothing more will come for this turn."""
        self._let_go()
        for slot in list(self.slots.values()):
            self._fire(slot, "stream_end", "the stream ended before this call's terminal")
        if self.turn in _RECEIVING and self.slots:
            self.refuse("missing_terminal", "the stream ended without the turn's terminal event")
        if self._fire_turn("end") in _DECIDING:
            self._verdict()

    def text_call(
        self, ref: TextRef, source: str, call_id: str | None, name: str, arguments: dict[str, Any]
    ) -> TextSlot:
        """A call read from the turn's text, whole: its block closed, its arguments parsed.

        It runs the slot machine like a native call (identity, then its own done, then the
        checks) and joins the turn's release and verdict. In a turn with native calls it
        is set aside (a warning finding): the native calls are authoritative.
        """
        self.evidence = True
        slot = self.text_slots[ref] = TextSlot(ref, source, arguments)
        slot.id, slot.name = call_id or None, name
        self._fire(slot, "identity", "")
        self._fire(slot, "close", "")
        problem = self.schemas.check(name, arguments, ref)
        if problem is None:
            slot.arguments = arguments
            self._fire(slot, "accept", "")
        else:
            slot.parts.append(json.dumps(arguments, ensure_ascii=False))
            self._record(problem)
            self._fire(slot, "reject", "")
        if self.slots:
            self._set_aside(slot)
        elif self.text_per_call and slot.state in _SLOT_BLOCKS:
            self._fire_turn("block")
        return slot

    def text_settled(self) -> None:
        """The turn's text is settled: a refused text call now blocks a turn of text calls."""
        if self.text_done:
            return
        self.text_done = True
        self.changes.n += 1
        if not self.slots and any(s.state in _SLOT_BLOCKS for s in self.text_slots.values()):
            self._fire_turn("block")

    def _set_aside(self, slot: TextSlot) -> None:
        slot.aside = True
        message = _SET_ASIDE.format(ref=slot.key, name=slot.name)
        self._record(finding("text_call_set_aside", message, slot.key))

    def stray(self, chunk: Mapping[str, Any]) -> None:
        """A chunk the wire strategy cannot place: its unknown-event path calls this first.

        The buffer's hook (:attr:`on_stray`) refuses a chunk of another wire, and reads an
        SDK helper event through, by raising: the strategy then reads no further. When
        it returns, the chunk is the strategy's own unknown event. The common chunk never
        comes here, so the check costs nothing per chunk.
        """
        if self.on_stray is not None:
            self.on_stray(chunk)

    def note(self, code: str, message: str, slot: object = None) -> None:
        """Record a finding that does not block the turn (a warning or an info)."""
        self._record(finding(code, message, slot if type(slot) is int else None))

    def text(self, text: str) -> bool:
        """Count text the turn keeps (content, reasoning, thinking); False past the limit.

        The first text past ``limits.max_text_bytes`` is a ``limit_exceeded`` finding that
        blocks the turn; the caller keeps no text for which this returns False.
        """
        if text.isascii():
            self.text_bytes += len(text)
        else:
            self.text_bytes += len(text.encode("utf-8", "surrogatepass"))
        if self.text_bytes <= self._max_text:
            return True
        if not self.text_over:
            self.text_over = True
            self.refuse(
                "limit_exceeded", f"the turn's text exceeds {self.limits.max_text_bytes} bytes"
            )
            if self.on_text_over is not None:
                self.on_text_over()
        return False

    def refuse(self, code: str, message: str, slot: object = None) -> None:
        """A chunk the format cannot read, or a turn-wide fault: record it, block the turn."""
        self._record(finding(code, message, slot if type(slot) is int else None))
        self._fire_turn("block")

    # -- what readers use -------------------------------------------------------------

    @property
    def executable(self) -> bool:
        """Whether the turn's calls may run now (the turn policy)."""
        return self.turn in _RUNS

    def releasable(self, policy: str = "turn") -> list[BaseSlot]:
        """The slots a caller may execute now under ``policy`` (see :data:`POLICIES`).

        Each slot's evidence is an event of the release table (:mod:`callgate.fsm.release`):
        the turn's verdict (``turn_pass``, ``turn_block``), a validated slot's own done
        (``call_valid``, in formats that have one; elsewhere ``args_valid``), arguments
        that closed, parse and validate early (``args_valid``). ``call`` releases a call
        at its own done; atomicity then covers only calls not yet released. ``parseable``
        needs ``preview=True`` and releases a call once its arguments parse, before any
        terminal evidence: it is unsafe and opt-in.
        """
        return [
            slot for slot, outcome in self.releases(release_policy(policy)) if outcome in _LET_RUN
        ]

    def release_evidence(self, rule: Policy) -> list[tuple[BaseSlot, str]]:
        """Each call with release evidence now, and its release-table event, in call order.

        Only what ``rule`` reads is gathered (the events its waiting state accepts): under
        ``turn`` nothing but the turn's verdict; arguments are parsed early only where
        ``rule`` reads them. A validated slot's evidence is its own done where the format
        has one, otherwise that its arguments validated. A text call's own done is its
        block's close; under ``turn`` it waits for the turn's text to settle; beside
        native calls it is ``set_aside`` once the turn is decided.
        """
        turn = self.turn
        found: list[tuple[BaseSlot, str]]
        if turn in _RUNS:
            found = [(slot, "turn_pass") for slot in self.ordered_slots()]
        elif turn in _TURN_BLOCKS:
            found = [(slot, "turn_block") for slot in self.ordered_slots()]
        elif not (rule.per_call or rule.early):
            found = []
        else:
            own = "call_valid" if self.per_call_done else "args_valid"
            read = rule.reads(own)
            found = []
            for slot in self.ordered_slots():
                if slot.state in _VALID:
                    if read:
                        found.append((slot, own))
                elif rule.early and self._early(slot):
                    found.append((slot, "args_valid"))
        if self.text_slots:
            found += self._text_evidence(rule)
        return found

    def _text_evidence(self, rule: Policy) -> list[tuple[BaseSlot, str]]:
        turn = self.turn
        if not (self.text_done or rule.per_call or turn in _TURN_FINAL or turn in _TURN_BLOCKS):
            return []  # every text call waits for the turn's end: no walk per round
        found: list[tuple[BaseSlot, str]] = []
        for slot in self.text_slots.values():
            if slot.aside:
                if turn in _TURN_FINAL:
                    found.append((slot, "set_aside"))
            elif turn in _TURN_BLOCKS:
                found.append((slot, "turn_block"))
            elif rule.per_call:
                if slot.state in _VALID:
                    found.append((slot, "call_valid"))
            elif self.text_done:
                found.append((slot, "turn_pass"))
        return found

    def releases(self, rule: Policy) -> list[tuple[BaseSlot, ReleaseState]]:
        """Each call decided now, with the release state its evidence leads to under ``rule``."""
        decided: list[tuple[BaseSlot, ReleaseState]] = []
        for slot, event in self.release_evidence(rule):
            outcome = rule.outcome(event)
            if outcome is not None:
                decided.append((slot, outcome))
        return decided

    def verdict_events(self) -> list[str]:
        """The turn's events for the verdict machine (:mod:`callgate.fsm.verdict`).

        The turn machine first; then, when it decided nothing, each text call (``ran``
        or ``refused``); then ``end``.
        """
        turn = self.turn
        if turn in _RUNS:
            return ["turn_runs", "end"]
        if turn in _TURN_BLOCKS:
            return ["turn_blocked", "end"]
        text = ["ran" if s.state in _VALID else "refused" for s in self.text_slots.values()]
        return ["turn_open", *text, "end"]

    def _early(self, slot: BaseSlot) -> bool:
        scan = slot.scan
        if scan is None or not scan.closed or slot.state not in _APPENDS:
            return False
        if slot.early is None:
            arguments, problem = parse_arguments(
                slot.raw_arguments, max_depth=self.limits.max_depth
            )
            if problem is None and arguments is not None:
                problem = self.schemas.check(slot.name, arguments, slot.key)
            slot.early = problem if problem is not None else arguments
        return isinstance(slot.early, dict)

    def ordered_slots(self) -> list[Slot]:
        """The native slots by their provider key (sorted once per new slot)."""
        ordered = self._ordered
        if ordered is None:
            ordered = self._ordered = [self.slots[k] for k in sorted(self.slots)]
        return ordered

    def calls(self) -> list[BaseSlot]:
        """Every call of the turn: the native slots by key, then the text calls in order."""
        return [*self.ordered_slots(), *self.text_slots.values()]

    # -- internals --------------------------------------------------------------------

    def _slot(self, key: object) -> Slot | None:
        self.evidence = True
        if isinstance(key, int) and not isinstance(key, bool):
            slot = self.slots.get(key)
            if slot is not None:
                return slot
            if key < 0:
                reason = f"slot index {key} is negative"
                code = "malformed_chunk"
            elif key > self.limits.max_slot_index:
                reason = f"slot index {key} exceeds {self.limits.max_slot_index}"
                code = "limit_exceeded"
            elif len(self.slots) >= self.limits.max_slots:
                reason = f"more than {self.limits.max_slots} tool calls in one turn"
                code = "limit_exceeded"
            else:
                slot = self.slots[key] = Slot(key)
                self._ordered = None
                if len(self.slots) == 1:
                    for text in self.text_slots.values():
                        if not (text.state in _VALID and self.text_per_call):
                            self._set_aside(text)
                if self.preview:
                    slot.scan = StructureScanner()
                self._fire_turn("call", "a tool call opened after the turn ended", key)
                return slot
        else:
            reason, code = f"slot key {key!r} is not a non-negative integer", "malformed_chunk"
        if repr(key) not in self._refused:
            self._refused.add(repr(key))
            self.refuse(code, reason)
        return None

    def _clash(self, slot: BaseSlot, call_id: str | None, name: str | None) -> str:
        if call_id is not None and slot.id is not None and call_id != slot.id:
            return f"slot {slot.key} has id {slot.id!r}, then {call_id!r}"
        if name is not None and slot.name is not None and name != slot.name:
            return f"slot {slot.key} has name {slot.name!r}, then {name!r}"
        if call_id is not None and slot.id is None:
            owner = self._ids.get(call_id)
            if owner is not None and owner != slot.key:
                return f"id {call_id!r} of slot {slot.key} is already slot {owner}'s"
        return ""

    def _arguments_complete(self, slot: BaseSlot) -> bool:
        """Whether the arguments so far are one complete object, however often it is asked.

        A structure scanner, started on the first restatement, follows the fragments, and
        the text is parsed once, after its top-level value closed.
        """
        scan = slot.scan
        if scan is None:
            self._settle(slot)  # from now on every fragment feeds the scanner
            scan = slot.scan = StructureScanner()
            scan.feed(slot.raw_arguments)
        if not scan.closed or scan.trailing:
            return False
        if slot.whole is None:
            slot.whole = is_complete_object(slot.raw_arguments)
        return slot.whole

    def _replay(self, slot: BaseSlot, text: str) -> None:
        original, pos = slot.replay, slot.replay_pos
        if original.startswith(text, pos):
            slot.replay_pos = pos + len(text)
            if slot.replay_pos == len(original):
                self._fire(slot, "replay_done", f"slot {slot.key} repeated its call; dropped")
            else:
                self._fire(slot, "replay_args", "")
            return
        self._fire(slot, "replay_diverge", f"slot {slot.key} restarted with other arguments")

    def _check(self, slot: BaseSlot) -> None:
        problem: Finding | None = None
        arguments: dict[str, Any] | None = None
        if slot.name is None:
            problem = finding("missing_name", f"slot {slot.key} has no tool name", slot.key)
        elif slot.id is None and self.requires_id:
            problem = finding("missing_id", f"slot {slot.key} has no call id", slot.key)
        else:
            raw = slot.raw_arguments
            if not raw and self.empty_arguments_object:
                arguments = {}
            else:
                arguments, problem = parse_arguments(raw, max_depth=self.limits.max_depth)
            if problem is None and arguments is not None:
                problem = self.schemas.check(slot.name, arguments, slot.key)
            if problem is not None and self.repair is not None and problem.code in REPAIRABLE:
                repaired = repair_arguments(
                    raw, slot.name, self.schemas, max_depth=self.limits.max_depth
                )
                if repaired is not None:
                    arguments, edits = repaired
                    problem = None
                    self.note(
                        "repaired_arguments",
                        f"slot {slot.key}: the arguments were repaired: {'; '.join(edits)}",
                        slot.key,
                    )
        if problem is None:
            slot.arguments = arguments
            self._fire(slot, "accept", "")
        else:
            if problem.slot is None:
                problem = finding(problem.code, problem.message, slot.key)
            self._record(problem)
            slot.rejected = True
            self._fire(slot, "reject", "")

    def _late_fragment(self, slot: BaseSlot, text: str) -> None:
        """A fragment for a slot its terminal checks blocked: the root cause, reported first.

        The checks read arguments that were cut short; the fragment that came after the
        terminal is why, so its finding goes before the slot's check finding.
        """
        slot.rejected = False
        if len(self.findings) >= self.limits.max_findings:
            return
        late = finding("delta_after_terminal", f"fragment {text[:40]!r} after terminal", slot.key)
        at = next(
            (n for n, f in enumerate(self.findings) if f.slot == slot.key),
            len(self.findings),
        )
        self.findings.insert(at, late)

    def _record(self, found: Finding) -> None:
        """Keep a finding; past ``limits.max_findings`` keep one ``limit_exceeded`` instead."""
        count, most = len(self.findings), self.limits.max_findings
        if count < most:
            self.findings.append(found)
        elif count == most:
            self.findings.append(
                finding("limit_exceeded", f"more than {most} findings; later ones are not kept")
            )
            self._fire_turn("block")

    def _transition(self, slot: BaseSlot, event: str) -> Transition:
        return _SLOTS.transition(slot.state, event)  # raises, naming machine/state/event

    def _fire(self, slot: BaseSlot, event: str, message: str) -> Transition:
        transition = self._transition(slot, event)
        self._apply(slot, transition, message)
        return transition

    def _grant(self, slot: BaseSlot) -> None:
        """Let the common path append to a plain accumulating slot without asking.

        The grant is at most the slot's own room and a ``1 / (2 * max_slots)`` share of the
        turn's unreserved room, so that every call a turn may hold can hold one at once
        and all of them together reserve less than half of it. It is counted in ``nbytes``
        and ``turn_bytes`` at once, so that appends within grants never pass either limit;
        :meth:`_settle` gives back what was not used.
        """
        if slot.scan is None and slot.state in _APPENDING:  # settled: no grant is open
            own, turn = self._max_argument_bytes - slot.nbytes, self._max_turn - self.turn_bytes
            grant = slot.room = min(own, turn // self._shares)
            slot.nbytes += grant
            self.turn_bytes += grant

    def _settle(self, slot: BaseSlot) -> None:
        """End a slot's grant: give back the room it did not use."""
        room = slot.room
        slot.nbytes -= room
        self.turn_bytes -= room
        slot.room = 0

    def _apply(self, slot: BaseSlot, transition: Transition, message: str) -> None:
        self._settle(slot)
        self.changes.n += 1
        slot.state = _SLOTS.target(transition)
        output = transition.output
        if output is not None and output != "check_finding":
            text = message or _MESSAGES.get(output, output).format(key=slot.key)
            self._record(finding(output, text, slot.key))
        if (
            transition.target in _SLOT_BLOCKS
            and transition.source not in _SLOT_BLOCKS
            and type(slot.key) is int
        ):
            self._fire_turn("block")

    def _fire_turn(self, event: str, message: str = "", key: object = None) -> TurnState:
        transition = _TURN.transition(self.turn, event)
        self.changes.n += 1
        self.turn = _TURN.target(transition)
        if transition.output is not None:
            self._record(finding(transition.output, message, key if type(key) is int else None))
        return self.turn

    def _verdict(self) -> None:
        if self.turn not in _DECIDING:
            return
        if not self.slots:
            self._fire_turn("empty")
        elif all(s.state in _VALID for s in self.slots.values()):
            self._fire_turn("pass")
        else:
            self._fire_turn("fail")
