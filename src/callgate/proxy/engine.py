"""The gateway's engine: one upstream turn in, the gated turn out, on any pair of wires.

An :class:`Engine` is made per request from its body and :class:`Options`, for a client
wire and an upstream wire (``chat``, ``messages`` or ``responses``; the upstream's
defaults to the client's). It does no I/O, in h11's shape: each upstream chunk goes to
:meth:`Engine.feed` (or a server-sent event to :meth:`Engine.feed_event`, or its bytes
out by :meth:`Engine.play`), which returns the client's chunks to send now;
:meth:`Engine.finish` returns the end. Inside, the upstream wire's reader
(:mod:`callgate.proxy.wires`) plays each chunk through the gate
(:class:`~callgate.proxy.gate.GateCore`: callgate's own buffer and dry-run driver), and
the client wire's writer writes what the display released; at the end the writer sends
the calls the gate accepted (typed :class:`~callgate.proxy.core.Call` s), a notice when
calls were withheld, and the wire's final chunks.

The API the proxy, the Envoy processor and the framework integrations drive:

- ``Engine(request, options, client=..., upstream=...)``, or the one-wire names
  :class:`GatedTurn` (Chat Completions), ``GatedMessages`` (Anthropic Messages) and
  ``GatedResponses`` (OpenAI Responses); ``RequestError`` for a request it cannot gate;
  ``prepared=False`` and then ``prepare()`` before the first chunk: the turn's buffer made
  later (the proxy makes it while the upstream is asked);
- ``feed(chunk)``, ``feed_event(event)``, ``play(event)``, ``play_bytes(data)`` and
  ``close_bytes()``, ``finish()``;
  ``whole(response)`` for a stream=false response;
- after ``finish()``: ``status``, ``findings``, ``calls``, ``withheld``, ``formats``,
  ``held``, ``audit()``;
- ``repair``: when set after ``finish()`` (``--on-blocked repair``), the final chunks were
  not sent: send ``repair`` (an upstream request) and play its answer through
  ``follow_up()``, or end with ``give_up()``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from callgate.buffer import UnreadableChunk
from callgate.proxy.core import (
    BLOCKED_MODES,
    PASSABLE,
    BlockedMode,
    Call,
    Options,
    RequestError,
    ThinkSplitter,
    driver_for,
    fresh_id,
    on_blocked,
)
from callgate.proxy.fastjson import fast_object, fast_string, strict_loads
from callgate.proxy.gate import GateCore
from callgate.proxy.normalize import Rewrite
from callgate.proxy.pinning import pin_failed_tool
from callgate.proxy.sse import DONE, SSEEvent, SSEReader, event_of
from callgate.proxy.wires import READERS, WIRES, WRITERS, notices
from callgate.proxy.wires.base import Reader, Writer
from callgate.proxy.wires.events import Event, Native, Text, Usage
from callgate.proxy.wires.forming import STRANDED_WHY
from callgate.proxy.wires.translate import PATHS, translate
from callgate.textqueue import TextQueue
from callgate.view import View

__all__ = [
    "BLOCKED_MODES",
    "ENGINES",
    "PASSABLE",
    "BlockedMode",
    "Call",
    "Engine",
    "GatedCore",
    "GatedMessages",
    "GatedResponses",
    "GatedTurn",
    "Options",
    "RequestError",
    "ThinkSplitter",
    "driver_for",
    "fresh_id",
    "on_blocked",
]


_NO_TEXT = Text("")
"""The piece of a chunk that released no text (the Chat reader gives one too)."""
_Plain = (
    tuple[bytes, bytes, int, int, bytes, bytes, TextQueue, View, Callable[[str, bool], bool]] | None
)
"""A plain text lane (:meth:`Engine._plain_lane`)."""
_clock = time.perf_counter_ns
"""The engine's CPU clock (its time per turn), one global read per call."""
_PLAIN_TOKEN = re.compile(rb'"[^"\\\x00-\x1f]+"')
"""A JSON string of one character or more that needs no escape to read."""
_STRING_TOKEN = re.compile(
    rb'"(?=[^"])[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
)
"""A JSON string of one character or more, escapes allowed: it ends at its first unescaped quote."""


