"""AWS Bedrock ConverseStream events (as boto3 yields them) into the stream=false ConverseResponse.

Wire: each event is a dict with one key. ``messageStart`` brings the role. A tool call is
a content block keyed by its ``contentBlockIndex`` (the slot key): ``contentBlockStart``
brings ``start.toolUse`` with the call id (``toolUseId``, required) and the ``name``;
``contentBlockDelta`` with ``delta.toolUse.input`` brings the arguments as string
fragments of JSON; ``contentBlockStop`` is the per-call done. Text and reasoning blocks
need no start: their first ``contentBlockDelta`` (``delta.text``,
``delta.reasoningContent``) opens them. ``messageStop`` ends the turn, a tool-call ending
when its ``stopReason`` is ``tool_use`` (any other reason with calls is
``wrong_terminal_reason``, and a second ``messageStop`` is ``duplicate_terminal``);
``metadata`` (usage, metrics) follows it. An exception event (``{"throttlingException":
{"message": ...}}``, one of :data:`EXCEPTIONS`) is the provider's error inside the stream:
one ``provider_error`` that fails the turn and ends the stream. boto3 raises it instead.

The assembled message is the stream=false ``Converse`` response, not the bare message:
``{output: {message: {role, content}}, stopReason, usage, metrics, ...}`` with every field
the stream carried, under its own name. (A bare ``{role, content}`` message would be
indistinguishable from an Anthropic message, and ``stopReason``, ``usage`` and
``metrics`` belong to the response.) Content blocks are in index order; each
``toolUse.input`` is an object, although the stream sends it as text: the checked object
when the call validated, else the best lenient reading of the text, else the text itself.
An empty input stream means ``{}``. Blocks of ``type: server_tool_use`` are run by
Bedrock itself; they stay in the message and are not gated. Empty ``toolUseId`` and
``name`` strings count as absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from callgate.strategies.base import (
    CallPairing,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    ToolResult,
    arguments_text,
    entry_forming,
    has_text,
    received_input,
    repaired_blocks,
    text_field,
)
from callgate.strategies.usage import count_at
from callgate.strategies.wire import Framing, Terminal, Wire

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

EXCEPTIONS = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)
EVENT_KEYS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        *EXCEPTIONS,
    }
)
SERVER_TOOL = "server_tool_use"
_DELTA_KINDS = {
    "text": "text",
    "citation": "text",
    "reasoningContent": "reasoningContent",
    "toolResult": "toolResult",
    "image": "image",
}
"""A non-tool delta's key, and the kind of block it belongs to."""


