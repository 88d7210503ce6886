"""The buffer's turn reader: a turn's raw chunks, read through the wire's strategy into the gate.

Part of :class:`~callgate.buffer.LLMStreamBuffer` (its public names stay there): the first
chunk resolves the wire and starts the turn's gate; each chunk is read by the common path
(:meth:`TurnReader.add`, once the stream is resolved) or with every check in turn
(:meth:`TurnReader._add`); a chunk that cannot be read, or is another wire's, blocks the
turn; :meth:`TurnReader.end` settles every slot and the turn.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from callgate.chain import ExtractionChain
from callgate.errors import BufferUsageError, UnrecognizedStreamError
from callgate.fsm.release import Policy
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import Changes, TurnGate
from callgate.partial import PartialCalls
from callgate.strategies.base import ExtractionStrategy, Shape
from callgate.textqueue import TextQueue
from callgate.view import TextBlock

_UNREADABLE = (TypeError, AttributeError, KeyError, IndexError, ValueError)
"""What a strategy raises on a chunk whose fields have the wrong types: the buffer fails
closed (``malformed_chunk`` blocks the turn) instead of letting the stream crash the caller."""


def _error_frame(shape: Shape) -> bool:
    """A bare ``{"error": {...}}`` frame: several wires send one mid-stream, each its own."""
    return len(shape) == 1 and isinstance(shape.get("error"), Mapping)


class UnreadableChunk(dict[str, Any]):
    """A recorded chunk that could not be read (not JSON, not an object, a repeated key).

    A capture reader puts one in the unreadable chunk's place; the buffer reports it as a
    finding (``code``: ``malformed_chunk`` or ``duplicate_key``) that blocks the turn, and
    the rest of the stream is still read. It is a dict so that it prints as JSON.
    """

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(unreadable=reason, code=code)

    @property
    def code(self) -> str:
        """The finding code the buffer reports."""
        return str(self["code"])

    @property
    def reason(self) -> str:
        """Why the chunk could not be read, and where it was."""
        return str(self["unreadable"])


class _Strayed(Exception):
    """Raised through a strategy's unknown-event path: the buffer dealt with the chunk.

    ``wrapped`` is an SDK helper event's raw chunk, to read in its place; None: nothing
    more is read from the chunk.
    """

    def __init__(self, wrapped: Shape | None) -> None:
        super().__init__()
        self.wrapped = wrapped


class _Steady:
    """What the common path reads a chunk with, once the stream is resolved."""

    __slots__ = ("cut", "fast", "gate", "live", "read", "show", "strategy")

    def __init__(
        self,
        strategy: ExtractionStrategy,
        gate: TurnGate,
        acc: Any,
        show: Callable[[str], None],
    ) -> None:
        self.strategy = strategy
        self.gate = gate
        self.read = strategy.reader(acc)
        self.show = show
        """Where a chunk's shown text goes when the chunk does not end the stream."""
        self.live = True
        """False once the buffer dropped it: a wire's installed ``add`` then asks the buffer."""
        self.fast: Callable[[object], None] | None = None
        """The wire's own ``add`` (installed on the buffer too): an ``add`` looked up before
        the stream settled reaches it through :meth:`TurnReader.add`."""
        self.cut: Callable[[], None] | None = None
        """The wire's own ``add`` stops taking chunks itself when this is called (it sets it)."""


@runtime_checkable
class _Choices(Protocol):
    """An accumulator of a wire whose stream may carry several choices (OpenAI's ``n > 1``).

    Its own gate is the buffer's, for the chosen choice; every other choice gets a gate
    of its own (tool-call indices are scoped per choice).
    """

    def choose(self, index: int, new_gate: Callable[[], TurnGate]) -> None:
        """Read choice ``index`` into the buffer's gate; make other choices' with ``new_gate``."""
        ...

    def chosen_done(self) -> bool:
        """Whether the chunk just read ended the chosen choice (not another's, not a repeat)."""
        ...

    def turns(self) -> list[tuple[int, TurnGate, dict[str, Any]]]:
        """Every choice seen (the chosen one always) by index, with its gate and message."""
        ...

    def chosen_message(self) -> dict[str, Any]:
        """The chosen choice's stream=false message."""
        ...

    def finish_others(self) -> None:
        """The stream ended: settle every choice but the chosen one."""
        ...


