"""The shape every format expert has: :class:`ExtractionStrategy` and what it returns.

A strategy owns one format end to end, in that format's own native shape: it recognises
the format's chunks and messages, reassembles chunks into the provider's stream=false
message, reports each tool-call primitive (slot, identity, fragment, done) to the turn's
:class:`~callgate.gate.TurnGate`, and reads calls and text back out of the message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from attrs import frozen

from callgate.findings import Finding, finding
from callgate.strictjson import parse_arguments

if TYPE_CHECKING:
    from callgate.gate import TurnGate

Shape = Mapping[str, Any]
"""A raw chunk or event, or an assembled message, as plain data."""


@frozen
class ExtractedCall:
    """One tool call read from an assembled message."""

    id: str | None
    name: str
    arguments: dict[str, Any]
    slot: int | str | None = None


@frozen
class Forming:
    """Whether a call is coming in a message being assembled, and its name once known."""

    forming: bool
    name: str | None = None


@frozen
class ToolResult:
    """The outcome of one executed call, to be shaped into the provider's next message."""

    call: ExtractedCall
    content: str
    is_error: bool = False
    refused: bool = False
    """The call was not run: the content is a corrective message the model can retry against."""


@frozen
class HistoryCall:
    """One native call of an assistant turn as the next request must carry it.

    ``id`` and ``name`` are never empty (a call that lost its id gets :func:`stand_in_id`),
    and ``arguments`` is None when the call's arguments are not one JSON object: it then
    goes back as ``{}``, and its answer quotes what was received.
    """

    slot: int | str
    id: str
    name: str
    arguments: dict[str, Any] | None


def stand_in_id(slot: int | str) -> str:
    """The id a call without a usable one (none, empty, or another call's) carries back."""
    return f"callgate_{slot}"


def read_function_calls(tool_calls: Any) -> list[tuple[ExtractedCall, Finding | None]]:
    """Every call of an OpenAI-shaped ``tool_calls`` list, with why it cannot run (or None).

    Shared by the formats that assemble that shape (OpenAI Chat Completions, Cohere v2);
    ``function.arguments`` is a JSON string, read strictly. A call that cannot run keeps
    its id and name (``"(no name)"`` when it has none) and empty arguments.
    """
    read: list[tuple[ExtractedCall, Finding | None]] = []
    for position, call in enumerate(tool_calls or ()):
        function = call.get("function") or {}
        name = function.get("name")
        arguments, problem = parse_arguments(function.get("arguments") or "")
        if not name or not isinstance(name, str):
            name, problem = None, finding("missing_name", "the tool call has no name", position)
        if problem is None and arguments is not None and name is not None:
            read.append((ExtractedCall(call.get("id"), name, arguments, position), None))
        else:
            where = problem or finding("malformed_json", "unreadable arguments", position)
            read.append((ExtractedCall(call.get("id"), name or "(no name)", {}, position), where))
    return read


def function_calls(tool_calls: Any) -> list[ExtractedCall]:
    """The calls of an OpenAI-shaped ``tool_calls`` list that have a name and object arguments."""
    return [call for call, problem in read_function_calls(tool_calls) if problem is None]


class ExtractionStrategy(ABC):
    """One format's expert: recognise, reassemble, extract, and shape results."""

    name: ClassVar[str]
    """The profile name (``openai``, ``anthropic``, ...)."""
    leaks_into_text: ClassVar[bool] = False
    """Whether a message of this format that has no native call may carry one as text."""
    per_call_done: ClassVar[bool] = False
    """Whether the format ends each call with its own done event."""
    requires_id: ClassVar[bool] = True
    """Whether every call must carry a call id (to correlate its result)."""
    empty_arguments_object: ClassVar[bool] = False
    """Whether a call whose argument stream is empty means ``{}`` in this format."""

    @abstractmethod
    def recognizes(self, shape: Shape) -> bool:
        """Whether ``shape`` (a raw chunk or an assembled message) is this format."""

    @abstractmethod
    def new_accumulator(self, gate: TurnGate) -> Any:
        """A fresh native accumulator for one turn, reporting primitives to ``gate``."""

    @abstractmethod
    def accumulate(self, acc: Any, chunk: Shape) -> str:
        """Add ``chunk`` to ``acc``; return the content text it adds for display."""

    @abstractmethod
    def is_done(self, chunk: Shape) -> bool:
        """Whether ``chunk`` is the format's stream-completion signal."""

    @abstractmethod
    def message(self, acc: Any) -> dict[str, Any]:
        """The provider's own stream=false message for what ``acc`` holds so far."""

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

    @abstractmethod
    def forming(self, message: Shape) -> Forming:
        """Whether a call is forming in ``message``, and its name if it has streamed."""

    @abstractmethod
    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """The tool results, shaped as the messages this provider expects next."""

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """The assembled turn as this provider takes it back in the next request's history."""
        return [dict(message)]

    def answerable(
        self, history: list[dict[str, Any]], calls: Sequence[HistoryCall]
    ) -> list[dict[str, Any]]:
        """``history`` (from :meth:`history`) with its native calls as ``calls`` say.

        The provider rejects a history whose calls lack an id or a name, or whose object
        arguments are not objects; ``calls`` (in message order) give what each must carry.
        The default leaves the history as it is.
        """
        return history

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
