"""Ollama native ``/api/chat``: NDJSON stream lines into the stream=false chat response.

Wire: every line is ``{model, created_at, message: {role, content, thinking?,
tool_calls?}, done: false}``; the last line has ``done: true``, a ``done_reason``
(``stop``, ``length``, ...) and the counters (``total_duration``, ``eval_count``, ...).
A call arrives whole in ``message.tool_calls[]``: ``{function: {name, arguments,
index?}, id?}`` with ``arguments`` an object, never a string fragment; one line may hold
several calls. The slot key is the call's position in the turn (a running count over
every line): ``function.index`` is kept in the message as sent but is not the key,
because Ollama's parsers number calls differently (some leave every index at 0), and
whole calls never need demultiplexing. Calls carry no id (a newer server may send one;
it is kept). There is no per-call done; the turn done is the ``done: true`` line. Ollama
reports ``done_reason: "stop"`` also when the model called tools, so ``stop`` (or no
reason at all, from older servers) is the tool-call reason; ``length`` and every other
reason are not. A line of only ``{"error": "..."}`` is the provider's error inside the
stream (the server stops after it): one ``provider_error`` that fails the turn. Nothing
follows the done line: a line after it is a finding that blocks the turn and changes no
envelope field.

Because the arguments are objects, the strategy holds each call's object and reports it
to the gate once, at the turn done: ``fragment(key, json.dumps(arguments))`` for every
call, then ``turn_done``, which closes every slot. The assembled message is the
stream=false response: the envelope fields as the done line left them (its
``created_at``, ``done``, ``done_reason`` and the counters), and ``message`` with
``content`` and ``thinking`` joined (``thinking`` only if any streamed) and
``tool_calls`` with each ``arguments`` the checked object. ``thinking`` is the model's
reasoning channel: it stays in the message and is never display text. Every line
carries the envelope, so a call that a server's parser missed and passed through as
``content`` text is handed on to the text strategies (``leaks_into_text``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from callgate.strategies.base import (
    CallPairing,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    ToolResult,
    entry_forming,
    repaired_tool_calls,
    report_whole_arguments,
    whole_call,
)
from callgate.strategies.usage import count_at
from callgate.strategies.wire import Framing, SdkForm, Terminal, Wire, chat_tool_spec

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

_DISPLAY = "content"
_JOINED = ("content", "thinking")
_TOOL_REASONS = (None, "stop")


def _answerable_call(entry: dict[str, Any], pairing: CallPairing) -> dict[str, Any]:
    function = entry.get("function") or {}
    call = pairing.take(entry.get("id"), function.get("name"), function.get("arguments"))
    arguments = call.arguments if call.arguments is not None else {}
    return {**entry, "function": {**function, "name": call.name, "arguments": arguments}}


class _Call:
    """One tool call of the turn: the entry as sent, and its arguments object."""

    __slots__ = ("arguments", "entry", "function", "key")

    def __init__(self, key: int, entry: Mapping[str, Any], function: Mapping[str, Any]) -> None:
        self.key = key
        self.entry = {k: v for k, v in entry.items() if k != "function"}
        self.function = dict(function)
        self.arguments: Any = function.get("arguments")


class _Accumulator:
    """Native reassembly state for one turn; arguments reach the gate at the turn done."""

    __slots__ = ("calls", "ended", "envelope", "extra", "gate", "pieces", "reported", "role")

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.ended = False
        """The ``done: true`` line came: the envelope is final."""
        self.envelope: dict[str, Any] = {}
        self.role: Any = "assistant"
        self.pieces: dict[str, list[str]] = {field: [] for field in _JOINED}
        self.extra: dict[str, Any] = {}
        self.calls: list[_Call] = []
        self.reported: set[int] = set()


class OllamaStrategy(ExtractionStrategy):
    """/api/chat stream lines into the stream=false chat response."""

    name = "ollama"
    leaks_into_text = True
    per_call_done = False
    requires_id = False
    empty_arguments_object = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A chat stream line or chat response: a ``message`` and a ``done`` flag."""
        return "done" in shape and "message" in shape

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str:
        """Apply one line; report calls to the gate (arguments at the done); return text."""
        gate = acc.gate
        if "done" not in chunk or "message" not in chunk:
            gate.stray(chunk)
        if "error" in chunk and "done" not in chunk:
            gate.refuse(
                "provider_error", f"the provider reported an error: {chunk['error']!s:.160}"
            )
            return ""
        if acc.ended:
            return self._after_done(acc, chunk)
        for key, value in chunk.items():
            if key == "logprobs" and isinstance(value, list):
                acc.envelope.setdefault("logprobs", []).extend(value)
            else:
                acc.envelope[key] = value
        message = chunk.get("message")
        shown = ""
        if message is not None:
            if isinstance(message, Mapping):
                shown = self._message(acc, message)
            else:
                gate.refuse("malformed_chunk", f"message is not an object: {message!r:.60}")
        if chunk.get("done") is True:
            acc.ended = True
            gate.usage(count_at(chunk, "eval_count"))
            self._turn_done(acc, chunk.get("done_reason"))
        return shown

    def _after_done(self, acc: _Accumulator, chunk: Shape) -> str:
        """A line after the ``done: true`` line: a finding; the envelope stays the done line's.

        A second done line is the turn table's ``duplicate_terminal``, a call its
        ``delta_after_terminal``; any other line is a ``delta_after_terminal`` of its own.
        Each blocks the turn. Text the line carries is kept, as every wire keeps text
        that comes after its turn's end.
        """
        message = chunk.get("message")
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if chunk.get("done") is not True and not (isinstance(calls, list) and calls):
            acc.gate.refuse(
                "delta_after_terminal", f"a line after the done line: {_carried(message)}"
            )
        shown = ""
        if isinstance(message, Mapping):
            shown = self._message(acc, message)
        elif message is not None:
            acc.gate.refuse("malformed_chunk", f"message is not an object: {message!r:.60}")
        if chunk.get("done") is True:
            self._turn_done(acc, chunk.get("done_reason"))
        return shown

    def _message(self, acc: _Accumulator, message: Mapping[str, Any]) -> str:
        shown = ""
        for key, value in message.items():
            if value is None:
                continue
            if key in acc.pieces:
                if isinstance(value, str) and acc.gate.text(value):
                    acc.pieces[key].append(value)
                    if key == _DISPLAY:
                        shown += value
            elif key == "tool_calls":
                self._tool_calls(acc, value)
            elif key == "role":
                acc.role = value
            else:
                acc.extra[key] = value
        return shown

    @staticmethod
    def _tool_calls(acc: _Accumulator, calls: Any) -> None:
        gate = acc.gate
        if not isinstance(calls, list):
            gate.refuse("malformed_chunk", f"tool_calls is not a list: {calls!r:.60}")
            return
        for entry in calls:
            if not isinstance(entry, Mapping):
                gate.refuse(
                    "malformed_chunk", f"a tool_calls entry is not an object: {entry!r:.60}"
                )
                continue
            function = entry.get("function")
            if function is None:
                function = {}
            if not isinstance(function, Mapping):
                gate.refuse(
                    "malformed_chunk", f"a tool call's function is not an object: {function!r:.60}"
                )
                continue
            call = _Call(len(acc.calls), entry, function)
            acc.calls.append(call)
            gate.identity(call.key, entry.get("id"), function.get("name"))

    @staticmethod
    def _turn_done(acc: _Accumulator, reason: Any) -> None:
        gate = acc.gate
        for call in acc.calls:
            report_whole_arguments(gate, acc.reported, call.key, call.arguments, "arguments")
        gate.turn_done(reason in _TOOL_REASONS, reason)

    def whole_arguments(self, acc: _Accumulator, key: int) -> object:
        """Call ``key``'s arguments object, until the gate has them (at the turn's end)."""
        calls = acc.calls
        if not 0 <= key < len(calls) or key in acc.reported:
            return None
        return calls[key].arguments

    def is_done(self, chunk: Shape) -> bool:
        """The ``done: true`` line ends the stream."""
        return chunk.get("done") is True

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false chat response."""
        message: dict[str, Any] = {"role": acc.role, "content": "".join(acc.pieces["content"])}
        thinking = "".join(acc.pieces["thinking"])
        if thinking:
            message["thinking"] = thinking
        message.update(acc.extra)
        if acc.calls:
            message["tool_calls"] = [_call_entry(acc.gate, call) for call in acc.calls]
        response = dict(acc.envelope)
        response["message"] = message
        return response

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """Calls that have a name and object arguments (absent arguments: ``{}``)."""
        calls = []
        for position, entry in enumerate(_tool_calls(message)):
            function = entry.get("function") or {}
            arguments = function.get("arguments")
            call = whole_call(entry.get("id"), function.get("name"), arguments, position)
            if call is not None:
                calls.append(call)
        return calls

    def forming(self, message: Shape) -> Forming:
        """A call is coming once ``tool_calls`` has an entry (whole: named at once)."""
        return entry_forming(_tool_calls(message), _function_name)

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The response as its one done line: calls arrive whole, as received."""
        return [{**message, "done": True} if message.get("done") is None else dict(message)]

    def content_text(self, message: Shape) -> str:
        """The message ``content``, or empty."""
        content = _inner(message).get("content")
        return content if isinstance(content, str) else ""

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The chat response's message."""
        inner = message.get("message")
        return [dict(inner) if isinstance(inner, Mapping) else dict(message)]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``tool_calls`` entry with its call's name and object ``arguments``."""
        return repaired_tool_calls(history, calls, _answerable_call, drop_empty=False)

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``tool`` message per result, naming its tool in ``tool_name``.

        Ollama has no error flag: an error result is sent as its text. A call that came
        with an id gets it back as ``tool_call_id``.
        """
        messages = []
        for r in results:
            message: dict[str, Any] = {
                "role": "tool",
                "content": r.content,
                "tool_name": r.call.name,
            }
            if r.call.id is not None:
                message["tool_call_id"] = r.call.id
            messages.append(message)
        return messages


def _call_entry(gate: TurnGate, call: _Call) -> dict[str, Any]:
    """A call as the stream=false message holds it: arguments are the checked object."""
    slot = gate.slots.get(call.key)
    arguments = (
        slot.arguments if slot is not None and slot.arguments is not None else call.arguments
    )
    function = dict(call.function)
    if "arguments" in function or arguments:
        function["arguments"] = arguments
    return {"function": function, **call.entry}


def _carried(message: Any) -> str:
    """What a late line's message carries, for its finding."""
    if message is None:
        return "no message"
    if not isinstance(message, Mapping):
        return f"message {message!r:.40}"
    texts = [f"{key} {message[key]!r:.40}" for key in _JOINED if message.get(key)]
    return ", ".join(texts) or "nothing"


def _inner(message: Shape) -> Mapping[str, Any]:
    """The ``message`` of a chat response (or the message itself)."""
    inner = message.get("message")
    return inner if isinstance(inner, Mapping) else message


def _function_name(entry: Mapping[str, Any]) -> Any:
    function = entry.get("function")
    return function.get("name") if isinstance(function, Mapping) else None


def _tool_calls(message: Shape) -> list[Mapping[str, Any]]:
    """The tool call entries of a chat response, in order."""
    calls = _inner(message).get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, Mapping)]


OLLAMA = Wire(
    name="ollama",
    strategy=OllamaStrategy,
    recognition=6,
    terminal=Terminal(
        field="done_reason (on the line with done: true)",
        calls_end=frozenset(_TOOL_REASONS),
        length=frozenset({"length"}),
    ),
    tool_spec=chat_tool_spec,
    quirks=("thinking", "ids", "no_index"),
    sdk=SdkForm("ollama", "ollama:ChatResponse"),
    framing=Framing(events="lines"),
    systems=("ollama",),
)
"""Ollama's native chat: JSON lines, whole calls, no call ids by default."""
