"""The Chat Completions wire: its upstream chunks read, and its client chunks written.

:class:`ChatReader` plays ``chat.completion.chunk`` s through the gate: the delta's text
goes to the display, its calls to the gate, every other delta field (``reasoning_content``,
``refusal``, ...) is forwarded as it came. :class:`ChatWriter` writes the released text as
``content`` deltas, the accepted calls as native ``tool_calls`` at the end, and one final
chunk with the ``finish_reason`` (``tool_calls`` only when calls were sent) and a
``callgate`` field; the stream ends with ``[DONE]``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeGuard

from callgate.gate.turn import NativeRef, TextRef
from callgate.proxy import core
from callgate.proxy.core import ThinkSplitter
from callgate.proxy.sse import DONE_EVENT
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
from callgate.strategies.openai import OPENAI

__all__ = ["ChatReader", "ChatWriter"]

WIRE = "openai"
_DELTA_GATED = frozenset({"content", "tool_calls", "function_call"})
"""Delta fields the engine rewrites; every other field of a delta is forwarded as it came."""
_REASONING = ("reasoning_content", "reasoning")
"""Delta fields of a provider's reasoning channel (DeepSeek's, vLLM's)."""
_ENVELOPE = ("id", "created", "model", "system_fingerprint")
"""Fields of the upstream's first chunk that every chunk sent carries."""


class ChatReader(Reader):
    """Reads an upstream's Chat Completions chunks (see the module)."""

    wire = WIRE
    finishes: ClassVar[Mapping[str, str]] = {
        "function_call": "tool_calls",
        **dict.fromkeys(OPENAI.terminal.length, "length"),
        **dict.fromkeys(OPENAI.terminal.filtered, "content_filter"),
    }
    """The cuts are the wire record's (:data:`~callgate.strategies.openai.OPENAI`)."""
    shaped = True
    """:meth:`plain` asks the chunk, and of the turn only what stays once set (its head)."""

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self._streamed: set[int] = set()
        """Native slots whose deltas are forwarded (``stream_args``)."""
        self._forming = FormingReader(engine)

    def read(self, chunk: object) -> list[Event]:
        """One chunk: its kept delta fields, its streamed arguments, its released text."""
        engine = self.engine
        choice: Mapping[str, Any] = _NONE
        error: object = None
        if isinstance(chunk, dict):
            if engine.head is None:
                engine.head = Native(WIRE, {k: chunk[k] for k in _ENVELOPE if k in chunk})
            usage = chunk.get("usage")
            choices = chunk.get("choices")
            if isinstance(choices, list) and choices and _is_mapping(choices[0]):
                choice = choices[0]
            if usage is not None:
                engine.usage = _usage(usage)
                engine.usage_alone = engine.usage_alone or not choice
            reason = choice.get("finish_reason")
            if reason is not None and isinstance(reason, str):
                self.finish_as(reason)
            error = chunk.get("error")
        text = engine.step(chunk)
        out: list[Event] = []
        if text is not None:
            stream_args = engine.options.stream_args
            delta = choice.get("delta")
            if _is_mapping(delta):
                if not delta.keys() <= _DELTA_GATED:
                    kept = {
                        k: v for k, v in delta.items() if k not in _DELTA_GATED and v is not None
                    }
                    if kept:
                        out.append(Native(WIRE, kept, _reasoning(kept)))
                if stream_args:
                    out += self._stream_args(delta.get("tool_calls"))
            # even empty: a live chunk (the first carries the role)
            out.append(Text(text) if text else _NO_TEXT)
            if stream_args:
                out += self._forming.read()
        if error is not None and isinstance(error, Mapping):
            out.append(UpstreamError(error))
        return out

    def plain(self, chunk: dict[str, Any]) -> str | None:
        """The content of a chunk that carries nothing :meth:`read` records but its text.

        One choice at index 0 with no finish reason and a delta of ``content`` alone, no
        usage and no error, once the turn's head is known and no arguments are streamed.
        """
        engine = self.engine
        if engine.head is None or engine.options.stream_args:
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return None
        index, delta = choice.get("index"), choice.get("delta")
        if type(index) is not int or index != 0 or type(delta) is not dict or len(delta) != 1:
            return None
        text = delta.get("content")
        if (
            type(text) is not str
            or chunk.get("usage") is not None
            or chunk.get("error") is not None
        ):
            return None
        return text

    def _stream_args(self, calls: object) -> list[Event]:
        """Native argument deltas of a declared tool's calls, as they come."""
        if not isinstance(calls, list):
            return []
        out: list[Event] = []
        for entry in calls:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("index"), int):
                continue
            index = entry["index"]
            function = entry.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str) and name and index not in self._streamed:
                if not self.engine.driver.owns(name):
                    continue
                self._streamed.add(index)
            if index in self._streamed:
                out.append(StreamedArgs(WIRE, index, copy.deepcopy(dict(entry))))
        return out

    def whole(self, response: object) -> list[Any] | None:
        """A ``chat.completion`` as the one chunk that streams it (its message as the delta)."""
        if not isinstance(response, Mapping):
            return None
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        if not isinstance(choice, Mapping):
            choice = {}
        message = choice.get("message")
        delta: dict[str, Any] = dict(message) if isinstance(message, Mapping) else {}
        delta.setdefault("role", "assistant")
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [
                {**c, "index": c.get("index", n)} if isinstance(c, Mapping) else c
                for n, c in enumerate(calls)
            ]
        chunk = {
            **{k: v for k, v in response.items() if k not in ("choices", "object")},
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}],
        }
        return [chunk]


