"""What a wire's reader hands a wire's writer: the gated pieces of one upstream chunk.

A reader turns one upstream chunk into a list of these, in order; a writer turns them into
the client's chunks. Only released text and wire-neutral facts cross between wires; what
is a wire's own (a delta field, a thinking block, a hosted tool's item) travels as
:class:`Native`, which the writer of that same wire forwards and another writer reads
only for its reasoning text. The calls themselves never travel here: the gate's accepted
calls (:class:`~callgate.proxy.core.Call`) are read at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from callgate.gate.turn import TextRef

__all__ = ["Event", "FormingArgs", "Native", "StreamedArgs", "Text", "UpstreamError", "Usage"]


@frozen
class Text:
    """Display text the gate released."""

    text: str


@frozen
class Native:
    """A piece of the upstream's own wire, forwarded as it came to a client of that wire.

    ``reasoning`` is the text of the upstream's reasoning channel it carries ('' for none),
    for a writer of another wire.
    """

    wire: str
    payload: Any
    reasoning: str = ""


@frozen
class StreamedArgs:
    """A native call's argument delta of a declared tool (``--stream-args``), as it came."""

    wire: str
    slot: int
    payload: Any


@frozen
class FormingArgs:
    """A text call's new argument JSON text while it forms (``--stream-args``)."""

    ref: TextRef
    name: str
    text: str


@frozen
class UpstreamError:
    """An error object the upstream sent inside its stream (relayed; the gate fails the turn)."""

    error: Mapping[str, Any]


@frozen
class Usage:
    """Token counts in the neutral form every writer reads (the upstream's own kept beside)."""

    input_tokens: int | None
    output_tokens: int | None
    wire: str
    raw: Any
    """The upstream's own usage object, as it came."""


Event = Text | Native | StreamedArgs | FormingArgs | UpstreamError
"""One piece of an upstream chunk, in order."""


def tokens(value: object) -> int | None:
    """A token count, or None when the upstream's field is not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
