"""The Anthropic Messages wire: its upstream events read, and its client events written.

:class:`MessagesReader` plays the events through the gate: text blocks go to the
display, ``tool_use`` blocks to the gate, every other block (thinking, a server tool's use
and result) is forwarded as it came. :class:`MessagesWriter` gives the client
``message_start`` (the upstream's, or one made up), text as the display releases it in
text blocks of its own numbering, forwarded blocks renumbered, the accepted calls as
``tool_use`` blocks (a fresh ``toolu_`` id for a call read from text, the input in one
``input_json_delta``), then one ``message_delta`` (``stop_reason`` ``tool_use`` only when
calls were sent, with a ``callgate`` field) and ``message_stop``. Under
``move_reasoning``, ``<think>…</think>`` of the released text becomes a ``thinking`` block
(no signature: the upstream signed nothing).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from callgate.gate.turn import NativeRef, TextRef
from callgate.proxy import core
from callgate.proxy.core import Call, ThinkSplitter
from callgate.proxy.sse import encode
from callgate.proxy.wires import notices
from callgate.proxy.wires.base import Host, Reader, Writer
from callgate.proxy.wires.events import (
    Event,
    FormingArgs,
    Native,
    StreamedArgs,
    Text,
    UpstreamError,
    Usage,
    tokens,
)
from callgate.proxy.wires.forming import (
    STRANDED,
    FormingReader,
    HeldClose,
    remainder,
    stranded_refs,
)
from callgate.strategies.anthropic import ANTHROPIC

__all__ = ["MessagesReader", "MessagesWriter", "message_start"]

WIRE = "anthropic"
_BLOCK_DELTA = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_TEXT_DELTA = ',"delta":{"type":"text_delta","text":'
_string = json.encoder.encode_basestring
"""A string as JSON without ASCII escapes (what ``json.dumps(s, ensure_ascii=False)`` writes)."""
_GATED_BLOCKS = frozenset({"text", "tool_use"})
"""Upstream content blocks the gate rewrites; every other block is forwarded as it comes."""


class MessagesReader(Reader):
    """Reads an upstream's Anthropic Messages events (see the module)."""

    wire = WIRE
    finishes: ClassVar[Mapping[str, str]] = {
        "end_turn": "stop",
        "tool_use": "tool_calls",
        "stop_sequence": "stop_sequence",
        **dict.fromkeys(ANTHROPIC.terminal.length, "length"),
        **dict.fromkeys(ANTHROPIC.terminal.filtered, "refusal"),
    }
    """The cuts are the wire record's (:data:`~callgate.strategies.anthropic.ANTHROPIC`)."""

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self._passed: set[int] = set()
        """Upstream block indexes forwarded as they come."""
        self._streamed: set[int] = set()
        """Under ``stream_args``: native tool_use blocks forwarded delta by delta."""
        self.usage: dict[str, Any] = {}
        self.delta_usage: dict[str, Any] = {}
        """The usage of the upstream's message_delta (what a writer of this wire sends)."""
        self._forming = FormingReader(engine)

    def ends(self, chunk: object) -> bool:
        """``message_stop`` ends an Anthropic stream."""
        return isinstance(chunk, Mapping) and chunk.get("type") == "message_stop"

    def read(self, chunk: object) -> list[Event]:
        """One event: forwarded blocks as they came, text as released, tool_use held."""
        out: list[Event] = []
        kind = chunk.get("type") if isinstance(chunk, Mapping) else None
        if isinstance(chunk, Mapping):
            out += self._pass(chunk, kind)
        text = self.engine.step(chunk)
        if kind == "ping" and isinstance(chunk, dict):
            out.append(Native(WIRE, chunk))
        elif kind == "error" and isinstance(chunk, dict):
            error = chunk.get("error")
            said = {"type": "api_error", "message": str(error)} if error is not None else {}
            out.append(UpstreamError(error if isinstance(error, Mapping) else said))
        if text:
            out.append(Text(text))
        if self.engine.options.stream_args:
            out += self._forming.read()
        return out

    def _pass(self, chunk: Mapping[str, Any], kind: object) -> list[Event]:
        engine = self.engine
        if kind == "message_start":
            message = chunk.get("message")
            if isinstance(message, Mapping):
                engine.head = Native(WIRE, dict(message))
                usage = message.get("usage")
                if isinstance(usage, Mapping):
                    self._usage(usage)
            return [Native(WIRE, dict(chunk))]
        if kind == "message_delta":
            delta = chunk.get("delta")
            if isinstance(delta, Mapping):
                reason = delta.get("stop_reason")
                if isinstance(reason, str):
                    self.finish_as(reason)
                engine.stop_sequence = delta.get("stop_sequence")
            usage = chunk.get("usage")
            if isinstance(usage, Mapping):
                self._usage(usage)
                self.delta_usage.update(usage)
            return []
        index = chunk.get("index")
        if not isinstance(index, int):
            return []
        if kind == "content_block_start":
            block = chunk.get("content_block")
            block_type = block.get("type") if isinstance(block, Mapping) else None
            if block_type not in _GATED_BLOCKS:
                self._passed.add(index)
                return [Native(WIRE, chunk)]
            if engine.options.stream_args and block_type == "tool_use" and self._owned(block):
                self._streamed.add(index)
                return [StreamedArgs(WIRE, index, chunk)]
            return []
        if kind not in ("content_block_delta", "content_block_stop"):
            return []
        if index in self._passed:
            delta = chunk.get("delta")
            thinking = delta.get("thinking") if isinstance(delta, Mapping) else None
            return [Native(WIRE, chunk, thinking if isinstance(thinking, str) else "")]
        if index in self._streamed:
            return [StreamedArgs(WIRE, index, chunk)]
        return []

    def _owned(self, block: Any) -> bool:
        return isinstance(block, Mapping) and self.engine.driver.owns(block.get("name"))

    def _usage(self, usage: Mapping[str, Any]) -> None:
        self.usage.update(usage)
        got = self.usage
        self.engine.usage = Usage(
            tokens(got.get("input_tokens")), tokens(got.get("output_tokens")), WIRE, dict(got)
        )

    def whole(self, response: object) -> list[Any] | None:
        """A stream=false message as the events that stream it (None: not a message)."""
        if not isinstance(response, Mapping) or response.get("type") != "message":
            return None
        return _events_of(response)


