"""OpenAI Responses: the turn's accumulator, its output items and their parts.

Part of :mod:`callgate.strategies.responses` (its public names stay there). An
:class:`_Accumulator` keeps the Response object's output items by ``output_index`` (call
arguments live in the gate's slots); a content or summary part keeps its text as
fragments (:class:`_Part`), joined once when the item is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from callgate.gate.findings import Finding, finding
from callgate.gate.strictjson import parse_arguments
from callgate.strategies.base import ExtractedCall, Shape, at_call, not_text_arguments, text_field

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate


def _is_index(value: object) -> TypeGuard[int]:
    """An output index: a plain int (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


class _Part:
    """One content or summary part of an output item, its text kept as fragments."""

    __slots__ = ("annotations", "field", "part", "texts")

    def __init__(self, part: dict[str, Any], field: str) -> None:
        self.part = part
        self.field = field
        self.texts: list[str] = []
        self.annotations: list[Any] | None = None
        """The part's annotations once one was added (a list owned here, appended to)."""

    def built(self) -> dict[str, Any]:
        """The part with its text joined."""
        part = dict(self.part)
        if self.annotations is not None:
            part["annotations"] = list(self.annotations)
        if self.texts or self.field not in part:
            part[self.field] = part.get(self.field, "") + "".join(self.texts)
        return part


class _Accumulator:
    """Native reassembly state for one turn (call arguments live in the gate's slots)."""

    __slots__ = (
        "call_ids",
        "calls",
        "done",
        "ended",
        "envelope",
        "gate",
        "item_ids",
        "items",
        "parts",
        "refused",
    )

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.envelope: dict[str, Any] = {"object": "response", "output": []}
        self.items: dict[int, dict[str, Any]] = {}
        self.done: dict[int, dict[str, Any]] = {}
        self.calls: set[int] = set()
        self.item_ids: dict[str, int] = {}
        self.call_ids: dict[str, int] = {}
        self.parts: dict[int, dict[tuple[str, int], _Part]] = {}
        self.refused: set[tuple[str, object]] = set()
        self.ended: str | None = None

    def refuse(self, code: str, message: str, key: object = None) -> None:
        """Refuse the turn once per code and output index (a stream may repeat a fault)."""
        marker = (code, key if _is_index(key) else repr(key))
        if marker not in self.refused:
            self.refused.add(marker)
            self.gate.refuse(code, message)


def _item_events(index: int, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One output item as the events that stream it (see :meth:`ResponsesStrategy.replay`)."""
    where: dict[str, Any] = {"output_index": index}
    if isinstance(item.get("id"), str):
        where["item_id"] = item["id"]
    added: Mapping[str, Any] = item
    deltas: list[dict[str, Any]] = []
    kind = item.get("type")
    arguments = item.get("arguments")
    if kind == "function_call" and isinstance(arguments, str):
        added = {**item, "arguments": ""}
        if arguments:
            deltas.append(
                {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
            )
    elif kind == "message" and isinstance(item.get("content"), list):
        added = {**item, "content": []}
        for part_index, part in enumerate(item["content"]):
            text = part.get("text") if isinstance(part, Mapping) else None
            if isinstance(text, str) and part.get("type") == "output_text":
                deltas.append(
                    {
                        "type": "response.output_text.delta",
                        **where,
                        "content_index": part_index,
                        "delta": text,
                    }
                )
    return [
        {"type": "response.output_item.added", "output_index": index, "item": dict(added)},
        *deltas,
        {"type": "response.output_item.done", "output_index": index, "item": dict(item)},
    ]


def _function_call_items(message: Shape) -> list[tuple[ExtractedCall, Finding | None]]:
    """Every ``function_call`` item, with why it cannot run (or None)."""
    read: list[tuple[ExtractedCall, Finding | None]] = []
    for position, item in enumerate(_output(message)):
        name, arguments = item.get("name"), item.get("arguments")
        if item.get("type") != "function_call":
            continue
        parsed, problem = parse_arguments(arguments if isinstance(arguments, str) else "")
        problem = at_call(problem, position)
        if arguments is not None and not isinstance(arguments, str):
            parsed, problem = None, not_text_arguments(arguments, position)
        if not name or not isinstance(name, str):
            name, problem = None, finding("missing_name", "the function call has no name", position)
        call_id = item.get("call_id")
        if problem is None and parsed is not None and name is not None:
            read.append((ExtractedCall(call_id, name, parsed, position), None))
        else:
            where = problem or finding("malformed_json", "unreadable arguments", position)
            read.append((ExtractedCall(call_id, name or "(no name)", {}, position), where))
    return read


def _output(message: Shape) -> list[Mapping[str, Any]]:
    """The output items of a Response object (objects only)."""
    output = message.get("output")
    if not isinstance(output, list):
        return []
    return [item for item in output if isinstance(item, Mapping)]


def _refuse_item(acc: _Accumulator, chunk: Shape, which: str) -> None:
    """An ``output_item`` event without an integer output_index and an item object."""
    acc.refuse(
        "malformed_chunk",
        f"output_item.{which} needs an output_index and an item: {dict(chunk)!r:.80}",
        chunk.get("output_index"),
    )


def _text(acc: _Accumulator, item: Mapping[str, Any], field: str) -> str | None:
    """An item's id or name: a non-empty string, or None; anything else is refused."""
    return text_field(acc.refuse, item, field, "a function call's")


def _describe(error: Mapping[str, Any]) -> str:
    """An error object's code and message, for a finding."""
    code, message = error.get("code"), error.get("message")
    return f"{code}: {message}" if code else f"{message!r}"


def _call_item(acc: _Accumulator, key: int) -> dict[str, Any]:
    """A function_call item: the done item (or the added one), its arguments the deltas'."""
    item = dict(acc.done.get(key) or acc.items[key])
    slot = acc.gate.slots.get(key)
    if slot is not None:
        item["arguments"] = slot.raw_arguments
    return item


def _open_item(acc: _Accumulator, key: int) -> dict[str, Any]:
    """An item not done yet, as the stream has built it so far."""
    item = dict(acc.items[key])
    parts = acc.parts.get(key)
    if parts:
        for list_name in ("content", "summary"):
            built = [parts[k].built() for k in sorted(k for k in parts if k[0] == list_name)]
            if built:
                item[list_name] = built
    return item