def _is_index(value: object) -> TypeGuard[int]:
    """A content block index: a plain int (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


_TOOL_REASON = "tool_use"
"""The stop reason that ends a turn's calls normally (the record's ``calls_end``)."""


class _Block:
    """One content block as the stream builds it (a tool call's input lives in its slot)."""

    __slots__ = ("citations", "fields", "kind", "results", "texts")

    def __init__(self, kind: str, fields: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.fields: dict[str, Any] = fields or {}
        self.texts: dict[str, list[Any]] = {}
        self.citations: list[Any] = []
        self.results: list[Any] = []

    def text(self, field: str) -> Any:
        parts = self.texts.get(field)
        if not parts:
            return None
        return b"".join(parts) if isinstance(parts[0], bytes) else "".join(parts)


class _Accumulator:
    """Native reassembly state for one turn."""

    __slots__ = ("blocks", "gate", "meta", "role", "server", "stop", "tools")

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.role = "assistant"
        self.blocks: dict[int, _Block] = {}
        self.tools: set[int] = set()
        self.server: set[int] = set()
        self.stop: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}


class BedrockStrategy(ExtractionStrategy):
    """ConverseStream events into the stream=false Converse response."""

    name = "bedrock"
    leaks_into_text = True
    per_call_done = True
    requires_id = True
    empty_arguments_object = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A ConverseStream event (only event keys), or a Converse response (``output.message``)."""
        if shape and EVENT_KEYS.issuperset(shape):
            return True
        output = shape.get("output")
        return isinstance(output, Mapping) and isinstance(output.get("message"), Mapping)

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str:
        """Apply one event; report tool-call primitives to the gate; return new text."""
        body = chunk.get("contentBlockDelta")
        if type(body) is dict and len(chunk) == 1:
            # The common case first: an input fragment for a started call, as plain dicts.
            delta, index = body.get("delta"), body.get("contentBlockIndex")
            tool = delta.get("toolUse") if type(delta) is dict else None
            fragment = tool.get("input") if type(tool) is dict else None
            if type(fragment) is str and type(index) is int and index in acc.tools:
                acc.gate.fragment(index, fragment)
                return ""
        if not chunk or not EVENT_KEYS.issuperset(chunk):
            acc.gate.stray(chunk)
        shown = ""
        for key, body in chunk.items():
            if key not in EVENT_KEYS:
                continue
            if key in EXCEPTIONS:
                _provider_error(acc.gate, key, body)
            elif not isinstance(body, Mapping):
                acc.gate.refuse(
                    "malformed_chunk", f"the {key} event is not an object: {body!r:.60}"
                )
            elif key == "contentBlockDelta":
                shown += self._delta(acc, body)
            elif key == "contentBlockStart":
                self._start(acc, body)
            elif key == "contentBlockStop":
                self._stop(acc, body)
            elif key == "messageStart":
                acc.role = body.get("role", acc.role)
            elif key == "messageStop":
                self._message_stop(acc, body)
            else:
                acc.meta.update(body)
                if key == "metadata":
                    acc.gate.usage(count_at(body, "usage", "outputTokens"))
        return shown

    @staticmethod
    def _message_stop(acc: _Accumulator, body: Mapping[str, Any]) -> None:
        reason = body.get("stopReason")
        if "stopReason" in acc.stop:
            acc.gate.refuse(
                "duplicate_terminal",
                f"a second messageStop ({reason!r}) after {acc.stop['stopReason']!r}",
            )
            return
        acc.stop.update(body)
        acc.gate.turn_done(reason == _TOOL_REASON, reason)

    def _start(self, acc: _Accumulator, body: Mapping[str, Any]) -> None:
        index, start = body.get("contentBlockIndex"), body.get("start")
        gate = acc.gate
        if not _is_index(index) or not isinstance(start, Mapping):
            gate.refuse(
                "malformed_chunk", f"contentBlockStart needs an index and a start: {body!r:.80}"
            )
            return
        tool = start.get("toolUse")
        if tool is not None and not isinstance(tool, Mapping):
            gate.refuse("malformed_chunk", f"content block {index}'s toolUse is not an object")
            return
        if tool is not None and tool.get("type") != SERVER_TOOL:
            if index in acc.blocks and index not in acc.tools:
                gate.refuse("malformed_chunk", f"content block {index} started twice")
                return
            if index not in acc.blocks:
                acc.tools.add(index)
                acc.blocks[index] = _Block("toolUse", dict(tool))
            gate.identity(index, _text(gate, tool, "toolUseId"), _text(gate, tool, "name"))
            return
        if index in acc.blocks:
            gate.refuse("malformed_chunk", f"content block {index} started twice")
            return
        if tool is not None:
            acc.server.add(index)
            acc.blocks[index] = _Block("toolUse", dict(tool))
            return
        if not start:
            return  # an empty start (before a text block) opens nothing: the first delta does
        kind = next(iter(start), "unknown")
        fields = start.get(kind)
        acc.blocks[index] = _Block(kind, dict(fields) if isinstance(fields, Mapping) else {})

    def _delta(self, acc: _Accumulator, body: Mapping[str, Any]) -> str:
        index, delta = body.get("contentBlockIndex"), body.get("delta")
        gate = acc.gate
        if not isinstance(delta, Mapping):
            gate.refuse("malformed_chunk", f"a contentBlockDelta has no delta object: {body!r:.80}")
            return ""
        tool = delta.get("toolUse")
        if tool is not None:
            fragment = tool.get("input") if isinstance(tool, Mapping) else None
            if not isinstance(fragment, str):
                gate.refuse(
                    "malformed_chunk", f"content block {index!r}'s toolUse input is not text"
                )
            elif type(index) is int and index in acc.server:
                acc.blocks[index].texts.setdefault("input", []).append(fragment)
            elif type(index) is int and index in acc.blocks and index not in acc.tools:
                gate.refuse("malformed_chunk", f"a toolUse delta for non-tool block {index}")
            else:
                gate.fragment(index, fragment)
            return ""
        if not _is_index(index):
            gate.refuse("malformed_chunk", f"a contentBlockDelta has index {index!r}")
            return ""
        kind = next((k for k in _DELTA_KINDS if k in delta), None)
        if kind is None:
            return ""
        kind = _DELTA_KINDS[kind]
        block = acc.blocks.get(index)
        if block is None:
            block = acc.blocks[index] = _Block(kind)
        elif block.kind != kind:
            gate.refuse("malformed_chunk", f"a {kind} delta for {block.kind} block {index}")
            return ""
        return _apply(gate, block, index, delta)

    def _stop(self, acc: _Accumulator, body: Mapping[str, Any]) -> None:
        index = body.get("contentBlockIndex")
        if type(index) is not int or index not in acc.blocks or index in acc.tools:
            acc.gate.close(index)

    def is_done(self, chunk: Shape) -> bool:
        """``messageStop`` ends the turn (``metadata`` may follow); so does an exception."""
        return "messageStop" in chunk or not EXCEPTIONS.isdisjoint(chunk)

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false Converse response: ``output.message`` plus what the stream added."""
        content = [_built(acc, index) for index in sorted(acc.blocks)]
        response: dict[str, Any] = {"output": {"message": {"role": acc.role, "content": content}}}
        response.update(acc.stop)
        response.update(acc.meta)
        return response

    # -- reading an assembled Converse response ---------------------------------------

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """The client-side ``toolUse`` blocks whose input is an object."""
        calls = []
        for position, block in enumerate(_content(message)):
            tool = _client_tool(block)
            name = tool.get("name") if tool is not None else None
            if tool is not None and isinstance(name, str) and name:
                arguments = tool.get("input")
                if isinstance(arguments, dict):
                    calls.append(ExtractedCall(tool.get("toolUseId"), name, arguments, position))
        return calls

    def forming(self, message: Shape) -> Forming:
        """A call is coming once a client ``toolUse`` block started; the last one names it."""
        tools = [t for t in map(_client_tool, _content(message)) if t is not None]
        return entry_forming(tools, lambda tool: tool.get("name"))

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The ConverseStream events of a Converse response (or of its bare message).

        Each client ``toolUse`` block starts with its id and name, and its input follows
        as one text delta: an object written as JSON, a string as the text it is (what
        :meth:`message` keeps of a call it refused). Text and reasoning blocks stream as
        deltas; any other block starts whole. The stop reason is the response's own,
        else ``tool_use`` when it has a call; usage and metrics come last as metadata.
        """
        output = message.get("output")
        inner = output.get("message") if isinstance(output, Mapping) else None
        role = inner.get("role", "assistant") if isinstance(inner, Mapping) else "assistant"
        events: list[dict[str, Any]] = [{"messageStart": {"role": role}}]
        blocks = _content(message)
        for index, block in enumerate(blocks):
            events += _block_events(index, block)
        stop = {"stopReason": message.get("stopReason")}
        if stop["stopReason"] is None:
            calls = any(_client_tool(b) is not None for b in blocks)
            stop["stopReason"] = "tool_use" if calls else "end_turn"
        if isinstance(message.get("additionalModelResponseFields"), Mapping):
            stop["additionalModelResponseFields"] = message["additionalModelResponseFields"]
        events.append({"messageStop": stop})
        meta = {k: message[k] for k in ("usage", "metrics", "trace") if k in message}
        if meta:
            events.append({"metadata": meta})
        return events

    def content_text(self, message: Shape) -> str:
        """The text of every text block (and of cited text), joined."""
        texts = []
        for block in _content(message):
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
            cited = block.get("citationsContent")
            parts = cited.get("content") if isinstance(cited, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                text = part.get("text") if isinstance(part, Mapping) else None
                if isinstance(text, str):
                    texts.append(text)
        return "".join(texts)

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The assistant message inside ``output``."""
        return [{"role": "assistant", "content": [dict(b) for b in _content(message)]}]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each client ``toolUse`` with its call's id and name, and an object ``input``.

        Blank text blocks (empty or only whitespace: "The text field in the ContentBlock
        object is blank"), and a message left with no block, are left out.
        """
        return repaired_blocks(
            history,
            calls,
            lambda block: "text" not in block or has_text(block["text"]),
            _answerable_block,
        )

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One user message holding a ``toolResult`` block per result, by ``toolUseId``."""
        if not results:
            return []
        blocks = [
            {
                "toolResult": {
                    "toolUseId": r.call.id,
                    "content": [{"text": r.content}],
                    "status": "error" if r.is_error else "success",
                }
            }
            for r in results
        ]
        return [{"role": "user", "content": blocks}]

    def user_text(self, text: str) -> dict[str, Any]:
        """A user message of one text block: Converse content is a list of blocks."""
        return {"role": "user", "content": [{"text": text}]}


def _provider_error(gate: TurnGate, event: str, body: object) -> None:
    """An exception event: the provider's error, one ``provider_error`` naming it and its message.

    ``modelStreamErrorException`` also carries the model's own status and message.
    """
    if isinstance(body, Mapping):
        detail = f"{body.get('message')!s:.160}"
        status, original = body.get("originalStatusCode"), body.get("originalMessage")
        if status is not None or original is not None:
            detail += f" (the model's {status!s:.12}: {original!s:.160})"
    else:
        detail = f"{body!r:.60}"
    gate.refuse("provider_error", f"the provider reported {event}: {detail}")


def _text(gate: TurnGate, tool: Mapping[str, Any], field: str) -> str | None:
    """A toolUse id or name: a non-empty string, or None; anything else is refused."""
    return text_field(gate.refuse, tool, field, "a toolUse")


def _block_events(index: int, block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One content block as the events that stream it (see :meth:`BedrockStrategy.replay`)."""
    where = {"contentBlockIndex": index}
    stop = {"contentBlockStop": where}
    tool = _client_tool(block)
    if tool is not None:
        start = {k: v for k, v in tool.items() if k != "input"}
        text = arguments_text(tool.get("input"))
        events: list[dict[str, Any]] = [
            {"contentBlockStart": {**where, "start": {"toolUse": start}}}
        ]
        if text:
            events.append({"contentBlockDelta": {**where, "delta": {"toolUse": {"input": text}}}})
        return [*events, stop]
    if isinstance(block.get("text"), str):
        return [{"contentBlockDelta": {**where, "delta": {"text": block["text"]}}}, stop]
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, Mapping):
        shown = reasoning.get("reasoningText")
        fields = dict(shown) if isinstance(shown, Mapping) else dict(reasoning)
        delta = {"reasoningContent": fields}
        return [{"contentBlockDelta": {**where, "delta": delta}}, stop]
    kind = next(iter(block), None)
    if kind is None:
        return []
    return [{"contentBlockStart": {**where, "start": {kind: block[kind]}}}, stop]


def _apply(gate: TurnGate, block: _Block, index: int, delta: Mapping[str, Any]) -> str:
    """Add a non-tool delta to its block; return the display text it carries."""
    if block.kind == "text":
        text = delta.get("text")
        if text is not None and not isinstance(text, str):
            gate.refuse("malformed_chunk", f"content block {index}'s text delta is not text")
            return ""
        if "citation" in delta:
            block.citations.append(delta["citation"])
        if not text or not gate.text(text):
            return ""
        block.texts.setdefault("text", []).append(text)
        return text
    if block.kind == "reasoningContent":
        reasoning = delta["reasoningContent"]
        if not isinstance(reasoning, Mapping):
            gate.refuse("malformed_chunk", f"content block {index}'s reasoning is not an object")
            return ""
        for field, value in reasoning.items():
            parts = block.texts.setdefault(field, [])
            if not isinstance(value, (str, bytes)) or (parts and type(parts[0]) is not type(value)):
                gate.refuse("malformed_chunk", f"content block {index}'s reasoning {field} is odd")
            elif isinstance(value, bytes) or gate.text(value):
                parts.append(value)
        return ""
    if block.kind == "toolResult":
        results = delta["toolResult"]
        block.results.extend(results if isinstance(results, list) else [results])
    else:
        block.fields.update(delta["image"] if isinstance(delta["image"], Mapping) else {})
    return ""


def _built(acc: _Accumulator, index: int) -> dict[str, Any]:
    """One content block in its stream=false shape."""
    block = acc.blocks[index]
    if block.kind == "toolUse":
        tool = dict(block.fields)
        tool["input"] = (
            _input(acc.gate, index) if index in acc.tools else _lenient(block.text("input") or "")
        )
        return {"toolUse": tool}
    if block.kind == "text":
        text = block.text("text") or ""
        if block.citations:
            return {"citationsContent": {"content": [{"text": text}], "citations": block.citations}}
        return {"text": text}
    if block.kind == "reasoningContent":
        redacted = block.text("redactedContent")
        if redacted is not None:
            return {"reasoningContent": {"redactedContent": redacted}}
        reasoning = {"text": block.text("text") or ""}
        signature = block.text("signature")
        if signature is not None:
            reasoning["signature"] = signature
        return {"reasoningContent": {"reasoningText": reasoning}}
    if block.kind == "toolResult":
        return {"toolResult": {**block.fields, "content": block.results}}
    return {block.kind: dict(block.fields)}


def _input(gate: TurnGate, index: int) -> Any:
    """A toolUse block's input: the checked object, else the best reading of its text."""
    slot = gate.slots.get(index)
    if slot is None:
        return {}
    if slot.arguments is not None:
        return slot.arguments
    return received_input(slot.raw_arguments)


def _lenient(raw: str) -> Any:
    """The text read as JSON if it can be (``{}`` when empty), else the text itself."""
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


def _answerable_block(block: dict[str, Any], pairing: CallPairing) -> dict[str, Any]:
    tool = _client_tool(block)
    if tool is None:
        return block
    call = pairing.take(tool.get("toolUseId"), tool.get("name"), tool.get("input"))
    arguments = call.arguments if call.arguments is not None else {}
    return {
        **block,
        "toolUse": {**tool, "toolUseId": call.id, "name": call.name, "input": arguments},
    }


def _client_tool(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A block's toolUse when it is a call for the client (not a server-side tool)."""
    tool = block.get("toolUse")
    if isinstance(tool, Mapping) and tool.get("type") != SERVER_TOOL:
        return tool
    return None


def _content(message: Shape) -> list[Mapping[str, Any]]:
    """The content blocks of a Converse response (or of its bare ``output.message``)."""
    output = message.get("output")
    if isinstance(output, Mapping):
        inner = output.get("message")
        message = inner if isinstance(inner, Mapping) else {}
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _tool_spec(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool as Converse's ``toolConfig.tools`` lists it: a ``toolSpec``, schema as JSON."""
    spec = {"name": name, "description": description, "inputSchema": {"json": dict(schema)}}
    return {"toolSpec": spec}


BEDROCK = Wire(
    name="bedrock",
    strategy=BedrockStrategy,
    recognition=3,
    terminal=Terminal(
        field="messageStop.stopReason",
        calls_end=frozenset({_TOOL_REASON}),
        length=frozenset({"max_tokens"}),
        filtered=frozenset({"guardrail_intervened", "content_filtered"}),
    ),
    tool_spec=_tool_spec,
    quirks=("empty_text_start", "reasoning_block", "metadata"),
    framing=Framing(events="lines"),
    systems=("bedrock",),
)
"""Bedrock Converse: boto3 yields plain dicts (no SDK types), one event a line here."""
