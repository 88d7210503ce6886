"""One encoder per wire: a turn's text and calls as that provider's own chunks.

An encoder knows the shape of each event of its wire (an opening, an argument fragment,
a per-call close where the wire has one, the turn's end) and nothing of Hypothesis: the
strategies in :mod:`callgate.testing.wire_streams` decide the order, the quirks and the faults,
and every chunk is tagged with what it is (a :class:`Piece`), so a fault can be placed
"after call 2's close" on any wire.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Chunk = dict[str, Any]


@dataclass(frozen=True)
class WireCall:
    """One call as an encoder writes it: slot key, id, tool, arguments and fragments."""

    key: int
    id: str | None
    name: str
    arguments: Any
    fragments: tuple[str, ...]

    @property
    def raw(self) -> str:
        """The argument text the fragments join to."""
        return "".join(self.fragments)


@dataclass(frozen=True)
class Piece:
    """One chunk of a generated stream and what it is.

    ``kind``: ``prelude``, ``text``, ``open``, ``fragment``, ``close``, ``finish``,
    ``epilogue`` or ``quirk``; ``call``: the position of the call it belongs to, if any.
    """

    kind: str
    chunk: Chunk
    call: int | None = None
    chars: int = 0
    """How many characters of argument text the chunk carries."""


@dataclass
class Encoder:
    """The events of one wire. Subclasses fill in the shapes; quirks are flags."""

    wire: str = ""
    quirks: frozenset[str] = frozenset()
    fragmented: bool = True
    """Arguments stream as text fragments (else each call comes whole, its arguments an object)."""
    closes: bool = True
    """Each call has a close event of its own (else only the turn's end closes calls)."""
    id_prefix: str = "call_"
    QUIRKS: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)

    def first_key(self, has_text: bool) -> int:
        """The slot key of the first call (a text block may take slot 0)."""
        return 0

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        """The events before the first call: the message's start and its text."""
        raise NotImplementedError

    def open(self, call: WireCall) -> list[Chunk]:
        """A call's opening (for a whole-call wire: the whole call)."""
        raise NotImplementedError

    def fragment(self, call: WireCall, text: str) -> list[Chunk]:
        """One argument fragment of ``call``."""
        raise NotImplementedError

    def close(self, call: WireCall) -> list[Chunk]:
        """A call's own close event(s); none where the wire has none."""
        return []

    def finish(self, calls: Sequence[WireCall], reason: str | None = None) -> list[Chunk]:
        """The turn's end: the terminal evidence for every call."""
        raise NotImplementedError

    def epilogue(self) -> list[Chunk]:
        """What follows the turn's end (usage, metrics); may be empty."""
        return []

    def finalise(self, chunks: list[Chunk]) -> list[Chunk]:
        """Last touches over the whole stream (sequence numbers)."""
        return chunks

    def other_reason(self) -> str:
        """A turn-end reason that is not "tool calls"."""
        raise NotImplementedError

    def pack(self, chunks: Sequence[Chunk]) -> Chunk:
        """Several chunks as one, in order (a server's batching); whole-call wires only."""
        raise NotImplementedError(f"{self.wire} does not pack several events into one chunk")

    def nameless(self, call: WireCall) -> list[Chunk]:
        """A whole call sent without its name (a fault); whole-call wires only."""
        raise NotImplementedError(f"{self.wire} has no whole call to send without a name")

    def error(self) -> Chunk:
        """The event a server sends when the model fails mid-stream; where the wire has one."""
        raise NotImplementedError(f"{self.wire} has no error event in the kit")


# -- OpenAI Chat Completions -----------------------------------------------------------------


@dataclass
class OpenAIEncoder(Encoder):
    """``chat.completion.chunk`` objects; quirks of OpenAI-compatible servers."""

    wire: str = "openai"
    closes: bool = False
    QUIRKS: tuple[str, ...] = (
        "null_content",
        "no_content_key",
        "empty_id_in_continuation",
        "empty_name_in_continuation",
        "arguments_in_opening",
        "reasoning_content",
        "usage_chunk",
        "repeated_finish_reason",
        "no_index",
    )

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


# -- Anthropic Messages ----------------------------------------------------------------------


@dataclass
class AnthropicEncoder(Encoder):
    """Messages stream events; quirks: pings, a thinking block, server tools, ``""`` JSON."""

    wire: str = "anthropic"
    id_prefix: str = "toolu_"
    QUIRKS: tuple[str, ...] = ("ping", "thinking", "empty_first_fragment", "server_tool")

    def first_key(self, has_text: bool) -> int:
        return (
            int(has_text) + int("thinking" in self.quirks) + 2 * int("server_tool" in self.quirks)
        )

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        out = [
            Piece(
                "prelude",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_kit1",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 21, "output_tokens": 1},
                    },
                },
            )
        ]
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


# -- Bedrock ConverseStream ------------------------------------------------------------------


