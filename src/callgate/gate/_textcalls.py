"""The gate's text calls: a call read from the turn's text enters the gate whole.

Part of :class:`~callgate.gate.turn.TurnGate`: a text call runs the slot machine like a
native call (identity, its own done, the checks), joins the turn's release and verdict,
and is set aside in a turn with native calls (the native calls are authoritative).
"""

from __future__ import annotations

import json
from typing import Any

from callgate.fsm.release import Policy
from callgate.gate._slots import (
    _SET_ASIDE,
    _SLOT_BLOCKS,
    _TURN_BLOCKS,
    _TURN_FINAL,
    _VALID,
    BaseSlot,
    GateParts,
    TextSlot,
)
from callgate.gate.findings import finding
from callgate.gate.refs import TextRef


class TextCalls(GateParts):
    """The calls read from the turn's text: entered whole, settled with the turn's text."""

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
        problem = self.schemas.check(name, arguments, ref.slot)
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
