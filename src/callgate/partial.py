"""Every call of a turn while it forms: a small record per call, read incrementally.

:class:`PartialCalls` belongs to one buffer's turn. Each :meth:`~PartialCalls.read` looks at
the turn's gate (its native slots and the text calls that entered it) and at the open
text block, if any, and reads only what arrived since the last read: a native slot's new
argument fragments go through its :class:`~callgate.gate.partialjson.PartialJSON`, an
open block's new payload through its format's
:class:`~callgate.strategies.text.forming.BlockReader`. A record is made only for a call
that changed; taking one costs O(depth), and its ``arguments`` become plain data only
when read. While nothing but fragments arrived since the last read (the gate's change
count is the same), the native slots are all it looks at. The calls still run only on
the gate's verdict: a record is something to show.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from callgate.gate.partialjson import (
    PLAIN_SPLIT,
    REJOINED,
    STRING_STOP,
    PartialJSON,
    Shot,
    Spine,
    StillForming,
    TextLog,
    value_at,
)
from callgate.gate.turn import BaseSlot, CallRef, Changes, NativeRef, TextRef, TextSlot, TurnGate
from callgate.strategies.text.detector import Detector
from callgate.strategies.text.forming import BlockReader, FormingCall
from callgate.textqueue import TextQueue

__all__ = ["PartialCall", "PartialCalls"]


class PartialCall:
    """One call of the turn as it stands: its reference, identity and arguments so far.

    ``arguments`` is always a prefix of the final arguments (strings cut at their current
    end, containers holding only what has started, no key whose name is still open, no
    number or ``true``/``false``/``null`` until its token is whole); ``complete`` says the
    arguments are whole. Whether the call may run is still the gate's verdict alone.
    A record describes the call at the moment it was taken; a later one, later. It holds
    two references (taking one is O(1)): the length of its argument text then, and the
    call's identity with a view of its arguments then, which records taken while a string
    value grows share.
    """

    __slots__ = ("_state", "text_length")

    _state: _State
    text_length: int
    """How long the arguments' JSON text is so far (see :meth:`text`)."""

    @property
    def ref(self) -> int | str:
        """The call's reference as reports write it: its native slot key, or ``text-B.N``."""
        return self._state[0][0].slot

    @property
    def call_ref(self) -> CallRef:
        """The call's typed reference: a :class:`~callgate.gate.refs.NativeRef` or ``TextRef``."""
        return self._state[0][0]

    @property
    def id(self) -> str | None:
        """The call's id, if it has one (yet)."""
        return self._state[0][1]

    @property
    def name(self) -> str | None:
        """The tool's name once it has streamed whole (None before)."""
        return self._state[0][2]

    @property
    def source(self) -> str:
        """``native``, or the text format the call is written in."""
        return self._state[0][3]

    @property
    def complete(self) -> bool:
        """Whether the arguments are whole (no more argument text will change them)."""
        view = self._state[1]
        return len(view) == 2 and bool(view[0])

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments so far, as plain data, built afresh on each read (O(their size)).

        Values that were whole when the record was taken may be shared with later
        records: copy before changing them.
        """
        view = self._state[1]
        if len(view) == 2:
            shot: Shot = view[1]
        else:  # an open string value read plainly: its length follows the text's
            shot = (view[0], (view[1], self.text_length - view[3], view[2]))
        value: dict[str, Any] = value_at(shot)
        return value

    def text(self, start: int = 0) -> str:
        """The arguments' JSON text from ``start`` to :attr:`text_length`.

        A prefix of the final call's argument text: for a native call, the text the model
        streamed (read up to where it stopped being strict JSON); for a call written in
        an XML-like text format, ``json.dumps(arguments, ensure_ascii=False)`` of the
        converted call; for a text format whose arguments are JSON, the model's JSON. A
        writer that keeps how much it sent asks for ``text(sent)``: the new argument text,
        in O(new).
        """
        return self._state[0][4].since(start, self.text_length)

    def _key(self) -> tuple[Any, ...]:
        return (*self._state[0][:4], self.complete, self.text_length)

    def __repr__(self) -> str:
        ref, id_, name, source = self._state[0][:4]
        return (
            f"PartialCall(ref={ref!r}, id={id_!r}, name={name!r}, source={source!r}, "
            f"complete={self.complete!r}, text_length={self.text_length!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartialCall):
            return NotImplemented
        return self._key() == other._key() and self.arguments == other.arguments

    def __hash__(self) -> int:
        return hash(self._key())


_Head = tuple[CallRef, str | None, str | None, str, TextLog]
"""A call's reference, id, name, source and argument text: shared by its records."""
_View = tuple[bool, Shot] | tuple[Spine, list[str], str | None, int]
"""Whether the arguments are whole and their shot; or, while a string value is read
plainly, its spine, pieces and key, and how much longer the text is than the string."""
_State = tuple[_Head, _View]