_NONE: Mapping[str, Any] = {}
_NO_TEXT = Text("")
"""One empty text piece for every chunk that released none (pieces are frozen)."""


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, a plain dict told without the ABC's check."""
    return type(value) is dict or isinstance(value, Mapping)


def _usage(raw: object) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage(None, None, WIRE, raw)
    return Usage(tokens(raw.get("prompt_tokens")), tokens(raw.get("completion_tokens")), WIRE, raw)


def _reasoning(kept: Mapping[str, Any]) -> str:
    return "".join(v for k in _REASONING if isinstance(v := kept.get(k), str))


def usage_object(usage: Usage) -> Any:
    """The usage as Chat Completions writes it (the upstream's own when it came on this wire)."""
    if usage.wire == WIRE:
        return usage.raw
    given = usage.input_tokens or 0, usage.output_tokens or 0
    return {"prompt_tokens": given[0], "completion_tokens": given[1], "total_tokens": sum(given)}


_CONTENT_ONLY = frozenset({"content"})
_TAIL = b',"finish_reason":null}]}\n\n'
"""What follows the delta in a chunk that is not the last."""
_string = json.encoder.encode_basestring
"""A string as JSON without ASCII escapes (what ``json.dumps(s, ensure_ascii=False)`` writes)."""


def _frame(envelope: Mapping[str, Any]) -> bytes:
    """A chunk's event up to its delta (b"" when the envelope needs ASCII escapes)."""
    try:
        fixed = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return b""
    return b"data: " + fixed[:-1] + b',"choices":[{"index":0,"delta":'


