"""Replay a recorded stream through the buffer: what the user saw, and when calls could run.

Behind ``callgate replay``: the chunks go one by one into an :class:`LLMStreamBuffer`;
after each chunk the display text released so far and the calls that the policy lets
run are recorded, so the result shows the text in order and the chunk at which each call
was released.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from callgate.buffer import LLMStreamBuffer
from callgate.check import report
from callgate.schema import ToolSchemas


def replay(
    chunks: Sequence[Mapping[str, Any]],
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    policy: str = "turn",
) -> dict[str, Any]:
    """Run ``chunks`` through a default buffer; the result holds the contract keys.

    Keys: ``wire``, ``message`` (the native assembled message), ``display`` (all text
    released to the user, in order), ``calls`` (with ``released_at``, the chunk index at
    which the policy released the call, or null), ``status``, ``executable``,
    ``findings``, ``policy``. Without schemas every named call is accepted once its
    arguments are strict JSON (``tools`` is then ``null``).
    """
    schemas = ToolSchemas(tool_schemas) if tool_schemas is not None else ToolSchemas.any_tool()
    buffer = LLMStreamBuffer(tool_schemas=schemas, policy=policy)
    display: list[str] = []
    released: dict[int, int] = {}
    for position, chunk in enumerate(chunks):
        buffer.add(chunk)
        display.append(buffer.text())
        for slot in buffer.releasable():
            released.setdefault(slot.key, position)
    buffer.end()
    display.append(buffer.text())
    for slot in buffer.releasable():
        released.setdefault(slot.key, len(chunks))
    result = report(buffer)
    for call in result["calls"]:
        call["released_at"] = released.get(call["slot"])
    return {
        "wire": result["profile"],
        "policy": policy,
        "tools": sorted(tool_schemas) if tool_schemas is not None else None,
        "chunks": len(chunks),
        "message": buffer.as_dict(),
        "display": "".join(display),
        "calls": result["calls"],
        "status": result["status"],
        "executable": result["executable"],
        "findings": result["findings"],
    }


def format_replay(result: Mapping[str, Any]) -> str:
    """The replay for people: the text as shown, the calls, the findings, the verdict."""
    lines = [f"wire {result['wire']}, {result['chunks']} chunks, policy {result['policy']}"]
    if result["tools"] is None:
        lines.append("no --tools given: calls are checked for strict JSON only")
    lines.append("--- shown to the user ---")
    lines.append(result["display"] if result["display"] else "(no text)")
    lines.append("--- calls ---")
    for call in result["calls"]:
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        if len(arguments) > 120:
            arguments = arguments[:117] + "..."
        when = call["released_at"]
        released = "never released" if when is None else f"released after chunk {when}"
        lines.append(
            f"slot {call['slot']}: {call['name']} (id {call['id']}) {arguments} "
            f"-> {call['state']}, {released}"
        )
    if not result["calls"]:
        lines.append("(no tool call)")
    for item in result["findings"]:
        where = f" slot {item['slot']}" if item["slot"] is not None else ""
        lines.append(f"{item['severity']:<7} {item['code']}{where}: {item['message']}")
    executable = "executable" if result["executable"] else "not executable"
    lines.append(f"{result['status'].upper()}: {executable}")
    return "\n".join(lines)
