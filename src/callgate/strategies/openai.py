"""OpenAI Chat Completions, and every server that speaks its chunk shape.

Wire: ``chat.completion.chunk`` objects; tool-call fragments sit in
``choices[0].delta.tool_calls[]``, keyed by ``index``; the id and name come once (usually
in the slot's first fragment), ``function.arguments`` are string fragments, and the only
done is the choice's ``finish_reason == "tool_calls"`` (no per-call done). The
assembled message is the stream=false ``{role, content, tool_calls}``, ``content`` null
when no text streamed (an empty string counts as none), each call's ``arguments`` a JSON
string. Other string fields of the delta (``refusal``, DeepSeek's ``reasoning_content``)
are kept in the message by name and are never display text.

A request with ``n > 1`` streams several choices, each chunk's choice naming its
``index``: each choice is assembled apart, with a gate of its own (a tool call's
``index`` counts within its choice); the buffer's gate and display are its chosen
choice's, and the message of several choices is the ``chat.completion`` of them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import evolve

from callgate.gate.findings import Finding
from callgate.strategies._openai_choice import (
    _Accumulator,
    _content,
    _describe,
    _failed,
    _message,
)
from callgate.strategies.base import (
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    Steady,
    ToolResult,
    entry_forming,
    function_call_entries,
    function_calls,
    not_text_arguments,
    read_function_calls,
)
from callgate.strategies.openai_fast import fast_add
from callgate.strategies.usage import count_at
from callgate.strategies.wire import Framing, SdkForm, Terminal, Wire, chat_tool_spec

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

_DISPLAY = "content"
_HEAD = ("id", "created", "model", "system_fingerprint", "service_tier")
"""The chunk fields an ``n > 1`` stream's ``chat.completion`` carries over, as first sent."""


