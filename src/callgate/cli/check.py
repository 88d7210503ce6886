"""The conformance checker behind ``callgate check``: a fixture in, a report and exit code out.

A fixture is a JSON object: ``profile`` (a wire strategy name, or ``auto``/absent to
recognise it from the stream), ``tool_schemas`` ({name: JSON Schema}) and the stream as
``chunks`` or ``events``, in order, optionally ending with the string ``"[DONE]"`` (the
server's own end of the stream was seen), and ``max_tokens`` (the request's output
token limit: usage that reaches it is a cut). Other keys (a description, the expected outcome) are
ignored. The report's keys and the exit codes are a contract:

- 0, ``pass``: complete, unambiguous, schema-valid calls; the turn is executable;
- 1, ``fail``: a conformance failure; every call of the turn is blocked;
- 2, ``invalid`` (the fixture is unusable) or ``not_applicable`` (no streamed tool call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from callgate.buffer import Choice, LLMStreamBuffer, token_limit
from callgate.cli.capture import (
    Capture,
    captured,
    checked_chunk,
    ends_with_done,
    load_capture,
    loads,
)
from callgate.errors import CaptureError, FixtureError, UnrecognizedStreamError
from callgate.fsm.verdict import VERDICT
from callgate.gate.findings import Finding, blocked_with_turn, finding
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import BaseSlot
from callgate.strategies import WIRE_RECORDS
from callgate.strategies.text.formats import END_FORMATS

EXIT_CODES = {"pass": 0, "fail": 1, "not_applicable": 2, "invalid": 2}


def unknown_profile(profile: str) -> str | None:
    """Why ``profile`` names no wire (``auto`` and every wire record's name do), or None."""
    if profile == "auto" or profile in WIRE_RECORDS:
        return None
    known = ", ".join(["auto", *WIRE_RECORDS])
    return f"unknown profile {profile!r}; known profiles: {known}"


def _invalid(profile: str | None, message: str) -> dict[str, Any]:
    return {
        "status": "invalid",
        "applicable": False,
        "executable": False,
        "profile": profile,
        "calls": [],
        "findings": [finding("invalid_fixture", message).as_dict()],
    }


def load_fixture(text: str) -> dict[str, Any]:
    """Parse and check a fixture's envelope; raise :class:`FixtureError` if unusable.

    A leading byte-order mark is ignored, as editors on some systems write one.
    """
    try:
        data = loads(text.removeprefix("\ufeff"))
    except ValueError as exc:
        raise FixtureError(f"the fixture is not JSON: {exc}") from None
    except RecursionError:
        raise FixtureError("the fixture's JSON nests too deeply to read") from None
    if not isinstance(data, dict):
        raise FixtureError("the fixture must be a JSON object")
    profile = data.get("profile", "auto")
    if profile is None:
        profile = "auto"
    if not isinstance(profile, str):
        raise FixtureError(f"'profile' must be a string, not {json.dumps(profile)[:40]}")
    unknown = unknown_profile(profile)
    if unknown is not None:
        raise FixtureError(unknown)
    if "chunks" in data and "events" in data:
        raise FixtureError("the fixture has both 'chunks' and 'events'; give one")
    stream = data.get("chunks", data.get("events"))
    if not isinstance(stream, list):
        raise FixtureError("the fixture needs the stream as a list under 'chunks' or 'events'")
    stream = list(stream)
    ended = ends_with_done(stream)
    for position, chunk in enumerate(stream):
        if not isinstance(chunk, dict):
            raise FixtureError(f"chunk {position} is not a JSON object")
    checked = [checked_chunk(chunk, f"chunk {position}") for position, chunk in enumerate(stream)]
    schemas = data.get("tool_schemas", {})
    if not isinstance(schemas, dict) or not all(isinstance(v, dict) for v in schemas.values()):
        raise FixtureError("'tool_schemas' must be an object of {tool name: JSON Schema object}")
    try:
        limit = token_limit(data.get("max_tokens"))
    except ValueError as exc:
        raise FixtureError(f"'max_tokens': {exc}") from None
    return {
        "profile": profile,
        "tool_schemas": schemas,
        "stream": captured(checked, ended),
        "max_tokens": limit,
    }


def check_fixture(
    text: str,
    *,
    profile: str | None = None,
    tools: Mapping[str, Any] | None = None,
    strict_finish: bool = False,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Run a fixture's stream through the buffer and report on the turn.

    ``profile``, ``tools`` and ``max_tokens``, when given, take the place of the
    fixture's own; ``strict_finish`` is the buffer's (the seed validator's finish rule).
    """
    try:
        fixture = load_fixture(text)
    except FixtureError as exc:
        return _invalid(None, str(exc))
    return check_stream(
        fixture["stream"],
        fixture["tool_schemas"] if tools is None else tools,
        fixture["profile"] if profile is None else profile,
        strict_finish=strict_finish,
        max_tokens=fixture["max_tokens"] if max_tokens is None else max_tokens,
    )


def check_capture(
    raw: bytes,
    *,
    profile: str | None = None,
    tools: Mapping[str, Any] | None = None,
    strict_finish: bool = False,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Check a fixture, or a raw capture (SSE, JSON Lines, a JSON array).

    For a raw capture ``profile`` defaults to ``auto`` and ``tools`` to any named call
    (strict JSON only); for a fixture they replace its own when given.
    """
    try:
        recorded = read_recorded(raw, profile=profile, tools=tools)
    except FixtureError as exc:
        return _invalid(None, str(exc))
    except CaptureError as exc:
        return _invalid(profile, str(exc))
    return check_stream(
        recorded.stream,
        recorded.tool_schemas,
        recorded.profile,
        strict_finish=strict_finish,
        max_tokens=recorded.max_tokens if max_tokens is None else max_tokens,
    )


@frozen
class Recorded:
    """A recorded turn as every command reads it: its stream, its tools and its wire."""

    stream: list[dict[str, Any]]
    tool_schemas: Mapping[str, Any] | None
    """The schemas the turn is checked against; None: any named call (strict JSON only)."""
    profile: str
    """A wire's profile name, or ``auto`` to recognise it from the stream."""
    max_tokens: int | None = None
    """The request's output token limit (a fixture's ``max_tokens``), if known."""


def read_recorded(
    raw: bytes, *, profile: str | None = None, tools: Mapping[str, Any] | None = None
) -> Recorded:
    """A fixture, or a raw capture (SSE, JSON Lines, a JSON array), as one recorded turn.

    A fixture gives its own ``tool_schemas`` and ``profile``; ``tools`` and ``profile``,
    when given, replace them. A raw capture has ``tools`` (None: any named call) and
    ``profile`` (default ``auto``). ``check``, ``replay`` and ``diagram --trace`` all read
    through here, so one file gets one verdict. Raises :class:`FixtureError` for an
    unusable fixture, :class:`CaptureError` for an unreadable capture.
    """
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise CaptureError(f"the capture is not UTF-8: {exc}") from None
    if _is_fixture(text):
        fixture = load_fixture(text)
        return Recorded(
            fixture["stream"],
            fixture["tool_schemas"] if tools is None else tools,
            fixture["profile"] if profile is None else profile,
            fixture["max_tokens"],
        )
    return Recorded(load_capture(raw), tools, profile or "auto")


FIXTURE_KEYS = frozenset({"chunks", "events", "profile", "tool_schemas"})
"""The envelope's keys: a JSON object with any of them is a fixture, never a chunk."""


def _is_fixture(text: str) -> bool:
    """Whether ``text`` is meant as a fixture: one JSON object with an envelope key.

    A text that opens an object but is no JSON at all (a truncated or broken fixture)
    counts as one too, so it is reported as an invalid fixture, unless its first line
    is a JSON value of its own (JSON Lines: a capture, read line by line).
    """
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return False
    try:
        data = json.loads(stripped)
    except RecursionError:
        return False
    except ValueError:
        return not _json_line(stripped.split("\n", 1)[0])
    return isinstance(data, dict) and not FIXTURE_KEYS.isdisjoint(data)


def _json_line(line: str) -> bool:
    """Whether ``line`` alone is a JSON value (the first line of a JSON Lines capture)."""
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def check_stream(
    stream: Sequence[Mapping[str, Any]],
    tool_schemas: Mapping[str, Any] | None,
    profile: str = "auto",
    *,
    strict_finish: bool = False,
    text_formats: Sequence[str] | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Check one turn given as a list of chunks; ``profile`` ``auto`` recognises it.

    Without ``tool_schemas`` (None) every named call is accepted once its arguments are
    strict JSON; an empty mapping declares no tool at all. Calls written into the text
    are read in ``text_formats``, or, when None, in the formats a ``Driver`` chooses by
    default (the stream's model and wire): the verdict is the loop's and ``replay``'s.
    ``strict_finish`` refuses calls an OpenAI turn ends with ``stop`` (see
    :class:`~callgate.buffer.LLMStreamBuffer`); ``max_tokens`` is the request's output
    token limit. A :class:`~callgate.cli.capture.Capture` that ``ended`` with the
    server's ``[DONE]`` ends the turn cleanly; any other stream may have been cut off.
    """
    unknown = unknown_profile(profile)
    if unknown is not None:
        return _invalid(profile, unknown)
    strategy = None if profile == "auto" else WIRE_RECORDS[profile].strategy()
    schemas = ToolSchemas.any_tool() if tool_schemas is None else ToolSchemas(tool_schemas)
    formats = "auto" if text_formats is None else [n for n in text_formats if n not in END_FORMATS]
    buffer = LLMStreamBuffer(
        tool_schemas=schemas,
        strategy=strategy,
        text_formats=formats or None,
        strict_finish=strict_finish,
        max_tokens=max_tokens,
    )
    try:
        for chunk in stream:
            buffer.add(chunk)
    except UnrecognizedStreamError as exc:
        return _invalid(profile, f"the stream's first chunk is no known format: {exc}")
    buffer.end(clean=isinstance(stream, Capture) and stream.ended)
    return report(buffer)


_PASSES = VERDICT.tagged("runs")
_APPLICABLE = VERDICT.tagged("applicable")


def report(buffer: LLMStreamBuffer) -> dict[str, Any]:
    """The contract report for a buffer whose turn has ended.

    The status is the turn's one verdict (:attr:`LLMStreamBuffer.verdict`), read by the
    loops and ``replay`` alike; the calls are the native ones, then those read from the
    text (``slot`` ``text-B.N``), each with its ``source``.
    """
    findings = buffer.findings
    status = buffer.verdict
    if status not in _APPLICABLE:
        findings.append(finding("no_tool_calls", "the turn carried no streamed tool call"))
    calls = [call_report(slot, status) for slot in buffer.gate.calls()] if buffer.gate else []
    if status not in _PASSES:
        _say_why_blocked(calls, findings)
    evidence = buffer.gate is not None and buffer.gate.evidence
    result = {
        "status": status,
        "applicable": bool(calls) or evidence,
        "executable": status in _PASSES,
        "profile": buffer.strategy.name if buffer.strategy is not None else None,
        "calls": calls,
        "findings": [f.as_dict() for f in findings],
    }
    choices = buffer.choices
    if len(choices) > 1:
        result["choices"] = [choice_report(c) for c in choices]
    return result


def choice_report(choice: Choice) -> dict[str, Any]:
    """One choice of an ``n > 1`` turn: its own verdict, the calls it runs, its findings.

    The report's ``status`` and ``calls`` are the chosen choice's (choice 0 unless told).
    """
    return {
        "index": choice.index,
        "status": choice.verdict,
        "executable": choice.verdict in _PASSES,
        "calls": [
            {"slot": c.slot, "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in choice.calls
        ],
        "findings": [f.as_dict() for f in choice.findings],
    }


def _say_why_blocked(calls: list[dict[str, Any]], findings: Sequence[Finding]) -> None:
    """Give each blocked call without a fault of its own ``blocked_by``: its turn's first error."""
    errors = [f for f in findings if f.severity == "error"]
    faulty = {f.slot for f in errors}
    for call in calls:
        if errors and call["slot"] not in faulty:
            call["blocked_by"] = blocked_with_turn(errors[0])


def call_report(slot: BaseSlot, status: str) -> dict[str, Any]:
    """One call of an ended turn as the report lists it (every call blocked in a failed turn)."""
    state = "set_aside" if slot.aside else slot.state if status in _PASSES else "blocked"
    return {
        "slot": slot.key,
        "id": slot.id,
        "name": slot.name,
        "arguments": slot.arguments if slot.arguments is not None else slot.raw_arguments,
        "state": state,
        "source": slot.source,
    }


def format_text(result: Mapping[str, Any]) -> str:
    """The report for people: one line per call and per finding, the verdict last."""
    lines = []
    for call in result["calls"]:
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        if len(arguments) > 120:
            arguments = arguments[:117] + "..."
        lines.append(
            f"call  slot {call['slot']}: {call['name']} (id {call['id']}) "
            f"{arguments} -> {call.get('blocked_by', call['state'])}"
        )
    for item in result["findings"]:
        where = f" slot {item['slot']}" if item["slot"] is not None else ""
        lines.append(f"{item['severity']:<7} {item['code']}{where}: {item['message']}")
    lines += choice_lines(result)
    verdict = result["status"].upper()
    executable = "executable" if result["executable"] else "not executable"
    lines.append(f"{verdict}: profile {result['profile']}, {executable}")
    return "\n".join(lines)


def choice_lines(result: Mapping[str, Any]) -> list[str]:
    """One line per choice of an ``n > 1`` turn (none for one choice): its verdict and calls."""
    lines = []
    for choice in result.get("choices", ()):
        names = ", ".join(call["name"] for call in choice["calls"]) or "no call runs"
        errors = [f["code"] for f in choice["findings"] if f["severity"] == "error"]
        why = f" ({', '.join(errors)})" if errors else ""
        lines.append(f"choice {choice['index']}: {choice['status'].upper()}{why}: {names}")
    return lines
