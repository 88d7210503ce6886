"""Google Gemini ``streamGenerateContent``: response chunks into the stream=false response.

Wire: each chunk is a ``GenerateContentResponse`` whose ``candidates[0].content.parts``
carry text parts (``{text}``; ``{thought: true, text}`` for thought summaries), other parts
(code execution, inline data) and ``functionCall`` parts ``{name, args, id?}``. The REST
wire is camelCase (``functionCall``, ``finishReason``, ``usageMetadata``); google-genai's
``model_dump`` gives snake_case (``function_call``, ``finish_reason``): both are read, and
the assembled response keeps whichever names the stream used.

A call arrives whole: ``args`` is an object, never a string fragment, and one chunk may
hold several ``functionCall`` parts. There is no slot field, so the slot key is the
call's position in the turn (a running counter over every chunk). The name comes with
the call; the id is optional (newer models send one for parallel calls) and is kept when
present. There is no per-call done: the turn ends with the chunk whose candidate carries
a ``finishReason``; ``STOP`` is the normal end and so the tool-call reason when the turn
has calls, every other reason (``MAX_TOKENS``, ``SAFETY``, ``MALFORMED_FUNCTION_CALL``,
...) is not. A prompt blocked outright ends the turn with ``promptFeedback.blockReason``.

Split arguments (newer models cut one call's args over two chunks): a ``functionCall``
part P continues the turn's most recent call C, and its keys are merged into C's, only
when all of these hold:

1. the turn has not ended yet;
2. P arrives in a later chunk than C's last piece, with nothing between them except
   empty text parts (no text, thought, other part or call);
3. P's name equals C's name;
4. P has no id, or C's id;
5. both carry a non-empty ``args`` object, and no key of P's is already among C's.

Anything else is a new call; a key seen twice is never merged (a same-named call that
repeats a key is a second call, and if it also repeats C's id the gate reports
``identity_collision``). Two calls of one tool with no ids and disjoint keys, each
alone at a chunk boundary, are indistinguishable from a split and are merged.

Streamed arguments (Vertex ``streamFunctionCallArguments``): a call opens with
``{name, willContinue: true}``; the ``functionCall`` parts that follow carry no name and
``partialArgs`` entries ``{jsonPath, stringValue | numberValue | boolValue | nullValue,
willContinue}`` (a string whose ``willContinue`` is true goes on in the next entry for the
same path); the call ends with the first part whose ``willContinue`` is not true (often a
bare ``{}``). The pieces are fragments of one slot: they build its args object, which
reaches the gate at the turn done like any other; a turn that ends while a call is still
streaming blocks it (``missing_terminal``).

Because the args are objects, the strategy holds each call's (merged) object and reports
it to the gate once, at the turn done: ``fragment(key, json.dumps(args))`` for every
slot, then ``turn_done``, which closes every slot. A call with no ``args`` means ``{}``.
The assembled response is the stream=false ``GenerateContentResponse``: one candidate
whose parts are the stream's parts in order, adjacent text parts of one kind merged
(empty text parts carry nothing and are left out), each ``functionCall.args`` the
checked object; the candidate's other fields and the response's top-level fields
(``usageMetadata``, ``modelVersion``, ``responseId``, ...) are the last values streamed.
Thought parts stay in the response and are never display text. The response always
carries its envelope, so a call a model leaks into text is handed on to the text
strategies (``leaks_into_text``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from callgate.gate.partialjson import StillForming
from callgate.strategies._gemini_args import _apply_piece, _first
from callgate.strategies.base import (
    CallPairing,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    HistoryCall,
    Shape,
    ToolResult,
    entry_forming,
    report_whole_arguments,
    whole_call,
)
from callgate.strategies.usage import count_at, total
from callgate.strategies.wire import Framing, SdkForm, Terminal, Wire

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

_CALL_KEYS = ("functionCall", "function_call")
_REASON_KEYS = ("finishReason", "finish_reason")
_FEEDBACK_KEYS = ("promptFeedback", "prompt_feedback")
_SIGNATURE_KEYS = frozenset({"thoughtSignature", "thought_signature"})
_PARTIAL_KEYS = ("partialArgs", "partial_args", "willContinue", "will_continue")
_PARTIAL_ARGS = ("partialArgs", "partial_args")
_WILL_CONTINUE = ("willContinue", "will_continue")
_TEXT_KEYS = frozenset({"text", "thought"}) | _SIGNATURE_KEYS
_STOP = "STOP"


_USAGE_KEYS = ("usageMetadata", "usage_metadata")


def _output_tokens(usage: object) -> int | None:
    """The output tokens of a ``usageMetadata``: the candidates' and the thoughts' counts."""
    return total(
        count_at(usage, "candidatesTokenCount") or count_at(usage, "candidates_token_count"),
        count_at(usage, "thoughtsTokenCount") or count_at(usage, "thoughts_token_count"),
    )


def _reason_text(reason: Any) -> str:
    """A finish reason as text (google-genai gives a ``str`` enum)."""
    value = getattr(reason, "value", reason)
    return value if isinstance(value, str) else str(value)


class _Call:
    """One function call of the turn: its part, its identity and its (merged) args."""

    __slots__ = ("args", "call_key", "chunk", "fields", "key", "name", "part")

    def __init__(self, key: int, part: Mapping[str, Any], call_key: str, chunk: int) -> None:
        call = part[call_key]
        self.key = key
        self.call_key = call_key
        self.part = {k: v for k, v in part.items() if k != call_key}
        self.fields = {k: v for k, v in call.items() if k not in _PARTIAL_KEYS}
        self.name: Any = call.get("name")
        args = call.get("args")
        self.args: Any = dict(args) if isinstance(args, Mapping) else args
        self.chunk = chunk

    def continues_with(self, call: Mapping[str, Any]) -> bool:
        """Whether ``call`` is the rest of this call's args (rules 3 to 5)."""
        args = call.get("args")
        return (
            self.name is not None
            and call.get("name") == self.name
            and call.get("id") in (None, self.fields.get("id"))
            and isinstance(self.args, dict)
            and bool(self.args)
            and isinstance(args, Mapping)
            and bool(args)
            and self.args.keys().isdisjoint(args)
        )

    def merge(self, part: Mapping[str, Any], call: Mapping[str, Any], chunk: int) -> None:
        """Take the continuation's keys, and any field this call does not have yet."""
        self.args.update(call["args"])
        for key, value in call.items():
            if value is not None:
                self.fields.setdefault(key, value)
        for key, value in part.items():
            if key not in _CALL_KEYS and value is not None:
                self.part.setdefault(key, value)
        self.chunk = chunk


