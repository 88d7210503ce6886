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
from callgate.detector import Detector
from callgate.schema import ToolSchemas


def replay(
    chunks: Sequence[Mapping[str, Any]],
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    policy: str = "turn",
    text_formats: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run ``chunks`` through a default buffer; the result holds the contract keys.

    Keys: ``wire``, ``message`` (the native assembled message), ``display`` (all text
    released to the user, in order), ``calls`` (with ``released_at``, the chunk index at
    which the policy released the call, or null), ``status``, ``executable``,
    ``findings``, ``policy``. Without schemas every named call is accepted once its
    arguments are strict JSON (``tools`` is then ``null``). With ``text_formats`` the
    content runs through a :class:`~callgate.detector.Detector` first: ``display`` is
    then what the detector let through, and ``text_calls`` lists the calls found in the
    text (each checked against the schemas) with the chunk that completed them.
    """
    schemas = ToolSchemas(tool_schemas) if tool_schemas is not None else ToolSchemas.any_tool()
    buffer = LLMStreamBuffer(tool_schemas=schemas, policy=policy)
    detector = Detector(text_formats, schemas=tool_schemas) if text_formats is not None else None
    display: list[str] = []
    released: dict[int, int] = {}
    text_calls: list[dict[str, Any]] = []

    def show(text: str, position: int, *, final: bool = False) -> None:
        if detector is None:
            display.append(text)
            return
        step = detector.feed(text)
        display.append(step.shown)
        blocks = step.blocks
        if final:
            end = detector.finish()
            display.append(end.shown)
            blocks += end.blocks
        for block in blocks:
            for call in block.calls:
                problem = schemas.check(call.name, call.arguments)
                text_calls.append(
                    {
                        "format": block.format,
                        "id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                        "completed_at": position,
                        "finding": problem.as_dict() if problem is not None else None,
                    }
                )

    for position, chunk in enumerate(chunks):
        buffer.add(chunk)
        show(buffer.text(), position)
        for slot in buffer.releasable():
            released.setdefault(slot.key, position)
    buffer.end()
    show(buffer.text(), len(chunks), final=True)
    for slot in buffer.releasable():
        released.setdefault(slot.key, len(chunks))
    result = report(buffer)
    for call in result["calls"]:
        call["released_at"] = released.get(call["slot"])
    status, findings = result["status"], result["findings"]
    if detector is not None:
        findings += [f.as_dict() for f in detector.findings]
        if text_calls and status == "not_applicable":
            failed = any(c["finding"] is not None for c in text_calls)
            status = "fail" if failed else "pass"
            findings = [f for f in findings if f["code"] != "no_tool_calls"]
    return {
        "wire": result["profile"],
        "policy": policy,
        "tools": sorted(tool_schemas) if tool_schemas is not None else None,
        "chunks": len(chunks),
        "message": buffer.as_dict(),
        "display": "".join(display),
        "calls": result["calls"],
        "text_formats": list(text_formats) if text_formats is not None else None,
        "text_calls": text_calls,
        "status": status,
        "executable": result["executable"] or (bool(text_calls) and status == "pass"),
        "findings": findings,
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
    for call in result["text_calls"]:
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        verdict = "valid" if call["finding"] is None else call["finding"]["code"]
        lines.append(
            f"text call ({call['format']}) after chunk {call['completed_at']}: "
            f"{call['name']} {arguments} -> {verdict}"
        )
    if not result["calls"] and not result["text_calls"]:
        lines.append("(no tool call)")
    for item in result["findings"]:
        where = f" slot {item['slot']}" if item["slot"] is not None else ""
        lines.append(f"{item['severity']:<7} {item['code']}{where}: {item['message']}")
    executable = "executable" if result["executable"] else "not executable"
    lines.append(f"{result['status'].upper()}: {executable}")
    return "\n".join(lines)
