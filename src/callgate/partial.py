"""Every call of a turn while it forms: a small record per call, read incrementally.

:class:`PartialCalls` belongs to one buffer's turn. Each :meth:`~PartialCalls.read` looks at
the turn's gate (its native slots and the text calls that entered it) and at the open
text block, if any, and reads only what arrived since the last read: a native slot's new
argument fragments go through its :class:`~callgate.gate.partialjson.PartialJSON`, an
open block's new payload through its format's
:class:`~callgate.strategies.text.forming.BlockReader`. A record is made only for a call
that changed; taking one costs O(depth), and its ``arguments`` become plain data only
when read. The calls still run only on the gate's verdict: a record is something to show.
"""

from __future__ import annotations

import json
from typing import Any

from attrs import field, frozen

from callgate.gate.partialjson import PartialJSON, Shot, TextLog
from callgate.gate.turn import BaseSlot, CallRef, TextRef, TextSlot, TurnGate
from callgate.strategies.text.detector import Detector
from callgate.strategies.text.forming import BlockReader, FormingCall
from callgate.textqueue import TextQueue

__all__ = ["PartialCall", "PartialCalls"]


@frozen
class PartialCall:
    """One call of the turn as it stands: its reference, identity and arguments so far.

    ``arguments`` is always a prefix of the final arguments (strings cut at their current
    end, containers holding only what has started, no key whose name is still open, no
    number or ``true``/``false``/``null`` until its token is whole); ``complete`` says the
    arguments are whole. Whether the call may run is still the gate's verdict alone.
    """

    ref: CallRef
    """The call's reference: a native slot key, or a :class:`~callgate.gate.turn.TextRef`."""
    id: str | None
    name: str | None
    """The tool's name once it has streamed whole (None before)."""
    source: str
    """``native``, or the text format the call is written in."""
    complete: bool
    text_length: int
    """How long the arguments' JSON text is so far (see :meth:`text`)."""
    _shot: Shot = field(eq=False, repr=False, alias="shot")
    _log: TextLog = field(eq=False, repr=False, alias="log")

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments so far, as plain data (built on first read; shared, do not change)."""
        value = self._shot.value()
        assert isinstance(value, dict)
        return value

    def text(self, start: int = 0) -> str:
        """The arguments' JSON text from ``start`` to :attr:`text_length`.

        A prefix of the final call's argument text: for a native call, the text the model
        streamed; for a call written in an XML-like text format, ``json.dumps(arguments,
        ensure_ascii=False)`` of the converted call. A writer that keeps how much it sent
        asks for ``text(sent)``: the new argument text, in O(new).
        """
        return self._log.since(start, self.text_length)


class _Native:
    """A native slot's reader: where it is in the slot's fragments, and its value."""

    __slots__ = ("folds", "index", "log", "offset", "reader", "record")

    def __init__(self, max_depth: int) -> None:
        self.reader = PartialJSON(max_depth=max_depth)
        self.log = TextLog()
        self.index = 0
        """How many of the slot's parts were read."""
        self.offset = 0
        """How many characters were read in all."""
        self.folds = 0
        self.record: PartialCall | None = None

    def read(self, slot: BaseSlot) -> bool:
        """Read the slot's new fragments; whether any came."""
        parts = slot.parts
        if slot.folds != self.folds:  # the parts were joined: go on from the same character
            self.folds, self.index = slot.folds, 0
            skip = self.offset
        elif len(parts) == self.index:
            return False
        else:
            skip = 0
        reader, log = self.reader, self.log
        for part in parts[self.index :]:
            text = part[skip:] if skip else part
            skip = 0
            self.offset += len(text)
            if reader.broken or not text:
                continue
            before = reader.valid
            reader.feed(text)
            valid = reader.valid - before
            log.append(text if valid == len(text) else text[:valid])
        self.index = len(parts)
        return True


class _Block:
    """The open text block's reader and where it is in the block's payload."""

    __slots__ = ("block", "index", "reader")

    def __init__(self, block: object, reader: BlockReader) -> None:
        self.block = block
        self.reader = reader
        self.index = 0


class PartialCalls:
    """The turn's calls while they form (one per buffer turn; see the module's notes)."""

    __slots__ = ("_block", "_native", "_text")

    def __init__(self) -> None:
        self._native: dict[int, _Native] = {}
        self._text: dict[TextRef, PartialCall] = {}
        self._block: _Block | None = None

    def read(self, gate: TurnGate | None, queue: TextQueue) -> tuple[PartialCall, ...]:
        """Every call of the turn now: native slots, text calls in the gate, the open block's."""
        if gate is None:
            return ()
        records: list[PartialCall] = []
        if gate.slots:
            for slot in gate.ordered_slots():
                records.append(self._native_record(gate, slot))
        for ref, text_slot in gate.text_slots.items():
            record = self._text.get(ref)
            if record is None:
                record = self._text[ref] = _whole(ref, text_slot)
            records.append(record)
        detector = queue.detector
        if detector is not None and detector.block is not None:
            records.extend(self._forming(gate, detector, len(queue.blocks)))
        return tuple(records)

    def _native_record(self, gate: TurnGate, slot: BaseSlot) -> PartialCall:
        key = slot.key
        assert isinstance(key, int)
        native = self._native.get(key)
        if native is None:
            native = self._native[key] = _Native(gate.limits.max_depth)
        grew = native.read(slot)
        record = native.record
        whole = native.reader.complete or slot.arguments is not None
        if (
            record is None
            or grew
            or record.id != slot.id
            or record.name != slot.name
            or record.complete != whole
        ):
            reader = native.reader
            record = native.record = PartialCall(
                key,
                slot.id,
                slot.name,
                "native",
                whole,
                native.log.length,
                shot=reader.shot(),
                log=native.log,
            )
        return record

    def _forming(self, gate: TurnGate, detector: Detector, index: int) -> list[PartialCall]:
        block = detector.block
        assert block is not None
        current = self._block
        if current is None or current.block is not block:
            names = [f.name for f in block.formats]
            reader = BlockReader(names, detector.schemas, block.close)
            current = self._block = _Block(block, reader)
        parts = block.parts
        if len(parts) < current.index:  # joined: nothing is read twice, so start again
            current.reader = BlockReader(
                [f.name for f in block.formats], detector.schemas, block.close
            )
            current.index = 0
        for part in parts[current.index :]:
            current.reader.feed(part)
        current.index = len(parts)
        source = current.reader.format
        return [
            _forming_record(TextRef(index, n), call, source)
            for n, call in enumerate(current.reader.calls)
            if gate.schemas.knows(call.name)
        ]


def _forming_record(ref: TextRef, call: FormingCall, source: str) -> PartialCall:
    return PartialCall(
        ref,
        call.id,
        call.name,
        source,
        call.complete,
        call.log.length,
        shot=call.shot(),
        log=call.log,
    )


def _whole(ref: TextRef, slot: TextSlot) -> PartialCall:
    """A text call that entered the gate: its block closed, its arguments are whole."""
    given = slot.given
    log = TextLog()
    log.append(json.dumps(given, ensure_ascii=False))
    return PartialCall(
        ref,
        slot.id,
        slot.name,
        slot.source,
        True,
        log.length,
        shot=Shot(((given, len(given)),), None),
        log=log,
    )