@dataclass
class BedrockEncoder(Encoder):
    """ConverseStream events as boto3 yields them; quirks: an empty text start, reasoning."""

    wire: str = "bedrock"
    id_prefix: str = "tooluse_"
    QUIRKS: tuple[str, ...] = ("empty_text_start", "reasoning_block", "metadata")

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


# -- OpenAI Responses ------------------------------------------------------------------------


@dataclass
class ResponsesEncoder(Encoder):
    """Responses API events; quirks: a reasoning item, no argument deltas (LM Studio)."""

    wire: str = "openai-responses"
    QUIRKS: tuple[str, ...] = ("reasoning_item", "no_argument_deltas")
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
        if reason == "incomplete":
            response = self.envelope("incomplete", output)
            response["incomplete_details"] = {"reason": "max_output_tokens"}
            return [{"type": "response.incomplete", "response": response}]
        return [{"type": "response.completed", "response": self.envelope("completed", output)}]

    def finalise(self, chunks: list[Chunk]) -> list[Chunk]:
        return [{**chunk, "sequence_number": n} for n, chunk in enumerate(chunks)]

    def other_reason(self) -> str:
        return "incomplete"


# -- Gemini ----------------------------------------------------------------------------------


@dataclass
class GeminiEncoder(Encoder):
    """``streamGenerateContent`` chunks; calls come whole; quirks: thoughts, signatures, ids."""

    wire: str = "gemini"
    fragmented: bool = False
    closes: bool = False
    id_prefix: str = "fc_"
    QUIRKS: tuple[str, ...] = ("thought", "thought_signature", "no_ids", "grouped_calls")

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


# -- Cohere v2 -------------------------------------------------------------------------------


@dataclass
class CohereEncoder(Encoder):
    """Chat v2 stream events; quirks: a tool plan, a no-argument call without deltas."""

    wire: str = "cohere"
    id_prefix: str = "get_weather_"
    QUIRKS: tuple[str, ...] = ("tool_plan",)

    def prelude(self, text_parts: Sequence[str]) -> list[Piece]:
        message = {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        out = [
            Piece(
                "prelude",
                {
                    "type": "message-start",
                    "id": "fba98ad3-e5a1-413c-a8de-84fbf9baabf7",
                    "delta": {"message": message},
                },
            )
        ]
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


# -- Ollama native ---------------------------------------------------------------------------


@dataclass
class OllamaEncoder(Encoder):
    """``/api/chat`` lines; calls come whole; quirks: thinking, ids (newer servers), no index."""

    wire: str = "ollama"
    fragmented: bool = False
    closes: bool = False
    QUIRKS: tuple[str, ...] = ("thinking", "ids", "no_index")

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


ENCODERS: dict[str, Callable[[frozenset[str]], Encoder]] = {
    "openai": lambda quirks: OpenAIEncoder(quirks=quirks),
    "openai-responses": lambda quirks: ResponsesEncoder(quirks=quirks),
    "anthropic": lambda quirks: AnthropicEncoder(quirks=quirks),
    "bedrock": lambda quirks: BedrockEncoder(quirks=quirks),
    "gemini": lambda quirks: GeminiEncoder(quirks=quirks),
    "cohere": lambda quirks: CohereEncoder(quirks=quirks),
    "ollama": lambda quirks: OllamaEncoder(quirks=quirks),
}
"""Every wire the kit generates, by profile name."""

WIRES: tuple[str, ...] = tuple(ENCODERS)

QUIRKS: dict[str, tuple[str, ...]] = {
    "openai": OpenAIEncoder.QUIRKS,
    "openai-responses": ResponsesEncoder.QUIRKS,
    "anthropic": AnthropicEncoder.QUIRKS,
    "bedrock": BedrockEncoder.QUIRKS,
    "gemini": GeminiEncoder.QUIRKS,
    "cohere": CohereEncoder.QUIRKS,
    "ollama": OllamaEncoder.QUIRKS,
}
"""The quirks of real providers each encoder can reproduce (see docs/wire-formats.md)."""


def encoder(wire: str, quirks: frozenset[str] = frozenset()) -> Encoder:
    """A fresh encoder of ``wire`` with ``quirks``; a clear error for an unknown wire."""
    if wire not in ENCODERS:
        raise ValueError(f"unknown wire {wire!r}; choose one of {', '.join(WIRES)}")
    unknown = set(quirks) - set(QUIRKS[wire])
    if unknown:
        raise ValueError(f"{wire} has no quirk {sorted(unknown)}; it has {list(QUIRKS[wire])}")
    return ENCODERS[wire](frozenset(quirks))


def chunks_of(pieces: Sequence[Piece]) -> list[Chunk]:
    """The chunks of ``pieces``, deep-copied (a consumer may mutate what it is fed)."""
    return [copy.deepcopy(piece.chunk) for piece in pieces]


def dumps(chunk: Chunk) -> str:
    """A chunk as one line of compact JSON (non-ASCII kept, as servers send it)."""
    return json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
