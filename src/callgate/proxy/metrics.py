"""The proxy's Prometheus metrics, in a registry of its own (one per application).

Turns by wire and status, calls sent by source (``native`` or the text format they were
read from), withheld calls by finding code, request rewrites by code, upstream errors by
kind, and the time the engine added per turn and per chunk.
"""

from __future__ import annotations

from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest
from starlette.responses import Response

from callgate.gate.findings import Finding
from callgate.proxy.engine import Call
from callgate.proxy.normalize import Rewrite

_PER_TURN = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0)
_PER_CHUNK = (1e-6, 2.5e-6, 5e-6, 1e-5, 1.5e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3)


class PlayedTurn(Protocol):
    """What the metrics read of a finished turn (a gated turn of either wire)."""

    wire: str
    calls: list[Call]
    chunks: int
    cpu_ns: int

    @property
    def status(self) -> str:
        """The turn's verdict."""

    @property
    def findings(self) -> list[Finding]:
        """What the gate found."""


class Metrics:
    """The counters and histograms of one proxy application."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.turns = Counter(
            "callgate_proxy_turns",
            "Turns gated, by wire and verdict.",
            ["wire", "status"],
            registry=r,
        )
        self.calls = Counter(
            "callgate_proxy_calls",
            "Calls sent to clients, by source format.",
            ["format"],
            registry=r,
        )
        self.blocked = Counter(
            "callgate_proxy_blocked",
            "Error findings of gated turns, by code.",
            ["code"],
            registry=r,
        )
        self.upstream = Counter(
            "callgate_proxy_upstream_errors", "Upstream failures, by kind.", ["kind"], registry=r
        )
        self.rewritten = Counter(
            "callgate_proxy_rewrites",
            "Request rewrites of the normalization, by code.",
            ["code"],
            registry=r,
        )
        self.added = Histogram(
            "callgate_proxy_added_seconds",
            "Engine time added per turn.",
            buckets=_PER_TURN,
            registry=r,
        )
        self.per_chunk = Histogram(
            "callgate_proxy_added_seconds_per_chunk",
            "Engine time added per upstream chunk (a turn's mean).",
            buckets=_PER_CHUNK,
            registry=r,
        )
        self._children: dict[tuple[Any, ...], Any] = {}
        """Each labelled series once looked up (``labels()`` costs more than the count)."""

    def _child(self, family: Counter, *labels: str) -> Any:
        """``family.labels(*labels)``, looked up once per distinct labels."""
        key = (family, *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = family.labels(*labels)
        return child

    def turn(self, turn: PlayedTurn, how: str) -> None:
        """Count a finished turn (``how`` it was served is not a label: it is in the audit)."""
        del how
        self._child(self.turns, turn.wire, turn.status).inc()
        for call in turn.calls:
            self._child(self.calls, call.source).inc()
        for code in {f.code for f in turn.findings if f.severity == "error"}:
            self._child(self.blocked, code).inc()
        self.added.observe(turn.cpu_ns / 1e9)
        if turn.chunks:
            self.per_chunk.observe(turn.cpu_ns / 1e9 / turn.chunks)

    def rewrites(self, rewrites: list[Rewrite]) -> None:
        """Count one request's rewrites (:func:`callgate.proxy.normalize.normalize`'s)."""
        for rewrite in rewrites:
            self._child(self.rewritten, rewrite.code).inc()

    def upstream_error(self, kind: str) -> None:
        """Count an upstream failure (a connection error's class, or ``http_<status>``)."""
        self._child(self.upstream, kind).inc()

    def response(self) -> Response:
        """The exposition page."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
