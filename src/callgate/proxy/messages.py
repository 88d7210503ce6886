"""The engine on the Anthropic Messages wire: upstream events in, gated events out.

:class:`GatedMessages` is :class:`~callgate.proxy.engine.GatedTurn`'s twin for
``POST /v1/messages`` (Claude Code and other Anthropic clients on local servers). The
client receives ``message_start`` as it came; text as the display releases it, in text
blocks of its own numbering; thinking blocks as they came; native ``tool_use`` blocks
only once the turn's end confirms them and the gate accepts them; a call the model
wrote into its text as a ``tool_use`` block (a fresh ``toolu_`` id, the input in one
``input_json_delta``); then one ``message_delta`` (its ``stop_reason`` ``tool_use`` only
when calls were sent, with a ``callgate`` field) and ``message_stop``. Under
``move_reasoning``, ``<think>…</think>`` of the released text becomes a ``thinking``
block (no signature: the upstream signed nothing) between the text blocks around it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from callgate.proxy.engine import Call, GatedCore, Options, ThinkSplitter, fresh_id
from callgate.proxy.sse import encode

__all__ = ["GatedMessages"]

_TRUNCATING = {"max_tokens": "max_tokens", "refusal": "refusal"}
"""Upstream stop reasons that cut a turn, kept as they came."""
_GATED_BLOCKS = frozenset({"text", "tool_use"})
"""Upstream content blocks the gate rewrites; every other block (thinking, a server
tool's use and result) is forwarded as it comes, renumbered."""


class GatedMessages(GatedCore):
    """One Anthropic Messages turn through the gate (see the module's docstring)."""

    wire = "anthropic"

    def __init__(
        self,
        request: Mapping[str, Any],
        options: Options | None = None,
        *,
        attempt: int = 0,
        continues: GatedMessages | None = None,
    ) -> None:
        super().__init__(request, options, attempt=attempt, continues=continues)
        self._started = continues is not None
        self._next: int = continues.blocks if continues is not None else 0
        """The next content-block index of the client's message."""
        self._open: tuple[str, int] | None = None
        """The block the proxy opened and has not closed: its type and the client's index."""
        self.splitter = ThinkSplitter() if self.options.move_reasoning else None
        self._passed: dict[int, int] = {}
        """Upstream block index -> the client's, for blocks forwarded as they come."""
        self._streamed: dict[int, int] = {}
        """Under ``stream_args``: native tool_use blocks forwarded delta by delta."""
        self.stop_sequence: Any = None
        self.usage: dict[str, Any] = {}
        self.delta_usage: dict[str, Any] = {}
        """The usage of the upstream's message_delta (sent on ours)."""
        self.message: dict[str, Any] = {}

    @property
    def blocks(self) -> int:
        """How many content blocks the client's message has so far."""
        return self._next

    # -- the stream -------------------------------------------------------------------

    def ends(self, chunk: object) -> bool:
        """``message_stop`` ends an Anthropic stream."""
        return isinstance(chunk, Mapping) and chunk.get("type") == "message_stop"

    def rewrite(self, chunk: object) -> list[dict[str, Any]]:
        """A Messages event: text as released, thinking as it came, tool_use held."""
        out: list[dict[str, Any]] = []
        kind = chunk.get("type") if isinstance(chunk, Mapping) else None
        if isinstance(chunk, Mapping):
            out += self._pass(chunk, kind)
        text = self.step(chunk)
        if kind in ("ping", "error") and isinstance(chunk, dict):
            out.append(chunk)
        if text:
            out += self._released(text)
        return out

    def _pass(self, chunk: Mapping[str, Any], kind: object) -> list[dict[str, Any]]:
        """What an event forwards as it came: message_start, thinking, streamed arguments."""
        if kind == "message_start":
            message = chunk.get("message")
            if isinstance(message, Mapping):
                self.message = dict(message)
                usage = message.get("usage")
                if isinstance(usage, Mapping):
                    self.usage.update(usage)
            if self._started:
                return []
            self._started = True
            return [dict(chunk)]
        if kind == "message_delta":
            delta = chunk.get("delta")
            if isinstance(delta, Mapping):
                reason = delta.get("stop_reason")
                if isinstance(reason, str):
                    self.upstream_finish = reason
                self.stop_sequence = delta.get("stop_sequence")
            usage = chunk.get("usage")
            if isinstance(usage, Mapping):
                self.usage.update(usage)
                self.delta_usage.update(usage)
            return []
        index = chunk.get("index")
        if not isinstance(index, int):
            return []
        if kind == "content_block_start":
            block = chunk.get("content_block")
            block_type = block.get("type") if isinstance(block, Mapping) else None
            if block_type not in _GATED_BLOCKS or (
                self.options.stream_args and block_type == "tool_use" and self._owned(block)
            ):
                out = self._close_text()
                given = self._next
                self._next += 1
                (self._streamed if block_type == "tool_use" else self._passed)[index] = given
                return [*out, {**chunk, "index": given}]
            return []
        mine = self._passed.get(index, self._streamed.get(index))
        if mine is None or kind not in ("content_block_delta", "content_block_stop"):
            return []
        return [{**chunk, "index": mine}]

    def _owned(self, block: Any) -> bool:
        return isinstance(block, Mapping) and self.driver.owns(block.get("name"))

    def _released(self, text: str) -> list[dict[str, Any]]:
        """Released text: in text blocks, its reasoning in thinking blocks when moved."""
        if self.splitter is None:
            return self._text(text)
        out: list[dict[str, Any]] = []
        for inside, piece in self.splitter.pieces(text):
            out += self._text(piece, "thinking" if inside else "text")
        return out

    def _text(self, text: str, kind: str = "text") -> list[dict[str, Any]]:
        """``text`` in the open block of ``kind`` (a block of another kind is closed first)."""
        out: list[dict[str, Any]] = []
        if self._open is not None and self._open[0] != kind:
            out += self._close_text()
        if self._open is None:
            self._open = (kind, self._next)
            self._next += 1
            start = {"type": kind, kind: ""}
            if kind == "thinking":
                start["signature"] = ""
            out.append(
                {"type": "content_block_start", "index": self._open[1], "content_block": start}
            )
        delta = {"type": f"{kind}_delta", kind: text}
        out.append({"type": "content_block_delta", "index": self._open[1], "delta": delta})
        return out

    def _close_text(self) -> list[dict[str, Any]]:
        """Close the block the proxy opened, if one is open."""
        if self._open is None:
            return []
        index = self._open[1]
        self._open = None
        return [{"type": "content_block_stop", "index": index}]

    def flush(self, text: str) -> list[dict[str, Any]]:
        """The text released at the end, in the open block; the splitter's held tail."""
        out = self._released(text) if text else []
        if self.splitter is not None:
            reasoning, rest = self.splitter.flush()
            if reasoning:
                out += self._text(reasoning, "thinking")
            if rest:
                out += self._text(rest)
        return out

    def final(self) -> list[dict[str, Any]]:
        """The notice, the tool_use blocks, then message_delta and message_stop."""
        out: list[dict[str, Any]] = []
        notice = self.notice()
        if notice:
            out += self._text(notice)
        out += self._close_text()
        for call in self.calls:
            if isinstance(call.slot, int) and call.slot in self._streamed:
                continue
            out += self._tool_use(call)
        if not self._started:
            self._started = True
            out.insert(0, _message_start(self.request))
        stop = {"stop_reason": self._stop_reason(), "stop_sequence": self.stop_sequence}
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": stop,
            "usage": self.delta_usage or {"output_tokens": 0},
            "callgate": self.annotation(),
        }
        out += [delta, {"type": "message_stop"}]
        return out

    def _tool_use(self, call: Call) -> list[dict[str, Any]]:
        index = self._next
        self._next += 1
        call_id = call.id if call.source == "native" else fresh_id("toolu_")
        block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": call.arguments}
        return [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]

    def _stop_reason(self) -> str:
        if self.calls:
            return "tool_use"
        reason = self.upstream_finish
        if reason in _TRUNCATING:
            return _TRUNCATING[reason]
        return "end_turn" if reason in (None, "tool_use") else str(reason)

    @property
    def truncated(self) -> bool:
        """Whether the upstream cut the turn (``max_tokens``, ``refusal``, no end at all)."""
        return self.upstream_finish in _TRUNCATING or not self.buffer.is_finished()

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        """One event, named by its type as Anthropic's stream names them."""
        return encode(chunk, str(chunk.get("type", "message")))

    # -- stream=false -----------------------------------------------------------------

    def whole(self, response: Mapping[str, Any]) -> dict[str, Any]:
        """A stream=false message through the same gate: the message the client gets."""
        return self.assemble(response, self.whole_chunks(response))

    def whole_chunks(self, response: object) -> list[dict[str, Any]]:
        """The gated events of a stream=false message, fed as the stream that makes it."""
        if not isinstance(response, Mapping) or response.get("type") != "message":
            unreadable = self.feed_unreadable("the upstream's response is not a message object")
            return [*unreadable, *self.finish()]
        out: list[dict[str, Any]] = []
        for event in _events_of(response):
            out += self.feed(event)
        return [*out, *self.finish()]

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false message made of the gated events (this engine's own output)."""
        body: dict[str, Any] = {
            k: v for k, v in (response or {}).items() if k not in ("content", "stop_reason")
        }
        body.setdefault("type", "message")
        body.setdefault("role", "assistant")
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, list[str]] = {}
        for event in chunks:
            kind = event.get("type")
            if kind == "content_block_start":
                blocks[event["index"]] = dict(event["content_block"])
            elif kind == "content_block_delta":
                block, delta = blocks[event["index"]], event["delta"]
                if delta.get("type") == "text_delta":
                    block["text"] = block.get("text", "") + delta["text"]
                elif delta.get("type") == "input_json_delta":
                    partial.setdefault(event["index"], []).append(delta["partial_json"])
                elif delta.get("type") == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + delta["thinking"]
                elif delta.get("type") == "signature_delta":
                    block["signature"] = delta["signature"]
            elif kind == "message_delta":
                body["stop_reason"] = event["delta"]["stop_reason"]
                body["stop_sequence"] = event["delta"].get("stop_sequence")
                body["callgate"] = event.get("callgate")
        for index, parts in partial.items():
            blocks[index]["input"] = json.loads("".join(parts) or "{}")
        body["content"] = [blocks[k] for k in sorted(blocks)]
        return body


