"""OpenTelemetry spans of gated turns, for the proxy and the Envoy processor alike.

One span per turn, named and described by the GenAI semantic conventions for the model
call (``chat {model}``, ``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.finish_reasons``, token usage), one span
event per tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``),
and callgate's own attributes: the verdict, the finding codes, the text formats read,
the calls sent and withheld. Argument values are left out unless asked for
(``record_arguments``): they are the user's data.

``pip install 'callgate[otel]'``; OpenTelemetry is imported only when a :class:`TurnSpans`
is made. :func:`otlp_provider` exports with the standard OTLP exporter, configured by
the standard ``OTEL_EXPORTER_OTLP_*`` variables.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from callgate.gate.findings import Finding
from callgate.proxy.engine import Call

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

__all__ = ["TracedTurn", "TurnSpans", "otlp_provider", "turn_attributes"]

_PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}


class TracedTurn(Protocol):
    """What a span reads of a finished turn (a gated turn of any wire)."""

    wire: str
    request: Mapping[str, Any]
    calls: list[Call]
    upstream_finish: str | None

    @property
    def status(self) -> str:
        """The turn's verdict."""

    @property
    def findings(self) -> list[Finding]:
        """What the gate found."""

    @property
    def formats(self) -> tuple[str, ...]:
        """The text formats read."""


def _usage(turn: object) -> dict[str, int]:
    """Token counts the upstream reported, as the conventions name them."""
    found: dict[str, int] = {}
    for source in (getattr(turn, "usage", None), getattr(turn, "delta_usage", None)):
        if not isinstance(source, Mapping):
            continue
        pairs = (
            ("gen_ai.usage.input_tokens", ("prompt_tokens", "input_tokens")),
            ("gen_ai.usage.output_tokens", ("completion_tokens", "output_tokens")),
        )
        for name, keys in pairs:
            for key in keys:
                if isinstance(source.get(key), int):
                    found[name] = source[key]
    return found


def turn_attributes(turn: TracedTurn) -> dict[str, Any]:
    """The span attributes of a turn: the GenAI conventions' and callgate's (no arguments)."""
    model = turn.request.get("model")
    withheld = getattr(turn, "withheld", [])
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _PROVIDERS.get(turn.wire, turn.wire),
        "callgate.wire": turn.wire,
        "callgate.verdict": turn.status,
        "callgate.finding_codes": sorted({f.code for f in turn.findings}),
        "callgate.text_formats": list(turn.formats),
        "callgate.calls_sent": len(turn.calls),
        "callgate.calls_withheld": len(withheld),
        "callgate.attempt": int(getattr(turn, "attempt", 0)),
    }
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    if turn.upstream_finish is not None:
        attributes["gen_ai.response.finish_reasons"] = [turn.upstream_finish]
    attributes.update(_usage(turn))
    return attributes


class TurnSpans:
    """Records one span per finished turn on a tracer provider (the global one by default)."""

    def __init__(self, provider: Any = None, *, record_arguments: bool = False) -> None:
        from opentelemetry import trace

        self.tracer: Tracer = trace.get_tracer("callgate", tracer_provider=provider)
        self.record_arguments = record_arguments

    def record(
        self,
        turn: TracedTurn,
        *,
        start_ns: int,
        end_ns: int | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        """The span of ``turn``, from ``start_ns`` to ``end_ns`` (now when None)."""
        from opentelemetry.trace import SpanKind

        model = turn.request.get("model")
        name = f"chat {model}" if isinstance(model, str) and model else "chat"
        span = self.tracer.start_span(
            name,
            kind=SpanKind.CLIENT,
            start_time=start_ns,
            attributes={**turn_attributes(turn), **(attributes or {})},
        )
        for call in turn.calls:
            span.add_event("callgate.tool_call", self._call(call, "sent"))
        for result in getattr(turn, "withheld", []):
            refused = Call(result.call.id or "", result.call.name, "", "", result.call.ref)
            event = self._call(refused, "withheld")
            if self.record_arguments:
                event["gen_ai.tool.call.arguments"] = json.dumps(result.call.arguments)
            span.add_event("callgate.tool_call", event)
        span.end(end_time=end_ns)

    def record_served(self, turn: TracedTurn, started: float, *, served_by: str) -> None:
        """The span of a turn served since ``started`` (``time.perf_counter()``).

        A span that cannot be recorded is logged, never raised: it is not worth a client's
        answer.
        """
        elapsed = time.perf_counter() - started
        try:
            self.record(
                turn,
                start_ns=time.time_ns() - int(elapsed * 1e9),
                attributes={"callgate.served_by": served_by},
            )
        except Exception:
            logging.getLogger("callgate.proxy").exception("a turn's span could not be recorded")

    def _call(self, call: Call, outcome: str) -> dict[str, Any]:
        event: dict[str, Any] = {
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            "callgate.call.outcome": outcome,
        }
        if call.id:
            event["gen_ai.tool.call.id"] = call.id
        if call.source:
            event["callgate.call.source"] = call.source
        if self.record_arguments and call.arguments:
            event["gen_ai.tool.call.arguments"] = call.arguments
        return event


def otlp_provider(
    service_name: str = "callgate", *, protocol: str = "grpc", exporters: Sequence[Any] = ()
) -> TracerProvider:
    """A tracer provider exporting in batches with the standard OTLP exporter (or ``exporters``).

    The endpoint and headers come from the standard ``OTEL_EXPORTER_OTLP_*`` variables.
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    chosen = list(exporters)
    if not chosen:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
                OTLPSpanExporter,
            )
        chosen = [OTLPSpanExporter()]
    for exporter in chosen:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
