"""The shapes every format expert has, and what they return.

A wire strategy (:class:`ExtractionStrategy`) owns one wire end to end, in its own native
shape: it recognises the wire's chunks and messages, reassembles chunks into the
provider's stream=false message (its :class:`StreamReader` part, over an accumulator of
the wire's own type), reports each tool-call primitive (slot, identity, fragment, done) to
the turn's :class:`~callgate.gate.TurnGate`, and reads calls and text back out of the
message (its :class:`MessageReader` part). A text format reads messages only: it is a
:class:`MessageReader` and nothing more, so it has no stream method to refuse.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from attrs import evolve, field, frozen

from callgate.gate.findings import Finding, finding
from callgate.gate.refs import CallRef
from callgate.gate.strictjson import parse_arguments

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate

Shape = Mapping[str, Any]
"""A raw chunk or event, or an assembled message, as plain data."""


@frozen
class ExtractedCall:
    """One tool call read from an assembled message.

    ``slot`` is where the call sits as reports write it (the provider's index, or
    ``text-B.N`` for a call of the text); ``ref`` is the gate's typed reference of the call
    (None for a call a format expert read from a whole message on its own).
    """

    id: str | None
    name: str
    arguments: dict[str, Any]
    slot: int | str | None = None
    ref: CallRef | None = field(default=None, eq=False, repr=False)

    @classmethod
    def from_ref(
        cls, ref: CallRef, call_id: str | None, name: str, arguments: dict[str, Any]
    ) -> ExtractedCall:
        """The call the gate refers to by ``ref``, its ``slot`` written from it."""
        return cls(call_id, name, arguments, ref.slot, ref)


@frozen
class Forming:
    """Whether a call is coming in a message (mid-stream or whole), and its tool once named.

    What :meth:`MessageReader.forming` answers: ``coming`` is true as soon as the message
    shows a call (native, or a text block opening), ``name`` is the tool of the call
    formed last once its name has streamed (None before).
    """

    coming: bool = False
    name: str | None = None

    def __bool__(self) -> bool:
        """Whether a call is coming: ``if strategy.forming(message):`` reads as it says."""
        return self.coming

    @property
    def forming(self) -> bool:
        """The seeds' name for :attr:`coming`."""
        return self.coming

    @property
    def tool_name(self) -> str | None:
        """The seeds' name for :attr:`name`: the tool of the call formed last, once named."""
        return self.name


NOT_FORMING = Forming()
"""No call is coming."""


@frozen
class ToolResult:
    """The outcome of one executed call, to be shaped into the provider's next message."""

    call: ExtractedCall
    content: str
    is_error: bool = False
    refused: bool = False
    """The call was not run: the content is a corrective message the model can retry against."""
    replayed: bool = field(default=False, eq=False)
    """The answer came from the ledger (the same call was seen before): it was not run again."""


@frozen
class HistoryCall:
    """One native call of an assistant turn as the next request must carry it.

    ``name`` is never empty; ``id`` is the id the call carries back (a call that lost its
    id gets :func:`stand_in_id` where the wire requires ids), and ``arguments`` is None
    when the call's arguments are not one JSON object: it then goes back as ``{}``, and
    its answer quotes what was received. ``given_id`` is the id
    the stream gave (None without one); ``slot`` is the turn's slot for the call, None for
    a call of the message that no slot tracks (its opening was refused).
    """

    slot: int | None
    id: str | None
    name: str
    arguments: dict[str, Any] | None
    given_id: str | None = None


NO_NAME = "unknown_tool"
"""The name a call that never carried one goes back under (the provider needs a name)."""


def stand_in_id(slot: int | str) -> str:
    """The id a call without a usable one (none, empty, or another call's) carries back."""
    return f"callgate_{slot}"


