"""Anthropic Messages: typed SSE events into the stream=false message with content blocks.

Wire: ``message_start`` carries the message envelope; each content block opens with
``content_block_start`` (a ``tool_use`` block brings its id and name, and an ``input``
that is normally empty), grows with ``content_block_delta`` (``text_delta``,
``input_json_delta.partial_json``, ``thinking_delta``, ``signature_delta``) and ends with
its own ``content_block_stop`` (the per-call done). ``message_delta`` brings the turn's
``stop_reason`` (``tool_use`` when calls end the turn) and ``message_stop`` ends the turn:
it is the turn's terminal, so a stream cut after ``message_delta`` is incomplete.
Blocks are keyed by their ``index``. The assembled message holds every block in index
order, each ``tool_use.input`` an object; thinking blocks stay in the message and are not
display text.

Server tools (``server_tool_use``, ``mcp_tool_use``: web search, code execution, MCP
connector, tool search) stream their input with ``input_json_delta`` too; the server runs
them, so their input is assembled into the message and they are never client calls.
A ``tool_use`` block whose start already carries an input is restated by any deltas that
follow (they must agree, else ``args_mismatch``); a block started twice is the
duplicate-call case when the restatement is identical and an identity collision when not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from callgate.strategies.base import (
    CallPairing,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    Steady,
    ToolResult,
    arguments_text,
    entry_forming,
    has_text,
    received_input,
    repaired_blocks,
)
from callgate.strategies.usage import count_at
from callgate.strategies.wire import Framing, SdkForm, Terminal, Wire

if TYPE_CHECKING:
    from callgate.gate.turn import BaseSlot, TurnGate

EVENT_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
_TEXT_FIELD = {"text_delta": "text", "thinking_delta": "thinking"}
SDK_HELPER_EVENTS = frozenset({"text", "input_json", "citation", "thinking", "signature"})
"""Events the SDK's ``.stream()`` helper derives from raw ones it also yields: skipped."""
SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})
"""Blocks of tools the provider runs: their input is assembled, never released to a client."""
_JOINED = ("text", "thinking", "signature")
"""Block fields kept as fragment lists while streaming and joined once, in message()."""


_TOOL_REASON = "tool_use"
"""The stop reason that ends a turn's calls normally (the record's ``calls_end``)."""


class _Accumulator:
    """Native reassembly state for one turn (tool arguments live in the gate's slots)."""

    __slots__ = ("blocks", "envelope", "gate", "parts", "server", "stop_reason", "tools", "usage")

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.envelope: dict[str, Any] = {"type": "message", "role": "assistant"}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.parts: dict[tuple[int, str], list[str]] = {}
        self.tools: dict[int, BaseSlot | None] = {}
        """The tool blocks by index, each with the gate's slot for it (None: the gate made
        none, as when the slot limit was reached)."""
        self.server: dict[int, list[str]] = {}
        """Server-tool blocks by index, with their input fragments."""
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        """The envelope's usage, once a message_delta updated it (a copy owned here)."""


