"""Anthropic Messages: the stream's events, with pings, thinking and server tools."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from callgate.strategies.anthropic import ANTHROPIC
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class AnthropicEncoder(Encoder):
    """Messages stream events; quirks: pings, a thinking block, server tools, ``""`` JSON."""

    WIRE: ClassVar[Wire] = ANTHROPIC
    wire: str = ANTHROPIC.name
    id_prefix: str = "toolu_"
    QUIRKS: tuple[str, ...] = ANTHROPIC.quirks

    def first_key(self, has_text: bool) -> int:
        return (
            int(has_text) + int("thinking" in self.quirks) + 2 * int("server_tool" in self.quirks)
        )

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        out = [Piece("prelude", message_start("msg_kit1"))]
        if "ping" in self.quirks:
            out.append(Piece("quirk", {"type": "ping"}))
        index = 0
        if "thinking" in self.quirks:
            out += [
                Piece("quirk", block)
                for block in self._block(
                    index,
                    {"type": "thinking", "thinking": "", "signature": ""},
                    [
                        {"type": "thinking_delta", "thinking": "The user asks; tools apply."},
                        {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
                    ],
                )
            ]
            index += 1
        if text_parts:
            out.append(Piece("text", self._start(index, {"type": "text", "text": ""})))
            out += [
                Piece("text", self._delta(index, {"type": "text_delta", "text": part}))
                for part in text_parts
            ]
            out.append(Piece("text", {"type": "content_block_stop", "index": index}))
            index += 1
        if "server_tool" in self.quirks:
            server = {
                "type": "server_tool_use",
                "id": "srvtoolu_kit1",
                "name": "web_search",
                "input": {},
            }
            out += [
                Piece("quirk", block)
                for block in self._block(
                    index,
                    server,
                    [
                        {"type": "input_json_delta", "partial_json": '{"query": '},
                        {"type": "input_json_delta", "partial_json": '"weather"}'},
                    ],
                )
            ]
            result = {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_kit1",
                "content": [],
            }
            out += [Piece("quirk", block) for block in self._block(index + 1, result, [])]
        return out

    @staticmethod
    def _start(index: int, block: Chunk) -> Chunk:
        return {"type": "content_block_start", "index": index, "content_block": block}

    @staticmethod
    def _delta(index: int, delta: Chunk) -> Chunk:
        return {"type": "content_block_delta", "index": index, "delta": delta}

    def _block(self, index: int, block: Chunk, deltas: list[Chunk]) -> list[Chunk]:
        return [
            self._start(index, block),
            *(self._delta(index, delta) for delta in deltas),
            {"type": "content_block_stop", "index": index},
        ]

    def open(self, call: WireCall) -> list[Chunk]:
        start = self._start(
            call.key, {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        )
        if "empty_first_fragment" in self.quirks:
            return [start, self.fragment(call, "")[0]]
        return [start]

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        out = [self._delta(call.key, {"type": "input_json_delta", "partial_json": text})]
        if "ping" in self.quirks and len(text) % 3 == 0:
            out.append({"type": "ping"})
        return out

    def close(self, call: WireCall) -> list[Chunk]:
        return [{"type": "content_block_stop", "index": call.key}]

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        return [
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": reason or ("tool_use" if calls else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 57},
            },
            {"type": "message_stop"},
        ]

    def other_reason(self) -> str:
        return "max_tokens"


def message_start(message_id: str) -> Chunk:
    """The ``message_start`` event that opens a turn: an empty assistant message."""
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 21, "output_tokens": 1},
        },
    }