class ChatWriter(Writer):
    """Writes Chat Completions chunks for a client (see the module)."""

    wire = WIRE
    done = DONE_EVENT
    call_end, plain_end = "tool_calls", "stop"
    kinds: ClassVar[Mapping[str, str]] = {
        "length": "length",
        "content_filter": "content_filter",
        "refusal": "content_filter",
    }
    shaped = True
    """:meth:`echoes` asks the chunk, and of the turn only what stays once set (the role sent,
    the envelope)."""

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self.envelope: dict[str, Any] = {}
        self._role_sent = False
        self._index = 0
        """The next ``tool_calls`` index of the client's message."""
        self._streamed: set[int] = set()
        """Native slots whose deltas were forwarded (``stream_args``)."""
        self._native_index: dict[object, int] = {}
        """The client's ``tool_calls`` index of each of them, by its slot."""
        self._held: dict[object, HeldClose] = {}
        """Each streamed call's argument text, its close held until the gate accepts it (a
        native call's by its slot, a text call's by its reference)."""
        self._formed: dict[TextRef, tuple[int, str, list[str]]] = {}
        """Text calls whose argument deltas were sent: their index, id and text sent."""
        self.splitter = ThinkSplitter() if engine.options.move_reasoning else None
        self._head: bytes | None = None
        self._echoing = False
        """Whether :meth:`echoes` may answer (the turn's role sent, nothing moved or streamed)."""
        """The encoded start of every plain chunk up to its delta (b"": not encodable so)."""

    # -- the stream -------------------------------------------------------------------

    def _delta(self, events: Sequence[Event]) -> tuple[dict[str, Any] | None, list[Any]]:
        """One upstream chunk's pieces as one delta, and the error objects after it."""
        delta: dict[str, Any] = {}
        errors: list[Any] = []
        text = ""
        for event in events:
            if type(event) is Text:
                text += event.text
            elif type(event) is Native:
                if event.wire == WIRE:
                    delta.update(event.payload)
                elif event.reasoning:
                    moved = delta.get("reasoning_content", "") + event.reasoning
                    delta["reasoning_content"] = moved
            elif type(event) is StreamedArgs:
                if event.wire == WIRE:
                    self._streamed.add(event.slot)
                    delta.setdefault("tool_calls", []).append(self._native_entry(event))
            elif type(event) is FormingArgs:
                entry = self._forming(event)
                if entry is not None:
                    delta.setdefault("tool_calls", []).append(entry)
            elif type(event) is UpstreamError:
                errors.append({"error": event.error})
        if errors and len(errors) == len(events):  # a chunk the gate could not read
            return None, errors
        self._text_into(delta, text)
        return self._ready(delta), errors

    def _native_entry(self, event: StreamedArgs) -> dict[str, Any]:
        """A native call's delta at the client's index for it (text calls take indices too)."""
        index = self._native_index.get(event.slot)
        if index is None:
            index = self._native_index[event.slot] = self._index
            self._index += 1
        entry = {**event.payload, "index": index}
        function = entry.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("arguments"), str):
            held = self._held.setdefault(event.slot, HeldClose())
            entry["function"] = {**function, "arguments": held.send(function["arguments"])}
        return entry

    def _forming(self, event: FormingArgs) -> dict[str, Any] | None:
        """A text call's new argument text as a ``tool_calls`` entry (the first names it).

        None: nothing of the text may go yet (all of it held with the close).
        """
        text = self._held.setdefault(event.ref, HeldClose()).send(event.text)
        formed = self._formed.get(event.ref)
        if formed is not None:
            formed[2].append(text)
            return {"index": formed[0], "function": {"arguments": text}} if text else None
        call_id = self.engine.text_call_id(event.ref)
        formed = self._formed[event.ref] = (self._index, call_id, [text])
        self._index += 1
        function = {"name": event.name, "arguments": text}
        return {"index": formed[0], "id": formed[1], "type": "function", "function": function}

    def write(self, events: Sequence[Event]) -> list[dict[str, Any]]:
        """A delta of the pieces (text as released, kept fields as they came), then any error."""
        if not events:
            return []
        delta, errors = self._delta(events)
        return ([] if delta is None else [self._chunk(delta)]) + errors

    def echoes(self, chunk: Mapping[str, Any]) -> str | None:
        """The content of a plain text chunk on this turn's envelope (see :class:`Writer`).

        Once the role was sent, with neither reasoning moved nor arguments streamed, the
        Chat reader reads such a chunk as its text alone and this writer writes the text
        released as that same chunk.
        """
        if not self._echoing:
            if not self._role_sent or self.splitter is not None:
                return None
            engine = self.engine
            if engine.options.stream_args or engine.reader.wire != WIRE:
                return None
            self._echoing = True
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if (
            type(choice) is not dict
            or len(choice) != 3
            or choice.get("finish_reason", 0) is not None
        ):
            return None
        index, delta = choice.get("index"), choice.get("delta")
        if type(index) is not int or index != 0 or type(delta) is not dict or len(delta) != 1:
            return None
        text = delta.get("content")
        envelope = self.envelope
        if (
            type(text) is not str
            or not text
            or len(chunk) != len(envelope) + 1
            or not envelope.items() <= chunk.items()
        ):
            return None
        return text

    def write_unchanged(
        self, events: Sequence[Event], chunk: Mapping[str, Any]
    ) -> list[dict[str, Any]] | None:
        """:meth:`write`'s chunks, or None when the chunk to send is the upstream's ``chunk``."""
        if not events:
            return []
        delta, errors = self._delta(events)
        if delta is None:
            return errors
        if not errors and self._as_sent(chunk, delta):
            return None
        return [self._chunk(delta), *errors]

    def play(self, events: Sequence[Event]) -> bytes:
        """:meth:`write`'s bytes, the chunk's fixed part encoded once per turn."""
        return self._played(events, None) or b""

    def play_text(self, text: str) -> bytes:
        """:meth:`play` of one released text, without building its event and delta first.

        Once the role was sent and no reasoning is split out, the text is the whole delta,
        which :meth:`_encoded` writes on the fixed part encoded once ('' writes nothing);
        the first text, or one a reasoning split reads, goes through :meth:`play`.
        """
        if self._role_sent and self.splitter is None:
            return self._encoded({"content": text}) if text else b""
        return self._played([Text(text)], None) or b""

    def text_frame(self) -> tuple[bytes, bytes] | None:
        """:meth:`play_text`'s bytes around the text's JSON string, once they stay fixed.

        Once the role was sent and no reasoning is split out (both stay so), a text is the
        whole delta, written on the chunk's fixed part encoded once; None before, or when
        that part needs ASCII escapes.
        """
        if not self._role_sent or self.splitter is not None:
            return None
        if self._head is None:
            self._head = _frame(self._envelope())
        if not self._head:
            return None
        return self._head + b'{"content":', b"}" + _TAIL

    def play_unchanged(self, events: Sequence[Event], chunk: Mapping[str, Any]) -> bytes | None:
        """:meth:`play`'s bytes, or None when the chunk to send is the upstream's ``chunk``."""
        return self._played(events, chunk)

    def _played(self, events: Sequence[Event], upstream: Mapping[str, Any] | None) -> bytes | None:
        if not events:
            return b""
        delta, errors = self._delta(events)
        if delta is None:
            return b"".join(self.encode(e) for e in errors)
        if not errors and upstream is not None and self._as_sent(upstream, delta):
            return None
        out = self._encoded(delta)
        return out + b"".join(self.encode(e) for e in errors) if errors else out

    def _as_sent(self, upstream: Mapping[str, Any], delta: dict[str, Any]) -> bool:
        """Whether the chunk sent for ``delta`` is ``upstream`` itself, equal as JSON.

        Its envelope, one choice at index 0 (an integer), ``delta`` and a null finish
        reason, and no other field.
        """
        envelope = self._envelope()
        choices = upstream.get("choices")
        return (
            len(upstream) == len(envelope) + 1
            and type(choices) is list
            and len(choices) == 1
            and choices[0] == {"index": 0, "delta": delta, "finish_reason": None}
            and type(choices[0]["index"]) is int
            and envelope.items() <= upstream.items()
        )

    def _text_into(self, delta: dict[str, Any], text: str) -> None:
        if self.splitter is not None and text:
            reasoning, text = self.splitter.feed(text)
            if reasoning:
                delta["reasoning_content"] = delta.get("reasoning_content", "") + reasoning
        if text:
            delta["content"] = text

    def _ready(self, delta: dict[str, Any]) -> dict[str, Any] | None:
        """The delta as sent: the first carries the role; an empty one is not sent (None)."""
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            if "content" not in delta and "tool_calls" not in delta:
                delta["content"] = ""
            self._role_sent = True
        elif not delta or delta.keys() == {"role"}:
            return None
        return delta

    def _emit(self, delta: dict[str, Any]) -> list[dict[str, Any]]:
        ready = self._ready(delta)
        return [] if ready is None else [self._chunk(ready)]

    def _encoded(self, delta: dict[str, Any]) -> bytes:
        """``encode(self._chunk(delta))``, with the chunk's fixed part encoded once."""
        if self._head is None:
            self._head = _frame(self._envelope())
        if self._head:
            try:
                if delta.keys() == _CONTENT_ONLY:
                    body = b'{"content":' + _string(delta["content"]).encode("utf-8") + b"}"
                else:
                    body = json.dumps(delta, ensure_ascii=False, separators=(",", ":")).encode(
                        "utf-8"
                    )
            except UnicodeEncodeError:  # a lone surrogate: the whole chunk is escaped
                pass
            else:
                return self._head + body + _TAIL
        return self.encode(self._chunk(delta))

    def _envelope(self) -> dict[str, Any]:
        """The fields every chunk sent carries: the upstream's first chunk's, else made up."""
        if not self.envelope:
            head = self.engine.head
            kept = dict(head.payload) if head is not None and head.wire == WIRE else {}
            if head is not None and head.wire != WIRE:
                kept = {"model": head.payload.get("model")}
            self.envelope = {
                "id": kept.pop("id", None) or core.fresh_id("chatcmpl-"),
                "object": "chat.completion.chunk",
                "created": kept.pop("created", None) or int(time.time()),
                "model": kept.pop("model", None) or self.engine.client_request.get("model", ""),
                **kept,
            }
        return self.envelope

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        body = self._envelope().copy()
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return body

    # -- the end ----------------------------------------------------------------------

    def arguments_shown(self) -> bool:
        """Whether a native call's or a forming text call's deltas were sent."""
        return bool(self._streamed or self._formed)

    def stranded(self) -> bool:
        """Whether a call shown as it formed is not among the calls released beside others."""
        calls = self.engine.calls
        return bool(calls) and bool(stranded_refs(self._formed, calls, 2, self._held))

    def flush(self, text: str) -> list[dict[str, Any]]:
        """The text released at the end, with the reasoning splitter's held tail."""
        delta: dict[str, Any] = {}
        self._text_into(delta, text)
        if self.splitter is not None:
            reasoning, rest = self.splitter.flush()
            if reasoning:
                delta["reasoning_content"] = delta.get("reasoning_content", "") + reasoning
            if rest:
                delta["content"] = delta.get("content", "") + rest
        return self._emit(delta)

    def final(self) -> list[dict[str, Any]]:
        """The calls, the notice, the final chunk, then usage if the upstream sent it alone.

        :meth:`flush` always comes first, and its chunk carries the role.
        """
        engine = self.engine
        out: list[dict[str, Any]] = []
        stranded = self.stranded()
        finished: set[int] = set()
        for call in [] if stranded else engine.calls:
            slot = call.slot
            if isinstance(slot, NativeRef) and slot.index in self._streamed:
                finished.add(slot.index)
                held = self._held.get(slot.index)
                tail = held.rest() if held is not None else ""
                if tail:  # its deltas were sent but for the close held back
                    index = self._native_index[slot.index]
                    closing = {"index": index, "function": {"arguments": tail}}
                    out += self._emit({"tool_calls": [closing]})
                continue
            formed = self._formed.get(call.slot) if isinstance(call.slot, TextRef) else None
            rest = (
                remainder(call.arguments, formed[2], self._held.get(call.slot))
                if formed is not None
                else None
            )
            if formed is not None and rest is not None:  # its deltas were sent: the rest
                if rest:
                    out += self._emit(
                        {"tool_calls": [{"index": formed[0], "function": {"arguments": rest}}]}
                    )
                continue
            entry = {
                "index": self._index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            self._index += 1
            out += self._emit({"tool_calls": [entry]})
        out += self._spoil(finished)
        notice = engine.notice()
        if stranded:  # a Chat message cannot drop an entry it got: no call of the turn goes
            notice = f"{notice}\n\n{STRANDED}" if notice else STRANDED
        if notice:
            out += self._emit({"content": notice})
        final = self._chunk({}, self.plain_end if stranded else self.finish_reason())
        final["callgate"] = engine.annotation()
        if engine.broken is not None:  # OpenRouter's mid-stream error: the SDKs raise it
            final["error"] = notices.stream_error(engine.broken)
        usage = engine.usage
        if usage is not None and not engine.usage_alone:
            final["usage"] = usage_object(usage)
        out.append(final)
        if usage is not None and engine.usage_alone:
            out.append({**self._chunk({}), "choices": [], "usage": usage_object(usage)})
        return out

    def _spoil(self, finished: set[int]) -> list[dict[str, Any]]:
        """An open brace for each streamed native call not ``finished`` whose text sent is blank.

        Its entry stays in the client's message, and a blank text reads as an empty object
        there (see :class:`~callgate.proxy.wires.forming.HeldClose`).
        """
        entries = []
        for slot in sorted(self._streamed - finished, key=self._native_index.__getitem__):
            held = self._held.get(slot)
            if held is None or held.blank:
                entries.append({"index": self._native_index[slot], "function": {"arguments": "{"}})
        return self._emit({"tool_calls": entries}) if entries else []

    # -- stream=false -----------------------------------------------------------------

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The ``chat.completion`` made of the gated ``chunks`` (this writer's own output)."""
        message: dict[str, Any] = {"role": "assistant", "content": None}
        content: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        finish: str | None = None
        note: Any = None
        usage: Any = None
        choices = response.get("choices") if response is not None else None
        first = choices[0] if isinstance(choices, list) and choices else {}
        original = first.get("message") if isinstance(first, Mapping) else None
        if isinstance(original, Mapping):
            message.update(
                {k: v for k, v in original.items() if k not in (*_DELTA_GATED, "reasoning_content")}
            )
        for chunk in chunks:
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                content.append(delta.get("content") or "")
                reasoning.append(delta.get("reasoning_content") or "")
                calls += [
                    {k: v for k, v in c.items() if k != "index"}
                    for c in delta.get("tool_calls") or ()
                ]
                finish = choice.get("finish_reason") or finish
            note = chunk.get("callgate", note)
            usage = chunk.get("usage", usage)
        if "".join(content):
            message["content"] = "".join(content)
        if "".join(reasoning):
            message["reasoning_content"] = "".join(reasoning)
        if calls:
            message["tool_calls"] = calls
        if response is not None:
            body = {k: v for k, v in response.items() if k != "choices"}
        else:
            body = {k: v for k, v in self._envelope().items() if k != "object"}
            body["object"] = "chat.completion"
            if usage is not None:
                body["usage"] = usage
        body["choices"] = [
            {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        ]
        body["callgate"] = note
        return body
