"""The ``callgate`` command line: check, replay, demo, diagram, export.

Exit codes are a contract: 0 pass, 1 a conformance failure, 2 anything unusable. Every
error is therefore one line on stderr with exit 2, never a traceback (which exits 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from callgate.audit.trace import Recorder
from callgate.cli.check import EXIT_CODES, Recorded, check_capture, check_fixture, format_text
from callgate.cli.extproc import add_extproc_parser
from callgate.cli.fixtures import examples
from callgate.cli.progress import Counted, Progress
from callgate.cli.proxy import add_proxy_parser
from callgate.errors import DiagramError, UsageError
from callgate.fsm import MACHINES
from callgate.fsm.export import EXPORTS
from callgate.gate.turn import POLICIES

EXIT_BROKEN_PIPE = 141
"""The exit status when the reader of stdout went away (128 + SIGPIPE, as a shell reports)."""

EXIT_INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT, as a shell reports): quiet, never a traceback."""


def _check(args: argparse.Namespace) -> int:
    try:
        raw = Path(args.fixture).read_bytes()
    except OSError as exc:
        print(f"callgate check: cannot read {args.fixture}: {exc}", file=sys.stderr)
        return 2
    try:
        tools = _tools_file(args.tools, ValueError) if args.tools else None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"callgate check: {exc}", file=sys.stderr)
        return 2
    result = check_capture(
        raw,
        profile=args.profile,
        tools=tools,
        strict_finish=args.strict_finish,
        max_tokens=args.max_tokens,
    )
    if args.report == "json":
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(format_text(result))
    return EXIT_CODES[result["status"]]


def _demo(args: argparse.Namespace) -> int:
    from callgate.cli.demo import play, scenarios

    played = [play(scenario) for scenario in scenarios()]
    if not args.fixtures:
        from callgate.cli.demo import format_played

        for number, item in enumerate(played, 1):
            print(format_played(item, number, verbose=args.verbose), end="\n\n")
    mismatches = 0
    progress = Progress("demo", len(examples()), "fixtures")
    for name, text in Counted(examples(), progress):
        expect = json.loads(text).get("expect", {})
        result = check_fixture(text)
        codes = sorted({f["code"] for f in result["findings"]})
        ok = EXIT_CODES[result["status"]] == expect.get("exit") and set(
            expect.get("codes", [])
        ) <= set(codes)
        mismatches += not ok
        if args.fixtures or not ok:
            mark = "ok " if ok else "!! "
            print(
                f"{mark}{name:<40} exit {EXIT_CODES[result['status']]}  {result['status']:<15}"
                f" {', '.join(codes) or '-'}"
            )
            if args.verbose:
                print("    " + format_text(result).replace("\n", "\n    "))
    progress.close()
    good = sum(item.as_documented for item in played)
    print(f"{good} of {len(played)} demo streams behaved as documented")
    print(
        f"{len(examples()) - mismatches} of {len(examples())} bundled conformance fixtures gave "
        "their documented verdict (callgate demo --fixtures lists them)"
    )
    return 0 if good == len(played) and not mismatches else 1


_PROGRESS_FROM = 1000
"""Captures of at least this many chunks report progress on a terminal."""


ALL_FORMATS = ("all", "default")
"""The --text-formats values for the detector's whole standing set ("default": the old spelling)."""


def _stream_options(args: argparse.Namespace) -> tuple[Any, Recorded, list[str] | None]:
    """The capture's chunks (counted if long), the recorded turn, the --text-formats.

    The tools are --tools, else a fixture's own, as ``callgate check`` reads them.
    """
    from callgate.cli.check import read_recorded
    from callgate.errors import CaptureError
    from callgate.strategies.text.formats import DEFAULT_FORMATS

    tools = _tools_file(args.tools, CaptureError) if args.tools else None
    recorded = read_recorded(Path(args.capture).read_bytes(), tools=tools)
    chunks: Sequence[Any] = recorded.stream
    if len(chunks) >= _PROGRESS_FROM:
        chunks = Counted(chunks, Progress(args.command, len(chunks), "chunks"))
    formats = None
    if args.text_formats in ALL_FORMATS:
        formats = list(DEFAULT_FORMATS)
    elif args.text_formats is not None:
        formats = [name.strip() for name in args.text_formats.split(",") if name.strip()]
    return chunks, recorded, formats


def _tools_file(path: str, error: type[ValueError]) -> dict[str, Any]:
    """``--tools``: a JSON object of {tool name: JSON Schema}, or a request's tools list.

    The list may be in any wire's shape (:mod:`callgate.cli.tool_lists`).
    """
    from callgate.cli.tool_lists import schemas_of_tools

    tools = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(tools, list):
        return schemas_of_tools(tools)
    if not isinstance(tools, dict):
        raise error(
            "--tools must be a JSON object of {tool name: JSON Schema} or a request's tools list"
        )
    return tools


