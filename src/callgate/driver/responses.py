"""A driver's decision for one step (:class:`DriverResponse`) and several drivers' merged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from attrs import frozen

from callgate.fsm.display import STATUS_RANK
from callgate.gate.findings import Finding
from callgate.gate.turn import TextRef, call_order
from callgate.strategies.base import ExtractedCall, ExtractionStrategy, MessageReader, ToolResult
from callgate.strategies.text.strategy import TextFormatsStrategy

Status = Literal["call_pending", "call_executed", "call_failed"]
TEXT_RESULTS = TextFormatsStrategy()
"""Shapes results of calls read from text: a text-style continuation, not a native answer."""


@frozen
class DriverResponse:
    """What one driver decided for one step of a stream (or one whole message).

    The client loop MCS documents reads it is: ``call_pending`` (hold on, keep
    feeding chunks), ``call_executed`` / ``call_failed`` (extend the history with
    :attr:`messages` and ask the model again), neither (nothing to do).
    """

    status: Status | None = None
    """``call_pending``, ``call_executed``, ``call_failed``, or None (no call)."""
    results: tuple[ToolResult, ...] = ()
    """The calls answered in this step, each with its result, in call order."""
    answers: tuple[dict[str, Any], ...] = ()
    """The results alone, shaped as the provider expects them in the next request."""
    findings: tuple[Finding, ...] = ()
    """What the gate found about the calls answered in this step, in the order found: each
    call's own findings, the turn's (a finding of no call), and, when a call was refused,
    every error that blocked the turn (the answers say the same in words). Empty when the
    step answered nothing; the whole turn's are ``buffer.findings``."""
    messages: tuple[dict[str, Any], ...] = ()
    """What the next request's history gets from this step: the assistant message as the
    provider accepts it back, then an answer for each of its calls; empty when the step
    answered nothing (see :func:`~callgate.driver.history.turn_history`)."""

    @property
    def calls(self) -> tuple[ExtractedCall, ...]:
        """The calls answered in this step."""
        return tuple(r.call for r in self.results)

    @property
    def executed_calls(self) -> tuple[ToolResult, ...]:
        """The MCS SDK's name for :attr:`results`: each call answered, with its result."""
        return self.results

    @property
    def call_pending(self) -> bool:
        """A call is forming or waiting for its turn's end: the display is held."""
        return self.status == "call_pending"

    @property
    def call_executed(self) -> bool:
        """The step ran the driver's calls and each returned."""
        return self.status == "call_executed"

    @property
    def call_failed(self) -> bool:
        """A call of this step was refused (its answer says why) or its tool raised."""
        return self.status == "call_failed"


def merge(
    responses: Sequence[DriverResponse], strategy: MessageReader | None = None
) -> DriverResponse:
    """Several drivers' responses to one step as one: the strongest status, all results.

    Their findings are kept once each, in order (drivers see the same turn).

    The merged response keeps :attr:`~DriverResponse.messages` when one driver answered;
    for several, whoever holds the buffer builds them over the merged results
    (:func:`~callgate.driver.history.turn_history`), as an orchestrator does.
    With the stream's wire ``strategy`` the results are put in call order, one per call
    (drivers that own the same tool share the ledger, so they answer a call alike), and
    shaped together: native ones as that provider's results (one Anthropic or Bedrock user
    message for all, not one per driver), text ones as one text-style continuation.
    Without it each driver's messages are kept as they were, one after the other.
    """
    status = max((r.status for r in responses), key=STATUS_RANK.__getitem__, default=None)
    results = [x for r in responses for x in r.results]
    answers = [x for r in responses for x in r.answers]
    answering = [r for r in responses if r.results]
    messages = answering[0].messages if len(answering) == 1 else ()
    if strategy is not None and len(answering) > 1:
        results = list({r.call.slot: r for r in reversed(results)}.values())
        results.sort(key=lambda r: call_order(r.call.ref))
        native = [r for r in results if not isinstance(r.call.ref, TextRef)]
        text = [r for r in results if isinstance(r.call.ref, TextRef)]
        answers = shaped(strategy, native, TEXT_RESULTS, text)
    return DriverResponse(
        status,
        tuple(results),
        tuple(answers),
        tuple(dict.fromkeys(x for r in responses for x in r.findings)),
        messages,
    )


def shaped(
    wire: MessageReader | None,
    native: Sequence[ToolResult],
    text_shaper: MessageReader,
    text: Sequence[ToolResult],
) -> list[dict[str, Any]]:
    """Native results as the wire's result messages, then text results as a continuation.

    Where the wire answers calls in a user message (Anthropic, Bedrock, Gemini), the
    continuation's text joins that message as a block of its own, after the results: the
    providers want user and assistant turns to alternate, never two user messages.
    """
    messages: list[dict[str, Any]] = []
    if native and wire is not None:
        messages += wire.result_messages(native)
    if text:
        messages += in_wire_shape(wire, _joined(messages, text_shaper.result_messages(text)))
    return messages


def in_wire_shape(
    wire: MessageReader | None, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A text continuation's plain user messages, as ``wire`` takes a user's text.

    Gemini holds a message's text in ``parts`` and Bedrock in a list of blocks: a plain
    ``{"role": "user", "content": str}`` is refused there.
    """
    if not isinstance(wire, ExtractionStrategy):
        return messages
    return [
        wire.user_text(m["content"])
        if m.get("role") == "user" and isinstance(m.get("content"), str) and len(m) == 2
        else m
        for m in messages
    ]


def _joined(answers: list[dict[str, Any]], text: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``text`` without its first message when that went into the last of ``answers``.

    A user message whose ``content`` (or Gemini's ``parts``) is a list of blocks takes a
    text continuation's words as one more block: typed (``{"type": "text", ...}``) among
    typed blocks, else ``{"text": ...}``.
    """
    if not answers or not text:
        return text
    last, first = answers[-1], text[0]
    words = first.get("content")
    if last.get("role") != "user" or first.get("role") != "user" or not isinstance(words, str):
        return text
    for key in ("content", "parts"):
        blocks = last.get(key)
        if isinstance(blocks, list) and blocks:
            typed = all(isinstance(b, dict) and "type" in b for b in blocks)
            block = {"type": "text", "text": words} if typed else {"text": words}
            answers[-1] = {**last, key: [*blocks, block]}
            return text[1:]
    return text
