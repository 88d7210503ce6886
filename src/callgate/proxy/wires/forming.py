"""Argument deltas of a text call while it forms (``--stream-args``), for every client wire.

A call the model wrote in its text (Qwen3-Coder's ``<function=...>``, GLM's, MiniMax's, ...)
reaches the gate only when its block closes. Under ``stream_args`` the reader asks the
buffer for the turn's :meth:`~callgate.buffer.LLMStreamBuffer.partial_calls` after each
chunk and hands each writer the new JSON text of every text call of a declared tool as
a :class:`~callgate.proxy.wires.events.FormingArgs`: the converted call's arguments as
they grow (``record.text(sent)``, O(new text)). A writer sends them as its wire's
argument deltas and still sends the call's finish only when the gate accepted the call;
a call the gate withholds, or a turn cut short, leaves the deltas sent without their
finish.

A finish is not all a client reads: the Vercel AI SDK runs every call its stream's entries
or items hold once their arguments parse, whatever the turn's finish says. So each writer
sends a streamed call's argument text through a :class:`HeldClose`: the bracket that closes
the top-level value, and whatever follows it, wait for the gate's acceptance. A call the
gate withholds keeps an argument text no JSON parser reads whole; one whose text sent is
blank (a call with no arguments, whose upstream sent none) gets an open brace at the end,
since the SDK runs a blank text as an empty object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from callgate.gate.jsonscan import StructureScanner
from callgate.gate.turn import TextRef
from callgate.proxy.wires.events import FormingArgs

__all__ = [
    "STRANDED",
    "STRANDED_WHY",
    "FormingReader",
    "HeldClose",
    "remainder",
    "stranded_refs",
]

STRANDED_WHY = (
    "a call shown while it formed was not accepted, and what was shown of it cannot be taken back"
)
"""Why a stranded turn's calls were not sent (each one's withheld answer says it)."""
STRANDED = f"No call of this answer was sent: {STRANDED_WHY}."
"""The line a Chat Completions turn ends with when a call streamed as it formed was
withheld while others passed (the message the client rebuilds keeps every entry it got,
so none of the turn's calls is sent and the turn does not end ``"tool_calls"``)."""


class HeldClose:
    """A call's argument text sent in pieces, the close of its top-level value held back.

    :meth:`send` gives what of a piece may go now: everything before the bracket that
    closes the top-level object or array. That bracket and all after it wait in
    :attr:`held`, sent (:meth:`rest`) only when the gate accepted the call. A text that does
    not open with ``{`` or ``[`` (a bare string or number, which could parse whole) is held
    from its first character.
    """

    __slots__ = ("_open", "_scan", "held")

    def __init__(self) -> None:
        self._scan = StructureScanner()
        self._open: bool | None = None
        """Whether the text opened with a bracket (None: only whitespace so far)."""
        self.held: list[str] = []

    def send(self, text: str) -> str:
        """What of ``text`` may be sent now; the rest is held."""
        if self._open is None:
            start = text.lstrip()
            if start:
                self._open = start[0] in "{["
        if self.held or self._open is False:
            self.held.append(text)
            return ""
        at = self._scan.feed(text)
        if at < 0:
            return text
        self.held.append(text[at:])
        return text[:at]

    @property
    def blank(self) -> bool:
        """Whether nothing but whitespace of the text was sent.

        A client may read a blank text as an empty object (the Vercel AI SDK does, and runs
        the call with it): a withheld call whose text is blank must be given an open brace.
        """
        return self._open is not True

    def rest(self) -> str:
        """The held text, once the call is accepted (and nothing is held after it)."""
        rest = "".join(self.held)
        self.held = []
        return rest


class FormingReader:
    """One turn's text calls as they form: how much of each one's argument text was sent."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.sent: dict[TextRef, list[str]] = {}
        """Per text call: the argument text handed to the writer, in pieces."""
        self._length: dict[TextRef, int] = {}

    def read(self) -> list[FormingArgs]:
        """The new argument text of every text call of a declared tool since the last read."""
        engine = self.engine
        out: list[FormingArgs] = []
        for record in engine.buffer.partial_calls():
            ref = record.call_ref
            if record.source == "native" or not isinstance(ref, TextRef):
                continue
            name = record.name
            if name is None or not engine.driver.owns(name):
                continue
            sent = self._length.get(ref, 0)
            if record.text_length <= sent:
                continue
            pieces = self.sent.setdefault(ref, [])
            if record.complete and pieces and not record.text(0).startswith("".join(pieces)):
                continue  # the whole call's text is not what was sent: no more of it
            text = record.text(sent)
            pieces.append(text)
            self._length[ref] = record.text_length
            out.append(FormingArgs(ref, name, text))
        return out


def stranded_refs(
    formed: Mapping[TextRef, Sequence[Any]],
    calls: Sequence[Any],
    sent: int,
    held: Mapping[Any, HeldClose],
) -> list[TextRef]:
    """The text calls streamed as they formed that no released call finishes.

    ``formed``: each such call's record, whose item ``sent`` holds the pieces sent;
    ``calls``: the calls released (one finishes its formed entry when its arguments
    continue the text sent, or the text sent and held is the same JSON);
    ``held``: each call's :class:`HeldClose`, by its reference.
    """
    finished = set()
    for call in calls:
        slot = call.slot
        entry = formed.get(slot) if isinstance(slot, TextRef) else None
        kept = held.get(slot)
        if entry is not None and remainder(call.arguments, entry[sent], kept) is not None:
            finished.add(slot)
    return [ref for ref in formed if ref not in finished]


def remainder(arguments: str, sent: Sequence[str], held: HeldClose | None = None) -> str | None:
    """What of a call's final ``arguments`` text is still to send after ``sent``.

    When the model spelled its JSON its own way (a format whose payload is JSON, written
    without spaces or with more), the rest is the text ``held`` back: what was sent and
    held is then the same value as ``arguments``. None: neither, so the call cannot be
    finished on what was sent.
    """
    given = "".join(sent)
    if arguments.startswith(given):
        return arguments[len(given) :]
    rest = "".join(held.held) if held is not None else ""
    try:  # a format whose arguments are the model's JSON: the same value, spelled its way
        same = json.loads(given + rest) == json.loads(arguments)
    except ValueError:
        return None
    return rest if same else None