class _Text:
    """A run of adjacent text parts of one kind (thought or not), merged."""

    __slots__ = ("part", "pieces", "thought")

    def __init__(self, part: Mapping[str, Any]) -> None:
        self.part = {k: v for k, v in part.items() if k != "text"}
        self.pieces = [part["text"]]
        self.thought = part.get("thought") is True

    def absorbs(self, part: Mapping[str, Any]) -> bool:
        """Whether ``part`` extends this run (same kind, no conflicting signature)."""
        return (
            (part.get("thought") is True) == self.thought
            and _TEXT_KEYS.issuperset(part)
            and _TEXT_KEYS.issuperset(self.part)
            and not (_SIGNATURE_KEYS.intersection(part) and _SIGNATURE_KEYS.intersection(self.part))
        )

    def built(self) -> dict[str, Any]:
        """The merged part."""
        return {"text": "".join(self.pieces), **self.part}


class _Accumulator:
    """Native reassembly state for one turn; args reach the gate at the turn done."""

    __slots__ = (
        "adjacent",
        "calls",
        "candidate",
        "chunks",
        "ended",
        "envelope",
        "gate",
        "has_content",
        "parts",
        "reported",
        "role",
        "streaming",
    )

    def __init__(self, gate: TurnGate) -> None:
        self.gate = gate
        self.envelope: dict[str, Any] = {}
        self.candidate: dict[str, Any] | None = None
        self.has_content = False
        self.role: Any = "model"
        self.parts: list[_Text | _Call | dict[str, Any]] = []
        self.calls: list[_Call] = []
        self.chunks = 0
        self.adjacent = False
        self.ended = False
        self.reported: set[int] = set()
        self.streaming: _Call | None = None
        """The call whose arguments are still streaming (``willContinue``), if any."""