def _made(
    ref: CallRef,
    identity: tuple[str | None, str | None],
    state: tuple[str, bool, int],
    view: tuple[Shot, TextLog],
) -> PartialCall:
    """A record from its parts: ``identity`` (id, name), ``state`` (source, complete, length).

    ``view``: the arguments' shot and their JSON text. The class takes no arguments: the
    hot path makes a record with a bare call and sets its two fields, cheaper than an
    ``__init__`` call.
    """
    record = PartialCall()
    source, complete, length = state
    record._state = ((ref, *identity, source, view[1]), (complete, view[0]))
    record.text_length = length
    return record


class TurnHolder(Protocol):
    """What :class:`PartialCalls` reads the turn from (a buffer): its gate and text queue."""

    gate: TurnGate | None
    text_queue: TextQueue


Whole = Callable[[int], object]
"""A call's arguments by slot key, as a wire that sends them whole holds them (or None)."""


class _Native:
    """A native slot's reader: where it is in the slot's fragments, and its last record."""

    __slots__ = (
        "changes", "folds", "forming", "given", "head", "index", "log", "offset", "parts",
        "pieces", "plain", "reader", "record", "slot", "state", "synced",
    )  # fmt: skip

    def __init__(self, slot: BaseSlot, max_depth: int) -> None:
        self.slot = slot
        self.parts = slot.parts
        """The slot's fragments (the same list for the slot's life; a fold joins it in place)."""
        self.given: str | None = None
        """The JSON text of arguments the wire gave whole (before the gate had them)."""
        self.forming = False
        """Whether those arguments still stream (:class:`StillForming`)."""
        self.reader = PartialJSON(max_depth=max_depth)
        self.log = TextLog()
        self.head: _Head = (slot.ref, slot.id, slot.name, "native", self.log)
        self.plain: tuple[Any, ...] = ((), [], None, 0)
        """The view of the open string read plainly, for records while it grows."""
        self.index = 0
        """How many of the slot's parts were read."""
        self.offset = 0
        """How many characters were read in all."""
        self.folds = 0
        self.record: PartialCall | None = None
        # While the hot path is armed (see arm): what it reads the slot with.
        self.changes = Changes()
        """The gate's change count."""
        self.state: _State = (self.head, self.plain)
        """The records' shared state: the head and the open string's view."""
        self.pieces: list[str] = []
        """The open string's pieces (the hot path appends to them and to the log's)."""
        self.synced = 0
        """The text's length when the reader's counts were last brought up to date."""

    def current(self, whole: Whole | None = None) -> PartialCall:
        """The slot's record now: the last one, unless fragments or its identity came.

        ``whole`` gives the arguments of a wire that sends them as an object, before they
        reach the gate.
        """
        slot, record = self.slot, self.record
        if self.given is not None and slot.parts:  # the gate has them now: read its text
            self._restart()
        grew = len(slot.parts) != self.index or slot.folds != self.folds
        if grew:
            self._read(slot.parts, slot.folds)
        elif whole is not None and not slot.parts and isinstance(slot.ref, NativeRef):
            grew = self._given(whole(slot.ref.index))
        if (
            not grew
            and record is not None
            and record.id == slot.id
            and record.name == slot.name
            and (record.complete or slot.arguments is None)
        ):
            return record
        return self._record()

    def arm(self, record: PartialCall, changes: Changes) -> bool:
        """Whether the hot path may take this slot's next fragments, and ready it if so.

        It may while a string value is open with no escape pending, in arguments that
        stream as text, and ``record`` is the slot's last. The hot path then appends the
        fragments to the string and the text alone; :meth:`settle` counts them in.
        """
        reader, slot = self.reader, self.slot
        plain = reader.plain
        if (
            plain is None
            or record is not self.record
            or self.given is not None
            or slot.arguments is not None
            or self.folds != slot.folds
        ):
            return False
        log = self.log
        length = self.synced = log.length
        view = self.plain
        offset = length - reader.string_size
        if view[0] is not plain[0] or view[1] is not plain[1] or view[3] != offset:
            view = self.plain = (*plain, offset)
        state = self.state
        if state[0] is not self.head or state[1] is not view:
            self.state = (self.head, view)
        self.pieces = plain[1]
        self.changes = changes
        return True

    def settle(self, record: PartialCall, split: bool = False) -> None:
        """Count in what the hot path read since :meth:`arm` (``record``: its last).

        ``split``: the last fragment ended in a backslash whose escape is still to come;
        the reader reads that backslash itself, as it would have.
        """
        log, reader = self.log, self.reader
        grew = log.length - self.synced
        self.synced = log.length
        if split:
            pieces = self.pieces
            last = pieces[-1][:-1]
            if last:
                pieces[-1] = last
            else:
                pieces.pop()
            grew -= 1
        reader.string_size += grew
        reader.valid += grew
        self.offset += grew + split
        self.record = record
        if split:
            reader.take("\\")

    def more(self, text: str, split: bool) -> PartialCall:
        """A record after the hot path took ``text`` (``split``: it ends in half an escape)."""
        self.index += 1
        self.pieces.append(text)
        log = self.log
        log.pieces.append(text)
        length = log.length = log.length + len(text)
        state = self.state
        record = PartialCall()
        record.text_length = length
        if split:  # the string stops before the half escape
            view = self.plain
            record._state = (state[0], (view[0], view[1], view[2], view[3] + 1))
        else:
            record._state = state
        return record

    def _given(self, value: object) -> bool:
        """Read arguments given whole; whether they changed since the last read."""
        if value is None:
            return False
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return False  # the gate refuses them at the turn's end
        if text == self.given:
            return False
        self._restart()
        self.given = text
        self.forming = isinstance(value, StillForming)
        self.log.append(text[: self.reader.take(text)])
        return True

    def _restart(self) -> None:
        self.reader = PartialJSON(max_depth=self.reader.max_depth)
        self.log = TextLog()
        self.given = None
        self.forming = False
        self.index = self.offset = 0
        self.folds = self.slot.folds

    def _record(self) -> PartialCall:
        slot, reader, head = self.slot, self.reader, self.head
        if head[1] is not slot.id or head[2] is not slot.name or head[4] is not self.log:
            head = self.head = (slot.ref, slot.id, slot.name, "native", self.log)
        record = self.record = PartialCall()
        record.text_length = self.log.length
        whole = reader.complete and not self.forming
        record._state = (head, (whole or slot.arguments is not None, reader.shot()))
        return record

    def _read(self, parts: list[str], folds: int) -> None:
        """Read the slot's new fragments (after a fold, from the same character)."""
        skip = 0
        if folds != self.folds:  # the parts were joined into one
            self.folds, self.index, skip = folds, 0, self.offset
        reader, log = self.reader, self.log
        for part in parts[self.index :] if self.index else parts:
            text = part[skip:] if skip else part
            skip = 0
            self.offset += len(text)
            if reader.broken or not text:
                continue
            valid = reader.take(text)
            log.append(text if valid == len(text) else text[:valid])
        self.index = len(parts)