class Engine(GateCore):
    """One turn through the gate, upstream wire in, client wire out (see the module)."""

    client_wire = "chat"
    """The client's wire (a class default the one-wire names set)."""
    upstream_default: str | None = None
    """The upstream's wire when none is given; None: the client's."""

    def __init__(
        self,
        request: Mapping[str, Any],
        options: Options | None = None,
        *,
        attempt: int = 0,
        continues: Engine | None = None,
        client: str | None = None,
        upstream: str | None = None,
        forms: Mapping[str, str] | None = None,
        prepared: bool = True,
    ) -> None:
        client = client or self.client_wire
        if continues is not None:
            upstream = continues.upstream_wire
        upstream = upstream or self.upstream_default or client
        for wire in (client, upstream):
            if wire not in WIRES:
                raise ValueError(f"unknown wire {wire!r}; one of: {', '.join(WIRES)}")
        self.client_wire = client
        self.upstream_wire: str = upstream
        """The upstream's wire."""
        reader_type = READERS[upstream]
        self.wire = reader_type.wire
        self.forms: Mapping[str, str] = forms or (continues.forms if continues else {})
        """Tool name -> the form the client declared it in (``local_shell``, ``custom``):
        :func:`callgate.proxy.normalize.client_forms`; a call goes back in that form."""
        self.rewrites: list[Rewrite] = []
        """What the translation to the upstream's wire left out or moved (none on one wire)."""
        if continues is None:
            self.client_request: Mapping[str, Any] = request
            _check_request(client, request)
            request = translate(client, upstream, request, self.rewrites)
        else:
            self.client_request = continues.client_request
            self.rewrites = continues.rewrites
        super().__init__(request, options, attempt, prepared=prepared)
        self.head: Native | None = None
        """The upstream's envelope or message start, as it came."""
        self.usage: Usage | None = None
        self.usage_alone = False
        """Whether the upstream sent its usage in a chunk of its own."""
        self.finish_kind: str | None = None
        """The upstream's finish as a neutral kind (``stop``, ``length``, ``tool_calls``...)."""
        self.stop_sequence: Any = None
        self.reader: Reader = reader_type(self)
        self.writer: Writer = continues.writer if continues is not None else WRITERS[client](self)
        self.writer.engine = self
        self._echo = continues.released if continues is not None else ""
        """What the answer this one repairs showed: its repeat is not shown again."""
        self._echo_at: int | None = 0 if self._echo else None
        self._released: list[str] = []
        self._sse = SSEReader()
        """The upstream's event stream as :meth:`play_bytes` reads it."""
        self._named = client != "chat"
        """Whether the client's events are named (an upstream event's name may go with it)."""
        self._shape: tuple[bytes, bytes, bool] | None = None
        """The bytes before and after the text of a plain text frame, and whether it was echoed
        (see :meth:`_learn`)."""
        self._plain_seen = False
        """Whether a plain text frame went through (:meth:`_learn` learns from the next)."""
        self._lane: tuple[bytes, bytes, bool] | None = None
        """A read that is one frame of the learned shape (its bytes before the text, after it
        with the empty line, and whether it is echoed), while the event reader holds
        nothing: :meth:`play_bytes` plays it without splitting it into frames."""

    # -- the stream -------------------------------------------------------------------

    def feed(self, chunk: object) -> list[dict[str, Any]]:
        """One upstream chunk or event (a parsed ``data:`` payload): what to send now.

        An event that ends the stream by itself (Anthropic's ``message_stop``, the
        Responses API's ``response.completed``) finishes the turn here too.
        """
        if self.finished:
            return []
        started = time.perf_counter_ns()
        out = self.writer.write(self._read(chunk))
        self.cpu_ns += time.perf_counter_ns() - started
        if self.reader.ends(chunk):
            out += self.finish()
        return out

    def feed_unchanged(self, chunk: dict[str, Any]) -> list[dict[str, Any]] | None:
        """:meth:`feed`, or None when the one chunk to send now is ``chunk`` itself.

        None: the client's chunk equals the upstream's (as JSON), so a caller holding its
        own object of that chunk (a framework's) hands that on instead of building one.
        """
        if self.finished:
            return []
        started = time.perf_counter_ns()
        text = self.writer.echoes(chunk) if self._echo_at is None else None
        if text is not None:
            played = self._echoed(chunk, text)
            out = None if played is None else self.writer.write_unchanged(played, chunk)
            self.cpu_ns += time.perf_counter_ns() - started
            return out
        out = self.writer.write_unchanged(self._read(chunk), chunk)
        self.cpu_ns += time.perf_counter_ns() - started
        if self.reader.ends(chunk):
            return [chunk, *self.finish()] if out is None else out + self.finish()
        return out

    def play(self, event: SSEEvent) -> bytes:
        """One server-sent event of the upstream as the bytes to send the client now."""
        if event.broken is not None or self.finished:
            return b"".join(self.encode(c) for c in self.feed_event(event))
        try:
            chunk = strict_loads(event.data)
        except ValueError:  # [DONE], or not JSON: feed_event says which
            return b"".join(self.encode(c) for c in self.feed_event(event))
        started = time.perf_counter_ns()
        out = self.writer.play(self._read(chunk))
        self.cpu_ns += time.perf_counter_ns() - started
        if self.reader.ends(chunk):
            out += b"".join(self.encode(c) for c in self.finish())
        return out

    def play_bytes(self, data: bytes) -> bytes:
        """One read of the upstream's event stream (cut anywhere) as the bytes to send now.

        An event the client receives exactly as the upstream wrote it (equal as JSON: on
        one wire, a chunk the display released unchanged) goes out as the upstream's own
        bytes, and a read made only of such events goes out as it came.
        """
        plain = self._plain  # (slices compared: cheaper than startswith and endswith calls)
        if plain is not None and data[: plain[2]] == plain[0] and data[plain[3] :] == plain[1]:
            started = _clock()
            inner = data[plain[2] : plain[3]]  # the JSON string's inside, if it is one
            try:
                piece = inner.decode()  # (UTF-8, strict: its fast path, no codec lookup)
            except UnicodeDecodeError:
                piece = ""
            queue = plain[6]
            detector = queue.detector
            if (
                piece
                and '"' not in piece  # the string's own end is the frame's
                and "\\" not in piece  # no escape: the bytes are the text
                and piece.isprintable()  # no control character (nor other rare ones)
                and not self.finished
                and queue is self.buffer.text_queue
                and plain[7].reply is not None  # the driver's view is quiet
                and (detector is None or detector.block is None)
                and plain[8](piece, True)  # the buffer's _take_plain
            ):
                self.chunks += 1
                self._released.append(piece)
                out = plain[4] + inner + plain[5]
                self.cpu_ns += _clock() - started
                return out
        lane = self._lane
        if lane is not None and data.startswith(lane[0]) and data.endswith(lane[1]):
            token = data[len(lane[0]) : -len(lane[1])]  # (the tail ends a frame: never empty)
            text = self._shaped(token)
            if text is not None:
                if lane[2]:  # an echoing writer sends no empty delta: held, nothing
                    return data if text else b""
                return self.writer.play_text(text)
            end = len(data) - 2  # one data line (no line end before its own), so one frame
            if data.find(b"\n", 0, end) < 0 and data.find(b"\r", 0, end) < 0:
                one = self._unshaped(data[:-2])
                return data if one is None else one
        sse = self._sse
        frames = sse.frames(data, named=self._named)
        if frames is None:
            self._lane = self._plain = None
            return b"".join([self.play(event) for event in sse.events(data)])
        if lane is None and self._shape is not None:
            head, tail, echoed = self._shape
            self._lane = (head, tail + b"\n\n", echoed)
            if not echoed and self.wire == "openai" and self.plain_path and self._echo_at is None:
                # (no repeat to skip, now or later)
                self._plain = self._plain_lane(head, tail + b"\n\n", self.writer.text_frame())
        if len(frames) == 1:  # one event per read, as a model server writes them
            one = self.play_frame(frames[0])
            return data if one is None else one
        played = [self.play_frame(frame) for frame in frames]
        if played.count(None) == len(played):
            return data
        return b"".join(
            [f + b"\n\n" if p is None else p for f, p in zip(frames, played, strict=True)]
        )

    def _plain_lane(self, head: bytes, tail: bytes, around: tuple[bytes, bytes] | None) -> _Plain:
        """What :meth:`play_bytes` needs to play a read of the lane whose text is plain.

        The bytes before and after the text inside its JSON string's quotes and where the
        text starts and ends (the end counted from the read's end), the writer's bytes
        around it, the turn's text queue and the driver's view of it (both stay for the
        turn) and the buffer's ``_take_plain``; None where the writer writes text otherwise
        (``around`` None: :meth:`Writer.text_frame`), or no view is made yet.
        """
        queue = self.buffer.text_queue
        view = queue.views.get(self.driver)
        if around is None or view is None:
            return None
        head, tail = head + b'"', b'"' + tail
        take = self.buffer._take_plain  # (bound once: the buffer's many fields slow its lookup)
        return (
            head,
            tail,
            len(head),
            -len(tail),
            around[0] + b'"',
            b'"' + around[1],
            queue,
            view,
            take,
        )

    def close_bytes(self) -> bytes:
        """The end of the upstream's event stream: an event it left open, played."""
        self._lane = self._plain = None
        return b"".join([self.play(event) for event in self._sse.close()])

    def play_frame(self, frame: bytes) -> bytes | None:
        """One event of one ``data:`` line (without its empty line): the bytes to send.

        The line may follow an ``event:`` line naming the event (:meth:`SSEReader.frames`).
        None: send ``frame`` as it came, for the client's event is the upstream's own
        (see :meth:`play_bytes`). Anything but a JSON object goes through :meth:`play`.
        """
        shape = self._shape
        if shape is not None and frame.startswith(shape[0]) and frame.endswith(shape[1]):
            text = self._shaped(frame[len(shape[0]) : len(frame) - len(shape[1])])
            if text:
                return None if shape[2] else self.writer.play_text(text)
            if text is not None:  # held in an open call block
                return self.writer.play_text("")
        return self._unshaped(frame)

    def _unshaped(self, frame: bytes) -> bytes | None:
        """:meth:`play_frame` for a frame its learned shape did not take."""
        name = b""
        payload = frame[6:]
        if frame[:1] == b"e":  # event: NAME, then the data line
            cut = frame.index(b"\n")
            name, payload = frame[7:cut], frame[cut + 7 :]
        if payload == b"[DONE]":  # the stream's own end, as feed_event reads it
            return b"".join([self.encode(c) for c in self.finish(clean=True)])
        chunk = None if self.finished else fast_object(payload)
        if chunk is None:
            return self.play(event_of(payload, name))
        started = time.perf_counter_ns()
        text = None
        if self._echo_at is None and (not self._named or name == _name_of(chunk)):
            text = self.writer.echoes(chunk)
        if text is not None:
            played = self._echoed(chunk, text)
            out = None if played is None else self.writer.play_unchanged(played, chunk)
            self.cpu_ns += time.perf_counter_ns() - started
            if played is None and self._shape is None and self.writer.shaped:
                self._learn(frame, text, echoed=True)
            return out
        plain = self.reader.plain(chunk) if self._echo_at is None else None
        if plain is not None:  # text alone, which the writer writes its own way
            shown = self.step_text(chunk, plain)
            if shown is not None:
                self._released.append(shown)
            out = self.writer.play([] if shown is None else [Text(shown) if shown else _NO_TEXT])
            self.cpu_ns += time.perf_counter_ns() - started
            if shown == plain and self._shape is None and self.reader.shaped:
                self._learn(frame, plain, echoed=False)
            return out
        out = self.writer.play_unchanged(self._read(chunk), chunk)
        self.cpu_ns += time.perf_counter_ns() - started
        if self.reader.ends(chunk):
            end = b"".join(self.encode(c) for c in self.finish())
            out = (frame + b"\n\n" if out is None else out) + end
        return out

    _plain: _Plain = None
    """The read of a plain text frame on :attr:`_lane`, when the writer writes it on fixed
    bytes (:meth:`_plain_lane`): :meth:`play_bytes` plays it without splitting it."""

    shape_path = True
    """Whether :meth:`play_frame` may read a text frame by its learned shape (the tests compare)."""

    def _learn(self, frame: bytes, text: str, *, echoed: bool) -> None:
        """Keep the bytes around ``text`` in ``frame``, a plain text frame, when they tell its text.

        A later frame with the same bytes before and after a JSON string is then the same
        chunk with that string as its text (a frame is tokenized from its start, and a
        string's end is its first unescaped quote): :meth:`_shaped` takes it without parsing
        the frame (a string with escapes is parsed alone, by the frame's own parser). The
        reader (or the echoing writer) must say so of two probes, each read back as its own
        text, or nothing is kept. The first plain text frame of a turn is only counted: the
        shape is learned from the second (a turn of one text chunk, a common short answer,
        would never read a frame by it).
        """
        if not self.shape_path or frame[:6] != b"data: ":
            return
        if not self._plain_seen:
            self._plain_seen = True
            return
        try:
            token = b'"' + text.encode("utf-8") + b'"'
        except UnicodeEncodeError:  # a lone surrogate
            return
        at = frame.rfind(token)
        if at < 0 or _PLAIN_TOKEN.fullmatch(token) is None:
            return
        head, tail = frame[:at], frame[at + len(token) :]
        ask = self.writer.echoes if echoed else self.reader.plain
        for probe in ("a", "b"):
            chunk = fast_object(head[6:] + b'"' + probe.encode() + b'"' + tail)
            if chunk is None or ask(chunk) != probe:
                return
        self._shape = (head, tail, echoed)

    def _shaped(self, token: bytes) -> str | None:
        """The text a frame of the learned shape released, when the gate's text step took it.

        Its text as it came, or '' when an open call block holds it; None (nothing taken):
        the frame goes the general way.
        """
        if (
            self.finished
            or self._echo_at is not None
            or self.wire != "openai"
            or _STRING_TOKEN.fullmatch(token) is None
        ):
            return None
        started = time.perf_counter_ns()
        if b"\\" in token:
            text = fast_string(token)
            if text is None:
                return None
        else:
            try:
                text = token[1:-1].decode("utf-8")
            except UnicodeDecodeError:
                return None
        shown = self._quick(text) if self.plain_path else None
        if shown is None:
            return None
        self.chunks += 1
        self._released.append(shown)
        self.cpu_ns += time.perf_counter_ns() - started
        return shown

    def _echoed(self, chunk: dict[str, Any], text: str) -> list[Event] | None:
        """A chunk the writer echoes (its only piece ``text``) through the gate.

        None when the display released ``text`` as it came (the chunk goes back as it
        is), else the pieces the reader reads of it. Such a chunk never ends a stream.
        """
        shown = self.step_text(chunk, text)
        if shown is None:
            return []
        self._released.append(shown)
        return None if shown == text else [Text(shown)]

    def _read(self, chunk: object) -> list[Event]:
        events = self.reader.read(chunk)
        for event in events:
            if type(event) is Text:
                self._released.append(event.text)
        if self._echo_at is None:
            return events
        return [e for e in (self._unechoed(e) for e in events) if e is not None]

    def _unechoed(self, event: Event) -> Event | None:
        """A repair's answer: text that repeats what the attempt before showed is not sent."""
        if type(event) is not Text or self._echo_at is None:
            return event
        text = self._unechoed_text(event.text)
        return Text(text) if text else None

    def _unechoed_text(self, text: str) -> str:
        at = self._echo_at
        if at is None:
            return text
        echo = self._echo
        same = 0
        while same < len(text) and at + same < len(echo) and text[same] == echo[at + same]:
            same += 1
        if same == len(text):
            self._echo_at = at + same
            return ""
        self._echo_at = None
        return text[same:]

    @property
    def released(self) -> str:
        """The text the display released in this turn (what the upstream's answer showed)."""
        return "".join(self._released)

    def feed_event(self, event: SSEEvent) -> list[dict[str, Any]]:
        """One server-sent event of the upstream: ``[DONE]`` ends, data is a chunk."""
        if event.broken is not None:
            return self.feed_unreadable(event.broken)
        if event.data.strip() == DONE:
            return self.finish(clean=True)
        if self.finished:
            self.after_done += 1
            return []
        try:
            chunk = strict_loads(event.data)
        except ValueError:
            return self.feed_unreadable(f"an upstream event is not JSON: {event.data[:80]!r}")
        return self.feed(chunk)

    def feed_unreadable(self, reason: str) -> list[dict[str, Any]]:
        """An upstream event that could not be read: a finding that blocks the turn."""
        return self.feed(UnreadableChunk("malformed_chunk", reason))

    def finish(self, *, clean: bool = False) -> list[dict[str, Any]]:
        """The end of the upstream stream (``[DONE]``, its own end event, or it stopped).

        ``clean``: the stream's own end was seen (``[DONE]``, a whole response), so a turn
        without a finish reason ended rather than broke off. The held text, then (unless
        :attr:`repair` is set: the repaired turn continues the message) the accepted calls,
        a notice when calls were withheld, and the wire's final chunks.
        """
        if self.finished:
            return []
        started = time.perf_counter_ns()
        text = self.end(clean=clean)
        self._released.append(text)
        text = self._unechoed_text(text)
        self.finished = True
        self.settle()
        out = self.writer.flush(text)
        if self.repair is None:
            out += self._final()
        self.cpu_ns += time.perf_counter_ns() - started
        return out

    def release(self) -> None:
        """Let go of the turn's reader and writer: the turn is done (recorded, never played again).

        Both refer back to the turn (a repair's writer to the turn that follows): without
        this the turn, its buffer and everything it read (about 60 objects for a one-chunk
        turn) form a cycle that waits for the garbage collector; with it they are freed the
        moment the request drops the turn.
        """
        for part in ("reader", "writer"):
            self.__dict__.pop(part, None)

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        """One chunk as the client's server-sent event."""
        return self.writer.encode(chunk)

    @property
    def upstream_path(self) -> str:
        """The path the upstream serves this turn's wire at."""
        return PATHS[self.upstream_wire]

    @property
    def translated(self) -> bool:
        """Whether the client and the upstream speak different wires."""
        return self.client_wire != self.upstream_wire

    @property
    def done(self) -> bytes:
        """What ends the client's event stream after the last chunk (b"" on most wires)."""
        return self.writer.done

    # -- stream=false -----------------------------------------------------------------

    def whole(self, response: Mapping[str, Any], *, clean: bool = True) -> dict[str, Any]:
        """A stream=false response through the same gate: the answer the client gets.

        It is fed as the stream that makes it, so the decision is the stream's; on one
        wire the answer keeps every other field of the upstream's. ``clean``: the response
        is the upstream's own (a null finish reason then ends the turn, TGI's shape);
        False for one rebuilt where a missing reason means the evidence was lost.
        """
        return self.assemble(response, self.whole_chunks(response, clean=clean))

    def whole_chunks(self, response: object, *, clean: bool = True) -> list[dict[str, Any]]:
        """The gated chunks of a stream=false ``response`` (see :meth:`whole`)."""
        chunks = self.reader.whole(response)
        if chunks is None:
            unreadable = self.feed_unreadable(
                f"the upstream's response is not a {self.upstream_wire} answer"
            )
            return [*unreadable, *self.finish(clean=clean)]
        out: list[dict[str, Any]] = []
        for chunk in chunks:
            out += self.feed(chunk)
        return [*out, *self.finish(clean=clean)]

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false answer made of the gated ``chunks`` (this engine's own output)."""
        same = self.client_wire == self.upstream_wire and isinstance(response, Mapping)
        return self.writer.assemble(response if same else None, chunks)

    # -- repair -----------------------------------------------------------------------

    def arguments_shown(self) -> bool:
        """Whether the client's writer sent argument deltas of this turn's calls."""
        return self.writer.arguments_shown()

    def repair_request(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        """The upstream request that re-asks: the request with the turn's history after it."""
        asked = self.reader.repair_request(self.request, history)
        return pin_failed_tool(asked, self.reader.wire, self.withheld)

    def give_up(self) -> list[dict[str, Any]]:
        """The final chunks after a repair that could not be asked (a notice, no call)."""
        self.repair = None
        return self._final()

    def _final(self) -> list[dict[str, Any]]:
        """The writer's final chunks; calls it could not send then count as withheld."""
        stranded = self.writer.stranded()
        out = self.writer.final()
        if stranded:
            self.unsent(STRANDED_WHY)
        return out

    def follow_up(self) -> Self:
        """The turn that plays the upstream's answer to :attr:`repair`, continuing this one."""
        if self.repair is None:
            raise ValueError("no repair to follow up")
        return type(self)(self.repair, self.options, attempt=self.attempt + 1, continues=self)

    def notice(self) -> str:
        """The short text after the turn's own: why calls were withheld, or why it broke off.

        '' when neither (or when the withheld calls were passed or are re-asked); the words
        are :mod:`callgate.proxy.notices`'.
        """
        if self.broken is not None and self.repair is None:
            return notices.broken(self.broken)
        if self.passed or self.repair is not None:
            return ""
        return notices.withheld(self)


GatedCore = Engine
"""The engine's former name, for callers that typed a turn of any wire by it."""


class GatedTurn(Engine):
    """A turn whose client speaks OpenAI Chat Completions (chunks in, gated chunks out)."""

    client_wire = "chat"


class GatedMessages(Engine):
    """A turn whose client speaks Anthropic Messages (events in, gated events out)."""

    client_wire = "messages"


class GatedResponses(Engine):
    """A turn whose client speaks the OpenAI Responses API (events in, gated events out)."""

    client_wire = "responses"


ENGINES: dict[str, type[Engine]] = {
    "chat": GatedTurn,
    "messages": GatedMessages,
    "responses": GatedResponses,
}
"""The engine of each client wire."""


def _check_request(client: str, request: Mapping[str, Any]) -> None:
    """A request the engine cannot gate on its client wire: RequestError (a 400)."""
    n = request.get("n")
    if client == "chat" and n is not None and n != 1:
        raise RequestError("callgate gates one choice per request: send n=1 or none")
    other = _wire_of(request)
    if other is not None and other != client:
        raise RequestError(
            f"this body is a request of the {_NAMES[other]} API, sent to the "
            f"{_NAMES[client]} path; send it to {PATHS[other]}"
        )


def _name_of(chunk: Mapping[str, Any]) -> bytes | None:
    """The event name a named wire gives ``chunk``: its ``type`` (None: it has none)."""
    kind = chunk.get("type")
    return kind.encode("utf-8", "surrogatepass") if type(kind) is str else None


_NAMES = {"chat": "Chat Completions", "messages": "Anthropic Messages", "responses": "Responses"}


def _wire_of(request: Mapping[str, Any]) -> str | None:
    """The wire a request body plainly belongs to, by fields only one wire has (else None)."""
    if "input" in request and "messages" not in request:
        return "responses"
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    if "system" in request or "stop_sequences" in request:
        return "messages"
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if message.get("role") in ("system", "developer", "tool") or "tool_calls" in message:
            return "chat"
        content = message.get("content")
        kinds = (
            {p.get("type") for p in content if isinstance(p, Mapping)}
            if isinstance(content, list)
            else set()
        )
        if kinds & {"tool_use", "tool_result", "image"}:
            return "messages"
        if kinds & {"image_url"}:
            return "chat"
    return None
