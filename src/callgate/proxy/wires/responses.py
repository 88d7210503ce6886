"""The OpenAI Responses wire: its upstream events read, and its client events written.

:class:`ResponsesReader` plays the ``response.*`` events through the gate: message text
goes to the display, ``function_call`` items (and ``custom_tool_call`` items, which the
gate refuses) to the gate; every other output item (reasoning, a hosted tool's call) is
forwarded as it came. :class:`ResponsesWriter` gives the client ``response.created`` and
``response.in_progress``, released text in message items of its own numbering, forwarded
items renumbered, the accepted calls as ``function_call`` items at the end (arguments in
one delta), then ``response.completed`` (``response.incomplete`` for a cut turn,
``response.failed`` for a failed upstream) whose response holds the whole output, the
usage and a ``callgate`` field. Every event carries the writer's own ``sequence_number``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from callgate.gate.turn import NativeRef, TextRef
from callgate.proxy import core
from callgate.proxy.core import Call
from callgate.proxy.sse import encode
from callgate.proxy.wires import notices
from callgate.proxy.wires.base import Host, Reader, Writer
from callgate.proxy.wires.events import (
    Event,
    FormingArgs,
    Native,
    Text,
    UpstreamError,
    Usage,
    tokens,
)
from callgate.proxy.wires.forming import FormingReader, HeldClose, remainder
from callgate.strategies.responses import RESPONSES, ResponsesStrategy

__all__ = ["ResponsesReader", "ResponsesWriter"]

WIRE = "openai-responses"
_GATED_ITEMS = frozenset({"message", "function_call", "custom_tool_call"})
"""Output items the gate reads; every other item is forwarded as it comes."""
_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_REASONING_DELTAS = frozenset(
    {"response.reasoning_text.delta", "response.reasoning_summary_text.delta"}
)
_REPLAY = ResponsesStrategy()
_string = json.encoder.encode_basestring
_DELTA_TAIL = ',"logprobs":[]}\n\n'
_DELTA_HEAD = (
    "event: response.output_text.delta\n"
    'data: {"type":"response.output_text.delta","sequence_number":'
)
"""A string as JSON without ASCII escapes (what ``json.dumps(s, ensure_ascii=False)`` writes)."""


def _incomplete(reasons: frozenset[str]) -> list[str]:
    """The record's ``incomplete: <reason>`` spellings as the event's own reasons."""
    return [r.removeprefix("incomplete: ") for r in sorted(reasons)]


class ResponsesReader(Reader):
    """Reads an upstream's Responses events (see the module)."""

    wire = WIRE
    finishes: ClassVar[Mapping[str, str]] = {
        "completed": "stop",
        **dict.fromkeys(_incomplete(RESPONSES.terminal.length), "length"),
        **dict.fromkeys(_incomplete(RESPONSES.terminal.filtered), "content_filter"),
        "failed": "failed",
    }
    """The cuts are the wire record's (:data:`~callgate.strategies.responses.RESPONSES`)."""

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self._passed: set[int] = set()
        """Output indexes of the items forwarded as they come."""
        self.item_ids: dict[int, str] = {}
        """The item id (``fc_…``) of each function_call item, by output index."""
        self.failure: Mapping[str, Any] | None = None
        """The error of a ``response.failed`` ending."""
        self._forming = FormingReader(engine)

    def ends(self, chunk: object) -> bool:
        """``response.completed``, ``.incomplete`` and ``.failed`` end a Responses stream."""
        return isinstance(chunk, Mapping) and chunk.get("type") in (
            "response.completed",
            "response.incomplete",
            "response.failed",
        )

    def read(self, chunk: object) -> list[Event]:
        """One event: forwarded items as they came, message text as released, calls held."""
        out: list[Event] = []
        if isinstance(chunk, Mapping):
            chunk = _as_function_call(chunk)
            out += self._take(chunk)
        text = self.engine.step(chunk)
        if text:
            out.append(Text(text))
        if self.engine.options.stream_args:
            out += self._forming.read()
        return out

    def _take(self, chunk: Mapping[str, Any]) -> list[Event]:
        kind = chunk.get("type")
        engine = self.engine
        response = chunk.get("response")
        if kind in _LIFECYCLE and isinstance(response, Mapping):
            engine.head = Native(WIRE, {k: v for k, v in response.items() if k != "output"})
            return [Native(WIRE, chunk)]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self._ending(str(kind), response if isinstance(response, Mapping) else {})
            return []
        if kind == "error":
            error = chunk.get("error")
            fields = {k: v for k, v in chunk.items() if k not in ("type", "sequence_number")}
            return [UpstreamError(error if isinstance(error, Mapping) else fields)]
        index = chunk.get("output_index")
        if not isinstance(index, int):
            return []
        item = chunk.get("item")
        if kind == "response.output_item.added" and isinstance(item, Mapping):
            if item.get("type") not in _GATED_ITEMS:
                self._passed.add(index)
            elif item.get("type") == "function_call" and isinstance(item.get("id"), str):
                self.item_ids[index] = item["id"]
        if index not in self._passed:
            return []
        delta = chunk.get("delta") if kind in _REASONING_DELTAS else None
        return [Native(WIRE, chunk, delta if isinstance(delta, str) else "")]

    def _ending(self, kind: str, response: Mapping[str, Any]) -> None:
        engine = self.engine
        usage = response.get("usage")
        if isinstance(usage, Mapping):
            engine.usage = Usage(
                tokens(usage.get("input_tokens")), tokens(usage.get("output_tokens")), WIRE, usage
            )
        if kind == "response.failed":
            error = response.get("error")
            self.failure = error if isinstance(error, Mapping) else {"message": "failed"}
            self.finish_as("failed")
            return
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if kind == "response.incomplete":
            self.finish_as(str(reason or "max_output_tokens"))
        else:
            self.finish_as("completed")

    def whole(self, response: object) -> list[Any] | None:
        """A stream=false Response as the events that stream it (None: not a Response)."""
        if not isinstance(response, Mapping) or not isinstance(response.get("output"), list):
            return None
        return _REPLAY.replay(response)

    def repair_request(
        self, request: Mapping[str, Any], history: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The request with the turn's output items and their results after its input."""
        given = request.get("input")
        if isinstance(given, str):
            before: list[Any] = [{"role": "user", "content": given}]
        else:
            before = list(given) if isinstance(given, list) else []
        return {**request, "input": [*before, *history]}


class ResponsesWriter(Writer):
    """Writes Responses events for a client (see the module)."""

    wire = WIRE
    call_end, plain_end = "completed", "completed"
    kinds: ClassVar[Mapping[str, str]] = {
        "length": "max_output_tokens",
        "content_filter": "content_filter",
        "refusal": "content_filter",
    }

    def __init__(self, engine: Host) -> None:
        super().__init__(engine)
        self._seq = 0
        self._started = False
        self.output: list[dict[str, Any]] = []
        """The client's output items, in order (done ones complete, the open one as it grows)."""
        self._given: dict[int, int] = {}
        """Upstream output index -> the client's, for items forwarded as they come."""
        self._message: dict[str, Any] | None = None
        """The message item this writer opened and has not closed."""
        self._envelope: dict[str, Any] = {}
        self._texts: list[str] = []
        """The open message item's text, in pieces (joined when it closes)."""
        self._index = 0
        """The open message item's output index."""
        self._middle: str | None = None
        """The open message item's text delta between its number and its text (None: none open)."""
        self._formed: dict[TextRef, tuple[int, dict[str, Any], list[str]]] = {}
        """Text calls streamed as they form: their output index, item and text sent."""
        self._held: dict[TextRef, HeldClose] = {}
        """Each formed call's argument text, its close held until the gate accepts it."""
        self._thought: tuple[int, dict[str, Any], list[str]] | None = None
        """The open reasoning item (another wire's reasoning): its index, item and text."""

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def write(self, events: Sequence[Event]) -> list[dict[str, Any]]:
        """Lifecycle events, forwarded items renumbered, released text in a message item."""
        out: list[dict[str, Any]] = []
        for event in events:
            if type(event) is Native and event.wire == WIRE:
                out += self._native(event.payload)
                continue
            if not self._started and (type(event) is not Text or event.text):
                out += self._start()
            if type(event) is Text and event.text:
                out += self._text(event.text)
            elif type(event) is FormingArgs:
                out += self._forming(event)
            elif type(event) is Native and event.reasoning:
                out += self._reasoning(event.reasoning)
            elif type(event) is UpstreamError:
                out.append(self._event("error", **_error_fields(event.error)))
        return out

    def play(self, events: Sequence[Event]) -> bytes:
        """:meth:`write`'s bytes; released text in the open message item is written directly."""
        if len(events) == 1 and type(events[0]) is Text:
            return self.play_text(events[0].text)
        return super().play(events)

    def play_text(self, text: str) -> bytes:
        """:meth:`play` of one released text: in the open message item, written directly.

        '' (text held in an open call block) writes nothing in any state, as :meth:`write`.
        """
        if not text:
            return b""
        middle = self._middle
        if middle is not None:
            seq = self._seq
            try:
                out = f"{_DELTA_HEAD}{seq}{middle}{_string(text)}{_DELTA_TAIL}".encode()
            except UnicodeEncodeError:  # a lone surrogate: the escaped form of the general path
                pass
            else:
                self._texts.append(text)
                self._seq = seq + 1
                return out
        return super().play([Text(text)])

    def _response(self, status: str) -> dict[str, Any]:
        if not self._envelope:
            head = self.engine.head
            given = dict(head.payload) if head is not None and head.wire == WIRE else {}
            model = head.payload.get("model") if head is not None else None
            self._envelope = {
                "id": given.pop("id", None) or core.fresh_id("resp_"),
                "object": "response",
                "created_at": given.pop("created_at", None) or int(time.time()),
                "model": model or self.engine.client_request.get("model", ""),
                **given,
            }
        return {**self._envelope, "status": status, "output": list(self.output)}

    def _start(self) -> list[dict[str, Any]]:
        self._started = True
        response = self._response("in_progress")
        return [
            self._event("response.created", response=response),
            self._event("response.in_progress", response=response),
        ]

    def _native(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        kind = str(chunk.get("type"))
        fields = {k: v for k, v in chunk.items() if k not in ("type", "sequence_number")}
        if kind in _LIFECYCLE:
            return [] if self._started else self._start()
        out = [] if self._started else self._start()
        index = chunk["output_index"]
        if kind == "response.output_item.added":
            out += self._close_message()
            self._given[index] = len(self.output)
            self.output.append(dict(fields.get("item") or {}))
        mine = self._given.get(index)
        if mine is None:
            return out
        fields["output_index"] = mine
        item_id = self.output[mine].get("id")
        if item_id is not None and "item_id" in fields:
            fields["item_id"] = item_id
        if kind == "response.output_item.done" and isinstance(fields.get("item"), Mapping):
            # the item as it ended, under the id it was added with (some servers rotate it)
            done = {**fields["item"], **({"id": item_id} if item_id is not None else {})}
            self.output[mine] = fields["item"] = done
        return [*out, self._event(kind, **fields)]

    def _reasoning(self, text: str) -> list[dict[str, Any]]:
        """Another wire's reasoning as a ``reasoning`` item's ``reasoning_text``."""
        out = self._close_message()
        if self._thought is None:
            item = {"id": core.fresh_id("rs_"), "type": "reasoning", "summary": [], "content": []}
            self._thought = (len(self.output), item, [])
            self.output.append(item)
            out.append(
                self._event("response.output_item.added", output_index=self._thought[0], item=item)
            )
        index, item, texts = self._thought
        texts.append(text)
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        return [*out, self._event("response.reasoning_text.delta", **where, delta=text)]

    def _close_reasoning(self) -> list[dict[str, Any]]:
        if self._thought is None:
            return []
        index, item, texts = self._thought
        self._thought = None
        text = "".join(texts)
        self.output[index] = done = {**item, "content": [{"type": "reasoning_text", "text": text}]}
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        return [
            self._event("response.reasoning_text.done", **where, text=text),
            self._event("response.output_item.done", output_index=index, item=done),
        ]

    def _text(self, text: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self._close_reasoning()
        if self._message is None:
            self._message = {
                "id": core.fresh_id("msg_"),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            index = len(self.output)
            self.output.append(self._message)
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(
                self._event(
                    "response.output_item.added", output_index=index, item=dict(self._message)
                )
            )
            out.append(
                self._event(
                    "response.content_part.added",
                    item_id=self._message["id"],
                    output_index=index,
                    content_index=0,
                    part=part,
                )
            )
            self._message["content"] = [{**part}]
            self._texts = []
            self._index = index
            self._middle = (
                f',"item_id":{_string(self._message["id"])},"output_index":{index}'
                ',"content_index":0,"delta":'
            )
        self._texts.append(text)
        index = self._index
        out.append(
            self._event(
                "response.output_text.delta",
                item_id=self._message["id"],
                output_index=index,
                content_index=0,
                delta=text,
                logprobs=[],
            )
        )
        return out

    def _forming(self, event: FormingArgs) -> list[dict[str, Any]]:
        """A text call's new argument text in its function_call item (added by its first)."""
        out: list[dict[str, Any]] = []
        formed = self._formed.get(event.ref)
        if formed is None:
            out += self._close_message()
            item = {
                "id": core.fresh_id("fc_"),
                "type": "function_call",
                "status": "in_progress",
                "call_id": self.engine.text_call_id(event.ref),
                "name": event.name,
                "arguments": "",
            }
            formed = self._formed[event.ref] = (len(self.output), item, [])
            self.output.append(item)
            added = self._event("response.output_item.added", output_index=formed[0], item={**item})
            out.append(added)
        text = self._held.setdefault(event.ref, HeldClose()).send(event.text)
        if not text:
            return out
        formed[2].append(text)
        where = {"item_id": formed[1]["id"], "output_index": formed[0]}
        delta = self._event("response.function_call_arguments.delta", **where, delta=text)
        return [*out, delta]

    def _finish_formed(self, call: Call) -> list[dict[str, Any]] | None:
        """The end of an accepted text call streamed as it formed (None: not streamed so)."""
        slot = call.slot
        if not isinstance(slot, TextRef):
            return None
        formed = self._formed.pop(slot, None)
        if formed is None:
            return None
        rest = remainder(call.arguments, formed[2], self._held.get(slot))
        if rest is None:
            return None
        index, item, _ = formed
        item.update(status="completed", arguments=call.arguments)
        where = {"item_id": item["id"], "output_index": index}
        out = []
        if rest:
            out.append(self._event("response.function_call_arguments.delta", **where, delta=rest))
        return [
            *out,
            self._event("response.function_call_arguments.done", **where, arguments=call.arguments),
            self._event("response.output_item.done", output_index=index, item=dict(item)),
        ]

    def _withhold_formed(self) -> list[dict[str, Any]]:
        """End each text call streamed as it formed that the gate did not accept.

        Its item ends ``incomplete`` (a client's stream needs every item it was given
        done) and is left out of the Response's output.
        """
        out: list[dict[str, Any]] = []
        for index, item, sent in self._formed.values():
            item.update(status="incomplete", arguments="".join(sent))
            out.append(self._event("response.output_item.done", output_index=index, item={**item}))
        ended = [id(formed[1]) for formed in self._formed.values()]
        self.output = [item for item in self.output if id(item) not in ended]
        self._formed.clear()
        return out

    def _close_message(self) -> list[dict[str, Any]]:
        message = self._message
        if message is None:
            return []
        self._message = self._middle = None
        index = self._index
        part = message["content"][0]
        part["text"] = "".join(self._texts)
        message["status"] = "completed"
        where = {"item_id": message["id"], "output_index": index, "content_index": 0}
        return [
            self._event("response.output_text.done", **where, text=part["text"], logprobs=[]),
            self._event("response.content_part.done", **where, part=dict(part)),
            self._event("response.output_item.done", output_index=index, item=dict(message)),
        ]

    def arguments_shown(self) -> bool:
        """Whether a forming text call's deltas were sent (native calls wait for the verdict)."""
        return bool(self._formed)

    def flush(self, text: str) -> list[dict[str, Any]]:
        """The text released at the end, in the open message item."""
        return self.write([Text(text)]) if text else []

    def final(self) -> list[dict[str, Any]]:
        """The notice, the function_call items, then the Response's ending."""
        engine = self.engine
        out: list[dict[str, Any]] = [] if self._started else self._start()
        notice = engine.notice()
        if notice:
            out += self._text(notice)
        out += [*self._close_reasoning(), *self._close_message()]
        for call in engine.calls:
            finished = self._finish_formed(call)
            out += self._function_call(call) if finished is None else finished
        out += self._withhold_formed()
        status = self.finish_reason()
        reader = engine.reader
        failure = reader.failure if isinstance(reader, ResponsesReader) else None
        response = self._response("completed")
        response["usage"] = self._usage()
        response["callgate"] = engine.annotation()
        if engine.broken is not None:
            failure = {"code": "upstream_error", "message": notices.broken_line(engine.broken)}
        if failure is not None and not engine.calls:
            response.update(status="failed", error=dict(failure))
            return [*out, self._event("response.failed", response=response)]
        if status != "completed":
            response.update(status="incomplete", incomplete_details={"reason": status})
            return [*out, self._event("response.incomplete", response=response)]
        return [*out, self._event("response.completed", response=response)]

    def _function_call(self, call: Call) -> list[dict[str, Any]]:
        form = self.engine.forms.get(call.name)
        if form is not None:
            return self._declared_call(call, form)
        index = len(self.output)
        reader = self.engine.reader
        ids = reader.item_ids if isinstance(reader, ResponsesReader) else {}
        item_id = ids.get(call.slot.index) if isinstance(call.slot, NativeRef) else None
        item = {
            "id": item_id or core.fresh_id("fc_"),
            "type": "function_call",
            "status": "completed",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }
        self.output.append(item)
        where = {"item_id": item["id"], "output_index": index}
        return [
            self._event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            ),
            self._event("response.function_call_arguments.delta", **where, delta=call.arguments),
            self._event("response.function_call_arguments.done", **where, arguments=call.arguments),
            self._event("response.output_item.done", output_index=index, item=dict(item)),
        ]

    def _declared_call(self, call: Call, form: str) -> list[dict[str, Any]]:
        """A call of a tool declared as ``local_shell`` or ``custom``, as that form's item.

        Its function arguments, which the gate checked, are unwrapped into the item.
        """
        index = len(self.output)
        arguments = json.loads(call.arguments or "{}")
        item: dict[str, Any] = {"status": "completed", "call_id": call.id}
        if form == "local_shell":
            action = {"type": "exec", "env": {}, **arguments}
            item |= {"id": core.fresh_id("lsh_"), "type": "local_shell_call", "action": action}
        else:
            text = arguments.get("input")
            item |= {"id": core.fresh_id("ctc_"), "type": "custom_tool_call", "name": call.name}
            item["input"] = text if isinstance(text, str) else ""
        self.output.append(item)
        added = self._event(
            "response.output_item.added", output_index=index, item={**item, "status": "in_progress"}
        )
        return [added, self._event("response.output_item.done", output_index=index, item=item)]

    def _usage(self) -> Any:
        usage = self.engine.usage
        if usage is None:
            return None
        if usage.wire == WIRE:
            return usage.raw
        given = usage.input_tokens or 0, usage.output_tokens or 0
        return {"input_tokens": given[0], "output_tokens": given[1], "total_tokens": sum(given)}

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        """One event, named by its type as the Responses stream names them."""
        return encode(chunk, str(chunk.get("type", "message")))

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false Response: the one this writer's ending event carries."""
        ending: Mapping[str, Any] = next(
            (c["response"] for c in reversed(chunks) if isinstance(c.get("response"), Mapping)),
            {},
        )
        body = {**(response or {}), **ending}
        body.pop("sequence_number", None)
        return body


_CALL_ITEMS = {
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
}
"""Call items of tools that are not functions: the function name the gate checks them
under, and the field holding what they ask for."""


def _as_function_call(chunk: Mapping[str, Any]) -> Mapping[str, Any]:
    """An upstream's local_shell, shell or apply_patch call item as a ``function_call``.

    The gate then checks it like any call: it is never forwarded ungated.
    """
    item = chunk.get("item")
    if not isinstance(item, Mapping) or item.get("type") not in _CALL_ITEMS:
        return chunk
    name, field = _CALL_ITEMS[item["type"]]
    asked = item.get(field)
    if isinstance(asked, Mapping) and name == "local_shell":
        asked = {k: v for k, v in asked.items() if k != "type"}
    call = {
        "type": "function_call",
        "id": item.get("id"),
        "call_id": item.get("call_id") or item.get("id"),
        "name": name,
        "arguments": "" if asked is None else json.dumps(asked),
        "status": item.get("status"),
    }
    return {**chunk, "item": call}


def _error_fields(error: Mapping[str, Any]) -> dict[str, Any]:
    """An upstream error as the fields of a Responses ``error`` event.

    Its code, message and param at the top (the documented event) and the error object
    itself under ``error`` (what api.openai.com sends, and what the SDK raises from).
    """
    message = error.get("message")
    return {
        "code": error.get("code"),
        "message": message if isinstance(message, str) else "the upstream failed",
        "param": error.get("param"),
        "error": dict(error),
    }