class GeminiStrategy(ExtractionStrategy):
    """streamGenerateContent chunks into the stream=false GenerateContentResponse."""

    name = "gemini"
    leaks_into_text = True
    per_call_done = False
    requires_id = False
    empty_arguments_object = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A response chunk or response (``candidates``, or a prompt-blocked response)."""
        return "candidates" in shape or any(key in shape for key in _FEEDBACK_KEYS)

    def new_accumulator(self, gate: TurnGate) -> _Accumulator:
        """Fresh state for one turn."""
        return _Accumulator(gate)

    def accumulate(self, acc: _Accumulator, chunk: Shape) -> str:
        """Apply one chunk; report calls to the gate (args at the turn done); return text."""
        gate = acc.gate
        if "candidates" not in chunk:
            gate.stray(chunk)
        acc.chunks += 1
        error = chunk.get("error")
        if isinstance(error, Mapping) and "candidates" not in chunk:
            detail = (
                f"{error.get('status') or error.get('code')!s:.40}: {error.get('message')!s:.160}"
            )
            gate.refuse("provider_error", f"the provider reported {detail}")
            return ""
        for key, value in chunk.items():
            if key != "candidates":
                acc.envelope[key] = value
        _, usage = _first(chunk, _USAGE_KEYS)
        if usage is not None:
            gate.usage(_output_tokens(usage))
        candidates = chunk.get("candidates")
        shown = ""
        if candidates is not None:
            if not isinstance(candidates, list):
                gate.refuse("malformed_chunk", "candidates is not a list")
                return ""
            for candidate in candidates:
                if not isinstance(candidate, Mapping):
                    gate.refuse(
                        "malformed_chunk", f"a candidate is not an object: {candidate!r:.60}"
                    )
                elif candidate.get("index", 0) != 0:
                    gate.refuse("malformed_chunk", "only candidate 0 is read; candidateCount > 1")
                else:
                    shown += self._candidate(acc, candidate)
        _, feedback = _first(chunk, _FEEDBACK_KEYS)
        if isinstance(feedback, Mapping):
            blocked = feedback.get("blockReason", feedback.get("block_reason"))
            if blocked is not None:
                self._turn_done(acc, False, _reason_text(blocked))
        return shown

    def _candidate(self, acc: _Accumulator, candidate: Mapping[str, Any]) -> str:
        if acc.candidate is None:
            acc.candidate = {}
        shown = ""
        for key, value in candidate.items():
            if key != "content":
                acc.candidate[key] = value
        content = candidate.get("content")
        if content is not None:
            if not isinstance(content, Mapping):
                acc.gate.refuse("malformed_chunk", "candidate content is not an object")
            else:
                shown = self._content(acc, content)
        _, reason = _first(candidate, _REASON_KEYS)
        if reason is not None:
            text = _reason_text(reason)
            self._turn_done(acc, text == _STOP, text)
        return shown

    def _content(self, acc: _Accumulator, content: Mapping[str, Any]) -> str:
        acc.has_content = True
        if content.get("role") is not None:
            acc.role = content["role"]
        parts = content.get("parts")
        if parts is None:
            return ""
        if not isinstance(parts, list):
            acc.gate.refuse("malformed_chunk", "content parts is not a list")
            return ""
        shown = ""
        for part in parts:
            if not isinstance(part, Mapping):
                acc.gate.refuse("malformed_chunk", f"a part is not an object: {part!r:.60}")
                continue
            call_key, call = _first(part, _CALL_KEYS)
            if call_key is not None:
                self._call(acc, part, call_key, call)
            elif isinstance(part.get("text"), str):
                shown += self._text(acc, part)
            else:
                acc.parts.append(dict(part))
                acc.adjacent = False
        return shown

    @staticmethod
    def _text(acc: _Accumulator, part: Mapping[str, Any]) -> str:
        text: str = part["text"]
        if not acc.gate.text(text):
            return ""
        if not text and _TEXT_KEYS.issuperset(part) and not _SIGNATURE_KEYS.intersection(part):
            return ""
        last = acc.parts[-1] if acc.parts else None
        if isinstance(last, _Text) and last.absorbs(part):
            last.pieces.append(text)
            for key in _SIGNATURE_KEYS.intersection(part):
                last.part[key] = part[key]
        else:
            acc.parts.append(_Text(part))
        if text or not _TEXT_KEYS.issuperset(part):
            acc.adjacent = False
        return "" if part.get("thought") is True else text

    @staticmethod
    def _call(acc: _Accumulator, part: Mapping[str, Any], call_key: str, call: Any) -> None:
        gate = acc.gate
        if not isinstance(call, Mapping):
            gate.refuse("malformed_chunk", f"{call_key} is not an object: {call!r:.60}")
            return
        streaming = acc.streaming
        if streaming is not None:
            if call.get("name") not in (None, ""):
                gate.refuse(
                    "malformed_chunk",
                    f"call {streaming.key} is still streaming its args, and a functionCall "
                    f"names {call.get('name')!r:.40}",
                )
                acc.streaming = None
                return
            _stream_args(acc, streaming, call)
            return
        previous = acc.calls[-1] if acc.calls else None
        if (
            previous is not None
            and not acc.ended
            and acc.adjacent
            and previous.chunk < acc.chunks
            and previous.continues_with(call)
        ):
            previous.merge(part, call, acc.chunks)
            return
        entry = _Call(len(acc.calls), part, call_key, acc.chunks)
        acc.calls.append(entry)
        acc.parts.append(entry)
        acc.adjacent = True
        call_id = call.get("id")
        gate.identity(entry.key, call_id, call.get("name"))
        if _first(call, _WILL_CONTINUE)[1] is True or _first(call, _PARTIAL_ARGS)[0]:
            if entry.args is None:
                entry.args = {}
            acc.adjacent = False
            _stream_args(acc, entry, call)

    @staticmethod
    def _turn_done(acc: _Accumulator, tool_reason: bool, reason: str) -> None:
        gate = acc.gate
        if acc.streaming is not None:
            gate.refuse(
                "missing_terminal",
                f"the turn ended while call {acc.streaming.key}'s args were still streaming",
                acc.streaming.key,
            )
            acc.streaming = None
        for entry in acc.calls:
            report_whole_arguments(gate, acc.reported, entry.key, entry.args, "args")
        acc.ended = True
        acc.adjacent = False
        gate.turn_done(tool_reason, reason)

    def whole_arguments(self, acc: _Accumulator, key: int) -> object:
        """Call ``key``'s (merged) args, unless the gate has them (streaming: as built so far)."""
        calls = acc.calls
        if not 0 <= key < len(calls) or key in acc.reported:
            return None
        args = calls[key].args
        return StillForming(args) if calls[key] is acc.streaming and args is not None else args

    def is_done(self, chunk: Shape) -> bool:
        """A chunk whose candidate has a finish reason, or a prompt-blocked response."""
        candidates = chunk.get("candidates")
        if isinstance(candidates, list) and any(
            isinstance(c, Mapping) and _first(c, _REASON_KEYS)[1] is not None for c in candidates
        ):
            return True
        _, feedback = _first(chunk, _FEEDBACK_KEYS)
        return isinstance(feedback, Mapping) and (
            feedback.get("blockReason", feedback.get("block_reason")) is not None
        )

    def message(self, acc: _Accumulator) -> dict[str, Any]:
        """The stream=false response: one candidate with merged parts, then the envelope."""
        response: dict[str, Any] = {}
        if acc.candidate is not None:
            candidate: dict[str, Any] = {}
            if acc.has_content or acc.parts:
                parts = []
                for entry in acc.parts:
                    if isinstance(entry, _Text):
                        parts.append(entry.built())
                    elif isinstance(entry, _Call):
                        parts.append(_call_part(acc.gate, entry))
                    else:
                        parts.append(entry)
                candidate["content"] = {"role": acc.role, "parts": parts}
            candidate.update(acc.candidate)
            response["candidates"] = [candidate]
        response.update(acc.envelope)
        return response

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """The ``functionCall`` parts that have a name and object args (absent args: ``{}``)."""
        found = (
            whole_call(call.get("id"), call.get("name"), call.get("args"), position)
            for position, call in enumerate(_function_calls(message))
        )
        return [call for call in found if call is not None]

    def forming(self, message: Shape) -> Forming:
        """A call is coming once a ``functionCall`` part arrived (whole: named at once)."""
        return entry_forming(_function_calls(message), lambda call: call.get("name"))

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The response as its one chunk: calls arrive whole, as received (``args`` too).

        A first candidate without a finish reason gets ``STOP`` (the normal end), so a
        response handed over whole ends its turn.
        """
        chunk = dict(message)
        candidates = message.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], Mapping):
            first = dict(candidates[0])
            if not any(key in first for key in _REASON_KEYS):
                first["finishReason"] = "STOP"
            chunk["candidates"] = [first, *candidates[1:]]
        return [chunk]

    def content_text(self, message: Shape) -> str:
        """The text of every non-thought text part of the first candidate, joined."""
        return "".join(
            part["text"]
            for part in _parts(message)
            if isinstance(part.get("text"), str) and part.get("thought") is not True
        )

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The first candidate's content, role ``model``."""
        return [{"role": "model", "parts": [dict(p) for p in _parts(message)]}]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """Each ``functionCall`` with its call's name and object ``args`` (ids as given).

        A content left without a part is left out.
        """
        pairing = CallPairing(calls)
        repaired = [
            {**content, "parts": [_answerable_part(part, pairing) for part in content["parts"]]}
            for content in history
        ]
        return [content for content in repaired if content["parts"]], pairing.placed

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """One ``user`` content holding a ``functionResponse`` part per result."""
        if not results:
            return []
        parts = []
        for r in results:
            response: dict[str, Any] = {"name": r.call.name}
            response["response"] = {"error": r.content} if r.is_error else {"result": r.content}
            if r.call.id is not None:
                response["id"] = r.call.id
            parts.append({"functionResponse": response})
        return [{"role": "user", "parts": parts}]

    def user_text(self, text: str) -> dict[str, Any]:
        """A ``user`` content of one text part: Gemini's contents hold parts, not content."""
        return {"role": "user", "parts": [{"text": text}]}


