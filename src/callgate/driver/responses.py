"""A driver's decision for one step (:class:`DriverResponse`) and several drivers' merged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from attrs import frozen

from callgate.gate.findings import Finding
from callgate.gate.turn import call_order
from callgate.strategies.base import ExtractedCall, MessageReader, ToolResult
from callgate.strategies.text.strategy import TextFormatsStrategy

Status = Literal["call_pending", "call_executed", "call_failed"]
TEXT_RESULTS = TextFormatsStrategy()
"""Shapes results of calls read from text: a text-style continuation, not a native answer."""


@frozen
class DriverResponse:
    """What one driver decided for one step of a stream (or one whole message)."""

    status: Status | None = None
    results: tuple[ToolResult, ...] = ()
    """The calls answered in this step, each with its result, in call order."""
    messages: tuple[dict[str, Any], ...] = ()
    """The results shaped as the provider expects them in the next request."""
    findings: tuple[Finding, ...] = ()

    @property
    def calls(self) -> tuple[ExtractedCall, ...]:
        """The calls answered in this step."""
        return tuple(r.call for r in self.results)


def merge(
    responses: Sequence[DriverResponse], strategy: MessageReader | None = None
) -> DriverResponse:
    """Several drivers' responses to one step as one: the strongest status, all results.

    With the stream's wire ``strategy`` the results are put in call order, one per call
    (drivers that own the same tool share the ledger, so they answer a call alike), and
    shaped together: native ones as that provider's results (one Anthropic or Bedrock user
    message for all, not one per driver), text ones as one text-style continuation.
    Without it each driver's messages are kept as they were, one after the other.
    """
    rank = {None: 0, "call_pending": 1, "call_executed": 2, "call_failed": 3}
    status = max((r.status for r in responses), key=rank.__getitem__, default=None)
    results = [x for r in responses for x in r.results]
    messages = [x for r in responses for x in r.messages]
    if strategy is not None and len([r for r in responses if r.results]) > 1:
        results = list({r.call.slot: r for r in reversed(results)}.values())
        results.sort(key=lambda r: call_order(r.call.slot))
        native = [r for r in results if isinstance(r.call.slot, int)]
        text = [r for r in results if not isinstance(r.call.slot, int)]
        messages = shaped(strategy, native, TEXT_RESULTS, text)
    return DriverResponse(
        status,
        tuple(results),
        tuple(messages),
        tuple(x for r in responses for x in r.findings),
    )


def shaped(
    wire: MessageReader | None,
    native: Sequence[ToolResult],
    text_shaper: MessageReader,
    text: Sequence[ToolResult],
) -> list[dict[str, Any]]:
    """Native results as the wire's result messages, then text results as a continuation."""
    messages: list[dict[str, Any]] = []
    if native and wire is not None:
        messages += wire.result_messages(native)
    if text:
        messages += text_shaper.result_messages(text)
    return messages
