"""The buffer's result view: the turn's message, the gate's decisions, its verdict and calls.

Part of :class:`~callgate.buffer.LLMStreamBuffer` (its public names stay there): everything
here reads the turn and changes nothing the gate decides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attrs import frozen

from callgate.chain import ExtractionChain
from callgate.fsm.release import RELEASE, Policy, ReleaseState
from callgate.fsm.release import policy as release_policy
from callgate.fsm.turn import TurnState
from callgate.fsm.verdict import VERDICT, Verdict, decide
from callgate.gate.findings import Finding
from callgate.gate.turn import BaseSlot, Slot, TextSlot, TurnGate
from callgate.partial import PartialCall, PartialCalls
from callgate.strategies.base import ExtractedCall, ExtractionStrategy
from callgate.textqueue import TextQueue

if TYPE_CHECKING:
    from callgate._reader import _Choices

_RUNS = RELEASE.tagged("runs")
_PASSES = VERDICT.tagged("runs")


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


def _empty_message(chain: ExtractionChain) -> dict[str, Any]:
    """The message of a turn that got no chunk, in the shape of the chain's first wire.

    The default chain's is OpenAI's ``{"role": "assistant", "content": None}``, what the
    MCS SDK gives, so that reading ``["role"]`` after an empty stream works.
    """
    for strategy in chain:
        if isinstance(strategy, ExtractionStrategy):
            return strategy.message(strategy.new_accumulator(TurnGate()))
    return {"role": "assistant", "content": None}


class ResultView:
    """What the turn says so far: its message, the gate's decisions, the verdict, the calls.

    A part of :class:`~callgate.buffer.LLMStreamBuffer`, which sets the state named here.
    """

    chain: ExtractionChain
    choice: int
    policy: str
    policy_rule: Policy
    strategy: ExtractionStrategy | None
    gate: TurnGate | None
    text_queue: TextQueue
    _acc: Any
    _choices: _Choices | None
    _ended: bool
    _partial: PartialCalls | None

    if TYPE_CHECKING:

        def _partials(self) -> PartialCalls: ...

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
        return self._partials().now()


def _runs(gate: TurnGate | None, verdict: Verdict) -> list[ExtractedCall]:
    """The calls ``gate``'s turn runs under ``verdict`` (none unless it passes)."""
    if gate is None or verdict not in _PASSES:
        return []
    decided = TurnGate.releases(gate, release_policy("turn"))  # read, not recorded
    return [
        ExtractedCall.from_ref(slot.ref, slot.id, slot.name or "", slot.arguments or {})
        for slot, outcome in decided
        if outcome in _RUNS
    ]