class AnthropicStrategy(ExtractionStrategy):
    """Messages stream events into the stream=false message."""

    name = "anthropic"
    leaks_into_text = True
    per_call_done = True
    requires_id = True
    unique_ids = True
    empty_arguments_object = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A stream event, or an assembled message whose content is a block list."""
        kind = shape.get("type")
        if kind == "error":
            return isinstance(shape.get("error"), dict)
        if isinstance(kind, str) and kind in EVENT_TYPES:
            return True
        return (kind == "message" or shape.get("role") == "assistant") and isinstance(
            shape.get("content"), list
        )

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str | None:
        """Apply one event; report tool-call primitives to the gate; return new text.

        A delta event is never the stream's end: one that shows nothing returns None.
        """
        kind = chunk.get("type")
        if kind == "content_block_delta":
            return self._delta(acc, chunk) or None
        gate = acc.gate
        if kind == "content_block_start":
            self._start(acc, chunk)
        elif kind == "content_block_stop":
            index = chunk.get("index")
            if index in acc.tools:
                _restated_input(gate, index, acc.blocks[index].get("input"))
                gate.close(index)
            elif index not in acc.blocks:
                gate.close(index)
        elif kind == "message_start":
            envelope = dict(chunk.get("message") or {})
            envelope.pop("content", None)
            acc.envelope.update(envelope)
        elif kind == "message_delta":
            delta = chunk.get("delta") or {}
            acc.envelope.update(delta)
            if chunk.get("usage"):
                usage = acc.usage
                stored: object = acc.envelope.get("usage")
                if usage is None or stored is not usage:
                    usage = acc.usage = dict(acc.envelope.get("usage") or {})
                    acc.envelope["usage"] = usage
                usage.update(chunk["usage"])
                gate.usage(count_at(usage, "output_tokens"))
            reason = delta.get("stop_reason")
            if reason is not None:
                acc.stop_reason = reason
        elif kind == "message_stop":
            reason = acc.stop_reason
            gate.turn_done(reason == _TOOL_REASON, reason)
        elif kind == "error":
            gate.stray(chunk)
            detail = (chunk.get("error") or {}).get("type", "error")
            gate.refuse("provider_error", f"the provider reported {detail!r} mid-stream")
        else:
            gate.stray(chunk)
            if not isinstance(kind, str) or kind not in EVENT_TYPES | SDK_HELPER_EVENTS:
                gate.refuse(
                    "malformed_chunk", f"not an Anthropic stream event: {dict(chunk)!r:.80}"
                )
        return ""

    def reader(self, acc: _Accumulator) -> Callable[[Shape], str | None]:
        """:meth:`accumulate`, with a block's argument or text delta read first and in place.

        An argument delta of a tool block goes straight to the gate; a text delta of a
        started block is counted and kept as :meth:`accumulate` keeps it; anything else
        is :meth:`accumulate`'s.
        """
        tools, blocks, gate, accumulate = acc.tools, acc.blocks, acc.gate, self.accumulate
        fragment, text_kept = gate.fragment, gate.text
        shown: dict[int, list[str]] = {}
        """Each text block's list of pieces in ``acc.parts``, by block index."""

        def read(chunk: Shape) -> str | None:
            index: Any = None
            text = None
            try:
                if chunk["type"] == "content_block_delta":
                    delta = chunk["delta"]
                    kind = delta["type"]
                    if kind == "input_json_delta":
                        index = chunk["index"]
                        if index in tools:
                            text = delta["partial_json"]
                    elif kind == "text_delta":
                        index, piece = chunk["index"], delta["text"]
                        if type(index) is int and type(piece) is str and index in blocks:
                            if not text_kept(piece):
                                return ""
                            pieces = shown.get(index)
                            if pieces is None:
                                pieces = shown[index] = acc.parts.setdefault((index, "text"), [])
                            pieces.append(piece)
                            return piece or None
            except (KeyError, TypeError):
                pass  # a field missing or of another type: accumulate() reads and reports it
            if text is None:
                return accumulate(acc, chunk)
            fragment(index, text)
            return None

        return read

    def fast_add(
        self, acc: _Accumulator, steady: Steady, rest: Callable[[object], None]
    ) -> Callable[[object], None]:
        """The buffer's ``add`` for a tool block's argument delta within its grant, and text.

        Most of a turn with calls is such deltas: each is appended to its slot in place,
        the way :meth:`TurnGate.fragment <callgate.gate.turn.TurnGate.fragment>` appends
        within a grant (its characters counted); a text delta of a started block is counted,
        kept and shown as :meth:`reader` and the buffer would. Anything else, and everything
        once ``steady`` is dropped, is ``rest``'s (the buffer's own path, which reads it
        with :meth:`reader`).
        """
        tools: dict[int, Any] = acc.tools  # (a block with no slot holds None)
        gate = acc.gate
        shown: dict[int, list[str]] = {}
        """Each text block's list of pieces in ``acc.parts``, by block index."""
        text_side = (acc.blocks, acc.parts, gate.limits.max_text_bytes, steady.show, shown)
        """What a text delta needs, in one cell (each cell is copied on every call)."""

        def add(chunk: Any) -> None:
            # No type test of the chunk: what is not a dict fails a step below (an SDK
            # object cannot be indexed) or reads as the same dict would.
            try:
                if chunk["type"] == "content_block_delta":
                    delta = chunk["delta"]
                    if delta["type"] == "input_json_delta":
                        index = chunk["index"]
                        slot = tools[index]  # a KeyError once the path is cut
                        # the slot's own key object: an int equal to it, not True or 1.0 (an
                        # index past CPython's shared small ints takes the buffer's path);
                        # a block with no slot (None) raises an AttributeError
                        if slot.key is index:
                            text = delta["partial_json"]
                            if type(text) is str and text:
                                room = slot.room - len(text)  # characters (see Slot.room)
                                if room >= 0:
                                    slot.parts.append(text)
                                    slot.room = room
                                    return
                    elif delta["type"] == "text_delta":
                        # counted as TurnGate.text counts it, kept as the reader keeps it and
                        # shown as the buffer shows a chunk's text; past the text limit the
                        # buffer's path reads it (the gate refuses it there)
                        index, piece = chunk["index"], delta["text"]
                        blocks, parts, most, show, shown = text_side
                        if type(index) is int and type(piece) is str and piece and index in blocks:
                            total = gate.text_bytes + (
                                len(piece)
                                if piece.isascii()
                                else len(piece.encode("utf-8", "surrogatepass"))
                            )
                            if total <= most:
                                gate.text_bytes = total
                                pieces = shown.get(index)
                                if pieces is None:
                                    pieces = shown[index] = parts.setdefault((index, "text"), [])
                                pieces.append(piece)
                                show(piece)
                                return
            except (KeyError, TypeError, AttributeError):
                pass  # a field missing or of another type: the buffer reads and reports it
            rest(chunk)

        def cut() -> None:
            nonlocal tools, text_side
            tools, text_side = {}, ({}, *text_side[1:])  # no block is started any more

        steady.cut = cut
        return add

    def _start(self, acc: _Accumulator, chunk: Shape) -> None:
        index = chunk.get("index")
        block = dict(chunk.get("content_block") or {})
        if not isinstance(index, int) or isinstance(index, bool):
            acc.gate.refuse("malformed_chunk", f"content block index {index!r} is not an integer")
            return
        if index in acc.tools:
            self._restart(acc, index, block)
        elif block.get("type") == "tool_use" and index not in acc.blocks:
            acc.blocks[index] = block
            acc.gate.identity(index, block.get("id"), block.get("name"))
            acc.tools[index] = acc.gate.slots.get(index)
        elif index in acc.blocks:
            acc.gate.refuse("malformed_chunk", f"content block {index} started twice")
        else:
            for field in _JOINED:
                if field in block and not isinstance(block[field], str):
                    acc.gate.refuse(
                        "malformed_chunk",
                        f"content block {index} starts with {field} that is not text: "
                        f"{block[field]!r:.40}",
                    )
                    block[field] = ""  # the message stays readable; the turn is blocked
            acc.blocks[index] = block
            if block.get("type") in SERVER_TOOL_BLOCKS:
                acc.server[index] = []

    @staticmethod
    def _restart(acc: _Accumulator, index: int, block: dict[str, Any]) -> None:
        """A tool_use block started again: the duplicate-call case if identical, else a clash."""
        gate = acc.gate
        if block != acc.blocks[index]:
            gate.disagree(
                index,
                "identity",
                f"content block {index} started again with other content: "
                f"{block.get('id')!r} {block.get('name')!r} {block.get('input')!r:.60}",
            )
            return
        slot = gate.slots.get(index)
        if slot is not None and not slot.parts and block.get("input"):
            gate.note("duplicate_call_ignored", f"content block {index} restated; dropped", index)
            return
        gate.identity(index, block.get("id"), block.get("name"))

    def _delta(self, acc: _Accumulator, chunk: Shape) -> str:
        index = chunk.get("index")
        delta = chunk.get("delta") or {}
        kind = delta.get("type")
        if kind == "input_json_delta":
            server = acc.server.get(index) if type(index) is int else None
            if server is not None:
                server.append(_text_of(acc, delta.get("partial_json", "")))
            elif index in acc.blocks and index not in acc.tools:
                acc.gate.refuse("malformed_chunk", f"input_json_delta for non-tool block {index}")
            else:
                acc.gate.fragment(index, delta.get("partial_json", ""))
            return ""
        block = acc.blocks.get(index) if isinstance(index, int) else None
        if block is None or not isinstance(index, int):
            acc.gate.refuse("orphan_event", f"{kind} for content block {index!r}, never started")
            return ""
        if kind in _TEXT_FIELD:
            field = _TEXT_FIELD[kind]
            text = delta.get(field, "")
            if not isinstance(text, str):
                acc.gate.refuse(
                    "malformed_chunk",
                    f"{kind} for block {index}: {field} is not text: {text!r:.40}",
                )
                return ""
            if not acc.gate.text(text):
                return ""
            acc.parts.setdefault((index, field), []).append(text)
            return text if kind == "text_delta" else ""
        if kind == "signature_delta":
            signature = delta.get("signature", "")
            if not isinstance(signature, str):
                raise TypeError(f"signature_delta for block {index} is not text")
            acc.parts.setdefault((index, "signature"), []).append(signature)
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        return ""

    def is_done(self, chunk: Shape) -> bool:
        """``message_stop`` ends the stream."""
        return chunk.get("type") == "message_stop"

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false message: the envelope and every block in index order."""
        content = []
        for index in sorted(acc.blocks):
            block = dict(acc.blocks[index])
            for field in _JOINED:
                parts = acc.parts.get((index, field))
                if parts is not None:
                    block[field] = block.get(field, "") + "".join(parts)
            if index in acc.tools:
                block["input"] = _input(acc.gate, index, block.get("input"))
            elif index in acc.server:
                block["input"] = _server_input(acc.server[index], block.get("input"))
            content.append(block)
        message: dict[str, Any] = {**acc.envelope, "content": content}
        usage = acc.usage
        stored: object = message.get("usage")
        if usage is not None and stored is usage:
            message["usage"] = dict(usage)
        return message

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """The ``tool_use`` blocks whose input is an object."""
        return [
            ExtractedCall(block.get("id"), block["name"], block["input"], position)
            for position, block in enumerate(message.get("content") or ())
            if block.get("type") == "tool_use"
            and isinstance(block.get("input"), dict)
            and block.get("name")
        ]

    def forming(self, message: Shape) -> Forming:
        """A call is coming once a ``tool_use`` block started; the last one names it."""
        content = message.get("content")
        blocks = content if isinstance(content, list) else ()
        tools = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        return entry_forming(tools, lambda block: block.get("name"))

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The events of a message: its start, each block started, filled and stopped, its end.

        A ``tool_use`` block starts with an empty input and its input follows as one
        ``input_json_delta``: an object written as JSON, a string as the text it is (what
        :meth:`message` keeps of a call it refused), null as nothing. The stop reason is
        the message's own, else ``tool_use`` when it has a call.
        """
        envelope = {k: v for k, v in message.items() if k not in ("content", "stop_reason")}
        envelope.setdefault("type", "message")
        envelope.setdefault("role", "assistant")
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": {**envelope, "content": []}}
        ]
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        for index, block in enumerate(blocks):
            events += _block_events(index, block)
        reason = message.get("stop_reason")
        if reason is None:
            calls = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
            reason = "tool_use" if calls else "end_turn"
        events.append({"type": "message_delta", "delta": {"stop_reason": reason}})
        events.append({"type": "message_stop"})
        return events

    def content_text(self, message: Shape) -> str:
        """The text of every text block, joined."""
        return "".join(
            block.get("text", "")
            for block in message.get("content") or ()
            if block.get("type") == "text"
        )

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The assistant turn: role and content blocks (the envelope stays behind)."""
        return [{"role": "assistant", "content": list(message.get("content") or ())}]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``tool_use`` block with its call's id and name, and an object ``input``.

        Text blocks that are empty or only whitespace, and a message left with no block,
        are left out: the API refuses them.
        """
        return repaired_blocks(
            history,
            calls,
            lambda block: block.get("type") != "text" or has_text(block.get("text")),
            _answerable_block,
        )

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One user message holding a ``tool_result`` block per result, by ``tool_use_id``."""
        if not results:
            return []
        blocks = [
            {
                "type": "tool_result",
                "tool_use_id": r.call.id,
                "content": r.content,
                **({"is_error": True} if r.is_error else {}),
            }
            for r in results
        ]
        return [{"role": "user", "content": blocks}]


def _block_events(index: int, block: Any) -> list[dict[str, Any]]:
    """One content block as the events that stream it (see :meth:`AnthropicStrategy.replay`)."""
    kind = block.get("type") if isinstance(block, dict) else None
    start: Any = block
    deltas: list[dict[str, Any]] = []
    if kind == "tool_use":
        start = {**block, "input": {}}
        text = arguments_text(block.get("input"))
        if text:
            deltas.append({"type": "input_json_delta", "partial_json": text})
    elif kind == "text" and isinstance(block.get("text"), str):
        start = {**block, "text": ""}
        deltas.append({"type": "text_delta", "text": block["text"]})
    elif kind == "thinking" and isinstance(block.get("thinking"), str):
        start = {**block, "thinking": "", "signature": ""}
        deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        if isinstance(block.get("signature"), str):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def _text_of(acc: _Accumulator, value: object) -> str:
    """A ``partial_json`` value as text; anything else is refused and counts as empty."""
    if isinstance(value, str):
        return value
    acc.gate.refuse("malformed_chunk", f"partial_json is not text: {value!r:.60}")
    return ""


def _restated_input(gate: TurnGate, index: Any, initial: Any) -> None:
    """At a tool_use block's stop: its start's input is the arguments, or must equal the deltas'."""
    slot = gate.slots.get(index)
    if slot is None or not initial:
        return
    if not slot.parts:
        gate.fragment(index, json.dumps(initial, ensure_ascii=False))
        return
    try:
        streamed = json.loads(slot.raw_arguments)
    except ValueError:
        return  # the slot's own check reports the broken JSON
    if streamed != initial:
        gate.disagree(
            index,
            "arguments",
            f"content block {index}: the start's input {initial!r:.60} differs from the "
            f"input the deltas built {streamed!r:.60}",
        )