class OpenAIStrategy(ExtractionStrategy):
    """Chat Completions chunks into the stream=false assistant message."""

    name = "openai"
    leaks_into_text = False
    per_call_done = False
    requires_id = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A completion chunk, an assistant message with ``tool_calls``, or an error frame.

        An error frame is ``{"error": {...}}`` alone, as Groq sends one mid-stream.
        """
        return (
            "choices" in shape
            or "tool_calls" in shape
            or (len(shape) == 1 and "error" in shape and isinstance(shape["error"], Mapping))
        )

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str:
        """Apply one chunk; report tool-call primitives to the gates; return new content.

        Each choice goes to its own accumulator and gate (``index`` scopes its tool-call
        indices); only the chosen choice's content is returned for display. An ``error``
        beside the choices (OpenRouter's mid-stream error) is the provider's, reported
        first; the chunk's choices are still read, so nothing that came is lost.
        """
        gate = acc.gate
        acc.ended = False
        error = chunk.get("error")
        if "choices" not in chunk:
            gate.stray(chunk)
            if isinstance(error, Mapping):
                _failed(acc, _describe(error))
                return ""
        elif error is not None:
            _failed(acc, _describe(error))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            gate.refuse("malformed_chunk", f"choices is not a list: {choices!r:.60}")
            return ""
        if not acc.head:
            acc.head.update((k, chunk[k]) for k in _HEAD if chunk.get(k) is not None)
        usage = chunk.get("usage")
        if usage is not None:
            acc.head["usage"] = usage
            if not acc.others:  # with several choices the count is theirs together
                gate.usage(count_at(usage, "completion_tokens"))
        shown = ""
        for choice in choices:
            index = choice.get("index", 0)
            if index == acc.chosen:
                shown += self._choice(acc, choice)
            elif type(index) is not int or index < 0:
                gate.refuse("malformed_chunk", f"a choice index is not a count: {index!r:.60}")
            elif index > gate.limits.max_slot_index:
                gate.refuse(
                    "limit_exceeded",
                    f"choice index {index} exceeds {gate.limits.max_slot_index}",
                )
            else:
                other = acc.other(index)
                self._choice(other, choice)
                if other.ended:
                    other.gate.finish()  # its finish ends it, as a one-choice stream's does
        return shown

    def _choice(self, acc: _Accumulator, choice: Any) -> str:
        """One choice's delta and finish_reason into its accumulator; return its content.

        A finish_reason ``error`` (or an ``error`` in the choice) is the provider's failure:
        a ``provider_error`` first, then the finish ends the turn as any other reason does.
        """
        shown = ""
        gate = acc.gate
        acc.ended = False
        delta = choice.get("delta") or {}
        reason = choice.get("finish_reason")
        error = choice.get("error")
        if error is not None:
            _failed(acc, _describe(error))
        elif reason == "error":
            _failed(acc, "finish_reason 'error': the choice failed mid-stream")
        if reason is not None and acc.finish_reason is not None:
            if reason == acc.finish_reason and _carries_nothing(delta):
                gate.note("repeated_terminal", f"finish_reason {reason!r} again, on a bare chunk")
                return ""
            if reason == "stop" and _carries_nothing(delta, blank=True):
                gate.note(
                    "trailing_terminal",
                    f"finish_reason 'stop' after {acc.finish_reason!r}, on a chunk with "
                    "nothing but whitespace text (a relay's own end); the turn had ended",
                )
                reason = None  # its whitespace is still content; the turn's end stands
        for key, value in delta.items():
            if value is None:
                continue
            if key == _DISPLAY:
                shown += _content(acc, value)
            elif key == "tool_calls":
                if not isinstance(value, list):
                    gate.refuse("malformed_chunk", f"tool_calls is not a list: {value!r:.60}")
                    continue
                for call in value:
                    function = call.get("function") if type(call) is dict else None
                    if (
                        function is not None
                        and call.get("id") is None
                        and function.get("name") is None
                        and type(function.get("arguments")) is str
                        and function["arguments"]
                    ):
                        slot = call.get("index")
                        if type(slot) is int:
                            acc.last = slot  # as _key() does, without the call
                        else:
                            slot = _key(acc, call)
                        gate.fragment(slot, function["arguments"])
                    else:
                        self._tool_call(acc, call)
            elif key == "role":
                acc.role = value
            elif key == "function_call":
                gate.refuse("malformed_chunk", "legacy function_call deltas are not read")
            elif isinstance(value, str) and gate.text(value):
                acc.extra.setdefault(key, []).append(value)
        if reason is not None:
            acc.finish_reason = reason
            acc.ended = True
            gate.turn_done(_ends_calls(gate, reason), reason)
        return shown

    def reader(self, acc: _Accumulator) -> Callable[[Shape], str | None]:
        """:meth:`accumulate`, with the commonest chunks read first and in place.

        Those are a delta of the chosen choice holding only ``content`` text, or only one
        ``tool_calls`` entry that carries nothing but an ``index`` and an arguments
        fragment, with no ``finish_reason``, ``error`` or ``usage``; any other chunk (or a
        field of another type) goes to :meth:`accumulate`, which reads and reports it.
        """
        fragment, text_kept, accumulate = acc.gate.fragment, acc.gate.text, self.accumulate
        chosen = acc.chosen

        def read(chunk: Shape) -> str | None:
            index = text = None
            try:
                choices = chunk["choices"]
                if type(choices) is list and len(choices) == 1:
                    choice = choices[0]
                    delta = choice["delta"]
                    if (
                        type(delta) is dict
                        and len(delta) == 1
                        and choice.get("finish_reason") is None
                        and choice.get("index", 0) == chosen
                        and "error" not in chunk
                        and "error" not in choice
                        and chunk.get("usage") is None
                    ):
                        content = delta.get(_DISPLAY)
                        if type(content) is str and acc.blocks is None:
                            if not text_kept(content):
                                return ""
                            acc.content.append(content)
                            return content
                        entries = delta.get("tool_calls")
                        if type(entries) is list and len(entries) == 1:
                            entry = entries[0]
                            function = entry["function"]
                            if (
                                type(entry) is dict
                                and type(function) is dict
                                and entry.get("id") is None
                                and function.get("name") is None
                                and type(entry.get("index")) is int
                            ):
                                arguments = function.get("arguments")
                                if type(arguments) is str and arguments:
                                    index, text = entry["index"], arguments
            except (KeyError, TypeError, IndexError):
                pass  # a field missing or of another type: accumulate() reads and reports it
            if text is None:
                return accumulate(acc, chunk)
            acc.last = index
            fragment(index, text)
            return None

        return read

    def fast_add(
        self, acc: _Accumulator, steady: Steady, rest: Callable[[object], None]
    ) -> Callable[[object], None]:
        """The buffer's ``add`` for a lone argument fragment (:mod:`.openai_fast`)."""
        return fast_add(acc, steady, rest)

    @staticmethod
    def _tool_call(acc: _Accumulator, call: Any) -> None:
        gate = acc.gate
        if type(call) is not dict and not isinstance(call, Mapping):
            gate.refuse("malformed_chunk", f"a tool_calls entry is not an object: {call!r:.60}")
            return
        key = _key(acc, call)
        function = call.get("function") or {}
        call_id, name = call.get("id"), function.get("name")
        if call_id is not None or name is not None:
            gate.identity(key, call_id, name)
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            problem = not_text_arguments(arguments, key)
            gate.refuse(problem.code, problem.message, key)
        elif arguments is not None:
            gate.fragment(key, arguments)
        elif call_id is None and name is None:
            gate.fragment(key, "")

    def is_done(self, chunk: Shape) -> bool:
        """A chunk with a choice that carries a finish_reason may end the turn.

        With several choices the buffer asks the accumulator whether it is the chosen
        choice's end (:meth:`_Accumulator.chosen_done`).
        """
        choices = chunk.get("choices")
        if not choices:
            return False
        if len(choices) == 1:
            return choices[0].get("finish_reason") is not None
        return any(isinstance(c, Mapping) and c.get("finish_reason") is not None for c in choices)

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false message; with several choices, the ``chat.completion`` of them all.

        A stream of one choice gives its assistant message (content as parts if the
        server sent parts); an ``n > 1`` stream gives what the openai SDK's stream helper
        assembles: the completion's own fields and ``choices``, each with its ``index``,
        ``message`` and ``finish_reason``, in index order.
        """
        if not acc.others:
            return _message(acc)
        every = {acc.chosen: acc, **acc.others}
        choices = [
            {"index": n, "message": _message(a), "finish_reason": a.finish_reason}
            for n, a in sorted(every.items())
        ]
        return {**acc.head, "object": "chat.completion", "choices": choices}

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """Calls whose name is set and whose arguments strictly parse to an object."""
        return function_calls(message.get("tool_calls"))

    def unreadable(self, message: Shape) -> list[tuple[ExtractedCall, Finding]]:
        """Calls without a name or whose arguments are not one strict JSON object."""
        return [(c, p) for c, p in read_function_calls(message.get("tool_calls")) if p is not None]

    def forming(self, message: Shape) -> Forming:
        """A call is coming once ``tool_calls`` has an entry; the last entry's name names it."""
        entries = message.get("tool_calls")
        return entry_forming(entries if isinstance(entries, list) else (), _function_name)

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """One chunk per choice: the message as its delta, then its finish_reason.

        Reads an assistant message (``{role, content, tool_calls}``, what :meth:`message`
        builds) or a whole ``chat.completion`` response (its choices). A message's
        finish_reason, or a choice's that has none, is ``tool_calls`` when it has calls,
        else ``stop``; a response keeps its own, a null one included (TGI's: the whole
        response's end is then the turn's, with a ``no_finish_reason`` warning). Every
        entry keeps its fields as received (an object ``function.arguments`` is refused as
        in a stream).
        """
        choices = message.get("choices")
        if isinstance(choices, list) and "tool_calls" not in message:
            read = [
                (c.get("index", n), c.get("message") or {}, _finish_of(c))
                for n, c in enumerate(choices)
                if isinstance(c, Mapping)
            ]
        else:
            read = [(0, message, _reason(message))]
        chunk: dict[str, Any] = {"object": "chat.completion.chunk"}
        for field in ("id", "model"):
            if isinstance(message.get(field), str):
                chunk[field] = message[field]
        chunk["choices"] = [
            {"index": index, "delta": _delta(inner), "finish_reason": reason}
            for index, inner, reason in read
        ]
        return [chunk]

    def content_text(self, message: Shape) -> str:
        """The ``content`` string (or its text parts), or empty."""
        content = message.get("content")
        if isinstance(content, list):
            texts = (p.get("text") for p in content if isinstance(p, Mapping))
            return "".join(t for t in texts if isinstance(t, str))
        return content if isinstance(content, str) else ""

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``tool_calls`` entry with its call's id and name; unreadable arguments ``{}``.

        See :func:`~callgate.strategies.base.function_call_entries`.
        """
        return function_call_entries(history, calls)

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``tool`` message per result, keyed by ``tool_call_id``."""
        return [{"role": "tool", "tool_call_id": r.call.id, "content": r.content} for r in results]


def _function_name(entry: Mapping[str, Any]) -> Any:
    function = entry.get("function")
    return function.get("name") if isinstance(function, Mapping) else None


def _delta(message: Any) -> dict[str, Any]:
    """An assistant message as one delta: its fields as received, each call with its index."""
    if not isinstance(message, Mapping):
        return {"content": None, "tool_calls": message}
    delta = {k: v for k, v in message.items() if k != "tool_calls"}
    entries = message.get("tool_calls")
    if isinstance(entries, list):
        delta["tool_calls"] = [
            {"index": n, **entry} if isinstance(entry, Mapping) else entry
            for n, entry in enumerate(entries)
        ]
    elif entries is not None:
        delta["tool_calls"] = entries
    return delta


def _finish_of(choice: Mapping[str, Any]) -> Any:
    """A whole response's choice's finish_reason: its own (null too), else the default."""
    if "finish_reason" in choice:
        return choice["finish_reason"]
    return _reason(choice.get("message"))


def _reason(message: Any) -> str:
    """The finish_reason a message without one ended with: ``tool_calls`` if it has calls."""
    return "tool_calls" if isinstance(message, Mapping) and message.get("tool_calls") else "stop"


def _key(acc: _Accumulator, call: Mapping[str, Any]) -> object:
    """A tool_calls entry's slot: its ``index``; without one, by call id, else the last slot.

    Some servers (Mistral) send whole calls with no ``index``: each new id is the next
    slot, and an entry with neither index nor id continues the slot before it.
    """
    key = call.get("index")
    if key is None:
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id:
            key = acc.by_id.setdefault(call_id, len(acc.by_id))
        else:
            key = acc.last if acc.last is not None else 0
    acc.last = key if type(key) is int else acc.last
    return key


def _carries_nothing(delta: Any, *, blank: bool = False) -> bool:
    """A delta with no content, call or other text (only a role, nulls and empty values).

    Empty strings, lists and objects count as nothing (OpenRouter relaying Gemini sends
    ``"reasoning_details": []`` on its own closing chunk). ``blank`` also lets
    ``content`` be whitespace text.
    """
    if not isinstance(delta, Mapping):
        return False
    return all(
        key == "role"
        or value is None
        or (not value and isinstance(value, (str, list, dict)))
        or (blank and key == _DISPLAY and isinstance(value, str) and value.isspace())
        for key, value in delta.items()
    )


def _ends_calls(gate: TurnGate, reason: object) -> bool:
    """Whether ``reason`` ends the turn's calls: ``tool_calls``, or ``stop`` by default.

    api.openai.com ends a call made under a named ``tool_choice`` with ``stop`` (vLLM
    does the same on purpose, older Ollama and LiteLLM routes too): the calls are then
    checked as usual and a ``stop_finish_reason`` warning says so. ``strict_finish`` (the
    seed validator's rule) refuses them; ``length`` and ``content_filter`` always do.
    """
    if reason == "tool_calls":
        return True
    if reason != "stop" or gate.strict_finish or gate.done_seen or not gate.slots:
        return False
    gate.note(
        "stop_finish_reason",
        "the turn ended with finish_reason 'stop', not 'tool_calls'; its calls are checked "
        "as complete (strict_finish refuses them)",
    )
    return True


class MistralStrategy(OpenAIStrategy):
    """Mistral's chat stream: the OpenAI shape with Mistral's short call ids.

    Never claims a chunk during automatic recognition (the shapes are the same); it is
    chosen by name, with the ``mistral`` profile.
    """

    name = "mistral"
    reports_stray_chunks = False
    """It recognises no chunk (it is chosen by name): the buffer checks every chunk."""

    def recognizes(self, shape: Shape) -> bool:
        """Chosen by name only."""
        return False


OPENAI = Wire(
    name="openai",
    strategy=OpenAIStrategy,
    recognition=0,
    terminal=Terminal(
        field="choices[0].finish_reason",
        calls_end=frozenset({"tool_calls"}),
        lenient=frozenset({"stop"}),
        length=frozenset({"length"}),
        filtered=frozenset({"content_filter"}),
    ),
    tool_spec=chat_tool_spec,
    quirks=(
        "null_content",
        "no_content_key",
        "empty_id_in_continuation",
        "empty_name_in_continuation",
        "arguments_in_opening",
        "reasoning_content",
        "usage_chunk",
        "repeated_finish_reason",
        "no_index",
    ),
    sdk=SdkForm("openai", "openai.types.chat:ChatCompletionChunk", construct=True),
    framing=Framing(done="[DONE]"),
)
"""Chat Completions: the first wire recognition tries (most servers speak it)."""

MISTRAL = evolve(
    OPENAI, name="mistral", strategy=MistralStrategy, recognition=None, quirks=(), sdk=None
)
"""Mistral's chat stream: OpenAI's record, chosen by name (its chunks look the same)."""