def _replayed(
    args: argparse.Namespace, recorder: Recorder | None
) -> tuple[Sequence[Any], dict[str, Any]]:
    """The command's capture run through :func:`replay` with its stream options.

    One reading for ``replay`` and ``diagram --trace``, so that a trace follows the path
    the verdict was reached on.
    """
    from callgate.cli.replay import replay

    chunks, recorded, formats = _stream_options(args)
    try:
        result = replay(
            chunks,
            recorded.tool_schemas,
            profile=recorded.profile,
            policy=args.policy,
            text_formats=formats,
            recorder=recorder,
            strict_finish=args.strict_finish,
            max_tokens=recorded.max_tokens if args.max_tokens is None else args.max_tokens,
            clean_end=getattr(recorded.stream, "ended", False),
        )
    finally:
        _done(chunks)
    return chunks, result


def _done(chunks: Sequence[Any]) -> None:
    """Erase the progress line of a counted capture."""
    if isinstance(chunks, Counted):
        chunks.progress.close()


def _page_writer(
    html: str,
) -> Callable[[Sequence[Any], Mapping[str, Any], Recorder, str], None]:
    """What writes the replay page of (chunks, result, recorder, title) into ``html``."""

    def write(
        chunks: Sequence[Any], result: Mapping[str, Any], recorder: Recorder, title: str
    ) -> None:
        from callgate.audit.figures import trace_figures
        from callgate.audit.page import replay_page

        diagrams, missing = trace_figures(recorder.steps)
        page = replay_page(
            result, recorder.steps, chunks, diagrams, title=title, no_diagrams=missing
        )
        Path(html).write_text(page, encoding="utf-8", errors="backslashreplace")
        drawn = "without diagrams" if missing else f"with {len(diagrams)} diagrams"
        print(f"callgate replay: wrote {html} ({len(chunks)} chunks, {drawn})", file=sys.stderr)
        if missing:
            print(f"callgate replay: the page has no diagrams: {missing}", file=sys.stderr)

    return write


