"""What every wire gives the engine: a reader of its upstream stream, a writer to its clients.

A :class:`Reader` plays each upstream chunk of its wire through the engine's gate and
returns the pieces (:mod:`~callgate.proxy.wires.events`) to send; it records the
wire-neutral facts of the turn on the engine (its head, usage and finish). A
:class:`Writer` turns those pieces, then the gate's decision, into its wire's chunks. The
readers and writers do no I/O: the engine is handed parsed chunks and returns chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from callgate.driver.drivers import Driver
from callgate.gate.turn import CallRef
from callgate.proxy.core import Call, Options
from callgate.proxy.sse import encode
from callgate.proxy.wires.events import Event, Native, Text, Usage

__all__ = ["CUT", "Host", "Reader", "Writer"]


class Host(Protocol):
    """What a reader and a writer see of the engine that drives them (its host)."""

    options: Options
    driver: Driver
    client_request: Mapping[str, Any]
    """The request as the client sent it."""
    forms: Mapping[str, str]
    """Tool name -> the non-function form the client declared it in."""
    head: Native | None
    usage: Usage | None
    usage_alone: bool
    upstream_finish: str | None
    finish_kind: str | None
    cut: bool
    stop_sequence: Any
    calls: list[Call]
    broken: str | None
    reader: Reader

    def step(self, chunk: object) -> str | None:
        """Play one upstream chunk through the gate: the text released (None once dead)."""

    def notice(self) -> str:
        """The text after the turn's own: why calls were withheld, or why it broke off."""

    def annotation(self) -> dict[str, Any]:
        """The ``callgate`` field of the turn's end."""

    def text_call_id(self, ref: CallRef | None) -> str:
        """The one id of a text call, its forming deltas' and its release's alike."""


CUT = frozenset({"length", "content_filter", "refusal"})
"""Neutral finish kinds that cut a turn: nothing of it may become a call."""


