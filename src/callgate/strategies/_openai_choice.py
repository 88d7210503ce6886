"""OpenAI Chat Completions: one choice's accumulator, its content parts and its message.

Part of :mod:`callgate.strategies.openai` (its public names stay there). An
:class:`_Accumulator` reassembles one choice of a turn (an ``n > 1`` stream gets one per
choice, each with a gate of its own); ``delta.content`` is a string or typed parts
(Mistral's magistral: ``text`` shown, ``thinking`` kept); :func:`_message` is one
choice's stream=false assistant message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate


class _Accumulator:
    """Native reassembly state for one choice of a turn (the arguments live in the gate's slots).

    The buffer's accumulator is its chosen choice's (``chosen``, 0 unless the buffer was
    told otherwise); each other choice of an ``n > 1`` stream gets one of its own in
    ``others``, with a gate of its own: tool-call indices are scoped per choice.
    """

    __slots__ = (
        "blocks",
        "by_id",
        "chosen",
        "content",
        "ended",
        "extra",
        "failed",
        "finish_reason",
        "gate",
        "head",
        "last",
        "new_gate",
        "others",
        "role",
    )

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.role = "assistant"
        self.content: list[str] = []
        self.blocks: list[tuple[str, list[str]]] | None = None
        """Content as a list of typed parts, once a server sent one (Mistral's magistral)."""
        self.extra: dict[str, list[str]] = {}
        self.finish_reason: str | None = None
        self.failed = False
        """Whether the provider's error was reported for this choice (one finding per choice)."""
        self.ended = False
        """Whether the chunk just read ended this choice (a repeated finish_reason does not)."""
        self.by_id: dict[str, int] = {}
        """Slot keys given to index-less entries, by their call id."""
        self.last: int | None = None
        """The slot the last tool_calls entry went to (an index-less continuation's)."""
        self.chosen = 0
        """The index of the choice this accumulator (and the buffer's gate) reads."""
        self.others: dict[int, _Accumulator] = {}
        """The stream's other choices (``n > 1``), by index."""
        self.new_gate: Callable[[], TurnGate] | None = None
        """Makes another choice's gate (the buffer sets it); None: a plain gate like ``gate``."""
        self.head: dict[str, Any] = {}
        """The completion's own fields (``id``, ``model``, ``created``, …), as first sent."""

    def choose(self, index: int, new_gate: Callable[[], TurnGate]) -> None:
        """Read choice ``index`` here; every other choice gets a gate from ``new_gate``."""
        self.chosen = index
        self.new_gate = new_gate

    def chosen_done(self) -> bool:
        """Whether the chunk just read ended the chosen choice: the buffer then finishes its gate.

        Asked for a chunk with a finish_reason; another choice's, or the chosen one's again
        on a bare chunk (a ``repeated_terminal``), is not the chosen choice's end, so a
        recorded trace gains no finish that changes nothing.
        """
        return self.ended

    def turns(self) -> list[tuple[int, TurnGate, dict[str, Any]]]:
        """Every choice seen (the chosen one always), by index, with its gate and message."""
        every = {self.chosen: self, **self.others}
        return [(n, every[n].gate, _message(every[n])) for n in sorted(every)]

    def other(self, index: int) -> _Accumulator:
        """Another choice's accumulator, made with a gate of its own on first sight."""
        acc = self.others.get(index)
        if acc is None:
            gate = self.gate
            made = self.new_gate() if self.new_gate is not None else _like(gate)
            made.on_stray = gate.on_stray
            acc = self.others[index] = _Accumulator(made)
        return acc

    def chosen_message(self) -> dict[str, Any]:
        """The chosen choice's stream=false assistant message."""
        return _message(self)

    def finish_others(self) -> None:
        """The stream ended: every other choice's gate settles (its chosen one is the buffer's)."""
        for acc in self.others.values():
            acc.gate.finish()


def _like(gate: TurnGate) -> TurnGate:
    """A fresh gate with ``gate``'s options (another choice of the same turn)."""
    return type(gate)(
        schemas=gate.schemas,
        limits=gate.limits,
        per_call_done=gate.per_call_done,
        requires_id=gate.requires_id,
        empty_arguments_object=gate.empty_arguments_object,
        preview=gate.preview,
        strict_finish=gate.strict_finish,
        text_per_call=gate.text_per_call,
    )


def _message(acc: _Accumulator) -> dict[str, Any]:
    """One choice's stream=false assistant message."""
    message: dict[str, Any] = {
        "role": acc.role,
        "content": "".join(acc.content) or None
        if acc.blocks is None
        else [_block(kind, parts) for kind, parts in acc.blocks],
    }
    for key, parts in acc.extra.items():
        message[key] = "".join(parts)
    slots = acc.gate.ordered_slots()
    if slots:
        message["tool_calls"] = [
            {
                "id": slot.id,
                "type": "function",
                "function": {"name": slot.name, "arguments": slot.raw_arguments},
            }
            for slot in slots
        ]
    return message


def _content(acc: _Accumulator, value: object) -> str:
    """Add a ``delta.content`` (a string, or a list of typed parts); return its display text.

    Parts (Mistral's magistral): ``text`` is shown; ``thinking`` is reasoning, kept in the
    message and never shown. Both count against the turn's text limit. Consecutive parts
    of one kind are merged, as the stream=false message has them.
    """
    if isinstance(value, str):
        if not acc.gate.text(value):
            return ""
        if acc.blocks is None:
            acc.content.append(value)
        elif value:
            _text_part(acc.blocks, value)
        return value
    if not isinstance(value, list):
        acc.gate.refuse("malformed_chunk", f"delta.content is not text or parts: {value!r:.60}")
        return ""
    if acc.blocks is None:
        acc.blocks = []
        if acc.content:
            _text_part(acc.blocks, "".join(acc.content))
            acc.content = []
    shown = ""
    for part in value:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            if not acc.gate.text(part["text"]):
                continue
            _text_part(acc.blocks, part["text"])
            shown += part["text"]
        elif kind == "thinking" and isinstance(part.get("thinking"), list):
            texts = _thinking_texts(part["thinking"])
            kept = [t for t in texts if acc.gate.text(t)]
            if kept or not texts:
                _thinking_part(acc.blocks, kept)
        else:
            acc.gate.refuse("malformed_chunk", f"a content part callgate cannot read: {part!r:.60}")
    return shown


def _text_part(blocks: list[tuple[str, list[str]]], text: str) -> None:
    """Add shown text: to the last part if it is text (parts of one kind merge), else a new one."""
    if blocks and blocks[-1][0] == "text":
        blocks[-1][1].append(text)
    else:
        blocks.append(("text", [text]))


def _thinking_texts(inner: list[Any]) -> list[str]:
    """The text pieces of a thinking part (its ``thinking`` list of text parts)."""
    return [p["text"] for p in inner if isinstance(p, Mapping) and isinstance(p.get("text"), str)]


def _thinking_part(blocks: list[tuple[str, list[str]]], texts: list[str]) -> None:
    """Add a thinking part's text pieces, merged into the last part if it is thinking."""
    if blocks and blocks[-1][0] == "thinking":
        blocks[-1][1].extend(texts)
    else:
        blocks.append(("thinking", texts))


def _block(kind: str, pieces: list[str]) -> dict[str, Any]:
    """One content part of the message, its pieces joined once (the stream stays linear)."""
    text = "".join(pieces)
    if kind == "text":
        return {"type": "text", "text": text}
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


def _describe(error: object) -> str:
    """An error in brief: an object's code or type and message; any other value as written."""
    if not isinstance(error, Mapping):
        return f"{error!r:.160}"
    kind = error.get("code") or error.get("type") or "an error"
    return f"{kind!s:.60}: {error.get('message')!s:.160}"


def _failed(acc: _Accumulator, detail: str) -> None:
    """The provider reported an error for this choice: one ``provider_error``, which blocks it.

    A chunk may say it twice (an ``error`` object and finish_reason ``error``): the first
    is reported, so the finding names the error object when there is one.
    """
    if acc.failed:
        return
    acc.failed = True
    acc.gate.refuse("provider_error", f"the provider reported {detail}")