class _Block:
    """The open text block's reader and where it is in the block's payload."""

    __slots__ = ("block", "index", "reader")

    def __init__(self, block: object, reader: BlockReader) -> None:
        self.block = block
        self.reader = reader
        self.index = 0


class PartialCalls:
    """The turn's calls while they form (one per buffer turn; see the module's notes)."""

    __slots__ = (
        "_block", "_fast", "_hot", "_native", "_owner", "_records", "_split", "_text", "_version",
        "whole",
    )  # fmt: skip

    def __init__(self, owner: TurnHolder) -> None:
        self._owner = weakref.ref(owner)
        """Weakly: an owner that holds :meth:`now` is freed as soon as it is dropped."""
        self.whole: Whole | None = None
        """Where a wire that sends arguments whole holds them (the buffer sets it)."""
        self._native: dict[CallRef, _Native] = {}
        self._text: dict[TextRef, PartialCall] = {}
        self._block: _Block | None = None
        self._version = -1
        self._fast: list[_Native] | None = None
        """The native slots' readers, when they are all the turn has (no text call)."""
        self._records: tuple[PartialCall, ...] = ()
        self._hot: _Native | None = None
        """The one native slot whose open string the hot path reads (see :meth:`read`)."""
        self._split: _Native | None = None
        """That slot, while its last fragment ended in half an escape (see :meth:`_rejoin`)."""

    def now(self) -> tuple[PartialCall, ...]:
        """Every call of the turn now: native slots, text calls in the gate, the open block's.

        The owner's ``partial_calls`` (a buffer installs this bound method as its own,
        one call less on the path taken after every delta).

        The hottest path first: the turn's one native call, its string value open, one new
        fragment that is more of that string (nothing else changed since the last read,
        which the gate's change count vouches for). Its record shares the string's view:
        O(1) beyond the fragment's own length. Anything else reads the general way.
        """
        hot = self._hot
        if hot is not None:
            parts = hot.parts
            index = hot.index
            after = index + 1
            if (
                len(parts) == after
                and hot.changes.n == self._version
                and hot.slot.folds == hot.folds
            ):
                text = parts[index]
                if (
                    '"' not in text
                    and text.isprintable()
                    and ("\\" not in text or "\\" not in text.replace("\\n", ""))
                ):
                    plain = True  # no stop, or only newline escapes: no need of the regex
                elif "\\" in text:  # whole escapes, or a backslash whose escape comes next
                    run = PLAIN_SPLIT(text)
                    plain = run is not None
                    if plain and run.lastindex is not None:  # type: ignore[union-attr]
                        self._hot, self._split = None, hot
                        records = self._records = (hot.more(text, True),)
                        return records
                else:  # a quote, a control character, a lone surrogate, or what JSON allows
                    plain = STRING_STOP(text) is None
                if plain:
                    hot.index = after
                    hot.pieces.append(text)
                    log = hot.log
                    log.pieces.append(text)
                    record = PartialCall()
                    record._state = hot.state
                    record.text_length = log.length = log.length + len(text)
                    records = self._records = (record,)
                    return records
            elif (
                len(parts) == index
                and hot.changes.n == self._version
                and hot.slot.folds == hot.folds
            ):
                return self._records
        elif self._split is not None:
            split = self._rejoin(self._split)
            if split is not None:
                return split
        owner = self._owner()
        if owner is None:
            return ()
        return self._cold(owner.gate, owner.text_queue)

    def _rejoin(self, native: _Native) -> tuple[PartialCall, ...] | None:
        """The fragment after an escape cut in two: its rest and more plain text, if so.

        None: not so (the split is still to settle, see :meth:`_cold`).
        """
        slot = native.slot
        parts = slot.parts
        index = native.index
        if native.changes.n != self._version or slot.folds != native.folds:
            return None
        if len(parts) == index:
            return self._records
        if len(parts) != index + 1:
            return None
        text = parts[index]
        run = REJOINED(text)
        if run is None:
            return None
        split = run.lastindex is not None
        if split:
            self._split = native
        else:
            self._split, self._hot = None, native
        records = self._records = (native.more(text, split),)
        return records

    def _cold(self, gate: TurnGate | None, queue: TextQueue) -> tuple[PartialCall, ...]:
        """Every call the general way, then the hot path armed again if it now applies."""
        split = self._split
        if split is not None:
            self._split = None
            split.settle(self._records[0], split=True)
        hot = self._hot
        if hot is not None:
            hot.settle(self._records[0])
            self._hot = None
        if gate is None:
            return ()
        fast = self._fast
        if fast is not None and gate.changes.n == self._version and self.whole is None:
            records = self._records = tuple([native.current() for native in fast])
        else:
            records = self._read(gate, queue)
        if (
            len(records) == 1
            and self._fast is not None
            and self.whole is None
            and len(self._fast) == 1
        ):
            native = self._fast[0]
            if gate is not None and native.arm(records[0], gate.changes):
                self._hot = native
        return records

    def _read(self, gate: TurnGate, queue: TextQueue) -> tuple[PartialCall, ...]:
        natives = [self._native_of(gate, slot) for slot in gate.ordered_slots()]
        records = [native.current(self.whole) for native in natives]
        detector = queue.detector
        block = detector.block if detector is not None else None
        self._version = gate.changes.n
        self._fast = natives if not gate.text_slots and block is None else None
        for ref, text_slot in gate.text_slots.items():
            record = self._text.get(ref)
            if record is None:
                record = self._text[ref] = _whole(ref, text_slot)
            records.append(record)
        if detector is not None and block is not None:
            records.extend(self._forming(gate, detector, len(queue.blocks)))
        self._records = tuple(records)
        return self._records

    def _native_of(self, gate: TurnGate, slot: BaseSlot) -> _Native:
        native = self._native.get(slot.ref)
        if native is None or native.slot is not slot:
            native = self._native[slot.ref] = _Native(slot, gate.limits.max_depth)
        return native

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
    return _made(
        ref, (call.id, call.name), (source, call.complete, call.log.length), (call.shot(), call.log)
    )


def _whole(ref: TextRef, slot: TextSlot) -> PartialCall:
    """A text call that entered the gate: its block closed, its arguments are whole."""
    given = slot.given
    log = TextLog()
    log.append(json.dumps(given, ensure_ascii=False))
    shot: Shot = (((given, len(given)),), None)
    return _made(ref, (slot.id, slot.name), (slot.source, True, log.length), (shot, log))
