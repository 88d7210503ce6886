"""Ollama ``/api/chat``: JSON lines whose calls come whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from callgate.strategies.ollama import OLLAMA
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class OllamaEncoder(Encoder):
    """``/api/chat`` lines; calls come whole; quirks: thinking, ids (newer servers), no index."""

    WIRE: ClassVar[Wire] = OLLAMA
    wire: str = OLLAMA.name
    fragmented: bool = False
    closes: bool = False
    carries_ids: bool = False
    QUIRKS: tuple[str, ...] = OLLAMA.quirks

    def line(self, message: Chunk, done: bool = False, reason: str = "stop") -> Chunk:
        """One JSON line of the stream."""
        out: Chunk = {
            "model": "qwen3:8b",
            "created_at": "2025-10-14T09:21:01.000000000Z",
            "message": {"role": "assistant", "content": "", **message},
            "done": done,
        }
        if done:
            out.update(done_reason=reason, total_duration=2815468125, eval_count=61)
        return out

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        out = []
        if "thinking" in self.quirks:
            out.append(Piece("quirk", self.line({"thinking": "Tools apply."})))
        return out + [Piece("text", self.line({"content": part})) for part in text_parts]

    def entry(self, call: WireCall) -> Chunk:
        """One ``tool_calls`` entry."""
        function: Chunk = {"name": call.name, "arguments": call.arguments}
        if "no_index" not in self.quirks:
            function = {"index": call.key, **function}
        entry: Chunk = {"function": function}
        if call.id is not None:
            entry = {"id": call.id, **entry}
        return entry

    def open(self, call: WireCall) -> list[Chunk]:
        return [self.line({"tool_calls": [self.entry(call)]})]

    def pack(self, chunks: Sequence[Chunk]) -> Chunk:
        messages = [c["message"] for c in chunks]
        message: Chunk = {"content": "".join(m["content"] for m in messages)}
        thinking = "".join(m.get("thinking", "") for m in messages)
        calls = [entry for m in messages for entry in m.get("tool_calls", [])]
        if thinking:
            message["thinking"] = thinking
        if calls:
            message["tool_calls"] = calls
        return self.line(message)

    def nameless(self, call: WireCall) -> list[Chunk]:
        entry = self.entry(call)
        del entry["function"]["name"]
        return [self.line({"tool_calls": [entry]})]

    def error(self) -> Chunk:
        """The line a server sends when the model fails mid-stream (no ``done``)."""
        return {"error": "an error was encountered while running the model"}

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        return []

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        return [self.line({}, done=True, reason=reason or "stop")]

    def other_reason(self) -> str:
        return "length"
