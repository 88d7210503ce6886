"""Cohere v2 chat stream: typed events (hyphenated ``type``) into the stream=false response.

Wire: ``message-start`` brings the response ``id`` and the role; content blocks stream as
``content-start`` / ``content-delta`` (``delta.message.content.text``, or ``.thinking``
for a thinking block) / ``content-end``, keyed by their own ``index``; the tool plan
streams as ``tool-plan-delta`` (``delta.message.tool_plan``). Each tool call opens with
``tool-call-start``, whose ``delta.message.tool_calls`` is one object (not a list)
holding the call id, ``type: "function"`` and ``function.name`` (and an ``arguments``
string, normally empty); ``tool-call-delta`` brings string fragments of
``function.arguments``; ``tool-call-end`` is the call's own done. Calls are keyed by the
tool-call ``index`` of those events (a numbering of their own, apart from content
indices). ``message-end`` carries ``delta.finish_reason`` (the turn done; ``TOOL_CALL``
is the tool-call reason, ``COMPLETE``, ``MAX_TOKENS``, ``ERROR`` ... are not) and
``delta.usage``.

The assembled message is the stream=false v2 ``ChatResponse``: ``{id, finish_reason,
message: {role, content: [{type: "text", text}...], tool_plan, tool_calls: [{id, type,
function: {name, arguments}}], citations}, usage}``, each call's ``arguments`` the JSON
string the fragments built, and keys the stream did not fill left out. The tool plan is
the model's stated plan for its calls: it stays in the message as ``tool_plan`` and is
not display text (only text content is); thinking blocks stay in ``content`` and are not
display text either. The response always carries its envelope, so a call a model leaks
into text is handed on to the text strategies (``leaks_into_text``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from callgate.gate.findings import Finding
from callgate.strategies.base import (
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    ToolResult,
    entry_forming,
    function_call_entries,
    function_calls,
    read_function_calls,
)
from callgate.strategies.usage import count_at
from callgate.strategies.wire import SdkForm, Terminal, Wire, chat_tool_spec

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

EVENT_TYPES = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
        "debug",
    }
)
_TOOL_REASON = "TOOL_CALL"


def _tool_call(gate: TurnGate, event: Shape, kind: str) -> Mapping[str, Any] | None:
    """The ``delta.message.tool_calls`` object of a tool-call event, or None (refused)."""
    call = _delta_message(event).get("tool_calls")
    if isinstance(call, Mapping):
        return call
    gate.refuse(
        "malformed_chunk",
        f"{kind} for index {event.get('index')!r}: delta.message.tool_calls is not an "
        f"object: {call!r:.60}",
    )
    return None


def _delta_message(event: Shape) -> Mapping[str, Any]:
    """``event.delta.message``, or an empty mapping."""
    delta = event.get("delta")
    message = delta.get("message") if isinstance(delta, Mapping) else None
    return message if isinstance(message, Mapping) else {}


def _is_index(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is an integer index (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


class _Block:
    """One content block: its type and the pieces of its text (or thinking)."""

    __slots__ = ("field", "pieces", "type")

    def __init__(self, kind: str) -> None:
        self.type = kind
        self.field = "thinking" if kind == "thinking" else "text"
        self.pieces: list[str] = []


class _Accumulator:
    """Native reassembly state for one turn (tool arguments live in the gate's slots)."""

    __slots__ = (
        "blocks",
        "citations",
        "envelope",
        "gate",
        "logprobs",
        "orphans",
        "plan",
        "role",
        "started",
        "types",
    )

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.envelope: dict[str, Any] = {}
        self.role: Any = "assistant"
        self.blocks: dict[int, _Block] = {}
        self.plan: list[str] | None = None
        self.citations: list[Any] = []
        self.logprobs: list[Any] = []
        self.started: set[int] = set()
        self.types: dict[int, Any] = {}
        self.orphans: set[int] = set()


class CohereStrategy(ExtractionStrategy):
    """v2 chat stream events into the stream=false ChatResponse."""

    name = "cohere"
    leaks_into_text = True
    per_call_done = True
    requires_id = True
    empty_arguments_object = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A v2 stream event, or a v2 ChatResponse (``finish_reason`` and a ``message``)."""
        kind = shape.get("type")
        if isinstance(kind, str) and kind in EVENT_TYPES:
            return True
        return (
            "finish_reason" in shape
            and isinstance(shape.get("message"), Mapping)
            and "done" not in shape
            and "choices" not in shape
        )

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str:
        """Apply one event; report tool-call primitives to the gate; return new text."""
        kind = chunk.get("type")
        if kind == "tool-call-delta":
            self._tool_delta(acc, chunk)
        elif kind == "content-delta":
            return self._content_delta(acc, chunk)
        elif kind == "tool-plan-delta":
            plan = _delta_message(chunk).get("tool_plan")
            if isinstance(plan, str):
                if acc.plan is None:
                    acc.plan = []
                acc.plan.append(plan)
        elif kind == "tool-call-start":
            self._tool_start(acc, chunk)
        elif kind == "tool-call-end":
            acc.gate.close(chunk.get("index"))
        elif kind == "content-start":
            self._content_start(acc, chunk)
        elif kind == "citation-start":
            citation = _delta_message(chunk).get("citations")
            if citation is not None:
                acc.citations.append(citation)
        elif kind == "message-start":
            self._message_start(acc, chunk)
        elif kind == "message-end":
            self._message_end(acc, chunk)
        else:
            acc.gate.stray(chunk)
        return ""

    @staticmethod
    def _message_start(acc: _Accumulator, event: Shape) -> None:
        if event.get("id") is not None:
            acc.envelope["id"] = event["id"]
        message = _delta_message(event)
        if message.get("role") is not None:
            acc.role = message["role"]
        if message.get("tool_calls"):
            acc.gate.refuse("malformed_chunk", "message-start carries tool calls; none are read")

    @staticmethod
    def _message_end(acc: _Accumulator, event: Shape) -> None:
        if event.get("id") is not None:
            acc.envelope.setdefault("id", event["id"])
        delta = event.get("delta")
        delta = delta if isinstance(delta, Mapping) else {}
        reason = delta.get("finish_reason")
        acc.envelope["finish_reason"] = reason
        usage = delta.get("usage")
        if usage is not None:
            acc.envelope["usage"] = usage
            tokens = count_at(usage, "tokens", "output_tokens")
            acc.gate.usage(
                count_at(usage, "billed_units", "output_tokens") if tokens is None else tokens
            )
        acc.gate.turn_done(reason == _TOOL_REASON, reason)

    @staticmethod
    def _content_start(acc: _Accumulator, event: Shape) -> None:
        index = event.get("index")
        content = _delta_message(event).get("content")
        kind = content.get("type") if isinstance(content, Mapping) else None
        if not _is_index(index):
            return
        block = acc.blocks.setdefault(index, _Block(kind or "text"))
        if isinstance(content, Mapping):
            initial = content.get(block.field)
            if isinstance(initial, str) and initial:
                block.pieces.append(initial)

    @staticmethod
    def _content_delta(acc: _Accumulator, event: Shape) -> str:
        index = event.get("index", 0)
        content = _delta_message(event).get("content")
        if not isinstance(content, Mapping) or not _is_index(index):
            return ""
        if event.get("logprobs") is not None:
            acc.logprobs.append(event["logprobs"])
        block = acc.blocks.get(index)
        if block is None:
            block = acc.blocks[index] = _Block("thinking" if "thinking" in content else "text")
        piece = content.get(block.field)
        if not isinstance(piece, str) or not acc.gate.text(piece):
            return ""
        block.pieces.append(piece)
        return piece if block.field == "text" else ""

    @staticmethod
    def _tool_start(acc: _Accumulator, event: Shape) -> None:
        gate = acc.gate
        index = event.get("index")
        call = _tool_call(gate, event, "tool-call-start")
        if call is None:
            return
        if not _is_index(index):
            gate.refuse("malformed_chunk", f"tool call index {index!r} is not an integer")
            return
        acc.started.add(index)
        acc.types.setdefault(index, call.get("type", "function"))
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        gate.identity(index, call.get("id"), function.get("name"))
        arguments = function.get("arguments")
        if arguments:
            gate.fragment(index, arguments)

    @staticmethod
    def _tool_delta(acc: _Accumulator, event: Shape) -> None:
        gate = acc.gate
        index = event.get("index")
        call = _tool_call(gate, event, "tool-call-delta")
        if call is None:
            return
        if _is_index(index) and index not in acc.started:
            if index not in acc.orphans:
                acc.orphans.add(index)
                gate.refuse("orphan_event", f"tool-call-delta for index {index}, never started")
            return
        function = call.get("function")
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        if arguments is not None and not isinstance(arguments, str):
            gate.refuse("malformed_chunk", f"tool call {index!r}: arguments is not a string")
            return
        gate.fragment(index, arguments or "")

    def is_done(self, chunk: Shape) -> bool:
        """``message-end`` ends the stream."""
        return chunk.get("type") == "message-end"

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false ChatResponse."""
        message: dict[str, Any] = {"role": acc.role}
        if acc.blocks:
            message["content"] = [
                {"type": block.type, block.field: "".join(block.pieces)}
                for _, block in sorted(acc.blocks.items())
            ]
        if acc.plan is not None:
            message["tool_plan"] = "".join(acc.plan)
        slots = acc.gate.ordered_slots()
        if slots:
            message["tool_calls"] = [
                {
                    "id": slot.id,
                    "type": acc.types.get(slot.key, "function"),
                    "function": {"name": slot.name, "arguments": slot.raw_arguments},
                }
                for slot in slots
            ]
        if acc.citations:
            message["citations"] = list(acc.citations)
        response: dict[str, Any] = {}
        if "id" in acc.envelope:
            response["id"] = acc.envelope["id"]
        if "finish_reason" in acc.envelope:
            response["finish_reason"] = acc.envelope["finish_reason"]
        response["message"] = message
        if "usage" in acc.envelope:
            response["usage"] = acc.envelope["usage"]
        if acc.logprobs:
            response["logprobs"] = list(acc.logprobs)
        return response

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """Calls whose name is set and whose arguments strictly parse to an object."""
        return function_calls(_message(message).get("tool_calls"), empty_object=True)

    def unreadable(self, message: Shape) -> list[tuple[ExtractedCall, Finding]]:
        """Calls without a name or whose arguments are not one strict JSON object."""
        return [
            (c, p)
            for c, p in read_function_calls(_message(message).get("tool_calls"), empty_object=True)
            if p is not None
        ]

    def forming(self, message: Shape) -> Forming:
        """A call is coming once ``tool_calls`` has an entry; the last entry's name names it."""
        entries = _message(message).get("tool_calls")
        return entry_forming(entries if isinstance(entries, list) else (), _function_name)

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The v2 events of a ChatResponse (or of its bare message).

        Content items stream as content blocks, the tool plan as one delta, each call as
        its start (id, type, name) and one delta with its ``arguments`` as received (an
        object is refused as in a stream). ``message-end`` carries the response's
        finish_reason, else ``TOOL_CALL`` when it has calls, and its usage.
        """
        inner = _message(message)
        start: dict[str, Any] = {"type": "message-start"}
        if message.get("id") is not None:
            start["id"] = message["id"]
        start["delta"] = {"message": {"role": inner.get("role", "assistant")}}
        events = [start]
        content = inner.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for index, item in enumerate(content if isinstance(content, list) else ()):
            kind = item.get("type", "text") if isinstance(item, Mapping) else "text"
            field = "thinking" if kind == "thinking" else "text"
            piece = item.get(field, "") if isinstance(item, Mapping) else ""
            events += [
                {"type": "content-start", "index": index,
                 "delta": {"message": {"content": {"type": kind, field: ""}}}},
                {"type": "content-delta", "index": index,
                 "delta": {"message": {"content": {field: piece}}}},
                {"type": "content-end", "index": index},
            ]  # fmt: skip
        if isinstance(inner.get("tool_plan"), str):
            plan = {"message": {"tool_plan": inner["tool_plan"]}}
            events.append({"type": "tool-plan-delta", "delta": plan})
        entries = inner.get("tool_calls")
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            events += _call_events(index, entry)
        for citation in inner.get("citations") or ():
            events.append({"type": "citation-start", "delta": {"message": {"citations": citation}}})
        reason = message.get("finish_reason")
        if reason is None:
            reason = _TOOL_REASON if entries else "COMPLETE"
        end: dict[str, Any] = {"finish_reason": reason}
        if message.get("usage") is not None:
            end["usage"] = message["usage"]
        events.append({"type": "message-end", "delta": end})
        return events

    def content_text(self, message: Shape) -> str:
        """The text of every ``text`` content item, joined."""
        content = _message(message).get("content")
        if isinstance(content, str):
            return content
        return "".join(
            item.get("text", "")
            for item in content or ()
            if isinstance(item, Mapping) and item.get("type") == "text"
        )

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The assistant message (a ChatResponse's ``message``, or the message itself)."""
        return [dict(_message(message))]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``tool_calls`` entry with its call's id and name; unreadable arguments ``{}``.

        See :func:`~callgate.strategies.base.function_call_entries`.
        """
        return function_call_entries(history, calls)

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``tool`` message per result: a document holding the output (or its error).

        The document's ``data`` is the result text as given (a tool's output is expected to
        be a JSON object string); an error is sent as ``{"error": text}``.
        """
        return [
            {
                "role": "tool",
                "tool_call_id": r.call.id,
                "content": [
                    {
                        "type": "document",
                        "document": {
                            "data": json.dumps({"error": r.content}) if r.is_error else r.content
                        },
                    }
                ],
            }
            for r in results
        ]


def _function_name(entry: Mapping[str, Any]) -> Any:
    function = entry.get("function")
    return function.get("name") if isinstance(function, Mapping) else None


def _call_events(index: int, entry: Any) -> list[dict[str, Any]]:
    """One tool call as its start, one arguments delta (as received) and its end."""
    if not isinstance(entry, Mapping):
        return [{"type": "tool-call-start", "index": index,
                 "delta": {"message": {"tool_calls": entry}}}]  # fmt: skip
    function = entry.get("function")
    function = function if isinstance(function, Mapping) else {}
    opened = {**entry, "function": {**function, "arguments": ""}}
    arguments = {"function": {"arguments": function.get("arguments")}}
    return [
        {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": opened}}},
        {
            "type": "tool-call-delta",
            "index": index,
            "delta": {"message": {"tool_calls": arguments}},
        },
        {"type": "tool-call-end", "index": index},
    ]


def _message(message: Shape) -> Mapping[str, Any]:
    """The assistant message inside a ChatResponse (or the message itself)."""
    inner = message.get("message")
    return inner if isinstance(inner, Mapping) else message


COHERE = Wire(
    name="cohere",
    strategy=CohereStrategy,
    recognition=5,
    terminal=Terminal(
        field="message-end delta.finish_reason",
        calls_end=frozenset({_TOOL_REASON}),
        length=frozenset({"MAX_TOKENS"}),
    ),
    tool_spec=chat_tool_spec,
    quirks=("tool_plan",),
    leaks=("command_r",),
    sdk=SdkForm("cohere", "cohere:StreamedChatResponseV2"),
    systems=("cohere",),
)
"""Cohere v2 chat: typed events; Command models may write action markup into text."""
