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
from typing import Any, Literal, Protocol

from callgate._reader import (
    TurnReader,
    UnreadableChunk,
    _Choices,
    _Steady,
    as_shape,
)
from callgate._results import Choice, ResultView
from callgate._text import TextSide
from callgate.chain import ExtractionChain
from callgate.errors import BufferUsageError, UnrecognizedStreamError
from callgate.fsm.release import policy as release_policy
from callgate.gate.limits import DEFAULT_LIMITS, Limits
from callgate.gate.repair import REPAIRS
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import Changes, TurnGate
from callgate.ledger import Ledger
from callgate.partial import PartialCalls
from callgate.strategies import default_strategies
from callgate.strategies.base import ExtractionStrategy, MessageReader
from callgate.strategies.text.think import ThinkFilter
from callgate.textqueue import TextQueue

__all__ = [
    "BufferUsageError",
    "Choice",
    "LLMStreamBuffer",
    "Recording",
    "UnreadableChunk",
    "UnrecognizedStreamError",
    "as_shape",
    "choice_index",
    "repair_mode",
    "token_limit",
]


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


def choice_index(choice: object) -> int:
    """``choice`` as the index of a choice to read: an int >= 0, else ValueError."""
    if type(choice) is not int or choice < 0:
        raise ValueError(f"choice must be a choice's index (an int >= 0), not {choice!r}")
    return choice


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


@functools.cache
def _defaults() -> tuple[MessageReader, ...]:
    """The default chain's strategies, made once: a strategy keeps no state of a stream."""
    return tuple(default_strategies())


class LLMStreamBuffer(TurnReader, TextSide, ResultView):
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
        self.choice = choice if type(choice) is int and choice >= 0 else choice_index(choice)
        """The choice of an ``n > 1`` stream that the gate, the text and the calls are read
        from (0 by default); the other choices are decided apart (:attr:`choices`)."""
        if isinstance(strategies, ExtractionChain):
            self.chain = strategies
        else:
            self.chain = ExtractionChain(_defaults() if strategies is None else strategies)
        self.limits = limits if limits is not None else DEFAULT_LIMITS
        if tool_schemas is None or isinstance(tool_schemas, ToolSchemas):
            self.schemas = tool_schemas
        else:
            self.schemas = ToolSchemas.shared(tool_schemas, max_steps=self.limits.max_schema_steps)
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
        self.max_tokens = None if max_tokens is None else token_limit(max_tokens)
        """The request's output token limit: a turn whose usage report reaches it was cut
        short, whatever its finish reason (its calls never run); its end waits for that
        report (or :meth:`end`)."""
        self.repair = None if repair is None else repair_mode(repair)
        """``lossless``: a call's broken argument JSON is repaired where no value changes and
        the schema confirms the result; each edit is a ``repaired_arguments`` warning."""
        self._ledger = ledger
        self._turns = 0
        """Turns started while no ledger was made (see :attr:`ledger`)."""
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
        self._partial = None
        self.__dict__.pop("partial_calls", None)
        if self._steady is not None:
            self._unsettle()
        self._checked = False
        """Whether the chunk being read passed the buffer's own checks (see :meth:`_stray`)."""
        if self._ledger is not None:
            self._ledger.next_turn()
        else:
            self._turns += 1
        if self.strategy is not None:
            self._start(self.strategy)

    @property
    def ledger(self) -> Ledger:
        """The ledger of the conversation's call ids and answers (it outlives :meth:`reset`).

        One given to the buffer, else one made on first use: a turn whose calls nobody runs
        never needs one. Made late, it counts the turns started before it as its own.
        """
        ledger = self._ledger
        if ledger is None:
            ledger = self._ledger = Ledger()
            ledger.turn = self._turns
        return ledger

    @ledger.setter
    def ledger(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def _partials(self) -> PartialCalls:
        """The turn's forming calls, made on the first read (a turn nobody reads needs none).

        The buffer's ``partial_calls`` becomes their bound ``now``, one call less on the path
        taken after every delta (a subclass's own ``partial_calls`` stays).
        """
        partial = self._partial
        if partial is None:
            partial = self._partial = PartialCalls(self)
            if self.strategy is not None and self._acc is not None:
                self._whole(self.strategy)
            if type(self).partial_calls is ResultView.partial_calls:
                self.__dict__["partial_calls"] = partial.now
        return partial

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
