"""``callgate proxy``: the gateway in front of an OpenAI- or Anthropic-compatible server.

The web stack (Starlette, uvicorn, httpx) loads only when the command runs, so the rest
of the command line stays light. A bad flag is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from callgate.cli.proxy_file import apply_config
from callgate.errors import ProxyUsageError

if TYPE_CHECKING:
    from callgate.proxy.engine import BlockedMode, Options

__all__ = [
    "add_proxy_parser",
    "add_span_flags",
    "add_turn_flags",
    "parse_on_blocked",
    "proxy_config",
    "turn_options",
    "turn_spans",
]


def parse_on_blocked(words: list[str]) -> tuple[BlockedMode, int]:
    """``notice``, ``pass`` or ``repair [N]`` (N >= 1, default 1) as (mode, repairs)."""
    from callgate.proxy.engine import on_blocked

    try:
        return on_blocked(words)
    except ValueError as exc:
        raise ProxyUsageError(str(exc)) from exc


def _upstream(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ProxyUsageError(
            f"--upstream must be an http:// or https:// URL, not {url!r} "
            f"(scheme {parts.scheme or 'missing'!r})"
        )
    if not parts.hostname:
        raise ProxyUsageError(f"--upstream {url!r} names no host")
    return url


def _formats(text: str | None) -> tuple[str, ...] | None:
    from callgate.strategies.text.formats import FORMATS

    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        raise ProxyUsageError(
            f"--text-formats: unknown format {unknown[0]!r}; one of: {', '.join(FORMATS)}"
        )
    return names


def turn_options(args: argparse.Namespace) -> Options:
    """The engine's :class:`~callgate.proxy.engine.Options` the flags ask for."""
    from callgate.proxy.engine import Options

    apply_config(args)
    mode, repairs = parse_on_blocked(args.on_blocked)
    return Options(
        on_blocked=mode,
        repairs=repairs,
        stream_args=args.stream_args,
        normalize=args.normalize,
        move_reasoning=args.move_reasoning,
        repair_json=args.repair_json,
        text_formats=_formats(args.text_formats),
    )


def proxy_config(args: argparse.Namespace, upstream: str) -> Any:
    """The :class:`~callgate.proxy.app.ProxyConfig` the flags (and ``--config``) ask for."""
    from callgate.proxy.app import ProxyConfig
    from callgate.proxy.wires.translate import upstream_wire

    options = turn_options(args)
    try:
        wire = upstream_wire(args.upstream_wire)
    except ValueError as exc:
        raise ProxyUsageError(str(exc)) from exc
    return ProxyConfig(
        upstream=_upstream(upstream),
        upstream_wire=wire,
        spans=turn_spans(args, "callgate-proxy"),
        options=options,
        audit_dir=Path(args.audit) if args.audit else None,
        audit_max_bytes=args.audit_max_bytes,
        audit_files=args.audit_files,
        audit_messages=args.audit_messages,
        read_timeout=args.timeout,
        max_request_bytes=args.max_request_bytes,
    )


def _run(args: argparse.Namespace) -> int:
    # Ctrl-C stops the proxy (exit 130) even when SIGINT came ignored from the parent (a
    # background job, nohup, some CI runners): uvicorn re-raises what it inherited.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    apply_config(args)
    if args.upstream is None and not args.demo:
        raise ProxyUsageError("give --upstream URL (or --demo)")
    try:
        from callgate.proxy.app import create_app
        from callgate.proxy.serving import ServerThread, bound_socket, run
    except ImportError as exc:
        raise ProxyUsageError(
            f"the proxy needs its extra: pip install 'callgate[proxy]' ({exc})"
        ) from exc
    demo = None
    upstream = args.upstream
    if args.demo:
        from callgate.proxy.demo import demo_upstream

        demo = ServerThread(demo_upstream()).__enter__()
        upstream = demo.url
    config = proxy_config(args, upstream)
    sock = bound_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}"
    if demo is not None:
        from callgate.proxy.demo import instructions

        print(instructions(url, demo.url), flush=True)
    else:
        print(f"callgate proxy: {url} -> {upstream}", file=sys.stderr, flush=True)
    try:
        run(create_app(config), sock, drain_seconds=args.drain)
    finally:
        if demo is not None:
            demo.__exit__(None, None, None)
    return 0


