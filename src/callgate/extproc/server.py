"""The gRPC server: ``envoy.service.ext_proc.v3.ExternalProcessor`` on grpcio's asyncio server.

:class:`Processor` answers each ``Process`` stream with an
:class:`~callgate.extproc.exchange.Exchange` and, once the exchange ends (or Envoy ends
the stream first: the client went away, the upstream broke), counts the turn in the
proxy's Prometheus metrics, writes its audit record and records its span. :func:`serve`
runs it until SIGTERM or SIGINT (then stops taking streams and lets open ones finish);
:class:`ProcessorThread` runs it on a loopback port in a background thread.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from attrs import field, frozen
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as pb_grpc

from callgate.extproc.exchange import Exchange
from callgate.extproc.gated import Options
from callgate.proxy.audit import AuditLog
from callgate.proxy.metrics import Metrics

__all__ = ["ExtProcConfig", "Processor", "ProcessorThread", "serve"]

logger = logging.getLogger("callgate.extproc")


@frozen
class ExtProcConfig:
    """What the processor needs: how turns are treated and what it records."""

    options: Options = field(factory=lambda: Options(on_blocked="notice"))
    audit_dir: Path | None = None
    audit_max_bytes: int = 64 * 1024 * 1024
    audit_files: int = 8
    audit_messages: bool = False
    max_request_bytes: int = 32 * 1024 * 1024
    spans: Any = None
    """A :class:`~callgate.proxy.telemetry.TurnSpans` (None: no spans)."""
    upstream_wire: str | None = None
    """The upstream's wire (``chat``, ``messages``, ``responses``); None: the client's."""


class Processor:
    """The ``ExternalProcessor`` service (see the module's docstring)."""

    def __init__(self, config: ExtProcConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.audit = AuditLog.configured(config)
        self.active = 0
        """Streams open now."""
        self.finished: list[Exchange] = []
        """The last exchanges ended (at most 64), newest last."""

    async def Process(self, requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        """One HTTP exchange: each ``ProcessingRequest`` answered as :class:`Exchange` says."""
        metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        exchange = Exchange(
            self.config.options,
            metadata,
            keep_raw=self.audit is not None,
            max_request_bytes=self.config.max_request_bytes,
            upstream_wire=self.config.upstream_wire,
        )
        started = time.time_ns()
        self.active += 1
        try:
            async for request in requests:
                for answer in exchange.receive(request):
                    yield answer
        finally:
            self.active -= 1
            if not exchange.ended:
                exchange.interrupt("the exchange ended before the response did")
            self._record(exchange, started)

    def _record(self, exchange: Exchange, started: int) -> None:
        """Count, audit and trace a finished exchange (never raises into the stream)."""
        self.finished = [*self.finished[-63:], exchange]
        try:
            if exchange.status >= 400 and exchange.gated is not None:
                self.metrics.upstream_error(f"http_{exchange.status}")
            gated = exchange.gated
            if gated is None or not gated.turn.decided:
                return
            how = "streamed" if gated.streaming else "whole"
            turn = gated.turn
            self.metrics.turn(turn, how)
            if self.audit is not None:
                timings = {"total_s": time.perf_counter() - gated.started}
                raw = b"".join(turn.raw)
                self.audit.write(turn, raw=raw, request=turn.request, timings=timings, how=how)
            if self.config.spans is not None:
                self.config.spans.record(
                    turn, start_ns=started, attributes={"callgate.served_by": "ext_proc"}
                )
        except Exception:
            logger.exception("callgate ext-proc: a turn could not be recorded")


async def start(processor: Processor, listen: str) -> tuple[grpc.aio.Server, int]:
    """A started asyncio gRPC server for ``processor`` on ``listen`` (HOST:PORT; port 0: free)."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_ExternalProcessorServicer_to_server(processor, server)
    port = server.add_insecure_port(listen)
    await server.start()
    return server, port


def serve(processor: Processor, listen: str, *, drain_seconds: float = 30.0) -> None:
    """Serve until SIGTERM or SIGINT, then stop taking streams; open ones get ``drain_seconds``."""

    async def main() -> None:
        server, port = await start(processor, listen)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        host = listen.rpartition(":")[0]
        print(f"callgate ext-proc: listening on {host}:{port}", flush=True)
        await stop.wait()
        await server.stop(drain_seconds)

    asyncio.run(main())


class ProcessorThread:
    """A processor served on 127.0.0.1 (a free port) in a daemon thread; a context manager."""

    def __init__(self, processor: Processor, listen: str = "127.0.0.1:0") -> None:
        self.processor = processor
        self.listen = listen
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: grpc.aio.Server | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def begin() -> None:
            self._server, self.port = await start(self.processor, self.listen)
            self._ready.set()

        self._loop.run_until_complete(begin())
        self._loop.run_forever()

    def __enter__(self) -> ProcessorThread:
        """Start serving; wait (up to 20 s) until it listens."""
        self._thread.start()
        if not self._ready.wait(20):
            raise RuntimeError("the processor did not start")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """Stop the server and its thread."""
        server = self._server
        if server is not None:
            done = asyncio.run_coroutine_threadsafe(server.stop(1), self._loop)
            done.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
