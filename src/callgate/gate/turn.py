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

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from callgate.fsm.release import POLICIES as _POLICIES
from callgate.fsm.table import Transition
from callgate.fsm.turn import TurnState
from callgate.gate._release import ReleaseRules
from callgate.gate._slots import (
    _APPENDING,
    _APPENDS,
    _CHECKING,
    _DECIDING,
    _RECEIVING,
    _REPLAYING,
    _SLOT_BLOCKS,
    _SLOTS,
    _TURN,
    _VALID,
    _WIDEST,
    BaseSlot,
    Changes,
    Slot,
    SlotKey,
    TextSlot,
    utf8_size,
)
from callgate.gate._textcalls import TextCalls
from callgate.gate._verdict import TurnVerdict, turn_events
from callgate.gate.findings import Finding, finding
from callgate.gate.jsonscan import StructureScanner
from callgate.gate.limits import DEFAULT_LIMITS, Limits
from callgate.gate.refs import CallRef, NativeRef, TextRef, call_order
from callgate.gate.repair import REPAIRABLE, repair_arguments
from callgate.gate.schema import ToolSchemas
from callgate.gate.strictjson import is_complete_object, parse_arguments

__all__ = [
    "POLICIES",
    "BaseSlot",
    "CallRef",
    "Changes",
    "NativeRef",
    "Slot",
    "SlotKey",
    "TextRef",
    "TextSlot",
    "TurnGate",
    "call_order",
    "turn_events",
]

_MESSAGES = {
    "orphan_event": "slot {key}: an event for a call that never opened",
    "duplicate_terminal": "slot {key}: a second terminal for this call",
}
"""Messages for findings whose cause the table already says, by finding code."""
POLICIES = tuple(_POLICIES)
"""When calls are released (the release table, :mod:`callgate.fsm.release`): after the
turn's terminal evidence (default, safe), after each call's own done (formats that have
one), or as soon as arguments parse (unsafe)."""


class TurnGate(TextCalls, ReleaseRules, TurnVerdict):
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
        self.limits = limits if limits is not None else DEFAULT_LIMITS
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
            self._ids[call_id] = slot.ref
        if name is not None and slot.name is None:
            slot.name = name
        self._fire(slot, "identity", "")

    def fragment(self, key: object, text: str) -> None:
        """An argument fragment for a slot; an empty one only opens an unseen slot."""
        slot = self.slots.get(key) if type(key) is int else None
        if slot is not None and type(text) is str and text:
            room = slot.room - len(text)  # characters: the grant's bytes hold the widest
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
                slot = self.slots[key] = Slot(NativeRef(key))
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
            if owner is not None and owner != slot.ref:
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
        transition = _SLOTS.transition(slot.state, event)  # (what _transition looks up)
        self._apply(slot, transition, message)
        return transition

    def _grant(self, slot: BaseSlot) -> None:
        """Let the common path append to a plain accumulating slot without asking.

        The grant is at most the slot's own room and a ``1 / (2 * max_slots)`` share of the
        turn's unreserved room, so that every call a turn may hold can hold one at once
        and all of them together reserve less than half of it. It is counted in ``nbytes``
        and ``turn_bytes`` at once, so that appends within grants never pass either limit.
        The common path counts characters, not bytes (a text's length costs less than its
        UTF-8 size): the grant is the characters of four bytes each it holds, and
        :meth:`_settle` counts the bytes appended and gives back the rest.
        """
        if slot.scan is None and slot.state in _APPENDING:  # settled: no grant is open
            own, turn = self._max_argument_bytes - slot.nbytes, self._max_turn - self.turn_bytes
            room = min(own, turn // self._shares) // _WIDEST
            if room:
                granted = slot.granted = room * _WIDEST
                slot.room = room
                slot.mark = len(slot.parts)
                slot.nbytes += granted
                self.turn_bytes += granted

    def _settle(self, slot: BaseSlot, fold: bool = False) -> None:
        """End a slot's grant: count the bytes appended within it, give back the rest.

        ``fold``: keep the parts as one string (a slot that moves on, so that the join
        counted here is the one its arguments are read from). The parts before ``mark`` are
        counted already (``nbytes`` less the grant), so the whole is joined and counted,
        not the grant's fragments and then the whole again.
        """
        granted = slot.granted
        if granted:
            parts, mark = slot.parts, slot.mark
            used = 0
            if len(parts) == mark + 1:
                used = utf8_size(parts[mark])
            elif len(parts) > mark and fold:
                whole = "".join(parts)
                used = utf8_size(whole) - (slot.nbytes - granted)
                parts[:] = [whole]
                slot.folds += 1
            elif len(parts) > mark:
                used = utf8_size("".join(parts[mark:]))
            back = granted - used
            slot.nbytes -= back
            self.turn_bytes -= back
            slot.granted = 0
        slot.room = 0

    def _apply(self, slot: BaseSlot, transition: Transition, message: str) -> None:
        if slot.granted:
            self._settle(slot, fold=True)
        else:
            slot.room = 0  # (what _settle does with no grant open)
        self.changes.n += 1
        slot.state = transition.target  # type: ignore[assignment]  # the table's: no call
        output = transition.output
        if output is not None and output != "check_finding":
            text = message or _MESSAGES.get(output, output).format(key=slot.key)
            self._record(finding(output, text, slot.key))
        if (
            transition.target in _SLOT_BLOCKS
            and transition.source not in _SLOT_BLOCKS
            and slot.ref.native
        ):
            self._fire_turn("block")

    def _fire_turn(self, event: str, message: str = "", key: object = None) -> TurnState:
        transition = _TURN.transition(self.turn, event)
        self.changes.n += 1
        self.turn = transition.target  # type: ignore[assignment]  # the table's: no call
        if transition.output is not None:
            self._record(finding(transition.output, message, key if type(key) is int else None))
        return self.turn
