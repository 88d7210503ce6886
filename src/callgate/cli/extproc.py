"""``callgate ext-proc``: the gate as Envoy's external processor (gRPC), beside ``callgate proxy``.

gRPC, Envoy's protos and the web stack load only when the command runs. A bad flag is one
line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from callgate.cli.proxy import add_span_flags, add_turn_flags, turn_options, turn_spans
from callgate.errors import ProxyUsageError

__all__ = ["add_extproc_parser", "extproc_config"]


def _listen(text: str) -> str:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ProxyUsageError(f"--listen must be HOST:PORT (127.0.0.1:50051), not {text!r}")
    return text


def extproc_config(args: argparse.Namespace) -> Any:
    """The :class:`~callgate.extproc.server.ExtProcConfig` the flags ask for.

    The flags are checked before the processor's extra is loaded, so a bad flag says so
    even where the extra is missing.
    """
    options = turn_options(args)
    if options.on_blocked == "repair":
        raise ProxyUsageError(
            "--on-blocked repair needs a second upstream call, which an external processor "
            "cannot make: use notice or pass"
        )
    spans = turn_spans(args, "callgate-ext-proc")
    from callgate.proxy.wires.translate import upstream_wire

    try:
        wire = upstream_wire(args.upstream_wire)
    except ValueError as exc:
        raise ProxyUsageError(str(exc)) from exc
    try:
        from callgate.extproc.server import ExtProcConfig
    except ImportError as exc:
        raise ProxyUsageError(
            f"the processor needs its extra: pip install 'callgate[extproc]' ({exc})"
        ) from exc
    return ExtProcConfig(
        options=options,
        audit_dir=Path(args.audit) if args.audit else None,
        audit_max_bytes=args.audit_max_bytes,
        audit_files=args.audit_files,
        audit_messages=args.audit_messages,
        max_request_bytes=args.max_request_bytes,
        spans=spans,
        upstream_wire=wire,
    )


def _run(args: argparse.Namespace) -> int:
    listen = _listen(args.listen)
    config = extproc_config(args)
    from callgate.extproc.server import Processor, serve

    processor = Processor(config)
    if args.metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(args.metrics_port, addr="127.0.0.1", registry=processor.metrics.registry)
    serve(processor, listen, drain_seconds=args.drain)
    return 0


def add_extproc_parser(sub: Any) -> None:
    """Add the ``ext-proc`` subcommand to the command line's subparsers."""
    cmd = sub.add_parser(
        "ext-proc",
        help="run the tool-call gate as Envoy's ext_proc external processor (gRPC)",
    )
    cmd.add_argument("--listen", default="127.0.0.1:50051", metavar="HOST:PORT")
    cmd.add_argument(
        "--text-formats",
        metavar="A,B",
        help="text formats read in every turn (default: those of each request's model)",
    )
    cmd.add_argument(
        "--on-blocked",
        nargs="+",
        default=["notice"],
        metavar="MODE",
        help="a call failing its schema or identity: notice (default) or pass",
    )
    add_turn_flags(cmd)
    cmd.add_argument(
        "--upstream-wire",
        metavar="WIRE",
        help="the upstream's wire: chat, messages or responses; each gated request is "
        "translated to it (body and path) and the answer written back in the client's wire",
    )
    cmd.add_argument("--max-request-bytes", type=int, default=32 * 1024 * 1024)
    cmd.add_argument("--drain", type=float, default=30.0, help="seconds to drain on SIGTERM")
    cmd.add_argument(
        "--metrics-port", type=int, metavar="PORT", help="serve Prometheus /metrics on PORT"
    )
    add_span_flags(cmd)
    cmd.set_defaults(run=_run)
