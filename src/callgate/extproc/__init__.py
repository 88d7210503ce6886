"""callgate inside Envoy: an ext_proc external processor around the gateway's engine.

``callgate ext-proc --listen HOST:PORT`` serves ``envoy.service.ext_proc.v3.ExternalProcessor``
(``pip install 'callgate[extproc]'``: grpcio and Envoy's protos). Envoy's ext_proc filter
sends it each request to a gated path and streams it the response; the processor runs the
same engine as ``callgate proxy`` and sends back only what the gate releases. The modules:
:mod:`~callgate.extproc.gated` (the engine, in one place), :mod:`~callgate.extproc.policy`
(per-route settings), :mod:`~callgate.extproc.exchange` (the protocol, no I/O),
:mod:`~callgate.extproc.wire` (Envoy's messages), :mod:`~callgate.extproc.server` (gRPC),
:mod:`~callgate.extproc.bootstrap` (an Envoy configuration). Nothing here is imported by
``import callgate``.
"""

from __future__ import annotations

__all__: list[str] = []
