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


class _Accumulator:
    """Native reassembly state for one choice of a turn (the arguments live in the gate's slots).

    The buffer's accumulator is its chosen choice's (``chosen``, 0 unless the buffer was
    told otherwise); each other choice of an ``n > 1`` stream gets one of its own in
    ``others``, with a gate of its own: tool-call indices are scoped per choice.
    """

    __slots__ = (
        "blocks",
        "by_id",
        "chosen",
        "content",
        "ended",
        "extra",
        "failed",
        "finish_reason",
        "gate",
        "head",
        "last",
        "new_gate",
        "others",
        "role",
    )

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.role = "assistant"
        self.content: list[str] = []
        self.blocks: list[tuple[str, list[str]]] | None = None
        """Content as a list of typed parts, once a server sent one (Mistral's magistral)."""
        self.extra: dict[str, list[str]] = {}
        self.finish_reason: str | None = None
        self.failed = False
        """Whether the provider's error was reported for this choice (one finding per choice)."""
        self.ended = False
        """Whether the chunk just read ended this choice (a repeated finish_reason does not)."""
        self.by_id: dict[str, int] = {}
        """Slot keys given to index-less entries, by their call id."""
        self.last: int | None = None
        """The slot the last tool_calls entry went to (an index-less continuation's)."""
        self.chosen = 0
        """The index of the choice this accumulator (and the buffer's gate) reads."""
        self.others: dict[int, _Accumulator] = {}
        """The stream's other choices (``n > 1``), by index."""
        self.new_gate: Callable[[], TurnGate] | None = None
        """Makes another choice's gate (the buffer sets it); None: a plain gate like ``gate``."""
        self.head: dict[str, Any] = {}
        """The completion's own fields (``id``, ``model``, ``created``, …), as first sent."""

    def choose(self, index: int, new_gate: Callable[[], TurnGate]) -> None:
        """Read choice ``index`` here; every other choice gets a gate from ``new_gate``."""
        self.chosen = index
        self.new_gate = new_gate

    def chosen_done(self) -> bool:
        """Whether the chunk just read ended the chosen choice: the buffer then finishes its gate.

        Asked for a chunk with a finish_reason; another choice's, or the chosen one's again
        on a bare chunk (a ``repeated_terminal``), is not the chosen choice's end, so a
        recorded trace gains no finish that changes nothing.
        """
        return self.ended

    def turns(self) -> list[tuple[int, TurnGate, dict[str, Any]]]:
        """Every choice seen (the chosen one always), by index, with its gate and message."""
        every = {self.chosen: self, **self.others}
        return [(n, every[n].gate, _message(every[n])) for n in sorted(every)]

    def other(self, index: int) -> _Accumulator:
        """Another choice's accumulator, made with a gate of its own on first sight."""
        acc = self.others.get(index)
        if acc is None:
            gate = self.gate
            made = self.new_gate() if self.new_gate is not None else _like(gate)
            made.on_stray = gate.on_stray
            acc = self.others[index] = _Accumulator(made)
        return acc

    def chosen_message(self) -> dict[str, Any]:
        """The chosen choice's stream=false assistant message."""
        return _message(self)

    def finish_others(self) -> None:
        """The stream ended: every other choice's gate settles (its chosen one is the buffer's)."""
        for acc in self.others.values():
            acc.gate.finish()


def _like(gate: TurnGate) -> TurnGate:
    """A fresh gate with ``gate``'s options (another choice of the same turn)."""
    return type(gate)(
        schemas=gate.schemas,
        limits=gate.limits,
        per_call_done=gate.per_call_done,
        requires_id=gate.requires_id,
        empty_arguments_object=gate.empty_arguments_object,
        preview=gate.preview,
        strict_finish=gate.strict_finish,
        text_per_call=gate.text_per_call,
    )


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
            or (set(shape) == {"error"} and isinstance(shape["error"], Mapping))
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
        fragment, with no ``finish_reason`` and no ``error``; any other chunk (or a field of
        another type) goes to :meth:`accumulate`, which reads and reports it.
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


