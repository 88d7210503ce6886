"""A wire as one data record: everything callgate knows of a provider's stream, by field.

Each wire's module (``strategies/<wire>.py``) ends with its :class:`Wire`; the package
(:mod:`callgate.strategies`) lists the records once, and every table keyed by a wire's
profile name (the strategies, the recognition order, the tool specs, the testing kit's
encoders, quirks, SDK forms and byte framing) is read from them. The reader itself (how
chunks accumulate, the accumulator, the history and answer shapes) stays the strategy's
code: the record names the strategy class, and the strategy's ClassVars
(``requires_id``, ``unique_ids``, ``per_call_done``, ``leaks_into_text``,
``empty_arguments_object``, ``reports_stray_chunks``) are read through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

if TYPE_CHECKING:
    from callgate.strategies.base import ExtractionStrategy

ToolSpec = Callable[[str, str, Mapping[str, Any]], dict[str, Any]]
"""A tool (name, description, JSON Schema of its arguments) as one entry of a request."""


@frozen
class Terminal:
    """How a turn of the wire ends: where the reason is, and which reasons end it how.

    Every reason is spelled as the strategy reports it to the gate (``done_reason``). A
    reason in :attr:`calls_end` ends the turn's calls normally; one in :attr:`lenient`
    does too, with a warning, unless ``strict_finish`` refuses it; any other reason cuts
    the turn (its calls are refused as ``wrong_terminal_reason``). :attr:`length` and
    :attr:`filtered` are the cuts the provider documents, as
    :mod:`callgate.strategies.text.defaults` reads them for text calls.
    """

    field: str
    """Where the reason is read, in the wire's own field names."""
    calls_end: frozenset[str | None]
    """The reasons under which a turn's calls are complete (None: the field is absent)."""
    lenient: frozenset[str] = frozenset()
    """Reasons that end the calls with a warning (refused under ``strict_finish``)."""
    length: frozenset[str] = frozenset()
    """Reasons that say a length limit cut the turn."""
    filtered: frozenset[str] = frozenset()
    """Reasons that say a filter stopped the turn."""

    @property
    def cuts(self) -> frozenset[str]:
        """Every documented reason that cuts the turn."""
        return self.length | self.filtered


@frozen
class SdkForm:
    """How the provider's official SDK types one chunk (the testing kit's ``form="sdk"``)."""

    package: str
    """The pip package that holds the types."""
    stream_type: str
    """The type of one streamed chunk, as ``module:Name``."""
    construct: bool = False
    """Built as that client builds it, without validation (the package's
    ``_models.construct_type``); otherwise validated with pydantic, as the client does."""


@frozen
class Framing:
    """The bytes a client reads: server-sent events or JSON lines, and any end marker."""

    events: Literal["sse", "lines"] = "sse"
    """``sse``: ``data:`` events; ``lines``: one JSON object a line."""
    named: bool = False
    """Each event is named by its chunk's ``type`` (``event: …``)."""
    newline: str = "\n"
    """The line end between an event's lines (Gemini's ``alt=sse`` writes CRLF)."""
    done: str | None = None
    """The data of a last event that closes the stream (OpenAI's ``[DONE]``)."""


@frozen
class Wire:
    """One provider's wire: its profile name, its reader, and the facts keyed by its name."""

    name: str
    """The profile name: the command line's ``--profile``, a fixture's ``profile``."""
    strategy: type[ExtractionStrategy]
    """The strategy class: recognition, accumulation, the message, answers and history."""
    recognition: int | None
    """Its place in automatic recognition (lowest first); None: chosen by name only."""
    terminal: Terminal
    """Which turn endings are normal and which cut the turn."""
    tool_spec: ToolSpec
    """A tool as this provider's request lists it."""
    tools_key: str | None = None
    """The key of the one tool that holds every spec (Gemini's ``functionDeclarations``);
    None: the request's ``tools`` list holds one entry per tool."""
    quirks: tuple[str, ...] = ()
    """The documented quirks of real providers the testing kit reproduces."""
    leaks: tuple[str, ...] = ()
    """Text formats this wire's models write into text whatever the model name."""
    sdk: SdkForm | None = None
    """The SDK type of one chunk; None: the SDK yields plain dicts (boto3)."""
    framing: Framing = Framing()
    """How the stream's bytes frame its chunks."""
    systems: tuple[str, ...] = ()
    """Framework names of this provider (pydantic-ai's ``system``) that mean this wire."""

    def tools(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Tool specs as the request's ``tools`` list: wrapped in one tool if the wire says."""
        if self.tools_key is None or not specs:
            return specs
        return [{self.tools_key: specs}]

    def __repr__(self) -> str:
        return f"<Wire {self.name!r}>"


def chat_tool_spec(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool as Chat Completions lists it (also Mistral, Cohere v2 and Ollama)."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": dict(schema)},
    }
