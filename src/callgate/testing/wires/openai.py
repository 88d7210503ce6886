"""OpenAI Chat Completions: ``chat.completion.chunk`` objects, quirks of compatible servers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from callgate.strategies.openai import OPENAI
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class OpenAIEncoder(Encoder):
    """``chat.completion.chunk`` objects; quirks of OpenAI-compatible servers."""

    WIRE: ClassVar[Wire] = OPENAI
    wire: str = OPENAI.name
    closes: bool = False
    QUIRKS: tuple[str, ...] = OPENAI.quirks

    def chunk(self, delta: Chunk, finish_reason: str | None = None) -> Chunk:
        """One chunk of the single choice."""
        return {
            "id": "chatcmpl-kit1",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4.1",
            "system_fingerprint": "fp_kit",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        first: Chunk = {"role": "assistant"}
        if "no_content_key" not in self.quirks:
            first["content"] = None if "null_content" in self.quirks else ""
        out = [Piece("prelude", self.chunk(first))]
        if "reasoning_content" in self.quirks:
            out.append(Piece("quirk", self.chunk({"reasoning_content": "Thinking it over."})))
        return out + [Piece("text", self.chunk({"content": part})) for part in text_parts]

    def open(self, call: WireCall) -> list[Chunk]:
        whole = "no_index" in self.quirks
        arguments = call.raw if whole else ""
        if "arguments_in_opening" in self.quirks and call.fragments and not whole:
            arguments = call.fragments[0]
        entry: Chunk = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments},
        }
        if not whole:
            entry = {"index": call.key, **entry}
        return [self.chunk({"tool_calls": [entry]})]

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        entry: Chunk = {"index": call.key, "function": {"arguments": text}}
        if "empty_id_in_continuation" in self.quirks:
            entry["id"] = ""
        if "empty_name_in_continuation" in self.quirks:
            entry["function"]["name"] = ""
        return [self.chunk({"tool_calls": [entry]})]

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        return [self.chunk({}, reason or ("tool_calls" if calls else "stop"))]

    def epilogue(self) -> list[Chunk]:
        if "usage_chunk" not in self.quirks and "repeated_finish_reason" not in self.quirks:
            return []
        usage = self.chunk({})
        usage["usage"] = {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}
        if "repeated_finish_reason" in self.quirks:
            usage["choices"][0]["finish_reason"] = self.state.get("reason", "tool_calls")
        else:
            usage["choices"] = []
        return [usage]

    def other_reason(self) -> str:
        return "length"