def _stream_args(acc: _Accumulator, entry: _Call, call: Mapping[str, Any]) -> None:
    """Apply one streamed ``functionCall`` piece to ``entry``'s args; close it at the end."""
    _, pieces = _first(call, _PARTIAL_ARGS)
    acc.streaming = entry if _first(call, _WILL_CONTINUE)[1] is True else None
    if pieces is None:
        return
    if not isinstance(pieces, list) or not isinstance(entry.args, dict):
        acc.gate.refuse("malformed_chunk", f"call {entry.key}: partialArgs is not a list")
        return
    for piece in pieces:
        problem = _apply_piece(entry.args, piece) if isinstance(piece, Mapping) else "not an object"
        if problem:
            acc.gate.refuse("malformed_chunk", f"call {entry.key}: a partialArgs entry {problem}")
            acc.streaming = None
            return


def _answerable_part(part: dict[str, Any], pairing: CallPairing) -> dict[str, Any]:
    key = next((k for k in _CALL_KEYS if isinstance(part.get(k), Mapping)), None)
    if key is None:
        return part
    given = part[key]
    call = pairing.take(given.get("id"), given.get("name"), given.get("args"))
    arguments = call.arguments if call.arguments is not None else {}
    fields = {**given, "name": call.name, "args": arguments}
    if call.id is not None:
        fields["id"] = call.id
    return {**part, key: fields}


