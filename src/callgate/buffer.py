"""LLMStreamBuffer: feed it a provider's raw chunks; it keeps the provider's own message.

The buffer resolves the wire strategy once, on the first chunk, through the shared
:class:`~callgate.chain.ExtractionChain`, and delegates every chunk to it. The strategy
builds the native message and reports tool-call primitives to the turn's
:class:`~callgate.gate.TurnGate`, whose slot and turn machines decide whether the calls
may run. ``as_dict()`` is what the provider returns for stream=false, unnormalised.

Text: each chunk's content delta goes to the turn's :class:`~callgate.textqueue.TextQueue`.
With ``text_formats`` (a driver's ``new_stream_buffer()`` passes its own; ``"auto"``
chooses them from the first chunk's model and wire) the content runs through the
text-call detector, and a call block waits there until the drivers decide
whose it is; without, content is queued as it came. ``text()`` hands out what may be
shown since the last read, unless the display is held (``hold()``), in which case it
returns nothing and keeps the text until ``release()``.

The :class:`~callgate.ledger.Ledger` of answered call ids outlives ``reset()``: one
buffer serves one conversation, turn after turn, and no call id runs twice in it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from attrs import frozen

from callgate.chain import ExtractionChain
from callgate.errors import (
    BufferUsageError,
    UnrecognizedStreamError,
)
from callgate.fsm.release import RELEASE, ReleaseState
from callgate.fsm.release import policy as release_policy
from callgate.fsm.turn import TurnState
from callgate.fsm.verdict import VERDICT, Verdict, decide
from callgate.gate.findings import Finding
from callgate.gate.limits import Limits
from callgate.gate.repair import REPAIRS
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import BaseSlot, Changes, Slot, TextRef, TextSlot, TurnGate
from callgate.ledger import Ledger
from callgate.partial import PartialCall, PartialCalls
from callgate.strategies import default_strategies
from callgate.strategies.base import ExtractedCall, ExtractionStrategy, MessageReader, Shape
from callgate.strategies.text.defaults import (
    cut_off,
    cut_short,
    default_text_formats,
    model_name,
)
from callgate.strategies.text.formats import END_FORMATS
from callgate.strategies.text.think import ThinkFilter
from callgate.textqueue import TextQueue
from callgate.view import TextBlock

_RUNS = RELEASE.tagged("runs")
_PASSES = VERDICT.tagged("runs")

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

    __slots__ = ("gate", "live", "read", "strategy")

    def __init__(self, strategy: ExtractionStrategy, gate: TurnGate, acc: Any) -> None:
        self.strategy = strategy
        self.gate = gate
        self.read = strategy.reader(acc)
        self.live = True
        """False once the buffer dropped it: a wire's installed ``add`` then asks the buffer."""


class Recording(Protocol):
    """What a buffer asks of its ``recorder``: the turn's gate and text queue, built to record.

    :class:`~callgate.audit.trace.Recorder` is one; without a recorder the plain classes run,
    with no recording branch on their path.
    """

    chunk: int | None
    """The chunk being processed; whoever feeds the buffer sets it."""

    def turn_gate(self, **options: Any) -> TurnGate:
        """A gate that records its slot and turn transitions."""
        ...

    def stepper(self, machine: str, instance: str) -> Callable[[str, str, str], None]:
        """A callback recording each ``(source, event, target)`` step of one instance."""
        ...

    def text_queue(self, formats: tuple[str, ...] | None, **options: Any) -> TextQueue:
        """A text queue whose detector, votes and views record their transitions."""
        ...


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


def choice_index(choice: object) -> int:
    """``choice`` as the index of a choice to read: an int >= 0, else ValueError."""
    if type(choice) is not int or choice < 0:
        raise ValueError(f"choice must be a choice's index (an int >= 0), not {choice!r}")
    return choice


@frozen
class Choice:
    """One choice of a turn, decided on its own: its verdict, calls and findings.

    A stream of one choice has one; an OpenAI ``n > 1`` stream one per ``index``. The
    chosen one's (:attr:`LLMStreamBuffer.choice`) is what the buffer's own ``verdict``,
    ``calls`` and ``findings`` say, text calls included; another choice's covers its native
    calls (its text is kept in its message, not read for calls).
    """

    index: int
    verdict: Verdict
    calls: tuple[ExtractedCall, ...]
    """The calls the choice runs under its verdict (none unless it passes)."""
    findings: tuple[Finding, ...]
    message: dict[str, Any]
    """The choice's stream=false assistant message."""


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
    Deeper than the JSON nesting any wire allows, a value is kept as it is (the strategy
    then refuses it refuses any odd field).
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