def _message_start(request: Mapping[str, Any]) -> dict[str, Any]:
    """A message_start for a stream whose upstream sent none."""
    message = {
        "id": fresh_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.get("model", ""),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    return {"type": "message_start", "message": message}


def _events_of(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stream events that make a stream=false message (how the SDKs would stream it)."""
    start = {k: v for k, v in response.items() if k != "content"}
    start.update({"content": [], "stop_reason": None, "stop_sequence": None})
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    content = response.get("content")
    for index, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        opening: dict[str, Any] = dict(block)
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            opening["text"] = ""
            deltas = [{"type": "text_delta", "text": block.get("text", "")}]
        elif kind == "tool_use":
            opening["input"] = {}
            deltas = [
                {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
            ]
        elif kind == "thinking":
            opening.update({"thinking": "", "signature": ""})
            deltas = [
                {"type": "thinking_delta", "thinking": block.get("thinking", "")},
                {"type": "signature_delta", "signature": block.get("signature", "")},
            ]
        events.append({"type": "content_block_start", "index": index, "content_block": opening})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    delta = {
        "stop_reason": response.get("stop_reason"),
        "stop_sequence": response.get("stop_sequence"),
    }
    events.append({"type": "message_delta", "delta": delta, "usage": response.get("usage") or {}})
    events.append({"type": "message_stop"})
    return events