def _call_part(gate: TurnGate, entry: _Call) -> dict[str, Any]:
    """A call's part as the stream=false response holds it: args are the checked object."""
    slot = gate.slots.get(entry.key)
    args = slot.arguments if slot is not None and slot.arguments is not None else entry.args
    call = dict(entry.fields)
    if "args" in call or args:
        call["args"] = args
    return {entry.call_key: call, **entry.part}


def _parts(message: Shape) -> list[Mapping[str, Any]]:
    """The parts of a response's first candidate (or of a bare ``Content``)."""
    content: Any = message
    candidates = message.get("candidates")
    if isinstance(candidates, list):
        if not candidates or not isinstance(candidates[0], Mapping):
            return []
        content = candidates[0].get("content") or {}
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def _function_calls(message: Shape) -> list[Mapping[str, Any]]:
    """The ``functionCall`` objects of a response's first candidate, in order."""
    calls = []
    for part in _parts(message):
        _, call = _first(part, _CALL_KEYS)
        if isinstance(call, Mapping):
            calls.append(call)
    return calls


def _tool_spec(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A function declaration, its schema as ``parametersJsonSchema``."""
    return {"name": name, "description": description, "parametersJsonSchema": dict(schema)}


GEMINI = Wire(
    name="gemini",
    strategy=GeminiStrategy,
    recognition=4,
    terminal=Terminal(
        field="candidates[0].finishReason",
        calls_end=frozenset({_STOP}),
        length=frozenset({"MAX_TOKENS"}),
        filtered=frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}),
    ),
    tool_spec=_tool_spec,
    tools_key="functionDeclarations",
    quirks=("thought", "thought_signature", "no_ids", "grouped_calls"),
    sdk=SdkForm("google-genai", "google.genai.types:GenerateContentResponse"),
    framing=Framing(newline="\r\n"),
)
"""Gemini: whole calls in ``parts``; every declaration goes in one tool."""
