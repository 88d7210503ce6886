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
"""

from __future__ import annotations

from typing import Any

from callgate.gate.turn import TextRef
from callgate.proxy.wires.events import FormingArgs

__all__ = ["FormingReader", "remainder"]


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
            ref = record.ref
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


def remainder(arguments: str, sent: list[str]) -> str | None:
    """What of a call's final ``arguments`` text is still to send after ``sent``.

    None: the sent text is not their start, so the call cannot be finished on it.
    """
    given = "".join(sent)
    return arguments[len(given) :] if arguments.startswith(given) else None
