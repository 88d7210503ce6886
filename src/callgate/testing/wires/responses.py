"""OpenAI Responses: the API's typed events with their sequence numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from callgate.strategies.responses import RESPONSES
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall


@dataclass
class ResponsesEncoder(Encoder):
    """Responses API events; quirks: a reasoning item, no argument deltas (LM Studio)."""

    WIRE: ClassVar[Wire] = RESPONSES
    wire: str = RESPONSES.name
    QUIRKS: tuple[str, ...] = RESPONSES.quirks
    RESPONSE_ID = "resp_68b1c2f0a4e88190b7f2d3c41e5a6b7c"

    def first_key(self, has_text: bool) -> int:
        return int(has_text) + int("reasoning_item" in self.quirks)

    def envelope(self, status: str, output: list[Any]) -> Chunk:
        """The Response object a lifecycle event carries."""
        return {
            "id": self.RESPONSE_ID,
            "object": "response",
            "created_at": 1756371440,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": "gpt-4.1-2025-04-14",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
        }

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        self.state["output"] = []
        out = [
            Piece(
                "prelude",
                {"type": "response.created", "response": self.envelope("in_progress", [])},
            ),
            Piece(
                "prelude",
                {"type": "response.in_progress", "response": self.envelope("in_progress", [])},
            ),
        ]
        index = 0
        if "reasoning_item" in self.quirks:
            item = {"id": "rs_kit1", "type": "reasoning", "summary": []}
            out += [
                Piece(
                    "quirk",
                    {"type": "response.output_item.added", "output_index": index, "item": item},
                ),
                Piece(
                    "quirk",
                    {"type": "response.output_item.done", "output_index": index, "item": item},
                ),
            ]
            self.state["output"].append(item)
            index += 1
        if text_parts:
            text = "".join(text_parts)
            item_id = "msg_kit1"
            added = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            }
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            where = {"item_id": item_id, "output_index": index, "content_index": 0}
            done_part = {**part, "text": text}
            done = {**added, "status": "completed", "content": [done_part]}
            out.append(
                Piece(
                    "text",
                    {"type": "response.output_item.added", "output_index": index, "item": added},
                )
            )
            out.append(
                Piece("text", {"type": "response.content_part.added", **where, "part": part})
            )
            out += [
                Piece(
                    "text",
                    {"type": "response.output_text.delta", **where, "delta": delta, "logprobs": []},
                )
                for delta in text_parts
            ]
            out += [
                Piece(
                    "text",
                    {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
                ),
                Piece("text", {"type": "response.content_part.done", **where, "part": done_part}),
                Piece(
                    "text",
                    {"type": "response.output_item.done", "output_index": index, "item": done},
                ),
            ]
            self.state["output"].append(done)
        return out

    def _item(self, call: WireCall, status: str, arguments: str) -> Chunk:
        return {
            "id": f"fc_kit{call.key}",
            "type": "function_call",
            "status": status,
            "arguments": arguments,
            "call_id": call.id,
            "name": call.name,
        }

    def open(self, call: WireCall) -> list[Chunk]:
        item = self._item(call, "in_progress", "")
        return [{"type": "response.output_item.added", "output_index": call.key, "item": item}]

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        if "no_argument_deltas" in self.quirks:
            return []
        return [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_kit{call.key}",
                "output_index": call.key,
                "delta": text,
            }
        ]

    def close(self, call: WireCall) -> list[Chunk]:
        item = self._item(call, "completed", call.raw)
        self.state.setdefault("output", []).append(item)
        return [
            {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": call.key,
                "arguments": call.raw,
            },
            {"type": "response.output_item.done", "output_index": call.key, "item": item},
        ]

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        output = sorted(
            self.state.get("output", []),
            key=lambda item: 0 if item["type"] != "function_call" else 1 + int(item["id"][6:]),
        )
        if reason is not None and reason.startswith("incomplete"):
            response = self.envelope("incomplete", output)
            why = reason.partition(": ")[2] or "max_output_tokens"
            response["incomplete_details"] = {"reason": why}
            return [{"type": "response.incomplete", "response": response}]
        return [{"type": "response.completed", "response": self.envelope("completed", output)}]

    def finalise(self, chunks: list[Chunk]) -> list[Chunk]:
        return [{**chunk, "sequence_number": n} for n, chunk in enumerate(chunks)]

    def other_reason(self) -> str:
        return "incomplete"