class CallPairing:
    """Pairs each call found in an assistant message with one of the turn's calls.

    A call pairs with the first unpaired turn call that has its id (a call without an id
    with one that had none), so the pairing holds however the message orders its calls.
    A call no turn call matches keeps its own id and name where usable and takes
    arguments only when they are an object; ``placed`` lists every call in message order.
    """

    def __init__(self, calls: Sequence[HistoryCall]) -> None:
        self._free = list(calls)
        self.placed: list[HistoryCall] = []

    def take(self, given_id: Any, name: Any, arguments: Any) -> HistoryCall:
        """The turn call for the next call of the message (see the class docstring)."""
        given = given_id if isinstance(given_id, str) and given_id else None
        match = next((c for c in self._free if c.given_id == given), None)
        if match is not None:
            self._free.remove(match)
        else:
            taken = {c.id for c in self.placed} | {c.id for c in self._free}
            usable = given is not None and given not in taken
            match = HistoryCall(
                None,
                given if usable and given is not None else stand_in_id(f"m{len(self.placed)}"),
                name if isinstance(name, str) and name else NO_NAME,
                arguments if isinstance(arguments, dict) else None,
                given,
            )
        self.placed.append(match)
        return match


def has_text(value: object) -> bool:
    """Whether ``value`` is text with something besides whitespace in it.

    Anthropic refuses a text block that is empty or only whitespace ("text content blocks
    must contain non-whitespace text"), Bedrock one that is blank.
    """
    return isinstance(value, str) and bool(value) and not value.isspace()