def message_start(request: Mapping[str, Any], head: Native | None) -> dict[str, Any]:
    """A message_start for a stream whose upstream sent none (or sent another wire)."""
    model = head.payload.get("model") if head is not None else None
    message = {
        "id": core.fresh_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model or request.get("model", ""),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    return {"type": "message_start", "message": message}


class MessagesWriter(Writer):
    """Writes Anthropic Messages events for a client (see the module)."""

    wire = WIRE
    call_end, plain_end = "tool_use", "end_turn"
    text_id_prefix = "toolu_"
    kinds: ClassVar[Mapping[str, str]] = {
        "length": "max_tokens",
        "refusal": "refusal",
        "content_filter": "refusal",
        "stop_sequence": "stop_sequence",
    }

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self._started = False
        self._pings: list[dict[str, Any]] = []
        """Pings that came before any message_start: written right after it."""
        self._next = 0
        """The next content-block index of the client's message."""
        self._open: tuple[str, int] | None = None
        """The block this writer opened and has not closed: its type and its index."""
        self._delta_head: tuple[object, str] = (None, "")
        """A text delta's bytes up to its text, for the open block given."""
        self.splitter = ThinkSplitter() if engine.options.move_reasoning else None
        self._given: dict[int, int] = {}
        """Upstream block index -> the client's, for blocks forwarded as they come."""
        self._formed: dict[TextRef, tuple[int, list[str]]] = {}
        """Text calls whose tool_use block streams as they form: its index, the text sent."""
        self._held: dict[int, HeldClose] = {}
        """Every tool_use block streamed before its verdict, by the client's index: its
        input, the close held until the gate accepts the call. Each block stays open until
        :meth:`final`, whose verdict closes it."""

    @property
    def blocks(self) -> int:
        """How many content blocks the client's message has so far."""
        return self._next

    def write(self, events: Sequence[Event]) -> list[dict[str, Any]]:
        """Forwarded events renumbered, released text in text blocks."""
        out: list[dict[str, Any]] = []
        if not self._started and self.engine.reader.wire != WIRE and events:
            out += self._start()
        for event in events:
            if type(event) is Text:
                out += self._released(event.text) if event.text else []
            elif type(event) is Native:
                out += self._native(event)
            elif type(event) is StreamedArgs and event.wire == WIRE:
                out += self._streamed_event(event)
            elif type(event) is FormingArgs:
                out += self._forming(event)
            elif type(event) is UpstreamError:
                out.append({"type": "error", "error": dict(event.error)})
        return out

    def _streamed_event(self, event: StreamedArgs) -> list[dict[str, Any]]:
        """A native tool_use block's event before its verdict.

        Its start is renumbered, its input sent less the close of its value (an input the
        start carries whole goes as the block's first delta); its stop, and any delta that
        is not input text, wait: the block stays open until :meth:`final`.
        """
        chunk, slot = event.payload, event.slot
        if chunk.get("type") == "content_block_start":
            block = chunk.get("content_block")
            given = block.get("input") if isinstance(block, Mapping) else None
            if given:  # the start carries the input whole (a call made by code execution)
                chunk = {**chunk, "content_block": {**block, "input": {}}}
            out = self._renumbered(chunk)
            index = self._given[slot]
            held = self._held[index] = HeldClose()
            sent = held.send(json.dumps(given, ensure_ascii=False)) if given else ""
            return [*out, _input_delta(index, sent)] if sent else out
        delta = chunk.get("delta")
        if chunk.get("type") != "content_block_delta" or not isinstance(delta, Mapping):
            return []
        text = delta.get("partial_json")
        if delta.get("type") != "input_json_delta" or type(text) is not str:
            return []
        index = self._given[slot]
        sent = self._held[index].send(text)
        return [_input_delta(index, sent)] if sent else []

    def _forming(self, event: FormingArgs) -> list[dict[str, Any]]:
        """A text call's new argument text in its tool_use block (opened by its first).

        The block stays open until :meth:`final` whatever comes after it (text after the
        call opens a block of its own); its input's close waits for the gate's acceptance.
        """
        out: list[dict[str, Any]] = []
        ref = event.ref
        formed = self._formed.get(ref)
        if formed is None:
            out += [*self._unstarted(), *self._close_text()]
            formed = self._formed[ref] = (self._next, [])
            self._held[self._next] = HeldClose()
            self._next += 1
            call_id = self.engine.text_call_id(ref)
            block = {"type": "tool_use", "id": call_id, "name": event.name}
            start = {"type": "content_block_start", "index": formed[0]}
            out.append({**start, "content_block": {**block, "input": {}}})
        sent = self._held[formed[0]].send(event.text)
        formed[1].append(sent)
        return [*out, _input_delta(formed[0], sent)] if sent else out

    def echoes(self, chunk: Mapping[str, Any]) -> str | None:
        """The text of an upstream text delta this writer sends back as it came.

        On one wire, with the writer's text block open at the upstream block's own index
        and neither reasoning moved nor arguments streamed, the reader reads such a delta
        as its text alone and this writer writes the text released as that same event.
        """
        opened = self._open
        if opened is None or opened[0] != "text" or self.splitter is not None:
            return None
        engine = self.engine
        if engine.options.stream_args or engine.reader.wire != WIRE:
            return None
        index, delta = chunk.get("index"), chunk.get("delta")
        if (
            len(chunk) != 3
            or chunk.get("type") != "content_block_delta"
            or type(index) is not int
            or index != opened[1]
            or index in self._given
            or type(delta) is not dict
            or len(delta) != 2
            or delta.get("type") != "text_delta"
        ):
            return None
        text = delta.get("text")
        return text if type(text) is str and text else None

    def play(self, events: Sequence[Event]) -> bytes:
        """:meth:`write`'s bytes; released text in the open text block is written directly."""
        if len(events) == 1 and type(events[0]) is Text:
            return self.play_text(events[0].text)
        return super().play(events)

    def play_text(self, text: str) -> bytes:
        """:meth:`play` of one released text: in the open text block, written directly.

        '' (text held in an open call block) writes nothing once the message has started.
        """
        if not text:
            return b"" if self._started else super().play([Text(text)])
        opened = self._open
        if opened is not None and self.splitter is None and opened[0] == "text":
            head = self._delta_head
            if head[0] is not opened:
                head = self._delta_head = (opened, f"{_BLOCK_DELTA}{opened[1]}{_TEXT_DELTA}")
            try:
                return f"{head[1]}{_string(text)}}}}}\n\n".encode()
            except UnicodeEncodeError:  # a lone surrogate: the escaped form of the general path
                pass
        return super().play([Text(text)])

    def _start(self, given: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The message_start (``given``, the upstream's, or one made up), then held pings."""
        self._started = True
        pings, self._pings = self._pings, []
        return [given or message_start(self.engine.client_request, self.engine.head), *pings]

    def _unstarted(self) -> list[dict[str, Any]]:
        """A message_start before the first block when none was sent yet.

        The upstream's may have been unreadable: no client sees a block outside a message.
        """
        return [] if self._started else self._start()

    def _native(self, event: Native) -> list[dict[str, Any]]:
        if event.wire != WIRE:
            return self._text(event.reasoning, "thinking") if event.reasoning else []
        chunk = event.payload
        kind = chunk.get("type")
        if kind == "message_start":
            return [] if self._started else self._start(dict(chunk))
        if kind == "ping" and not self._started:
            self._pings.append(dict(chunk))
            return []
        if kind == "ping":
            return [chunk]
        return self._renumbered(chunk)

    def _renumbered(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        index = chunk["index"]
        if chunk.get("type") == "content_block_start":
            out = [*self._unstarted(), *self._close_text()]
            self._given[index] = self._next
            self._next += 1
            return [*out, {**chunk, "index": self._given[index]}]
        mine = self._given.get(index)
        return [] if mine is None else [{**chunk, "index": mine}]

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
            out += self._unstarted()
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
        """Close the block this writer opened, if one is open."""
        if self._open is None:
            return []
        index = self._open[1]
        self._open = None
        return [{"type": "content_block_stop", "index": index}]

    def arguments_shown(self) -> bool:
        """Whether a native call's or a forming text call's deltas were sent."""
        return bool(self._held)

    def stranded(self) -> bool:
        """Whether a call shown as it formed is not among the calls released beside others.

        The message a client rebuilds keeps every tool_use block it got, and the anthropic
        Python SDK reads a block's input from its partial JSON: such a turn sends no call.
        (A native call is refused only with its whole turn, by the gate's rule.)
        """
        calls = self.engine.calls
        held = {ref: self._held[index] for ref, (index, _) in self._formed.items()}
        return bool(calls) and bool(stranded_refs(self._formed, calls, 1, held))

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
        engine = self.engine
        out: list[dict[str, Any]] = []
        stranded = self.stranded()
        finished = self._end_shown([] if stranded else engine.calls, out)
        notice = engine.notice()
        if stranded:  # the client's message keeps the block it got: no call of the turn goes
            notice = f"{notice}\n\n{STRANDED}" if notice else STRANDED
        if notice:
            out += self._text(notice)
        out += self._close_text()
        for call in [] if stranded else engine.calls:
            if call not in finished:
                out += self._tool_use(call)
        if not self._started:
            out[:0] = self._start()
        if engine.broken is not None:  # the turn ends in error, as Anthropic ends one
            error = {"type": "api_error", "message": notices.broken_line(engine.broken)}
            return [*out, {"type": "error", "error": error, "callgate": engine.annotation()}]
        reason = self.plain_end if stranded else self.finish_reason()
        stop = {"stop_reason": reason, "stop_sequence": engine.stop_sequence}
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": stop,
            "usage": self._usage(),
            "callgate": engine.annotation(),
        }
        out += [delta, {"type": "message_stop"}]
        return out

    def _end_shown(self, calls: Sequence[Call], out: list[dict[str, Any]]) -> list[Call]:
        """Close every block shown before its verdict; the calls of ``calls`` so finished.

        An accepted call's block gets the rest of its input (the close held back, or what
        the arguments add to the text sent), then its stop; any other block is stopped with
        the close still held, so its input never parses whole (an open brace when none of
        it was sent: a client may read a blank input as an empty object).
        """
        rests: dict[int, str] = {}
        finished: list[Call] = []
        for call in calls:
            slot = call.slot
            if isinstance(slot, TextRef) and slot in self._formed:
                index, sent = self._formed[slot]
                rest = remainder(call.arguments, sent, self._held[index])
            elif isinstance(slot, NativeRef) and self._given.get(slot.index) in self._held:
                index = self._given[slot.index]
                rest = self._held[index].rest()
            else:
                continue  # not shown before its verdict
            if rest is not None:
                rests[index] = rest
                finished.append(call)
        for index, held in self._held.items():
            rest = rests.get(index)
            if rest is None and held.blank:
                rest = "{"
            if rest:
                out.append(_input_delta(index, rest))
            out.append({"type": "content_block_stop", "index": index})
        return finished

    def _usage(self) -> dict[str, Any]:
        reader = self.engine.reader
        if isinstance(reader, MessagesReader):
            return reader.delta_usage or {"output_tokens": 0}
        usage: Usage | None = self.engine.usage
        if usage is None:
            return {"input_tokens": 0, "output_tokens": 0}
        return {"input_tokens": usage.input_tokens or 0, "output_tokens": usage.output_tokens or 0}

    def _tool_use(self, call: Call) -> list[dict[str, Any]]:
        index = self._next
        self._next += 1
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": call.arguments}
        return [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        """One event, named by its type as Anthropic's stream names them."""
        return encode(chunk, str(chunk.get("type", "message")))

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false message made of the gated events (this writer's own output)."""
        body: dict[str, Any] = {
            k: v for k, v in (response or {}).items() if k not in ("content", "stop_reason")
        }
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, list[str]] = {}
        for event in chunks:
            kind = event.get("type")
            if kind == "message_start" and response is None:
                body.update(event["message"])
            elif kind == "content_block_start":
                blocks[event["index"]] = dict(event["content_block"])
            elif kind == "content_block_delta":
                _delta_into(blocks[event["index"]], event["delta"], partial, event["index"])
            elif kind == "message_delta":
                body["stop_reason"] = event["delta"]["stop_reason"]
                body["stop_sequence"] = event["delta"].get("stop_sequence")
                body["callgate"] = event.get("callgate")
                if response is None:
                    body["usage"] = {**body.get("usage", {}), **event.get("usage", {})}
        body.setdefault("type", "message")
        body.setdefault("role", "assistant")
        for index, parts in partial.items():
            blocks[index]["input"] = json.loads("".join(parts) or "{}")
        body["content"] = [blocks[k] for k in sorted(blocks)]
        return body


def _input_delta(index: int, text: str) -> dict[str, Any]:
    """A tool_use block's ``input_json_delta`` of ``text``."""
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _delta_into(
    block: dict[str, Any], delta: Mapping[str, Any], partial: dict[int, list[str]], index: int
) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = _str(block.get("text")) + _str(delta.get("text"))
    elif kind == "input_json_delta":
        partial.setdefault(index, []).append(delta["partial_json"])
    elif kind == "thinking_delta":
        block["thinking"] = _str(block.get("thinking")) + _str(delta.get("thinking"))
    elif kind == "signature_delta":
        block["signature"] = delta["signature"]


def _str(value: object) -> str:
    """A block's text field as text: a null (or any non-string) an upstream sent is ''."""
    return value if isinstance(value, str) else ""


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
