"""OpenAI Chat Completions, and every server that speaks its chunk shape.

Wire: ``chat.completion.chunk`` objects; tool-call fragments sit in
``choices[0].delta.tool_calls[]``, keyed by ``index``; the id and name come once (usually
in the slot's first fragment), ``function.arguments`` are string fragments, and the only
done is the choice's ``finish_reason == "tool_calls"`` (no per-call done). The
assembled message is the stream=false ``{role, content, tool_calls}``, ``content`` null
when no text streamed (an empty string counts as none), each call's ``arguments`` a JSON
string. Other string fields of the delta (``refusal``, DeepSeek's ``reasoning_content``)
are kept in the message by name and are never display text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from callgate.findings import Finding
from callgate.strategies.base import (
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    ToolResult,
    function_call_entries,
    function_calls,
    read_function_calls,
)

if TYPE_CHECKING:
    from callgate.gate import TurnGate

_DISPLAY = "content"


class _Accumulator:
    """Native reassembly state for one turn (the arguments live in the gate's slots)."""

    __slots__ = ("content", "extra", "finish_reason", "gate", "role")

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.role = "assistant"
        self.content: list[str] = []
        self.extra: dict[str, list[str]] = {}
        self.finish_reason: str | None = None


class OpenAIStrategy(ExtractionStrategy):
    """Chat Completions chunks into the stream=false assistant message."""

    name = "openai"
    leaks_into_text = False
    per_call_done = False
    requires_id = True

    def recognizes(self, shape: Shape) -> bool:
        """A completion chunk (``choices``) or an assistant message with ``tool_calls``."""
        return "choices" in shape or "tool_calls" in shape

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: Any, chunk: Shape) -> str:
        """Apply one chunk; report tool-call primitives to the gate; return new content."""
        shown = ""
        gate = acc.gate
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            gate.refuse("malformed_chunk", f"choices is not a list: {choices!r:.60}")
            return ""
        for choice in choices:
            if choice.get("index", 0) != 0:
                gate.refuse("malformed_chunk", "only choice 0 is read; this stream has n > 1")
                continue
            delta = choice.get("delta") or {}
            for key, value in delta.items():
                if value is None:
                    continue
                if key == _DISPLAY:
                    acc.content.append(value)
                    shown += value
                elif key == "tool_calls":
                    if not isinstance(value, list):
                        gate.refuse("malformed_chunk", f"tool_calls is not a list: {value!r:.60}")
                        continue
                    for call in value:
                        function = call.get("function") if type(call) is dict else None
                        if (
                            function is not None
                            and call.get("id") is None
                            and function.get("name") is None
                            and function.get("arguments")
                        ):
                            gate.fragment(call.get("index"), function["arguments"])
                        else:
                            self._tool_call(gate, call)
                elif key == "role":
                    acc.role = value
                elif key == "function_call":
                    gate.refuse("malformed_chunk", "legacy function_call deltas are not read")
                elif isinstance(value, str) and gate.text(value):
                    acc.extra.setdefault(key, []).append(value)
            reason = choice.get("finish_reason")
            if reason is not None:
                acc.finish_reason = reason
                gate.turn_done(reason == "tool_calls", reason)
        return shown

    @staticmethod
    def _tool_call(gate: TurnGate, call: Any) -> None:
        if type(call) is not dict and not isinstance(call, Mapping):
            gate.refuse("malformed_chunk", f"a tool_calls entry is not an object: {call!r:.60}")
            return
        key = call.get("index")
        function = call.get("function") or {}
        call_id, name = call.get("id"), function.get("name")
        if call_id is not None or name is not None:
            gate.identity(key, call_id, name)
        arguments = function.get("arguments")
        if arguments is not None:
            gate.fragment(key, arguments)
        elif call_id is None and name is None:
            gate.fragment(key, "")

    def is_done(self, chunk: Shape) -> bool:
        """A chunk whose choice 0 carries a finish_reason ends the turn (only choice 0 is read)."""
        choices = chunk.get("choices")
        return choices is not None and bool(choices) and choices[0].get("finish_reason") is not None

    def message(self, acc: Any) -> dict[str, Any]:
        """The stream=false assistant message."""
        message: dict[str, Any] = {
            "role": acc.role,
            "content": "".join(acc.content) or None,
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

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """Calls whose name is set and whose arguments strictly parse to an object."""
        return function_calls(message.get("tool_calls"))

    def unreadable(self, message: Shape) -> list[tuple[ExtractedCall, Finding]]:
        """Calls without a name or whose arguments are not one strict JSON object."""
        return [(c, p) for c, p in read_function_calls(message.get("tool_calls")) if p is not None]

    def content_text(self, message: Shape) -> str:
        """The ``content`` string, or empty."""
        content = message.get("content")
        return content if isinstance(content, str) else ""

    def forming(self, message: Shape) -> Forming:
        """A call is forming once ``tool_calls`` has an entry; its name once streamed."""
        calls = message.get("tool_calls") or ()
        if not calls:
            return Forming(False)
        return Forming(True, (calls[-1].get("function") or {}).get("name"))

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``tool_calls`` entry with its call's id and name; unreadable arguments ``{}``.

        See :func:`~callgate.strategies.base.function_call_entries`.
        """
        return function_call_entries(history, calls)

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``tool`` message per result, keyed by ``tool_call_id``."""
        return [{"role": "tool", "tool_call_id": r.call.id, "content": r.content} for r in results]


class MistralStrategy(OpenAIStrategy):
    """Mistral's chat stream: the OpenAI shape with Mistral's short call ids.

    Never claims a chunk during automatic recognition (the shapes are the same); it is
    chosen by name, with the ``mistral`` profile.
    """

    name = "mistral"

    def recognizes(self, shape: Shape) -> bool:
        """Chosen by name only."""
        return False