def token_limit(value: object) -> int | None:
    """``value`` as a request's output token limit: None, or an int >= 1, else ValueError."""
    if value is None:
        return None
    if type(value) is not int or value < 1:
        raise ValueError(f"max_tokens must be a count of tokens (an int >= 1), not {value!r}")
    return value


def repair_mode(value: object) -> Literal["lossless"] | None:
    """``value`` as a repair mode: None or ``lossless``, else ValueError."""
    if value is None or value == "lossless":
        return value
    raise ValueError(f"repair must be one of {list(REPAIRS)} or None, not {value!r}")


def _empty_message(chain: ExtractionChain) -> dict[str, Any]:
    """The message of a turn that got no chunk, in the shape of the chain's first wire.

    The default chain's is OpenAI's ``{"role": "assistant", "content": None}``, what the
    MCS SDK gives, so that reading ``["role"]`` after an empty stream works.
    """
    for strategy in chain:
        if isinstance(strategy, ExtractionStrategy):
            return strategy.message(strategy.new_accumulator(TurnGate()))
    return {"role": "assistant", "content": None}


def _no_block(block: TextBlock) -> bool:
    """The text queue's hook after the end: no block enters the gate any more."""
    return False


@functools.cache
def _defaults() -> tuple[MessageReader, ...]:
    """The default chain's strategies, made once: a strategy keeps no state of a stream."""
    return tuple(default_strategies())


def _has_choices(kind: type[object]) -> bool:
    """Whether accumulators of ``kind`` are :class:`_Choices` (a protocol check is slow: once)."""
    known = _CHOOSES.get(kind)
    if known is None:
        known = _CHOOSES[kind] = issubclass(kind, _Choices)
    return known


_CHOOSES: dict[type[object], bool] = {}