def repaired_blocks(
    history: Sequence[dict[str, Any]],
    calls: Sequence[HistoryCall],
    keep: Callable[[dict[str, Any]], bool],
    repair: Callable[[dict[str, Any], CallPairing], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
    """Block messages whose blocks ``keep`` accepts, each repaired; and their calls, in order.

    Each kept block is made answerable by ``repair`` against ``calls`` (a
    :class:`CallPairing`); a message left without a block is left out (providers refuse it).
    """
    pairing = CallPairing(calls)
    repaired = [
        {**message, "content": [repair(b, pairing) for b in message["content"] if keep(b)]}
        for message in history
    ]
    return [message for message in repaired if message["content"]], pairing.placed


def whole_call(call_id: Any, name: Any, arguments: Any, position: int) -> ExtractedCall | None:
    """A call whose arguments arrive as an object (null: ``{}``), or None without a name."""
    if arguments is None:
        arguments = {}
    if isinstance(name, str) and name and isinstance(arguments, Mapping):
        return ExtractedCall(call_id, name, dict(arguments), position)
    return None


def function_call_entries(
    history: Sequence[dict[str, Any]], calls: Sequence[HistoryCall]
) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
    """An OpenAI-shaped history with each ``tool_calls`` entry's id and name from its call.

    Unreadable arguments go back as ``{}``. An assistant message with neither content nor
    calls (a stream cut before either) is left out: the APIs refuse it.
    """
    return repaired_tool_calls(history, calls, _function_entry, drop_empty=True)


def repaired_tool_calls(
    history: Sequence[dict[str, Any]],
    calls: Sequence[HistoryCall],
    repair: Callable[[dict[str, Any], CallPairing], dict[str, Any]],
    *,
    drop_empty: bool,
) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
    """``history`` with each ``tool_calls`` entry made answerable by ``repair``, and its calls.

    ``drop_empty`` leaves out an assistant message with neither content nor calls.
    """
    pairing = CallPairing(calls)
    repaired = [
        {**m, "tool_calls": [repair(e, pairing) for e in m["tool_calls"]]}
        if m.get("tool_calls")
        else m
        for m in history
        if not drop_empty or m.get("content") or m.get("tool_calls")
    ]
    return repaired, pairing.placed


def _function_entry(entry: dict[str, Any], pairing: CallPairing) -> dict[str, Any]:
    function = entry.get("function") or {}
    call = pairing.take(entry.get("id"), function.get("name"), None)
    arguments = function.get("arguments") if call.arguments is not None else "{}"
    if (entry.get("id"), function.get("name"), function.get("arguments")) == (
        call.id,
        call.name,
        arguments,
    ):
        return entry
    return {
        **entry,
        "id": call.id,
        "type": "function",
        "function": {**function, "name": call.name, "arguments": arguments},
    }


def read_function_calls(
    tool_calls: Any, *, empty_object: bool = False
) -> list[tuple[ExtractedCall, Finding | None]]:
    """Every call of an OpenAI-shaped ``tool_calls`` list, with why it cannot run (or None).

    Shared by the formats that assemble that shape (OpenAI Chat Completions, Cohere v2);
    ``function.arguments`` is a JSON string, read strictly (empty means ``{}`` when
    ``empty_object``). A call that cannot run keeps its id and name (``"(no name)"`` when
    it has none) and empty arguments.
    """
    read: list[tuple[ExtractedCall, Finding | None]] = []
    for position, call in enumerate(tool_calls if isinstance(tool_calls, list) else ()):
        function = (call.get("function") if isinstance(call, Mapping) else None) or {}
        name = function.get("name") if isinstance(function, Mapping) else None
        raw = (function.get("arguments") if isinstance(function, Mapping) else None) or ""
        arguments: dict[str, Any] | None = {}
        problem: Finding | None = None
        if not isinstance(raw, str):
            arguments, problem = None, not_text_arguments(raw, position)
        elif raw or not empty_object:
            arguments, problem = parse_arguments(raw)
            problem = at_call(problem, position)
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if not name or not isinstance(name, str):
            name, problem = None, finding("missing_name", "the tool call has no name", position)
        if problem is None and arguments is not None and name is not None:
            read.append((ExtractedCall(call_id, name, arguments, position), None))
        else:
            where = problem or finding("malformed_json", "unreadable arguments", position)
            read.append((ExtractedCall(call_id, name or "(no name)", {}, position), where))
    return read


def at_call(problem: Finding | None, position: int) -> Finding | None:
    """A whole message's finding about its call at ``position``, naming that call.

    The argument parser's findings name no call; in a stream the gate gives them the slot,
    so a whole message's reading names the call's position the same way.
    """
    return (
        evolve(problem, slot=position) if problem is not None and problem.slot is None else problem
    )


def not_text_arguments(value: object, slot: object = None) -> Finding:
    """Why a call whose arguments must be a JSON string came with something else.

    Some OpenAI-compatible servers send ``function.arguments`` as an object: the wire
    says a JSON string, so the call is refused (``malformed_chunk``) with what came.
    """
    kind = "an object" if isinstance(value, Mapping) else type(value).__name__
    return finding(
        "malformed_chunk",
        f"function.arguments is {kind}, not a JSON string: {value!r:.60}",
        slot if type(slot) is int else None,
    )


def arguments_text(value: object) -> str:
    """A call's arguments as the text a stream carries them in (for ``replay``).

    A string is the text as received; None is no text; anything else is written as JSON,
    ``NaN`` included, so that the gate refuses a non-finite number here as in a stream. A
    value JSON cannot write gives text that is no JSON at all, which the gate refuses too.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return f"<{type(value).__name__} that JSON cannot write>"


def received_input(raw: str, initial: Any = None) -> Any:
    """An object-arguments call's input in the assembled message: never a lenient reading.

    The strictly parsed object when the text is one; else the text exactly as received
    (a refused or unfinished call), so the message handed back is refused again for the
    same reason. Empty text means the start's input, else ``{}``.
    """
    if not raw:
        return initial if initial is not None else {}
    value, _ = parse_arguments(raw)
    return value if value is not None else raw


def entry_forming(entries: Sequence[Any], name_of: Callable[[Mapping[str, Any]], Any]) -> Forming:
    """:meth:`MessageReader.forming` over a message's call entries: the last one names it."""
    calls = [e for e in entries if isinstance(e, Mapping)]
    if not calls:
        return NOT_FORMING
    name = name_of(calls[-1])
    return Forming(True, name if isinstance(name, str) and name else None)


def function_calls(tool_calls: Any, *, empty_object: bool = False) -> list[ExtractedCall]:
    """The calls of an OpenAI-shaped ``tool_calls`` list that have a name and object arguments."""
    read = read_function_calls(tool_calls, empty_object=empty_object)
    return [call for call, problem in read if problem is None]


def report_whole_arguments(
    gate: TurnGate, reported: set[int], key: int, arguments: object, word: str
) -> None:
    """Hand the gate a call's arguments that arrived whole, once, as one JSON fragment.

    For wires whose calls carry their arguments as an object (Gemini ``args``, Ollama
    ``arguments``, named by ``word``): None reports nothing; an object that JSON cannot
    write is refused (``limit_exceeded`` when it nests too deeply).
    """
    if key in reported:
        return
    reported.add(key)
    if arguments is None:
        return
    try:
        text = json.dumps(arguments, ensure_ascii=False)
    except RecursionError:
        gate.refuse("limit_exceeded", f"call {key}: {word} nest too deeply to read")
        return
    except (TypeError, ValueError) as error:
        gate.refuse("malformed_chunk", f"call {key}: {word} are not JSON data: {error}")
        return
    gate.fragment(key, text)


def text_field(
    refuse: Callable[[str, str], object], shape: Mapping[str, Any], field: str, what: str
) -> str | None:
    """A call's id or name field: a non-empty string, or None; anything else is refused."""
    value = shape.get(field)
    if isinstance(value, str):
        return value or None
    if value is not None:
        refuse("malformed_chunk", f"{what} {field} is not a string: {value!r:.40}")
    return None


class Recognizer(ABC):
    """What the chain resolves: a format that knows its own shapes by sight."""

    name: ClassVar[str]
    """The profile name (``openai``, ``anthropic``, ``hermes``, ...)."""

    @abstractmethod
    def recognizes(self, shape: Shape) -> bool:
        """Whether ``shape`` (a raw chunk or an assembled message) is this format."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class MessageReader(Recognizer):
    """Reads an assembled message: its calls, its text, and the results shaped for the next turn.

    Every strategy has this part; a text format (:mod:`callgate.strategies.text`) has only it.
    """

    leaks_into_text: ClassVar[bool] = False
    """Whether a message of this format that has no native call may carry one as text."""

    @abstractmethod
    def extract(self, message: Shape) -> list[ExtractedCall]:
        """The calls of an assembled message whose arguments parse to an object."""

    def unreadable(self, message: Shape) -> list[tuple[ExtractedCall, Finding]]:
        """The calls of ``message`` that :meth:`extract` leaves out, each with why.

        A driver answers them with a corrective result instead of running them. The
        default finds none (formats whose arguments arrive as objects rarely have any).
        """
        return []

    @abstractmethod
    def content_text(self, message: Shape) -> str:
        """The plain text content of an assembled message."""

    def forming(self, message: Shape) -> Forming:
        """Whether a call is coming in ``message`` (whole or assembled so far), and its tool.

        The default reads the calls :meth:`extract` and :meth:`unreadable` find: a
        message with any is forming, named by the last one. A wire strategy reads its own
        call entries instead (a call whose name has not streamed yet is coming, unnamed).
        """
        calls = [*self.extract(message), *(c for c, _ in self.unreadable(message))]
        if not calls:
            return NOT_FORMING
        calls.sort(key=lambda c: c.slot if isinstance(c.slot, int) else 0)
        name = calls[-1].name
        return Forming(True, name if name != "(no name)" else None)

    @abstractmethod
    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """The tool results, shaped as the messages this provider expects next."""

    def user_text(self, text: str) -> dict[str, Any]:
        """A user message of plain ``text`` as this provider takes it in a history.

        What answers the calls written in a turn's text: ``content`` as a string by
        default; a wire whose messages hold only blocks or parts says so.
        """
        return {"role": "user", "content": text}


class Steady(Protocol):
    """A buffer's common path, while it stands: what a :meth:`StreamReader.fast_add` is given."""

    live: bool
    cut: Callable[[], None] | None
    """What the buffer calls when it drops the path (the wire's closure sets it): from
    then on the closure takes no chunk itself, so it need not ask :attr:`live` per chunk."""

    def show(self, shown: str) -> None:
        """Hand the buffer text a chunk shows, one that does not end the stream."""
        ...


Acc = TypeVar("Acc")
"""A stream reader's own accumulator type (one per wire)."""


class StreamReader(Recognizer, Generic[Acc]):
    """Reassembles a wire's chunks into its stream=false message, reporting to the gate."""

    per_call_done: ClassVar[bool] = False
    """Whether the format ends each call with its own done event."""
    requires_id: ClassVar[bool] = True
    """Whether every call must carry a call id (to correlate its result)."""
    unique_ids: ClassVar[bool] = False
    """Whether the provider refuses a history in which two calls share an id, across the
    whole conversation (Anthropic: "tool_use ids must be unique"): a call whose id an
    earlier turn's history carried goes back under a stand-in id."""
    empty_arguments_object: ClassVar[bool] = False
    """Whether a call whose argument stream is empty means ``{}`` in this format."""
    reports_stray_chunks: ClassVar[bool] = False
    """Whether :meth:`accumulate` hands every chunk this format does not recognise to
    ``gate.stray()`` before reading anything of it. The buffer then checks a chunk for
    another wire's only there, off the common path; without it, on every chunk."""

    @abstractmethod
    def new_accumulator(self, gate: TurnGate) -> Acc:
        """A fresh native accumulator for one turn, reporting primitives to ``gate``."""

    @abstractmethod
    def accumulate(self, acc: Acc, chunk: Shape) -> str | None:
        """Add ``chunk`` to ``acc``; return the content text it adds for display.

        None says more than ``""``: the chunk adds no text and is certainly not the
        stream's end (:meth:`is_done` is false for it), so the buffer does not ask.
        Every text kept (display, reasoning, thinking) is first counted with
        ``gate.text()``; a text it refuses (past ``max_text_bytes``) is neither kept in
        ``acc`` nor returned, so the message and the display stay exact.
        """

    def reader(self, acc: Acc) -> Callable[[Shape], str | None]:
        """:meth:`accumulate` bound to one turn's ``acc``: what the buffer calls per chunk.

        A wire may return a closure that reads its commonest chunk with everything it
        needs at hand and hands any other chunk to :meth:`accumulate`.
        """
        return partial(self.accumulate, acc)

    def fast_add(
        self, acc: Acc, steady: Steady, rest: Callable[[object], None]
    ) -> Callable[[object], None] | None:
        """A whole ``add`` for one turn's commonest chunk, or None (the default): no such path.

        The buffer installs the closure as its own ``add`` once the stream is resolved,
        saving a call per chunk where a wire's chunks are mostly argument deltas; it asks
        only when the gate lets readers append in place (``TurnGate.appends_in_place``:
        not a recording gate) and its own class keeps :meth:`LLMStreamBuffer.add`. The
        closure takes a chunk in place only while the path stands (until ``steady.cut``,
        which it sets, is called), and then only within the slot's grant (``Slot.room``,
        see ``TurnGate.fragment``); every other chunk goes to ``rest``, the buffer's own
        path.
        """
        return None

    def whole_arguments(self, acc: Acc, key: int) -> object:
        """The arguments of call ``key`` that arrived whole and the gate has not yet, or None.

        Wires whose calls carry their arguments as an object (Gemini, Ollama) hold them
        until the turn's end; :meth:`LLMStreamBuffer.partial_calls` shows them from here
        meanwhile. A call whose arguments still stream (Gemini's ``partialArgs``) gives None.
        """
        return None

    @abstractmethod
    def is_done(self, chunk: Shape) -> bool:
        """Whether ``chunk`` is the format's stream-completion signal."""

    @abstractmethod
    def message(self, acc: Acc) -> dict[str, Any]:
        """The provider's own stream=false message for what ``acc`` holds so far."""


class ExtractionStrategy(StreamReader[Any], MessageReader):
    """One wire format's expert: recognise, reassemble, extract, shape results and history.

    Each wire names its own accumulator type in its :meth:`new_accumulator`,
    :meth:`accumulate` and :meth:`message`.
    """

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The assembled turn as this provider takes it back in the next request's history."""
        return [dict(message)]

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """The stream that assembles into ``message``: what a whole message is checked as.

        A driver given a whole message (``process_llm_response(dict)``) feeds these chunks
        through a buffer and decides on them exactly as on a stream, so both paths give
        one verdict. Every field is passed as received (arguments given as an object are
        written as JSON text, a string is sent as the text it is), so the gate refuses
        what it would refuse in a stream. A wire without a replay raises
        :class:`NotImplementedError`.
        """
        raise NotImplementedError(f"the {self.name} strategy cannot replay a message")

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> tuple[list[dict[str, Any]], list[HistoryCall]]:
        """``history`` (from :meth:`history`) as the provider accepts it, and its calls.

        The provider rejects a history whose calls lack an id or a name, or whose object
        arguments are not objects: each call of the message is paired with one of
        ``calls`` (:class:`CallPairing`) and carries what that says. Returned with the
        calls of the message, in order, each to be answered. The default leaves the
        history as it is and answers, with the ids the stream gave, every call that opened
        (one with neither id nor name never reached the message).
        """
        opened = [c for c in calls if c.given_id is not None or c.name != NO_NAME]
        return history, [evolve(c, id=c.given_id) for c in opened]