def _server_input(parts: list[str], initial: Any) -> Any:
    """A server tool's input: what its deltas built (as the SDK reads it), else the start's."""
    return _read_input("".join(parts), initial)


def _read_input(raw: str, initial: Any) -> Any:
    """Input text as the SDK reads it: parsed if it parses, the start's input if empty."""
    if not raw:
        return initial if initial is not None else {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _answerable_block(block: dict[str, Any], pairing: CallPairing) -> dict[str, Any]:
    if block.get("type") != "tool_use":
        return block
    call = pairing.take(block.get("id"), block.get("name"), block.get("input"))
    arguments = call.arguments if call.arguments is not None else {}
    return {**block, "id": call.id, "name": call.name, "input": arguments}


def _input(gate: TurnGate, index: int, initial: Any) -> Any:
    """A tool_use block's input: the checked object, else the best reading of its text."""
    slot = gate.slots.get(index)
    if slot is None:
        return initial if initial is not None else {}
    if slot.arguments is not None:
        return slot.arguments
    return received_input(slot.raw_arguments, initial)


def _tool_spec(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool as the Messages API lists it: its schema as ``input_schema``."""
    return {"name": name, "description": description, "input_schema": dict(schema)}


ANTHROPIC = Wire(
    name="anthropic",
    strategy=AnthropicStrategy,
    recognition=2,
    terminal=Terminal(
        field="message_delta.delta.stop_reason",
        calls_end=frozenset({_TOOL_REASON}),
        length=frozenset({"max_tokens", "model_context_window_exceeded"}),
        filtered=frozenset({"refusal"}),
    ),
    tool_spec=_tool_spec,
    quirks=("ping", "thinking", "empty_first_fragment", "server_tool"),
    sdk=SdkForm("anthropic", "anthropic.types:RawMessageStreamEvent", construct=True),
    framing=Framing(named=True),
    systems=("anthropic",),
)
"""Anthropic Messages: content blocks keyed by ``index``, each closed by its own stop."""
