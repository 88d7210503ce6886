"""What every wire's encoder shares: the call record, the tagged chunk, the encoder's shape.

An encoder knows the shape of each event of its wire (an opening, an argument fragment,
a per-call close where the wire has one, the turn's end) and nothing of Hypothesis: the
strategies in :mod:`callgate.testing.wire_streams` decide the order, the quirks and the faults,
and every chunk is tagged with what it is (a :class:`Piece`), so a fault can be placed
"after call 2's close" on any wire.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from callgate.strategies.wire import Wire

Chunk = dict[str, Any]


@dataclass(frozen=True)
class WireCall:
    """One tool call as it crosses the wire: id, tool name and argument fragments.

    The encoders and :mod:`callgate.testing.builders` both take it. ``key``: the slot key
    an encoder writes the call under (the builders number calls by position instead);
    ``arguments``: the arguments as an object, which the wires whose calls come whole
    (Gemini, Ollama) send in place of fragments.
    """

    id: str | None
    name: str
    fragments: tuple[str, ...] = ()
    _: KW_ONLY
    key: int = 0
    arguments: Any = None

    @property
    def raw(self) -> str:
        """The argument text the fragments join to."""
        return "".join(self.fragments)


@dataclass(frozen=True)
class Piece:
    """One chunk of a generated stream and what it is.

    ``kind``: ``prelude``, ``text``, ``open``, ``fragment``, ``close``, ``finish``,
    ``epilogue`` or ``quirk``; ``call``: the position of the call it belongs to, if any.
    """

    kind: str
    chunk: Chunk
    call: int | None = None
    chars: int = 0
    """How many characters of argument text the chunk carries."""


@dataclass
class Encoder:
    """The events of one wire. Subclasses fill in the shapes; quirks are flags."""

    WIRE: ClassVar[Wire]
    """The wire's record (:mod:`callgate.strategies`): its name and quirks are read from it."""
    wire: str = ""
    quirks: frozenset[str] = frozenset()
    fragmented: bool = True
    """Arguments stream as text fragments (else each call comes whole, its arguments an object)."""
    closes: bool = True
    """Each call has a close event of its own (else only the turn's end closes calls)."""
    id_prefix: str = "call_"
    carries_ids: bool = True
    """Calls carry an id unless the ``no_ids`` quirk; else only under the ``ids`` quirk."""
    QUIRKS: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)

    def first_key(self, has_text: bool) -> int:
        """The slot key of the first call (a text block may take slot 0)."""
        return 0

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        """The events before the first call: the message's start and its text."""
        raise NotImplementedError

    def open(self, call: WireCall) -> list[Chunk]:
        """A call's opening (for a whole-call wire: the whole call)."""
        raise NotImplementedError

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        """One argument fragment of ``call``."""
        raise NotImplementedError

    def close(self, call: WireCall) -> list[Chunk]:
        """A call's own close event(s); none where the wire has none."""
        return []

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        """The turn's end: the terminal evidence for every call."""
        raise NotImplementedError

    def epilogue(self) -> list[Chunk]:
        """What follows the turn's end (usage, metrics); may be empty."""
        return []

    def finalise(self, chunks: list[Chunk]) -> list[Chunk]:
        """Last touches over the whole stream (sequence numbers)."""
        return chunks

    def other_reason(self) -> str:
        """A turn-end reason that is not "tool calls"."""
        raise NotImplementedError

    def pack(self, chunks: Sequence[Chunk]) -> Chunk:
        """Several chunks as one, in order (a server's batching); whole-call wires only."""
        raise NotImplementedError(f"{self.wire} does not pack several events into one chunk")

    def nameless(self, call: WireCall) -> list[Chunk]:
        """A whole call sent without its name (a fault); whole-call wires only."""
        raise NotImplementedError(f"{self.wire} has no whole call to send without a name")

    def error(self) -> Chunk:
        """The event a server sends when the model fails mid-stream; where the wire has one."""
        raise NotImplementedError(f"{self.wire} has no error event in the kit")


def chunks_of(pieces: Sequence[Piece]) -> list[Chunk]:
    """The chunks of ``pieces``, deep-copied (a consumer may mutate what it is fed)."""
    return [copy.deepcopy(piece.chunk) for piece in pieces]


def dumps(chunk: Chunk) -> str:
    """A chunk as one line of compact JSON (non-ASCII kept, as servers send it)."""
    return json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