class LLMStreamBuffer:
    """Accumulates one assistant turn from raw chunks of any supported provider."""

    def __init__(
        self,
        strategies: ExtractionChain | Iterable[MessageReader] | None = None,
        *,
        tool_schemas: ToolSchemas | Mapping[str, Mapping[str, Any]] | None = None,
        limits: Limits | None = None,
        strategy: ExtractionStrategy | None = None,
        policy: str = "turn",
        text_formats: Iterable[str] | Literal["auto"] | None = None,
        reasoning_calls: bool = False,
        strict_finish: bool = False,
        hide_think: bool = False,
        ledger: Ledger | None = None,
        recorder: Recording | None = None,
        leaked_calls: bool = True,
        choice: int = 0,
        max_tokens: int | None = None,
        repair: Literal["lossless"] | None = None,
    ) -> None:
        self.choice = choice_index(choice)
        """The choice of an ``n > 1`` stream that the gate, the text and the calls are read
        from (0 by default); the other choices are decided apart (:attr:`choices`)."""
        if isinstance(strategies, ExtractionChain):
            self.chain = strategies
        else:
            self.chain = ExtractionChain(_defaults() if strategies is None else strategies)
        self.limits = limits if limits is not None else Limits()
        if tool_schemas is None or isinstance(tool_schemas, ToolSchemas):
            self.schemas = tool_schemas
        else:
            self.schemas = ToolSchemas(tool_schemas, max_steps=self.limits.max_schema_steps)
        self.policy_rule = release_policy(policy)
        """The release policy's value, read off the release table (ValueError if unknown)."""
        self.policy = policy
        self.auto_formats = text_formats == "auto"
        """Choose the text formats from the first chunk (by the stream's wire and model)."""
        self.text_formats: tuple[str, ...] | None = (
            tuple(text_formats) if text_formats is not None and not self.auto_formats else None
        )
        self.reasoning_calls = reasoning_calls
        self.strict_finish = strict_finish
        """Refuse calls a turn ends with a reason other than tool use (OpenAI ``stop``)."""
        self.hide_think = hide_think
        """Keep ``<think>…</think>`` out of :meth:`text` (the message keeps it)."""
        self.leaked_calls = leaked_calls
        """Whether calls written into the text of a wire whose calls are native (one that
        ``leaks_into_text``: Anthropic, Responses, ...) are calls; False: they are text."""
        self.max_tokens = token_limit(max_tokens)
        """The request's output token limit: a turn whose usage report reaches it was cut
        short, whatever its finish reason (its calls never run); its end waits for that
        report (or :meth:`end`)."""
        self.repair = repair_mode(repair)
        """``lossless``: a call's broken argument JSON is repaired where no value changes and
        the schema confirms the result; each edit is a ``repaired_arguments`` warning."""
        self.ledger = ledger if ledger is not None else Ledger()
        self.recorder = recorder
        self._make_gate: Callable[..., TurnGate] = (
            TurnGate if recorder is None else recorder.turn_gate
        )
        self._make_text_queue: Callable[..., TextQueue] = (
            TextQueue if recorder is None else recorder.text_queue
        )
        self._fixed = strategy
        self._steady: _Steady | None = None
        """Set once the stream is resolved and its formats chosen: :meth:`add`'s common path."""
        self.reset()

    def reset(self) -> None:
        """Start a new turn: drop the message, the held text and the gate (not the ledger)."""
        self.strategy: ExtractionStrategy | None = self._fixed
        self.gate: TurnGate | None = None
        self._acc: Any = None
        self._choices: _Choices | None = None
        self._content: list[str] = []
        self.changes = Changes()
        """What a driver's step reads, counted (see :meth:`stamp`): the gate and the text
        queue step it."""
        self._new_text_queue(self.text_formats)
        self._chosen = not self.auto_formats
        self._held = False
        self._think = ThinkFilter() if self.hide_think else None
        self._done = False
        self._awaits_usage = False
        """The completion signal came and waits for the usage report (``max_tokens``)."""
        self._done_at: int | None = None
        """The change count right after the stream's own end was taken (None: not yet)."""
        self._ended = False
        self._unread: list[UnreadableChunk] = []
        self._partial = PartialCalls()
        self._unsettle()
        self._checked = False
        """Whether the chunk being read passed the buffer's own checks (see :meth:`_stray`)."""
        self.ledger.next_turn()
        if self.strategy is not None:
            self._start(self.strategy)

    def _new_text_queue(self, formats: tuple[str, ...] | None) -> None:
        strategy = self.strategy
        if strategy is not None and strategy.leaks_into_text and not self.leaked_calls:
            formats = None
        queue = self.text_queue = self._make_text_queue(
            formats,
            schemas=self.schemas.raw if self.schemas is not None else None,
            reasoning_calls=self.reasoning_calls,
        )
        queue.enter = self._enter_block
        queue.changes = self.changes
        known = self.schemas if self.schemas is not None else ToolSchemas.any_tool()
        queue.known = known.knows

    def _enter_block(self, block: TextBlock) -> bool:
        """The text queue's hook: a block whose call names a tool of the turn enters the gate.

        Each of its calls becomes a whole call of the turn (an unknown one among them is
        refused as an unknown tool, as a native one is); a block of calls that name no
        tool of the turn is text.
        """
        gate = self.gate
        if gate is None or not any(gate.schemas.knows(c.name) for c in block.calls):
            return False
        for n, call in enumerate(block.calls):
            gate.text_call(
                TextRef(block.index, n), block.format, call.id, call.name, call.arguments
            )
        return True

    def _choose_formats(self, strategy: ExtractionStrategy, first: Shape) -> None:
        """Under ``text_formats="auto"``: the stream's model and wire choose the formats."""
        chosen = default_text_formats(strategy.name, model_name(first))
        self.text_formats = tuple(n for n in chosen if n not in END_FORMATS) or None
        self._new_text_queue(self.text_formats)
        self._chosen = True
        self._settle()

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
        if type(strategy).whole_arguments is not ExtractionStrategy.whole_arguments:
            self._partial.whole = functools.partial(strategy.whole_arguments, self._acc)
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

    def _settle(self) -> None:
        """Open :meth:`add`'s common path once nothing but reading chunks is left to do.

        That is once the wire is resolved and the formats chosen, and only for a strategy
        that hands the chunks it cannot place to the gate (``reports_stray_chunks``); the
        others get every check on every chunk.
        """
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
        steady = self._steady = _Steady(strategy, gate, self._acc)
        if type(self).add is LLMStreamBuffer.add and gate.appends_in_place:
            # (a subclass's own add() stays in charge, and a recording gate sees each append)
            rest = functools.partial(LLMStreamBuffer.add, self)
            fast = strategy.fast_add(self._acc, steady, rest)
            if fast is not None:
                self.__dict__["add"] = fast

    def _unsettle(self) -> None:
        """Close the common path (the gate's ``on_text_over`` hook too): chunks take _add().

        A wire's ``add`` installed on the instance goes with it; one a caller still holds
        hands every chunk back to :meth:`add`, which reads it into the current turn.
        """
        steady = self._steady
        if steady is not None:
            steady.live = False
            self.__dict__.pop("add", None)
            self._steady = None

    def add(self, chunk: object) -> None:
        """Accumulate one raw chunk or event (a dict or an SDK object)."""
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

    def _settle_text(self, gate: TurnGate | None) -> None:
        """The turn's text is complete: the detector settles it and its calls are decided.

        At :meth:`end`, or already at the stream's own completion signal (so the client
        loop MCS documents, which calls no ``end()``, gets its text calls answered). Text
        that still comes after the signal is shown as it came.
        """
        if gate is not None and gate.text_done:
            return
        self.text_queue.end(cut=gate is None or cut_short(gate.done_seen, gate.done_reason))
        if gate is not None:
            if gate.text_slots and cut_off(gate.done_seen, gate.done_reason):
                gate.refuse(
                    "wrong_terminal_reason",
                    f"the turn ended with reason {gate.done_reason!r}: the output was cut, "
                    "so the calls written in its text are not run",
                )
            elif gate.text_slots and not (gate.done_seen or gate.slots or gate.text_per_call):
                # Under the turn policy a text call waits for the turn's end, as a native one
                # does (with native calls the gate's finish() has refused the turn already).
                gate.refuse(
                    "missing_terminal",
                    "the stream ended without the turn's terminal event, so the calls "
                    "written in its text are not run",
                )
            gate.text_settled()

    @property
    def _gate(self) -> TurnGate:
        if self.gate is None:
            raise BufferUsageError("no chunk has been added yet")
        return self.gate

    # -- display ----------------------------------------------------------------------

    def text(self) -> str:
        """Display text released since the last call; empty while the display is held."""
        if self._held:
            return ""
        text = self.text_queue.text()
        think = self._think
        if think is not None:
            text = think.feed(text) + (think.finish() if self.text_queue.ended else "")
        return text

    def hold(self) -> None:
        """Hold the display: ``text()`` returns nothing until ``release()``."""
        self._held = True

    def release(self) -> None:
        """Release the display: held text comes out on the next ``text()``."""
        self._held = False

    @property
    def content_parts(self) -> list[str]:
        """The content deltas of the turn so far, in order (read it, do not change it)."""
        return self._content

    def get_content(self) -> str:
        """All content text of the turn so far, shown or not."""
        return "".join(self._content)

    def is_finished(self) -> bool:
        """Whether the provider's stream-completion signal has arrived (the chosen choice's)."""
        return self._done

    def stamp(self) -> int:
        """What a driver's decision depends on, in brief: equal stamps, equal decision.

        One count that only grows (:attr:`changes`): the gate steps it (its wire resolved,
        slots, identities, verdict; not appended fragments), the text queue (a text block
        found, opened or closed, or the tool an open block names), and the end.
        """
        return self.changes.n

    @property
    def ended(self) -> bool:
        """Whether ``end()`` was called: no more chunks come in this turn."""
        return self._ended

    # -- the turn ---------------------------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        """The provider's own stream=false message for what has arrived.

        An OpenAI stream of several choices (``n > 1``) gives the ``chat.completion`` with
        every choice, as the openai SDK's stream helper assembles it; :meth:`message` is
        the chosen choice's message.
        """
        if self.strategy is None or self._acc is None:
            return _empty_message(self.chain)
        return self.strategy.message(self._acc)

    @property
    def executable(self) -> bool:
        """Whether every call of the turn may run (complete, unambiguous, valid).

        What the verdict says once the turn is decided: native calls by the turn machine,
        calls read from the text once the turn's text is settled (``pass``).
        """
        gate = self.gate
        if gate is None:
            return False
        if gate.executable or gate.slots or not gate.text_done:
            return gate.executable
        return self.verdict in _PASSES

    def releasable(self) -> list[BaseSlot]:
        """The calls that may run now under the buffer's policy (default ``turn``)."""
        return self.gate.releasable(self.policy) if self.gate is not None else []

    def releases(self) -> list[tuple[BaseSlot, ReleaseState]]:
        """Every call decided now under the buffer's policy, and how it was decided.

        ``released`` (it may run), ``blocked`` (it never will) or ``set_aside`` (a text
        call beside native ones); native and text calls alike, in call order. A driver
        answers the ones it owns.
        """
        return self.gate.releases(self.policy_rule) if self.gate is not None else []

    def verdict_of(self, on_step: Callable[[str, str, str], None] | None = None) -> Verdict:
        """The turn's one verdict (:mod:`callgate.fsm.verdict`); ``on_step`` sees each step."""
        if self.gate is None:
            return decide(("turn_open", "end"), on_step)
        return decide(self.gate.verdict_events(), on_step)

    @property
    def verdict(self) -> Verdict:
        """``pass``, ``fail`` or ``not_applicable``: what ``check``, ``replay`` and the loops say.

        Read it once the stream ended; before, it says what has been decided so far.
        """
        return self.verdict_of()

    @property
    def calls(self) -> list[ExtractedCall]:
        """The calls the turn runs under its verdict (native, then text), in call order.

        Empty unless the verdict is ``pass``; a text call set aside beside native calls
        is not one of them. With several choices: the chosen one's (see :attr:`choices`).
        """
        return _runs(self.gate, self.verdict)

    @property
    def choices(self) -> list[Choice]:
        """Every choice of the turn by index, each decided on its own (one for most wires).

        The chosen choice (:attr:`choice`) says what :attr:`verdict`, :attr:`calls` and
        :attr:`findings` say; a choice the stream never sent is not listed, unless chosen.
        """
        if self._choices is None:
            verdict, found = self.verdict, tuple(self.findings)
            return [Choice(self.choice, verdict, tuple(self.calls), found, self.as_dict())]
        listed = []
        for index, gate, message in self._choices.turns():
            verdict = self.verdict if index == self.choice else decide(gate.verdict_events())
            calls = tuple(_runs(gate, verdict))
            listed.append(Choice(index, verdict, calls, tuple(gate.findings), message))
        return listed

    def message(self) -> dict[str, Any]:
        """The chosen choice's stream=false message (:meth:`as_dict` for a one-choice turn)."""
        if self._choices is not None:
            return self._choices.chosen_message()
        return self.as_dict()

    @property
    def turn_state(self) -> TurnState:
        """The turn machine's state (``streaming`` before the first chunk).

        A stream that ended with no chunk at all carried no tool call: ``not_applicable``.
        """
        if self.gate is None:
            return "not_applicable" if self._ended else "streaming"
        return self.gate.turn

    @property
    def slots(self) -> list[Slot]:
        """The turn's native slots in provider order."""
        return self.gate.ordered_slots() if self.gate is not None else []

    @property
    def text_calls(self) -> list[TextSlot]:
        """The calls read from the turn's text that entered its gate, in order."""
        return list(self.gate.text_slots.values()) if self.gate is not None else []

    @property
    def findings(self) -> list[Finding]:
        """Everything the gate found, in the order found."""
        return list(self.gate.findings) if self.gate is not None else []

    def partial_calls(self) -> tuple[PartialCall, ...]:
        """Every call of the turn so far, as it stands: native calls, then text calls.

        A call still forming (a native slot, or a call in an open text block of a format
        that shows its arguments as they arrive) and a call whose arguments are whole
        alike; each record's ``arguments`` is a prefix of the call's final arguments.
        Read incrementally: the work per call is proportional to what arrived since the
        last read. Reading changes nothing the gate decides.
        """
        return self._partial.read(self.gate, self.text_queue)


def _runs(gate: TurnGate | None, verdict: Verdict) -> list[ExtractedCall]:
    """The calls ``gate``'s turn runs under ``verdict`` (none unless it passes)."""
    if gate is None or verdict not in _PASSES:
        return []
    decided = TurnGate.releases(gate, release_policy("turn"))  # read, not recorded
    return [
        ExtractedCall(slot.id, slot.name or "", slot.arguments or {}, slot.key)
        for slot, outcome in decided
        if outcome in _RUNS
    ]
