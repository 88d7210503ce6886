"""Bedrock ConverseStream: the events as boto3 yields them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from callgate.strategies.bedrock import BEDROCK
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class BedrockEncoder(Encoder):
    """ConverseStream events as boto3 yields them; quirks: an empty text start, reasoning."""

    WIRE: ClassVar[Wire] = BEDROCK
    wire: str = BEDROCK.name
    id_prefix: str = "tooluse_"
    QUIRKS: tuple[str, ...] = BEDROCK.quirks

    def first_key(self, has_text: bool) -> int:
        return int(has_text) + int("reasoning_block" in self.quirks)

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        out = [Piece("prelude", {"messageStart": {"role": "assistant"}})]
        index = 0
        if "reasoning_block" in self.quirks:
            out += [
                Piece("quirk", self._delta(index, {"reasoningContent": {"text": "Tools apply."}})),
                Piece("quirk", self._delta(index, {"reasoningContent": {"signature": "ErUBCkgI"}})),
                Piece("quirk", {"contentBlockStop": {"contentBlockIndex": index}}),
            ]
            index += 1
        if text_parts:
            if "empty_text_start" in self.quirks:
                out.append(
                    Piece("text", {"contentBlockStart": {"start": {}, "contentBlockIndex": index}})
                )
            out += [Piece("text", self._delta(index, {"text": part})) for part in text_parts]
            out.append(Piece("text", {"contentBlockStop": {"contentBlockIndex": index}}))
        return out

    @staticmethod
    def _delta(index: int, delta: Chunk) -> Chunk:
        return {"contentBlockDelta": {"delta": delta, "contentBlockIndex": index}}

    def open(self, call: WireCall) -> list[Chunk]:
        start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
        return [{"contentBlockStart": {"start": start, "contentBlockIndex": call.key}}]

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        return [self._delta(call.key, {"toolUse": {"input": text}})]

    def close(self, call: WireCall) -> list[Chunk]:
        return [{"contentBlockStop": {"contentBlockIndex": call.key}}]

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        return [{"messageStop": {"stopReason": reason or ("tool_use" if calls else "end_turn")}}]

    def epilogue(self) -> list[Chunk]:
        if "metadata" not in self.quirks:
            return []
        usage = {"inputTokens": 412, "outputTokens": 68, "totalTokens": 480}
        return [{"metadata": {"usage": usage, "metrics": {"latencyMs": 1874}}}]

    def other_reason(self) -> str:
        return "max_tokens"
