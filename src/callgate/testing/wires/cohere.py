"""Cohere Chat v2: the stream's events, with a tool plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from callgate.strategies.cohere import COHERE
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class CohereEncoder(Encoder):
    """Chat v2 stream events; quirks: a tool plan, a no-argument call without deltas."""

    WIRE: ClassVar[Wire] = COHERE
    wire: str = COHERE.name
    id_prefix: str = "get_weather_"
    QUIRKS: tuple[str, ...] = COHERE.quirks

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        out = [Piece("prelude", message_start())]
        if "tool_plan" in self.quirks:
            out.append(
                Piece(
                    "quirk",
                    {
                        "type": "tool-plan-delta",
                        "delta": {"message": {"tool_plan": "I will look it up."}},
                    },
                )
            )
        if text_parts:
            out.append(
                Piece(
                    "text",
                    {
                        "type": "content-start",
                        "index": 0,
                        "delta": {"message": {"content": {"type": "text", "text": ""}}},
                    },
                )
            )
            out += [
                Piece(
                    "text",
                    {
                        "type": "content-delta",
                        "index": 0,
                        "delta": {"message": {"content": {"text": part}}},
                    },
                )
                for part in text_parts
            ]
            out.append(Piece("text", {"type": "content-end", "index": 0}))
        return out

    def open(self, call: WireCall) -> list[Chunk]:
        function = {"name": call.name, "arguments": ""}
        tool_call = {"id": call.id, "type": "function", "function": function}
        return [
            {
                "type": "tool-call-start",
                "index": call.key,
                "delta": {"message": {"tool_calls": tool_call}},
            }
        ]

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        arguments = {"function": {"arguments": text}}
        return [
            {
                "type": "tool-call-delta",
                "index": call.key,
                "delta": {"message": {"tool_calls": arguments}},
            }
        ]

    def close(self, call: WireCall) -> list[Chunk]:
        return [{"type": "tool-call-end", "index": call.key}]

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        usage = {
            "billed_units": {"input_tokens": 37, "output_tokens": 28},
            "tokens": {"input_tokens": 1380, "output_tokens": 70},
        }
        finish = reason or ("TOOL_CALL" if calls else "COMPLETE")
        return [{"type": "message-end", "delta": {"finish_reason": finish, "usage": usage}}]

    def other_reason(self) -> str:
        return "MAX_TOKENS"


MESSAGE_ID = "fba98ad3-e5a1-413c-a8de-84fbf9baabf7"
"""The id of every generated Cohere message."""


def message_start(message_id: str = MESSAGE_ID) -> Chunk:
    """The ``message-start`` event of an assistant message, nothing in it yet."""
    message = {
        "role": "assistant",
        "content": [],
        "tool_plan": "",
        "tool_calls": [],
        "citations": [],
    }
    return {"type": "message-start", "id": message_id, "delta": {"message": message}}