def _message(acc: _Accumulator) -> dict[str, Any]:
    """One choice's stream=false assistant message."""
    message: dict[str, Any] = {
        "role": acc.role,
        "content": "".join(acc.content) or None
        if acc.blocks is None
        else [_block(kind, parts) for kind, parts in acc.blocks],
    }
    for key, parts in acc.extra.items():
        message[key] = "".join(parts)
    slots = acc.gate.ordered_slots()
    if slots:
        message["tool_calls"] = [
            {
                "id": slot.id,
                "type": "function",
                "function": {"name": slot.name, "arguments": slot.raw_arguments},
            }
            for slot in slots
        ]
    return message


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


def _content(acc: _Accumulator, value: object) -> str:
    """Add a ``delta.content`` (a string, or a list of typed parts); return its display text.

    Parts (Mistral's magistral): ``text`` is shown; ``thinking`` is reasoning, kept in the
    message and never shown. Both count against the turn's text limit. Consecutive parts
    of one kind are merged, as the stream=false message has them.
    """
    if isinstance(value, str):
        if not acc.gate.text(value):
            return ""
        if acc.blocks is None:
            acc.content.append(value)
        elif value:
            _text_part(acc.blocks, value)
        return value
    if not isinstance(value, list):
        acc.gate.refuse("malformed_chunk", f"delta.content is not text or parts: {value!r:.60}")
        return ""
    if acc.blocks is None:
        acc.blocks = []
        if acc.content:
            _text_part(acc.blocks, "".join(acc.content))
            acc.content = []
    shown = ""
    for part in value:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            if not acc.gate.text(part["text"]):
                continue
            _text_part(acc.blocks, part["text"])
            shown += part["text"]
        elif kind == "thinking" and isinstance(part.get("thinking"), list):
            texts = _thinking_texts(part["thinking"])
            kept = [t for t in texts if acc.gate.text(t)]
            if kept or not texts:
                _thinking_part(acc.blocks, kept)
        else:
            acc.gate.refuse("malformed_chunk", f"a content part callgate cannot read: {part!r:.60}")
    return shown


def _text_part(blocks: list[tuple[str, list[str]]], text: str) -> None:
    """Add shown text: to the last part if it is text (parts of one kind merge), else a new one."""
    if blocks and blocks[-1][0] == "text":
        blocks[-1][1].append(text)
    else:
        blocks.append(("text", [text]))


def _thinking_texts(inner: list[Any]) -> list[str]:
    """The text pieces of a thinking part (its ``thinking`` list of text parts)."""
    return [p["text"] for p in inner if isinstance(p, Mapping) and isinstance(p.get("text"), str)]


def _thinking_part(blocks: list[tuple[str, list[str]]], texts: list[str]) -> None:
    """Add a thinking part's text pieces, merged into the last part if it is thinking."""
    if blocks and blocks[-1][0] == "thinking":
        blocks[-1][1].extend(texts)
    else:
        blocks.append(("thinking", texts))


def _block(kind: str, pieces: list[str]) -> dict[str, Any]:
    """One content part of the message, its pieces joined once (the stream stays linear)."""
    text = "".join(pieces)
    if kind == "text":
        return {"type": "text", "text": text}
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


def _describe(error: object) -> str:
    """An error in brief: an object's code or type and message; any other value as written."""
    if not isinstance(error, Mapping):
        return f"{error!r:.160}"
    kind = error.get("code") or error.get("type") or "an error"
    return f"{kind!s:.60}: {error.get('message')!s:.160}"


def _failed(acc: _Accumulator, detail: str) -> None:
    """The provider reported an error for this choice: one ``provider_error``, which blocks it.

    A chunk may say it twice (an ``error`` object and finish_reason ``error``): the first
    is reported, so the finding names the error object when there is one.
    """
    if acc.failed:
        return
    acc.failed = True
    acc.gate.refuse("provider_error", f"the provider reported {detail}")


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