class Reader:
    """An upstream wire's reader (see the module); one per turn."""

    wire = ""
    """The library's strategy name of this wire."""
    finishes: ClassVar[Mapping[str, str]] = {}
    """The wire's finish or stop reasons as neutral kinds (others stay as they are)."""

    shaped = False
    """Whether :meth:`plain`'s text, once given, is given of every chunk that differs only in it."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine

    def read(self, chunk: object) -> list[Event]:
        """Play one upstream chunk through the gate: the pieces to send for it."""
        raise NotImplementedError

    def plain(self, chunk: dict[str, Any]) -> str | None:
        """The text of ``chunk`` when :meth:`read` would read it as that text alone.

        Such a chunk is played by the gate's text step and handed to the writer as one
        :class:`~callgate.proxy.wires.events.Text`; None (a wire without the shortcut, or
        any other chunk): :meth:`read` plays it.
        """
        del chunk
        return None

    def ends(self, chunk: object) -> bool:
        """Whether ``chunk`` ends the stream by itself (no ``[DONE]`` follows on its wire)."""
        del chunk
        return False

    def whole(self, response: object) -> list[Any] | None:
        """The chunks that stream a stream=false ``response`` (None: not this wire's answer)."""
        raise NotImplementedError

    def finish_as(self, reason: str) -> None:
        """Record the upstream's finish ``reason`` and whether it cut the turn."""
        engine = self.engine
        engine.upstream_finish = reason
        engine.finish_kind = self.finishes.get(reason, reason)
        engine.cut = engine.finish_kind in CUT

    def repair_request(
        self, request: Mapping[str, Any], history: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The request that re-asks: ``request`` with the turn's ``history`` after its messages."""
        messages = request.get("messages")
        before = list(messages) if isinstance(messages, list) else []
        return {**request, "messages": [*before, *history]}


class Writer:
    """A client wire's writer (see the module); one per exchange, kept across repairs."""

    wire = ""
    """The library's strategy name of this wire (a reader of it has the same)."""
    done: bytes = b""
    """What ends the client's stream after the last chunk (Chat Completions' ``[DONE]``)."""
    call_end = ""
    """The wire's finish of a turn whose calls were sent."""
    plain_end = ""
    """The wire's finish of a turn that ended as the model chose, without calls."""
    error_end = "error"
    """The wire's finish of a turn the upstream broke off."""
    kinds: ClassVar[Mapping[str, str]] = {}
    """Neutral finish kinds as the wire's own (any other: :attr:`plain_end`)."""
    text_id_prefix = "call_"
    """How the wire's ids of calls begin (a text call's id is made in this form)."""

    shaped = False
    """Whether :meth:`echoes`' text, once given, is given of every chunk that differs only in it."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine

    def write(self, events: Sequence[Event]) -> list[dict[str, Any]]:
        """The client's chunks for the pieces of one upstream chunk."""
        raise NotImplementedError

    def play(self, events: Sequence[Event]) -> bytes:
        """:meth:`write` as the bytes of the client's events (a wire may write them faster)."""
        return b"".join(self.encode(c) for c in self.write(events))

    def play_text(self, text: str) -> bytes:
        """:meth:`play` of one piece of released text ('': text held, nothing released)."""
        return Writer.play(self, [Text(text)])

    def text_frame(self) -> tuple[bytes, bytes] | None:
        """The bytes :meth:`play_text` writes around a text's JSON string, where they are fixed.

        For a text that needs no escape in JSON, ``play_text(text)`` is then the first,
        ``"text"`` and the second (the engine writes it so without a call); None where the
        writer writes text otherwise (this wire's, or the turn's state).
        """
        return None

    def echoes(self, chunk: Mapping[str, Any]) -> str | None:
        """The text of an upstream ``chunk`` this writer sends back as it came, if shown as is.

        A chunk of one wire that carries nothing but text, on a turn where the writer adds
        nothing to such a chunk; None for any other (the reader and writer then play it).
        """
        del chunk
        return None

    def write_unchanged(
        self, events: Sequence[Event], chunk: Mapping[str, Any]
    ) -> list[dict[str, Any]] | None:
        """:meth:`write`, or None when the one chunk to send is the upstream's ``chunk`` itself.

        None: equal as JSON, so a caller may hand on its own object of it. A wire whose
        writer cannot tell gives :meth:`write`'s chunks.
        """
        del chunk
        return self.write(events)

    def play_unchanged(self, events: Sequence[Event], chunk: Mapping[str, Any]) -> bytes | None:
        """:meth:`play`, or None when the client's event is the upstream's ``chunk`` itself.

        None: equal as JSON, so it is sent as the upstream wrote it. A wire whose writer
        cannot tell gives :meth:`play`'s bytes.
        """
        del chunk
        return self.play(events)

    def arguments_shown(self) -> bool:
        """Whether this turn sent the client argument deltas of a call (``stream_args``)."""
        return False

    def stranded(self) -> bool:
        """Whether :meth:`final` sends none of the turn's calls, though the gate accepted some.

        A wire whose message keeps every argument delta it got cannot finish the calls
        beside one shown as it formed and then withheld.
        """
        return False

    def flush(self, text: str) -> list[dict[str, Any]]:
        """The text released at the end, and any reasoning tail held back."""
        raise NotImplementedError

    def final(self) -> list[dict[str, Any]]:
        """The gate's calls, the notice, and the chunks that end the client's turn."""
        raise NotImplementedError

    def finish_reason(self) -> str:
        """The turn's finish on this wire: the call ending only when calls were sent.

        On the upstream's own wire its reason is kept as it came (its call ending, with
        no call sent, becomes the plain end); across wires the neutral kind is mapped.
        """
        engine = self.engine
        if engine.calls:
            return self.call_end
        if engine.broken is not None:
            return self.error_end
        reason, kind = engine.upstream_finish, engine.finish_kind
        if reason is None or kind == "tool_calls":
            return self.plain_end
        if engine.reader.wire == self.wire:
            return reason
        return self.kinds.get(str(kind), self.plain_end)

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false answer made of this writer's own ``chunks``.

        ``response`` is the upstream's answer when it is on this wire (its other fields
        are kept), else None.
        """
        raise NotImplementedError

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        """One chunk as the client's server-sent event."""
        return encode(chunk)