_HELPER_EVENTS = frozenset(
    {
        "chunk",
        "content.delta",
        "content.done",
        "refusal.delta",
        "refusal.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
        "logprobs.content.delta",
        "logprobs.content.done",
        "logprobs.refusal.delta",
        "logprobs.refusal.done",
    }
)
"""Events of the openai SDK's ``chat.completions.stream()`` helper: ``chunk`` wraps the raw
chunk (read it); the others restate what the chunks carried (skipped)."""


def _unwrapped(chunk: object) -> object:
    """An SDK helper event's raw chunk (openai ``ChunkEvent.chunk``), else ``chunk``.

    The raw chunk is taken before dumping, so the helper's growing snapshot is never read.
    """
    if getattr(chunk, "type", None) == "chunk":
        return getattr(chunk, "chunk", chunk)
    return chunk


def as_shape(chunk: object) -> Shape:
    """A chunk as plain data: dicts pass through; SDK objects are dumped once.

    The official SDKs' typed chunks (openai, anthropic: ``to_dict``; other pydantic
    models such as google-genai's: ``model_dump`` in JSON mode by wire alias, so bytes and
    enums come out as the wire has them) are read without importing those SDKs.
    """
    if isinstance(chunk, Mapping):
        return chunk
    to_dict = getattr(chunk, "to_dict", None)
    dump = getattr(chunk, "model_dump", None)
    if callable(to_dict):
        data = to_dict()
    elif callable(dump):
        data = dump(mode="json", by_alias=True, exclude_unset=True)
    elif hasattr(chunk, "__dict__") and not isinstance(chunk, type):
        data = _attributes(chunk)
    else:
        raise TypeError(
            f"a chunk must be a mapping or an SDK model object (or an object of attributes), "
            f"not {type(chunk).__name__}"
        )
    if not isinstance(data, Mapping):
        raise TypeError(f"{type(chunk).__name__} did not dump to a mapping")
    return data


