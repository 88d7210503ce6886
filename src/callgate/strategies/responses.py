"""OpenAI Responses API: typed ``response.*`` stream events into the stream=false Response.

Wire: ``response.created`` (and ``response.queued`` / ``response.in_progress``) carry the
response envelope. Every output item opens with ``response.output_item.added`` at its
``output_index``, which is the slot key. A ``function_call`` item brings its item id
(``fc_…``, kept in the item), its call id (``call_…``, the id a result must echo; required)
and its name, with ``arguments`` ``""``. Argument fragments are
``response.function_call_arguments.delta`` (``output_index``, ``item_id``, ``delta``).
``response.function_call_arguments.done`` restates the full arguments, and
``response.output_item.done`` brings the finished item (status ``completed``) with them
once more: both restatements must equal what the deltas built (else ``args_mismatch``).
The item's done is the per-call done; a done item whose status is ``incomplete`` does not
close its call. The turn ends with ``response.completed`` (a tool-call ending; it carries
the full response, whose function calls are checked against the stream as well),
``response.incomplete`` (not a tool-call ending: every call is ``wrong_terminal_reason``),
or ``response.failed`` / ``error`` (the turn is refused); a second ending is
``duplicate_terminal``.

Display text is ``response.output_text.delta``; refusals and reasoning stay in the message
and are not display text. The assembled message is the stream=false Response object: the
latest envelope the lifecycle events carried, with ``output`` rebuilt from the stream in
output_index order, each function call's ``arguments`` a JSON string (the text the deltas
built). Only ``function_call`` items are gated: hosted tools (web search, file search,
MCP, ...) run on the server and stay in the message as they came; a ``custom_tool_call``
(free-text input that no schema can check) is refused rather than passed through unchecked.
Empty ``call_id`` and ``name`` strings count as absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from callgate.fsm.slot import SLOT
from callgate.gate.findings import Finding
from callgate.strategies._responses_items import (
    _Accumulator,
    _call_item,
    _describe,
    _function_call_items,
    _is_index,
    _item_events,
    _open_item,
    _output,
    _Part,
    _refuse_item,
    _text,
)
from callgate.strategies.base import (
    CallPairing,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    ToolResult,
    entry_forming,
)
from callgate.strategies.usage import count_at
from callgate.strategies.wire import Framing, SdkForm, Terminal, Wire

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

_PREFIX = "response."
_VALID = SLOT.tagged("valid")
"""Slot states whose call validated: the completed response may restate it."""
_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_ENDINGS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_TERMINAL = _ENDINGS | {"error"}
_TEXT_DELTAS: dict[str, tuple[str, str, str]] = {
    "response.output_text.delta": ("content", "content_index", "text"),
    "response.refusal.delta": ("content", "content_index", "refusal"),
    "response.reasoning_text.delta": ("content", "content_index", "text"),
    "response.reasoning_summary_text.delta": ("summary", "summary_index", "text"),
}
"""Text-bearing delta events: (item list, index field, text field of the part)."""
_PART_ADDED: dict[str, tuple[str, str]] = {
    "response.content_part.added": ("content", "content_index"),
    "response.reasoning_summary_part.added": ("summary", "summary_index"),
}
_DEFAULT_PART: dict[str, dict[str, Any]] = {
    "response.output_text.delta": {"type": "output_text", "annotations": []},
    "response.refusal.delta": {"type": "refusal"},
    "response.reasoning_text.delta": {"type": "reasoning_text"},
    "response.reasoning_summary_text.delta": {"type": "summary_text"},
}


class ResponsesStrategy(ExtractionStrategy):
    """Responses stream events into the stream=false Response object."""

    name = "openai-responses"
    leaks_into_text = True
    per_call_done = True
    requires_id = True
    empty_arguments_object = False
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A ``response.*`` or numbered ``error`` event, or a Response object."""
        kind = shape.get("type")
        if isinstance(kind, str) and kind.startswith(_PREFIX):
            return True
        if kind == "error" and "sequence_number" in shape:
            return True  # this API's error event; Anthropic's has no sequence number
        return shape.get("object") == "response"

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str:
        """Apply one event; report tool-call primitives to the gate; return new text."""
        kind = chunk.get("type")
        if not isinstance(kind, str):
            acc.gate.stray(chunk)
            acc.refuse("malformed_chunk", f"an event without a type: {dict(chunk)!r:.80}")
            return ""
        if kind == "response.function_call_arguments.delta":
            self._arguments_delta(acc, chunk)
            return ""
        if kind in _TEXT_DELTAS:
            return self._text_delta(acc, chunk, kind)
        ended = acc.ended
        if kind in _ENDINGS and ended is None:
            acc.ended = kind
        if kind == "response.output_item.added":
            self._item_added(acc, chunk)
        elif kind == "response.function_call_arguments.done":
            self._arguments_done(acc, chunk)
        elif kind == "response.output_item.done":
            self._item_done(acc, chunk)
        elif kind in _PART_ADDED:
            self._part_added(acc, chunk, kind)
        elif kind == "response.output_text.annotation.added":
            self._annotation(acc, chunk)
        elif kind in _LIFECYCLE:
            self._envelope(acc, chunk)
        elif kind in _ENDINGS and ended is not None:
            acc.refuse("duplicate_terminal", f"{kind} after {ended}")
        elif kind == "response.completed":
            response = self._envelope(acc, chunk)
            if response is not None:
                self._verify_output(acc, response.get("output"))
                acc.gate.usage(count_at(response, "usage", "output_tokens"))
            acc.gate.turn_done(True, "completed")
        elif kind == "response.incomplete":
            response = self._envelope(acc, chunk)
            details = (response or {}).get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, Mapping) else None
            acc.gate.usage(count_at(response, "usage", "output_tokens"))
            acc.gate.turn_done(False, f"incomplete: {reason}" if reason else "incomplete")
        elif kind == "response.failed":
            response = self._envelope(acc, chunk)
            error = (response or {}).get("error") or {}
            detail = _describe(error) if isinstance(error, Mapping) else repr(error)
            acc.refuse("provider_error", f"the response failed: {detail}")
        elif kind == "error":
            self._error(acc, chunk)
        elif kind == "response.custom_tool_call_input.delta":
            key = chunk.get("output_index")
            if type(key) is not int or key not in acc.items:
                acc.refuse(
                    "orphan_event", f"custom tool input for output item {key!r}, never added"
                )
        elif not kind.startswith(_PREFIX):
            acc.gate.stray(chunk)
        return ""

    @staticmethod
    def _error(acc: _Accumulator, chunk: Shape) -> None:
        """An ``error`` event (Anthropic's has no sequence number: another wire's, refused)."""
        acc.gate.stray(chunk)
        nested = chunk.get("error")
        error = nested if isinstance(nested, Mapping) else chunk
        acc.refuse("provider_error", f"the provider reported an error: {_describe(error)}")

    # -- function calls ---------------------------------------------------------------

    def _item_added(self, acc: _Accumulator, chunk: Shape) -> None:
        key, item = chunk.get("output_index"), chunk.get("item")
        if not _is_index(key) or not isinstance(item, Mapping):
            _refuse_item(acc, chunk, "added")
            return
        kind = item.get("type")
        if key in acc.items:
            if kind == "function_call" and key in acc.calls:
                acc.gate.identity(key, _text(acc, item, "call_id"), _text(acc, item, "name"))
                self._initial_arguments(acc, key, item)
            else:
                acc.refuse("malformed_chunk", f"output item {key} was added twice", key)
            return
        acc.items[key] = dict(item)
        item_id = item.get("id")
        if isinstance(item_id, str):
            owner = acc.item_ids.setdefault(item_id, key)
            if owner != key:
                acc.refuse(
                    "identity_collision",
                    f"item id {item_id!r} of output item {key} is already output item {owner}'s",
                    key,
                )
        if kind == "function_call":
            acc.calls.add(key)
            call_id = _text(acc, item, "call_id")
            if call_id is not None:
                acc.call_ids.setdefault(call_id, key)
            acc.gate.identity(key, call_id, _text(acc, item, "name"))
            self._initial_arguments(acc, key, item)
        elif kind == "custom_tool_call":
            acc.refuse(
                "malformed_chunk",
                f"output item {key} is a custom_tool_call ({item.get('name')!r}): its free-text "
                "input cannot be checked, so callgate does not pass it",
                key,
            )

    @staticmethod
    def _initial_arguments(acc: _Accumulator, key: int, item: Mapping[str, Any]) -> None:
        arguments = item.get("arguments")
        if isinstance(arguments, str):
            if arguments:
                acc.gate.fragment(key, arguments)
        elif arguments is not None:
            acc.refuse("malformed_chunk", f"function call {key}'s arguments are not a string", key)

    def _call_key(self, acc: _Accumulator, chunk: Shape, event: str) -> int | None:
        """The output index of a call event, after checking it names a function call item."""
        key = chunk.get("output_index")
        if not _is_index(key):
            acc.refuse("malformed_chunk", f"{event} has output_index {key!r}", key)
            return None
        item = acc.items.get(key)
        if item is None:
            return key
        if key not in acc.calls:
            acc.refuse(
                "malformed_chunk",
                f"{event} for output item {key}, a {item.get('type')!r} item",
                key,
            )
            return None
        item_id = chunk.get("item_id")
        if item_id is not None and item.get("id") is not None and item_id != item["id"]:
            acc.refuse(
                "identity_collision",
                f"{event} for item {item_id!r} at output index {key}, which is {item['id']!r}",
                key,
            )
            return None
        return key

    def _arguments_delta(self, acc: _Accumulator, chunk: Shape) -> None:
        key = chunk.get("output_index")
        item = acc.items.get(key) if type(key) is int else None
        if item is None or key not in acc.calls or chunk.get("item_id") != item.get("id"):
            key = self._call_key(acc, chunk, "function_call_arguments.delta")
            if key is None:
                return
        delta = chunk.get("delta")
        if not isinstance(delta, str):
            acc.refuse(
                "malformed_chunk", f"an arguments delta for output item {key} is not text", key
            )
            return
        acc.gate.fragment(key, delta)

    def _arguments_done(self, acc: _Accumulator, chunk: Shape) -> None:
        key = self._call_key(acc, chunk, "function_call_arguments.done")
        if key is None:
            return
        arguments = chunk.get("arguments")
        if key not in acc.calls:
            acc.refuse("orphan_event", f"arguments done for output item {key}, never added", key)
        elif not isinstance(arguments, str):
            acc.refuse("malformed_chunk", f"function call {key}'s done arguments are not text", key)
        else:
            self._restate(acc, key, arguments)

    def _item_done(self, acc: _Accumulator, chunk: Shape) -> None:
        key, item = chunk.get("output_index"), chunk.get("item")
        if not _is_index(key) or not isinstance(item, Mapping):
            _refuse_item(acc, chunk, "done")
            return
        is_call = item.get("type") == "function_call"
        if is_call != (key in acc.calls) and key in acc.items:
            acc.refuse("malformed_chunk", f"output item {key} changed its type when done", key)
            return
        if not is_call:
            acc.done[key] = dict(item)
            acc.items.setdefault(key, acc.done[key])
            return
        gate = acc.gate
        if key not in acc.calls:
            gate.close(key)
            return
        acc.done[key] = dict(item)
        call_id, name = _text(acc, item, "call_id"), _text(acc, item, "name")
        if call_id is not None:
            gate.identity(key, call_id, None)
        if name is not None:
            gate.identity(key, None, name)
        arguments = item.get("arguments")
        if isinstance(arguments, str):
            self._restate(acc, key, arguments)
        else:
            acc.refuse("malformed_chunk", f"function call {key} is done without its arguments", key)
        if item.get("status") != "incomplete":
            gate.close(key)

    @staticmethod
    def _restate(acc: _Accumulator, key: int, arguments: str) -> None:
        """The provider restated a call's full arguments: they must equal the deltas.

        A call that streamed no delta at all (LM Studio) has its arguments in the restatement.
        """
        slot = acc.gate.slots.get(key)
        if slot is not None and not slot.parts and arguments:
            acc.gate.fragment(key, arguments)
            return
        acc.gate.confirm(key, arguments)

    def _verify_output(self, acc: _Accumulator, output: Any) -> None:
        """The completed response's function calls must be the streamed ones, unchanged."""
        if not isinstance(output, list):
            return
        gate = acc.gate
        for item in output:
            if not isinstance(item, Mapping) or item.get("type") != "function_call":
                continue
            item_id, call_id = item.get("id"), item.get("call_id")
            key = acc.item_ids.get(item_id) if isinstance(item_id, str) else None
            if key is None and isinstance(call_id, str):
                key = acc.call_ids.get(call_id)
            if key is None or key not in acc.calls:
                acc.refuse(
                    "orphan_event",
                    f"the completed response lists function call {item.get('call_id')!r} "
                    f"({item.get('name')!r}) that never streamed",
                    item.get("call_id"),
                )
                continue
            slot = gate.slots.get(key)
            if slot is None or slot.state not in _VALID:
                continue
            call_id, name = item.get("call_id") or None, item.get("name") or None
            if call_id != slot.id or name != slot.name:
                acc.gate.identity(key, call_id, name)
            elif isinstance(item.get("arguments"), str):
                acc.gate.confirm(key, item["arguments"])

    # -- text, parts and the envelope -------------------------------------------------

    def _text_delta(self, acc: _Accumulator, chunk: Shape, kind: str) -> str:
        list_name, index_field, text_field = _TEXT_DELTAS[kind]
        key, index, delta = chunk.get("output_index"), chunk.get(index_field), chunk.get("delta")
        if type(key) is not int or key not in acc.items:
            acc.refuse("orphan_event", f"{kind} for output item {key!r}, never added", key)
            return ""
        if key in acc.calls or not _is_index(index) or not isinstance(delta, str):
            acc.refuse(
                "malformed_chunk", f"{kind} for output item {key} needs a text part and text", key
            )
            return ""
        parts = acc.parts.setdefault(key, {})
        part = parts.get((list_name, index))
        if part is None:
            part = parts[(list_name, index)] = _Part(dict(_DEFAULT_PART[kind]), text_field)
        if not acc.gate.text(delta):
            return ""
        part.texts.append(delta)
        return delta if kind == "response.output_text.delta" else ""

    @staticmethod
    def _part_added(acc: _Accumulator, chunk: Shape, kind: str) -> None:
        list_name, index_field = _PART_ADDED[kind]
        key, index, part = chunk.get("output_index"), chunk.get(index_field), chunk.get("part")
        if type(key) is not int or key not in acc.items:
            acc.refuse("orphan_event", f"{kind} for output item {key!r}, never added", key)
            return
        if not _is_index(index) or not isinstance(part, Mapping):
            acc.refuse("malformed_chunk", f"{kind} needs an integer {index_field} and a part", key)
            return
        field = "refusal" if part.get("type") == "refusal" else "text"
        acc.parts.setdefault(key, {}).setdefault((list_name, index), _Part(dict(part), field))

    @staticmethod
    def _annotation(acc: _Accumulator, chunk: Shape) -> None:
        key, index = chunk.get("output_index"), chunk.get("content_index")
        parts = acc.parts.get(key) if type(key) is int else None
        part = parts.get(("content", index)) if parts is not None and _is_index(index) else None
        if part is not None:
            if part.annotations is None:
                part.annotations = list(part.part.get("annotations") or ())
            part.annotations.append(chunk.get("annotation"))

    @staticmethod
    def _envelope(acc: _Accumulator, chunk: Shape) -> Mapping[str, Any] | None:
        response = chunk.get("response")
        if not isinstance(response, Mapping):
            acc.refuse("malformed_chunk", f"{chunk.get('type')} carries no response object")
            return None
        previous = acc.envelope.get("id")
        if previous is not None and response.get("id") not in (None, previous):
            acc.refuse(
                "identity_collision",
                f"the response id changed from {previous!r} to {response.get('id')!r}",
            )
        for field, value in response.items():
            if field != "output":
                acc.envelope[field] = value
        return response

    def is_done(self, chunk: Shape) -> bool:
        """``response.completed``, ``.incomplete``, ``.failed`` or ``error`` end the stream."""
        kind = chunk.get("type")
        return isinstance(kind, str) and kind in _TERMINAL

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false Response: the envelope, and every output item by output_index."""
        output = []
        for key in sorted(acc.items):
            if key in acc.calls:
                output.append(_call_item(acc, key))
            elif key in acc.done:
                output.append(acc.done[key])
            else:
                output.append(_open_item(acc, key))
        response = dict(acc.envelope)
        response["output"] = output
        return response

    # -- reading an assembled Response ------------------------------------------------

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """The ``function_call`` items whose arguments strictly parse to an object."""
        return [call for call, problem in _function_call_items(message) if problem is None]

    def unreadable(self, message: Shape) -> list[tuple[ExtractedCall, Finding]]:
        """``function_call`` items without a name or with unreadable arguments."""
        return [(c, p) for c, p in _function_call_items(message) if p is not None]

    def forming(self, message: Shape) -> Forming:
        """A call is coming once a ``function_call`` item was added; the last one names it."""
        calls = [item for item in _output(message) if item.get("type") == "function_call"]
        return entry_forming(calls, lambda item: item.get("name"))

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The events of a Response: created, each output item added, filled and done, the end.

        A ``function_call`` item is added with empty arguments, which follow as one delta
        (a string as received; anything else stays in the item and is refused as in a
        stream); message text streams as ``output_text.delta`` so text calls are read as
        in a stream; the done item is the item as given. The ending is the response's
        status: ``incomplete`` and ``failed`` end so, anything else completes.
        """
        envelope = {k: v for k, v in message.items() if k != "output"}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**envelope, "output": []}}
        ]
        for index, item in enumerate(_output(message)):
            events += _item_events(index, item)
        status = message.get("status")
        ending = {"incomplete": "response.incomplete", "failed": "response.failed"}
        events.append(
            {"type": ending.get(str(status), "response.completed"), "response": dict(message)}
        )
        return events

    def content_text(self, message: Shape) -> str:
        """The text of every ``output_text`` part of every message item, joined."""
        texts = []
        for item in _output(message):
            content = item.get("content") if item.get("type") == "message" else None
            for part in content if isinstance(content, list) else ():
                text = part.get("text") if isinstance(part, Mapping) else None
                if isinstance(text, str) and part.get("type") == "output_text":
                    texts.append(text)
        return "".join(texts)

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The Response's output items, which the next request takes as input items."""
        return [dict(item) for item in _output(message)]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``function_call`` item with its call's ``call_id`` and name.

        Unreadable arguments go back as ``{}``.
        """
        pairing = CallPairing(calls)
        return [_answerable_item(item, pairing) for item in history], pairing.placed

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``function_call_output`` input item per result, keyed by ``call_id``.

        The Responses API has no error flag on a result; an error travels as its output text.
        """
        return [
            {"type": "function_call_output", "call_id": r.call.id, "output": r.content}
            for r in results
        ]


def _answerable_item(item: dict[str, Any], pairing: CallPairing) -> dict[str, Any]:
    if item.get("type") != "function_call":
        return item
    call = pairing.take(item.get("call_id"), item.get("name"), None)
    arguments = item.get("arguments") if call.arguments is not None else "{}"
    return {**item, "call_id": call.id, "name": call.name, "arguments": arguments}


def _tool_spec(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool as the Responses API lists it: the function's fields at the top level."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": dict(schema),
    }


RESPONSES = Wire(
    name="openai-responses",
    strategy=ResponsesStrategy,
    recognition=1,
    terminal=Terminal(
        field="response.completed | response.incomplete (incomplete_details.reason)",
        calls_end=frozenset({"completed"}),
        length=frozenset({"incomplete: max_output_tokens"}),
        filtered=frozenset({"incomplete: content_filter"}),
    ),
    tool_spec=_tool_spec,
    quirks=("reasoning_item", "no_argument_deltas"),
    sdk=SdkForm("openai", "openai.types.responses:ResponseStreamEvent", construct=True),
    framing=Framing(named=True),
)
"""The Responses API: typed events keyed by ``output_index``."""