def _replay(args: argparse.Namespace) -> int:
    from callgate.cli.audit_replay import replay_audit
    from callgate.cli.replay import format_replay

    writer = _page_writer(args.html) if args.html else None
    try:
        audited = replay_audit(
            Path(args.capture),
            as_json=args.json,
            record=args.record,
            turn=args.turn,
            html=writer,
        )
        if audited is not None:  # a callgate proxy audit log
            return audited
        if args.record is not None or args.turn is not None:
            raise ValueError("--record and --turn choose a record of a callgate proxy audit log")
        recorder = Recorder() if writer is not None else None
        chunks, result = _replayed(args, recorder)
        if writer is not None and recorder is not None:
            writer(chunks, result, recorder, Path(args.capture).name)
    except (OSError, ValueError) as exc:
        print(f"callgate replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(format_replay(result))
    return EXIT_CODES[result["status"]]


def _diagram(args: argparse.Namespace) -> int:
    from callgate.diagrams import render, trace_dot

    dot = None
    if args.trace:
        args.capture = args.trace
        recorder = Recorder()
        try:
            _replayed(args, recorder)
        except (OSError, ValueError) as exc:  # unreadable, or its first chunk of no known format
            print(f"callgate diagram: {exc}", file=sys.stderr)
            return 2
        steps = recorder.of(args.machine)
        dot = trace_dot(MACHINES[args.machine], steps, title=Path(args.trace).name)
    if args.format == "png" and not args.output and sys.stdout.isatty():
        raise UsageError("will not write a PNG image to a terminal; give -o FILE or redirect")
    data = render(MACHINES[args.machine], args.format, dot=dot)
    if args.output:
        Path(args.output).write_bytes(data)
    elif args.format == "dot":
        sys.stdout.write(data.decode())
    else:
        sys.stdout.buffer.write(data)
    return 0


def _export(args: argparse.Namespace) -> int:
    if (args.machine is None) is (args.vectors is None):
        print("callgate export: name a machine, or give --vectors DIR", file=sys.stderr)
        return 2
    try:
        if args.vectors is not None:
            from callgate.cli.conformance import write_vectors

            progress = Progress("export", 0, "streams recorded")
            try:
                written = write_vectors(Path(args.vectors), progress)
            finally:
                progress.close()
            for path in written:
                print(f"wrote {path}")
            return 0
        text = EXPORTS[args.format](MACHINES[args.machine])
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    except OSError as exc:
        print(f"callgate export: {exc}", file=sys.stderr)
        return 2
    return 0


def _token_count(text: str) -> int:
    """A ``--max-tokens`` value: an int >= 1 (argparse reports anything else)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _max_tokens_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-tokens",
        type=_token_count,
        metavar="N",
        help="the request's output token limit: a turn whose reported usage reaches it was"
        " cut short and runs no call, whatever its finish reason (default: a fixture's"
        " max_tokens)",
    )


def _stream_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        help="a JSON file of {tool name: JSON Schema}, or a request's tools list (any wire)",
    )
    _max_tokens_argument(parser)
    parser.add_argument("--policy", choices=list(POLICIES), default="turn")
    from callgate.strategies.text.formats import FORMATS

    parser.add_argument(
        "--text-formats",
        help="text formats to detect in the content, comma-separated (tool_call_tag,deepseek),"
        " or 'all' for every stream format prose rarely writes ('default' is the old spelling);"
        " without it, the formats of the stream's model and wire; one of: " + ", ".join(FORMATS),
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="callgate", description="Gate streamed LLM tool calls with explicit machines."
    )
    parser.add_argument("--version", action="version", version=f"callgate {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="check one fixture; exit 0 pass, 1 fail, 2 invalid")
    check.add_argument(
        "fixture", help="a fixture JSON file, or a raw capture (SSE, JSON Lines, JSON array)"
    )
    check.add_argument("--report", choices=["json", "text"], default="text")
    check.add_argument(
        "--profile", help="the wire format (default: the fixture's, else recognised)"
    )
    check.add_argument(
        "--tools", help="a JSON file of {tool name: JSON Schema} (default: the fixture's)"
    )
    check.add_argument(
        "--strict-finish",
        action="store_true",
        help="the seed validator's rule: refuse calls an OpenAI turn ends with finish_reason"
        " 'stop' (by default they pass, with a stop_finish_reason warning)",
    )
    _max_tokens_argument(check)
    check.set_defaults(run=_check)

    replay = sub.add_parser(
        "replay", help="run a recorded stream through the buffer and show what the user sees"
    )
    replay.add_argument(
        "capture", help="a JSON array, JSON Lines, raw SSE text, or a callgate proxy audit log"
    )
    _stream_arguments(replay)
    replay.add_argument(
        "--strict-finish",
        action="store_true",
        help="refuse calls an OpenAI turn ends with finish_reason 'stop' (as check does)",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.add_argument("--html", metavar="FILE", help="write a self-contained audit page")
    which = replay.add_mutually_exclusive_group()
    which.add_argument(
        "--record", type=int, metavar="N", help="of an audit log: the Nth record (from 1)"
    )
    which.add_argument(
        "--turn", metavar="ID", help="of an audit log: the record of this response id"
    )
    replay.set_defaults(run=_replay)

    demo = sub.add_parser("demo", help="play the bundled sample streams through buffer and drivers")
    demo.add_argument("-v", "--verbose", action="store_true", help="print every chunk")
    demo.add_argument(
        "--fixtures", action="store_true", help="list every bundled conformance fixture instead"
    )
    demo.set_defaults(run=_demo)

    machines = sorted(MACHINES)
    diagram = sub.add_parser("diagram", help="draw a machine with Graphviz")
    diagram.add_argument("machine", choices=machines)
    diagram.add_argument("--format", choices=["dot", "svg", "png"], default="dot")
    diagram.add_argument("-o", "--output", help="write to this file instead of stdout")
    diagram.add_argument(
        "--trace", metavar="CAPTURE", help="draw the path this recorded stream took over it"
    )
    _stream_arguments(diagram)
    diagram.add_argument(
        "--strict-finish",
        action="store_true",
        help="trace under the rule replay --strict-finish uses",
    )
    diagram.set_defaults(run=_diagram)

    export = sub.add_parser(
        "export", help="write a machine as JSON, XState or SCXML, or the conformance vectors"
    )
    export.add_argument("machine", nargs="?", choices=machines)
    export.add_argument("--format", choices=list(EXPORTS), default="json")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")
    export.add_argument(
        "--vectors", metavar="DIR", help="write every machine's conformance vectors into DIR"
    )
    export.set_defaults(run=_export)

    add_proxy_parser(sub)
    add_extproc_parser(sub)
    return parser


def _version() -> str:
    try:
        return version("callgate")
    except PackageNotFoundError:
        return "(not installed)"


def _tolerant(stream: Any) -> None:
    """Let a stream print any string: a lone surrogate is written as a backslash escape."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (errors: one line on stderr, exit 2)."""
    args = build_parser().parse_args(argv)
    _tolerant(sys.stdout)
    _tolerant(sys.stderr)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:  # Ctrl-C; the proxy has drained before uvicorn re-raises it
        return EXIT_INTERRUPTED
    except (OSError, ValueError, DiagramError, RecursionError, UsageError) as exc:
        reason = "input nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        print(f"callgate {args.command}: {' '.join(reason.split())}", file=sys.stderr)
        return 2
    return code


def _silence_stdout() -> None:
    """The reader went away: point stdout at the null device so the exit flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