def _attributes(value: Any, depth: int = 0) -> Any:
    """A plain attribute object as plain data: its public attributes, all the way down.

    What ``SimpleNamespace`` chunks, and SDK classes without ``model_dump``, look like.
    Past 256 levels (deeper than any wire nests) a value is left unconverted, so that the
    strategy reports it as a field of the wrong type instead of recursing without end.
    """
    if depth > 256 or isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: _attributes(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_attributes(v, depth + 1) for v in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {
            k: _attributes(v, depth + 1) for k, v in vars(value).items() if not k.startswith("_")
        }
    return value


def _no_block(block: TextBlock) -> bool:
    """The text queue's hook after the end: no block enters the gate any more."""
    return False


def _has_choices(kind: type[object]) -> bool:
    """Whether accumulators of ``kind`` are :class:`_Choices` (a protocol check is slow: once)."""
    known = _CHOOSES.get(kind)
    if known is None:
        known = _CHOOSES[kind] = issubclass(kind, _Choices)
    return known


_CHOOSES: dict[type[object], bool] = {}


class TurnReader:
    """Reads a turn's chunks into its gate: the wire resolved once, every chunk checked or not.

    A part of :class:`~callgate.buffer.LLMStreamBuffer`, which sets the state named here.
    """

    chain: ExtractionChain
    choice: int
    schemas: ToolSchemas | None
    limits: Limits
    leaked_calls: bool
    strategy: ExtractionStrategy | None
    gate: TurnGate | None
    changes: Changes
    text_queue: TextQueue
    _make_gate: Callable[..., TurnGate]
    _acc: Any
    _choices: _Choices | None
    _content: list[str]
    _chosen: bool
    _done: bool
    _awaits_usage: bool
    _done_at: int | None
    _ended: bool
    _unread: list[UnreadableChunk]
    _partial: PartialCalls | None
    _checked: bool
    _steady: _Steady | None

    policy_rule: Policy
    strict_finish: bool
    max_tokens: int | None
    repair: Literal["lossless"] | None

    if TYPE_CHECKING:

        def _new_text_queue(self, formats: tuple[str, ...] | None) -> None: ...

        def _choose_formats(self, strategy: ExtractionStrategy, first: Shape) -> None: ...

        def _settle_text(self, gate: TurnGate | None) -> None: ...

    def _start(self, strategy: ExtractionStrategy) -> None:
        self.strategy = strategy
        options: dict[str, Any] = {
            "schemas": self.schemas,
            "limits": self.limits,
            "per_call_done": strategy.per_call_done,
            "requires_id": strategy.requires_id,
            "empty_arguments_object": strategy.empty_arguments_object,
            "preview": self.policy_rule.early,
            "strict_finish": self.strict_finish,
            "text_per_call": self.policy_rule.per_call,
            "max_tokens": self.max_tokens,
            "repair": self.repair,
        }
        self.gate = self._make_gate(**options, changes=self.changes)
        self.changes.n += 1
        if strategy.leaks_into_text and not self.leaked_calls:
            self._new_text_queue(None)
        self._acc = strategy.new_accumulator(self.gate)
        if self._partial is not None:
            self._whole(strategy)
        self._choices = self._acc if _has_choices(type(self._acc)) else None
        if self._choices is not None:
            self._choices.choose(self.choice, lambda: TurnGate(**options))
        elif self.choice:
            raise ValueError(f"the {strategy.name} wire has one choice per turn, not {self.choice}")
        self.gate.on_stray = self._stray
        self.gate.on_text_over = self._unsettle
        self.gate.on_done = self._usage_came
        for chunk in self._unread:
            self.gate.refuse(chunk.code, chunk.reason)
        self._settle()

    def _whole(self, strategy: ExtractionStrategy) -> None:
        """Tell the turn's forming calls where a wire that sends arguments whole holds them."""
        if type(strategy).whole_arguments is not ExtractionStrategy.whole_arguments:
            partial = self._partial
            assert partial is not None, "called once the forming calls are made"
            partial.whole = functools.partial(strategy.whole_arguments, self._acc)

    def _settle(self) -> None:
        """Open :meth:`add`'s common path once nothing but reading chunks is left to do.

        That is once the wire is resolved and the formats chosen, and only for a strategy
        that hands the chunks it cannot place to the gate (``reports_stray_chunks``); the
        others get every check on every chunk.
        """
        if self._steady is not None:
            self._unsettle()
        strategy, gate = self.strategy, self.gate
        if (
            strategy is None
            or gate is None
            or gate.text_over
            or not strategy.reports_stray_chunks
            or not self._chosen
            or self._ended
        ):
            return
        show: Callable[[str], None] = self._show
        if type(self)._show is TurnReader._show:  # (a subclass's own _show stays in charge)
            show = self.text_queue.plain_feeder(self._content) or show
        steady = self._steady = _Steady(strategy, gate, self._acc, show)
        if type(self).add is TurnReader.add and gate.appends_in_place:
            # (a subclass's own add() stays in charge, and a recording gate sees each append)
            rest = functools.partial(TurnReader._common, self)
            fast = strategy.fast_add(self._acc, steady, rest)
            if fast is not None:
                steady.fast = self.__dict__["add"] = fast

    def _unsettle(self) -> None:
        """Close the common path (the gate's ``on_text_over`` hook too): chunks take _add().

        A wire's ``add`` installed on the instance goes with it; one a caller still holds
        hands every chunk back to :meth:`add`, which reads it into the current turn.
        """
        steady = self._steady
        if steady is not None:
            steady.live = False
            if steady.cut is not None:
                steady.cut()
            steady.fast = steady.cut = None  # (the wire's add holds the steady: no cycle)
            self.__dict__.pop("add", None)
            self._steady = None

    def add(self, chunk: object) -> None:
        """Accumulate one raw chunk or event (a dict or an SDK object)."""
        steady = self._steady
        if steady is not None and steady.fast is not None:
            steady.fast(chunk)  # (an add looked up before the wire's own was installed)
        else:
            self._common(chunk)

    def _common(self, chunk: object) -> None:
        """:meth:`add` once the stream settled: the strategy's reader, else every check."""
        steady = self._steady
        if steady is None or type(chunk) is not dict:
            self._add(chunk)
            return
        # The common chunk: plain data in a resolved stream whose text is within its limit.
        # A chunk the strategy cannot place comes back through gate.stray() (_stray) first.
        try:
            shown = steady.read(chunk)
            if shown is None:
                return  # no text, and certainly not the end (see ExtractionStrategy.accumulate)
            gate, strategy = steady.gate, steady.strategy
            done = strategy.is_done(chunk)
        except _UNREADABLE as exc:
            return self._cannot_read(steady.strategy, chunk, exc)
        except _Strayed as strayed:
            if strayed.wrapped is not None:
                self._read(strayed.wrapped)
            return
        if shown or done:
            self._take(gate, shown, done)

    def _add(self, chunk: object) -> None:
        """Any chunk, every check in turn: the first chunks, SDK objects, text past its limit."""
        if self._ended:
            raise BufferUsageError("add() after end(): call reset() to start a new turn")
        shape: Shape
        if type(chunk) is dict:
            shape = chunk
        elif isinstance(chunk, UnreadableChunk):
            self._unreadable(chunk)
            return
        else:
            shape = as_shape(_unwrapped(chunk))
        kind = shape.get("type")
        if isinstance(kind, str) and kind in _HELPER_EVENTS:
            wrapped = shape.get("chunk")
            if not isinstance(wrapped, Mapping):
                return
            shape = wrapped
        self._read(shape)

    def _read(self, shape: Shape) -> None:
        """A chunk (no SDK helper event): resolve the stream, refuse another wire's, read it."""
        strategy = self.strategy
        if strategy is None:
            try:
                strategy = self.chain.resolve_stream(shape)
            except _UNREADABLE:
                strategy = None
            if strategy is None:
                raise UnrecognizedStreamError(
                    f"no strategy of {self.chain!r} recognises this chunk "
                    f"(keys: {sorted(map(str, shape))[:8]}): pass the provider's raw stream "
                    "chunks or events, as dicts or the SDK's own objects (what "
                    "client.chat.completions.create(stream=True), client.messages.create("
                    "stream=True) or their .stream() helpers yield)"
                )
            self._start(strategy)
        elif self._foreign(strategy, shape):
            return
        gate = self.gate
        assert gate is not None, "_start() made the gate"
        if not self._chosen:
            self._choose_formats(strategy, shape)
        self._checked = True
        try:  # past the text limit nothing more is kept: the chunk is only asked if it ends
            shown = "" if gate.text_over else strategy.accumulate(self._acc, shape)
            done = strategy.is_done(shape)
        except _UNREADABLE as exc:
            self._cannot_read(strategy, shape, exc)
            return
        finally:
            self._checked = False
        self._take(gate, shown or "", done)

    def _take(self, gate: TurnGate, shown: str, done: bool) -> None:
        """What a chunk added: text to show, and whether it ended the stream."""
        if shown:
            self._content.append(shown)
            self.text_queue.feed(shown)
        choices = self._choices  # past the text limit the chunk was not read: its end stands
        if done and (choices is None or gate.text_over or choices.chosen_done()):
            if gate.holds_end:  # under max_tokens the end waits for the usage report
                self._awaits_usage = True
                return
            self._finish(gate)

    def _take_plain(self, text: str, quiet: bool, held: bool = False) -> bool:
        """Take a Chat Completions content delta shown as it came, if it is plain text.

        ``quiet``: the caller's view of the text queue is settled since its last read. The delta is
        counted against the text limit, kept and shown as a chunk of it alone would be;
        False (nothing taken): the chunk needs the general path. ``held``: the delta only
        grows the open call block instead (:meth:`TextQueue.pass_held`), nothing shown.
        """
        gate = self.gate
        if gate is None or not quiet or self._acc.blocks is not None:
            return False
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        total = gate.text_bytes + size
        if total > gate.limits.max_text_bytes:
            return False
        queue = self.text_queue
        if not (queue.pass_held(text) if held else queue.pass_plain(text)):
            return False
        gate.text_bytes = total  # what gate.text(text) counts, within the limit checked above
        self._acc.content.append(text)
        self._content.append(text)
        return True

    def _show(self, shown: str) -> None:
        """Text shown by a chunk that does not end the stream (what :meth:`_take` does)."""
        self._content.append(shown)
        self.text_queue.feed(shown)

    def _finish(self, gate: TurnGate) -> None:
        """The stream's own completion signal: the turn ends and its text is settled."""
        self._awaits_usage = False
        self._done = True
        gate.finish()
        self._settle_text(gate)
        self._done_at = self.changes.n

    def _usage_came(self) -> None:
        """The gate's ``on_done`` hook: the usage report let the held end go."""
        if self._awaits_usage and self.gate is not None:
            self._finish(self.gate)

    def _cannot_read(self, strategy: ExtractionStrategy, shape: Shape, exc: Exception) -> None:
        """The strategy raised on a chunk whose fields have the wrong types: fail closed."""
        self._gate.refuse(
            "malformed_chunk",
            f"{strategy.name} cannot read this chunk ({type(exc).__name__}: {exc}); "
            f"keys: {sorted(map(str, shape))[:8]}",
        )

    def _stray(self, shape: Shape) -> None:
        """The gate's ``stray`` hook: the strategy cannot place ``shape`` (its unknown event).

        On the common path nothing was checked before the strategy read the chunk, so the
        checks of :meth:`_add` run here, in the same order: an SDK helper event is read
        through (its raw chunk) or skipped, a chunk of another wire refused; each raises
        :class:`_Strayed` and the strategy reads no further. Otherwise the strategy
        handles the chunk as its own unknown event.
        """
        if self._checked:
            return
        kind = shape.get("type")
        if isinstance(kind, str) and kind in _HELPER_EVENTS:
            wrapped = shape.get("chunk")
            raise _Strayed(wrapped if isinstance(wrapped, Mapping) else None)
        strategy = self.strategy
        if strategy is not None and self._foreign(strategy, shape):
            raise _Strayed(None)

    def _foreign(self, strategy: ExtractionStrategy, shape: Shape) -> bool:
        """Whether ``shape`` is a chunk of another wire (then refused): it blocks the turn."""
        if strategy.recognizes(shape) or _error_frame(shape) or not self._other_wire(shape):
            return False
        self._gate.refuse(
            "malformed_chunk",
            f"a chunk of another wire inside this {strategy.name} stream "
            f"(keys: {sorted(map(str, shape))[:8]})",
        )
        return True

    def _unreadable(self, chunk: UnreadableChunk) -> None:
        """A chunk the capture could not read: a finding now, or once the wire is known."""
        if self.gate is None:
            self._unread.append(chunk)
        else:
            self.gate.refuse(chunk.code, chunk.reason)

    def _other_wire(self, shape: Shape) -> bool:
        """Whether a strategy of the chain of another format claims ``shape``."""
        for strategy in self.chain:
            try:
                claimed = strategy.recognizes(shape)
            except _UNREADABLE:
                continue
            if claimed and not isinstance(self.strategy, type(strategy)):
                return True
        return False

    def end(self, *, clean: bool = False) -> None:
        """The stream is over (however it stopped): settle every slot and the turn.

        ``clean``: the transport saw the stream's own end (SSE ``[DONE]``, or a whole
        response), so a turn that sent no finish reason ended (TGI's shape: its calls
        run with a ``no_finish_reason`` warning, unless ``strict_finish``); otherwise such
        a turn was cut off and blocks.
        """
        if clean and self.gate is not None and not self._ended:
            self.gate.clean_end()
        if self._awaits_usage and not self._ended:
            self._done = True  # the completion signal did come; nothing more will
        if self.gate is None and self._unread and not self._ended:
            self.gate = TurnGate(schemas=self.schemas, limits=self.limits, changes=self.changes)
            for chunk in self._unread:
                self.gate.refuse(chunk.code, chunk.reason)
        gate = self.gate
        if gate is not None and not self._ended:
            if self.changes.n != self._done_at:  # else the stream's own end said it all
                gate.finish()
            if self._choices is not None:
                self._choices.finish_others()
        self._settle_text(gate)
        if not self._ended:
            self.changes.n += 1
        self._ended = True
        self._unsettle()
        self._unhook(gate)

    def _unhook(self, gate: TurnGate | None) -> None:
        """After the end nothing calls back into the buffer: its hooks go.

        The gate and the text queue then hold no reference cycle with the buffer, which is
        freed as soon as it is dropped instead of when the collector next runs.
        """
        if gate is not None:
            gate.on_stray = gate.on_text_over = gate.on_done = None
        self.text_queue.enter = _no_block

    @property
    def _gate(self) -> TurnGate:
        if self.gate is None:
            raise BufferUsageError("no chunk has been added yet")
        return self.gate
