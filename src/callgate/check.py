"""The conformance checker behind ``callgate check``: a fixture in, a report and exit code out.

A fixture is a JSON object: ``profile`` (a wire strategy name, or ``auto``/absent to
recognise it from the stream), ``tool_schemas`` ({name: JSON Schema}) and the stream as
``chunks`` or ``events``, in order. Other keys (a description, the expected outcome) are
ignored. The report's keys and the exit codes are a contract:

- 0, ``pass``: complete, unambiguous, schema-valid calls; the turn is executable;
- 1, ``fail``: a conformance failure; every call of the turn is blocked;
- 2, ``invalid`` (the fixture is unusable) or ``not_applicable`` (no streamed tool call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from callgate.buffer import LLMStreamBuffer, UnrecognizedStreamError
from callgate.findings import finding
from callgate.schema import ToolSchemas
from callgate.strategies import WIRE_STRATEGIES

EXIT_CODES = {"pass": 0, "fail": 1, "not_applicable": 2, "invalid": 2}


class FixtureError(ValueError):
    """The fixture cannot be checked; the message says what to fix."""


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
        data = json.loads(text.removeprefix("\ufeff"))
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
    if profile != "auto" and profile not in WIRE_STRATEGIES:
        known = ", ".join(["auto", *WIRE_STRATEGIES])
        raise FixtureError(f"unknown profile {profile!r}; known profiles: {known}")
    if "chunks" in data and "events" in data:
        raise FixtureError("the fixture has both 'chunks' and 'events'; give one")
    stream = data.get("chunks", data.get("events"))
    if not isinstance(stream, list):
        raise FixtureError("the fixture needs the stream as a list under 'chunks' or 'events'")
    for position, chunk in enumerate(stream):
        if not isinstance(chunk, dict):
            raise FixtureError(f"chunk {position} is not a JSON object")
    schemas = data.get("tool_schemas", {})
    if not isinstance(schemas, dict) or not all(isinstance(v, dict) for v in schemas.values()):
        raise FixtureError("'tool_schemas' must be an object of {tool name: JSON Schema object}")
    return {"profile": profile, "tool_schemas": schemas, "stream": stream}


def check_fixture(text: str) -> dict[str, Any]:
    """Run a fixture's stream through the buffer and report on the turn."""
    try:
        fixture = load_fixture(text)
    except FixtureError as exc:
        return _invalid(None, str(exc))
    profile: str = fixture["profile"]
    return check_stream(fixture["stream"], fixture["tool_schemas"], profile)


def check_stream(
    stream: list[Mapping[str, Any]], tool_schemas: Mapping[str, Any], profile: str = "auto"
) -> dict[str, Any]:
    """Check one turn given as a list of chunks; ``profile`` ``auto`` recognises it."""
    strategy = None if profile == "auto" else WIRE_STRATEGIES[profile]()
    buffer = LLMStreamBuffer(tool_schemas=ToolSchemas(tool_schemas), strategy=strategy)
    try:
        for chunk in stream:
            buffer.add(chunk)
    except UnrecognizedStreamError as exc:
        return _invalid(profile, f"the stream's first chunk is no known format: {exc}")
    buffer.end()
    return report(buffer)


def report(buffer: LLMStreamBuffer) -> dict[str, Any]:
    """The contract report for a buffer whose turn has ended."""
    findings = buffer.findings
    slots = buffer.slots
    turn = buffer.turn_state
    if turn == "executable":
        status = "pass"
    elif turn == "not_applicable":
        status = "not_applicable"
        findings.append(finding("no_tool_calls", "the turn carried no streamed tool call"))
    else:
        status = "fail"
    calls = [
        {
            "slot": slot.key,
            "id": slot.id,
            "name": slot.name,
            "arguments": slot.arguments if slot.arguments is not None else slot.raw_arguments,
            "state": slot.state,
        }
        for slot in slots
    ]
    return {
        "status": status,
        "applicable": bool(slots),
        "executable": status == "pass",
        "profile": buffer.strategy.name if buffer.strategy is not None else None,
        "calls": calls,
        "findings": [f.as_dict() for f in findings],
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
            f"{arguments} -> {call['state']}"
        )
    for item in result["findings"]:
        where = f" slot {item['slot']}" if item["slot"] is not None else ""
        lines.append(f"{item['severity']:<7} {item['code']}{where}: {item['message']}")
    verdict = result["status"].upper()
    executable = "executable" if result["executable"] else "not executable"
    lines.append(f"{verdict}: profile {result['profile']}, {executable}")
    return "\n".join(lines)