def add_turn_flags(parser: Any) -> None:
    """The flags of how turns are rewritten and audited (``proxy`` and ``ext-proc`` share them).

    They set no default of their own: :func:`~callgate.cli.proxy_file.apply_config` fills
    in what neither the command line nor ``--config`` gave.
    """
    parser.add_argument(
        "--stream-args",
        action="store_true",
        help=(
            "show calls' arguments as they form (the closing brace and the call's finish "
            "wait for the gate)"
        ),
    )
    parser.add_argument(
        "--move-reasoning",
        action="store_true",
        help="move <think>...</think> of the content to reasoning_content",
    )
    parser.add_argument(
        "--repair-json",
        action="store_true",
        help="repair a call's broken argument JSON where no value changes and the schema "
        "confirms it (each edit is a repaired_arguments warning)",
    )
    parser.add_argument(
        "--no-normalize",
        dest="normalize",
        action="store_false",
        help="forward requests as the client sent them (default: rewrite what strict servers "
        "refuse: Claude Code's system messages, Codex's non-function tools, broken history)",
    )
    parser.add_argument("--audit", metavar="DIR", help="write one audit record per turn into DIR")
    parser.add_argument(
        "--audit-max-bytes", type=int, help="rotate the audit file past this size (64 MiB)"
    )
    parser.add_argument("--audit-files", type=int, help="rotated audit files kept (default: 8)")
    parser.add_argument(
        "--audit-messages", action="store_true", help="store the request's messages too"
    )


def add_span_flags(parser: Any) -> None:
    """The OpenTelemetry flags (``proxy`` and ``ext-proc`` share them)."""
    parser.add_argument(
        "--otlp",
        choices=["grpc", "http"],
        help="export one span per turn with OTLP (also on when OTEL_EXPORTER_OTLP_ENDPOINT is set)",
    )
    parser.add_argument(
        "--span-arguments",
        action="store_true",
        help="put the calls' argument values on spans (off: they are the user's data)",
    )


def turn_spans(args: argparse.Namespace, service: str) -> Any:
    """The :class:`~callgate.proxy.telemetry.TurnSpans` the flags ask for, or None.

    Spans are on with ``--otlp`` or where ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; the
    ``otel`` extra must then be installed (a one-line error says so).
    """
    otlp = getattr(args, "otlp", None)
    if not (otlp or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
        return None
    try:
        from callgate.proxy.telemetry import TurnSpans, otlp_provider

        provider = otlp_provider(service, protocol=otlp or "grpc")
    except ImportError as exc:
        raise ProxyUsageError(
            f"spans need their extra: pip install 'callgate[otel]' ({exc})"
        ) from exc
    return TurnSpans(provider, record_arguments=bool(getattr(args, "span_arguments", False)))


def add_proxy_parser(sub: Any) -> None:
    """Add the ``proxy`` subcommand to the command line's subparsers.

    A flag not given stays unset here: :func:`~callgate.cli.proxy_file.apply_config` takes
    it from ``--config`` or gives its default (:data:`~callgate.cli.proxy_file.FLAGS`).
    """
    proxy = sub.add_parser(
        "proxy",
        help="run the tool-call gateway in front of an OpenAI- or Anthropic-compatible server",
        argument_default=argparse.SUPPRESS,
    )
    proxy.add_argument(
        "--config",
        metavar="FILE",
        help='a TOML file of these flags (upstream = "http://...", on-blocked = "notice", ...); '
        "flags given here win",
    )
    proxy.add_argument("--upstream", metavar="URL", help="the server to gate (http:// or https://)")
    proxy.add_argument(
        "--upstream-wire",
        metavar="WIRE",
        help="the upstream's wire: chat, messages or responses; every request is translated "
        "to it and answered on the client's wire (default: the client's own wire)",
    )
    proxy.add_argument("--host", help="the address to listen on (default: 127.0.0.1)")
    proxy.add_argument("--port", type=int, help="the port to listen on (default: 8787)")
    proxy.add_argument(
        "--text-formats",
        metavar="A,B",
        help="text formats read in every turn (default: those of each request's model)",
    )
    proxy.add_argument(
        "--on-blocked",
        nargs="+",
        metavar="MODE",
        help="a call failing its schema or identity: notice, repair N (default: repair 2), or pass",
    )
    add_turn_flags(proxy)
    add_span_flags(proxy)
    proxy.add_argument("--timeout", type=float, help="upstream read timeout, s (default: 600)")
    proxy.add_argument(
        "--max-request-bytes", type=int, help="the largest request body (default: 32 MiB)"
    )
    proxy.add_argument("--drain", type=float, help="seconds to drain on SIGTERM (default: 30)")
    proxy.add_argument(
        "--demo", action="store_true", help="in front of a bundled upstream of sample streams"
    )
    proxy.set_defaults(run=_run)
