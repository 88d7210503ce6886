"""Gemini ``streamGenerateContent``: response chunks whose calls come whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from callgate.strategies.gemini import GEMINI
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class GeminiEncoder(Encoder):
    """``streamGenerateContent`` chunks; calls come whole; quirks: thoughts, signatures, ids."""

    WIRE: ClassVar[Wire] = GEMINI
    wire: str = GEMINI.name
    fragmented: bool = False
    closes: bool = False
    id_prefix: str = "fc_"
    QUIRKS: tuple[str, ...] = GEMINI.quirks

    def chunk(self, parts: list[Chunk], finish: str | None = None) -> Chunk:
        """One response chunk of the single candidate."""
        candidate: Chunk = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": 54,
                "candidatesTokenCount": 5,
                "totalTokenCount": 59,
            },
            "modelVersion": "gemini-2.5-flash",
            "responseId": "mK3aaNaeBcOxz7IP8ZPUoQw",
        }

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        out = []
        if "thought" in self.quirks:
            out.append(Piece("quirk", self.chunk([{"text": "Tools apply.", "thought": True}])))
        return out + [Piece("text", self.chunk([{"text": part}])) for part in text_parts]

    def part(self, call: WireCall) -> Chunk:
        """The ``functionCall`` part of a whole call."""
        function: Chunk = {"name": call.name, "args": call.arguments}
        if call.id is not None:
            function["id"] = call.id
        part: Chunk = {"functionCall": function}
        if "thought_signature" in self.quirks and call.key == 0:
            part["thoughtSignature"] = "CiQBjz1rX2ZkYQ=="
        return part

    def open(self, call: WireCall) -> list[Chunk]:
        return [self.chunk([self.part(call)])]

    def halves(self, call: WireCall, cut: int) -> list[Chunk]:
        """A call split over two chunks, as newer models send one.

        The first chunk holds its first ``cut`` argument keys (with the id and any
        signature), the second the rest (no id).
        """
        keys = list(call.arguments)
        first = self.part(replace(call, arguments={k: call.arguments[k] for k in keys[:cut]}))
        rest = {k: call.arguments[k] for k in keys[cut:]}
        return [
            self.chunk([first]),
            self.chunk([{"functionCall": {"name": call.name, "args": rest}}]),
        ]

    def pack(self, chunks: Sequence[Chunk]) -> Chunk:
        return self.chunk([p for c in chunks for p in c["candidates"][0]["content"]["parts"]])

    def nameless(self, call: WireCall) -> list[Chunk]:
        part = self.part(call)
        del part["functionCall"]["name"]
        return [self.chunk([part])]

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        return []

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        return [self.chunk([{"text": ""}], reason or "STOP")]

    def other_reason(self) -> str:
        return "MAX_TOKENS"
