"""Replay a recorded stream through buffer and driver: what the user saw, when calls ran.

Behind ``callgate replay``: the chunks go one by one into an :class:`LLMStreamBuffer`,
and a dry-run driver processes the buffer after each, as a client loop would; the text
it let through, what it held and the chunk at which it answered each call under the
policy are recorded. Nothing is executed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from callgate.audit.trace import Recorder
from callgate.buffer import LLMStreamBuffer, Recording
from callgate.cli.check import choice_lines, report, unknown_profile
from callgate.driver.drivers import Driver
from callgate.driver.loop import stream_turn
from callgate.driver.tools import Tool
from callgate.fsm.vote import VOTE
from callgate.gate.schema import ToolSchemas
from callgate.ledger import Ledger
from callgate.partial import PartialCall
from callgate.strategies import WIRE_RECORDS

_HIDES = VOTE.tagged("hides")
"""Vote states of a call block, whose markup was never shown."""


class DryRunDriver(Driver):
    """A driver that decides like any other but runs nothing: every call gets a dry result.

    With ``tools`` it owns those tools and checks their schemas; without, it owns every
    named call and checks only that the arguments are strict JSON. A ``profile`` other
    than ``auto`` reads that wire, as ``callgate check`` reads a fixture's ``profile``.
    """

    def __init__(
        self,
        tools: Mapping[str, Mapping[str, Any]] | None,
        *,
        text_formats: Sequence[str] | None,
        policy: str,
        strict_finish: bool = False,
        profile: str = "auto",
        max_tokens: int | None = None,
    ) -> None:
        unknown = unknown_profile(profile)
        if unknown is not None:
            raise ValueError(unknown)
        self.profile_wire = None if profile == "auto" else WIRE_RECORDS[profile].strategy()
        super().__init__(
            [Tool(name, schema) for name, schema in (tools or {}).items()],
            text_formats=text_formats,
            policy=policy,
            name="replay",
            strict_finish=strict_finish,
            max_tokens=max_tokens,
        )
        self.any_tool = tools is None
        if self.any_tool:
            self.schemas = ToolSchemas.any_tool()

    def owns(self, name: str | None) -> bool:
        """Every named call without tools (an empty name is no name); else the given tools."""
        return bool(name) if self.any_tool else super().owns(name)

    def new_stream_buffer(
        self, *, recorder: Recording | None = None, ledger: Ledger | None = None
    ) -> LLMStreamBuffer:
        """A driver's buffer, reading the wire of the given profile (as ``check`` does)."""
        return self._buffer(self.profile_wire, recorder=recorder, ledger=ledger)


class Arrivals:
    """What each round of a stream added to a buffer: content text, and argument text per slot.

    Only what is new is read, so watching a whole stream costs linear time.
    """

    def __init__(self) -> None:
        self._pieces = 0
        self._fragments: dict[int, tuple[int, int, int]] = {}
        """Per slot: the folds seen, the fragments read, and the characters read."""

    def since_last(self, buffer: LLMStreamBuffer) -> tuple[str, dict[int, str | None]]:
        """The content added since the last call, and each slot's new argument text.

        A slot that opened with no argument text yet maps to None.
        """
        parts = buffer.content_parts
        content = "".join(parts[self._pieces :])
        self._pieces = len(parts)
        added: dict[int, str | None] = {}
        for slot in buffer.slots:
            seen = self._fragments.get(slot.key)
            folds, count, chars = seen if seen is not None else (slot.folds, 0, 0)
            if folds == slot.folds:
                new = "".join(slot.parts[count:])
            else:  # the slot joined its fragments into one: read on from the characters seen
                new = "".join(slot.parts)[chars:]
            if seen is None or new:
                added[slot.key] = new or None
            self._fragments[slot.key] = (slot.folds, len(slot.parts), chars + len(new))
        return content, added


def replay(
    chunks: Sequence[Mapping[str, Any]],
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    policy: str = "turn",
    text_formats: Sequence[str] | None = None,
    recorder: Recorder | None = None,
    strict_finish: bool = False,
    profile: str = "auto",
    max_tokens: int | None = None,
    clean_end: bool = False,
) -> dict[str, Any]:
    """Run ``chunks`` through a buffer and a :class:`DryRunDriver`; the contract keys and more.

    Keys: ``wire``, ``message`` (the native assembled message), ``display`` (all text
    released to the user, in order), ``calls`` (every call of the turn, native and text, each
    with ``source``: ``native`` or the text format's name, and ``released_at``, the chunk
    index at which the driver answered the call under the policy, or null), ``status``,
    ``executable``, ``findings``, ``policy``, and ``timeline``: per chunk (then the end,
    ``chunk`` null) the text shown, the characters held, the driver's display state, and
    ``partial``: each call whose view changed at that chunk (see
    :meth:`LLMStreamBuffer.partial_calls`), with its arguments so far.
    Without schemas every named call is accepted once its arguments are strict JSON
    (``tools`` is then ``null``). The content runs through the text-call detector in
    ``text_formats``, or, when None, in the formats a :class:`Driver` chooses by default
    (the stream's model and wire, :mod:`callgate.strategies.text.defaults`): ``display`` is what the
    driver let through, and ``text_calls`` lists the calls found in the text (checked
    against the schemas) with the chunk that completed them. A ``recorder`` receives
    every machine step, stamped with its chunk. ``strict_finish`` is the driver's (the
    seed validator's finish rule, as ``callgate check --strict-finish``). ``profile`` names
    the wire (a fixture's ``profile``); ``auto`` recognises it from the first chunk.
    ``max_tokens`` is the request's output token limit; ``clean_end`` says the capture
    held the server's own end (``[DONE]``), as :func:`~callgate.driver.loop.stream_turn`
    takes it.
    """
    driver = DryRunDriver(
        tool_schemas,
        text_formats=text_formats,
        policy=policy,
        strict_finish=strict_finish,
        profile=profile,
        max_tokens=max_tokens,
    )
    buffer = driver.new_stream_buffer(recorder=recorder)
    released: dict[Any, int] = {}
    completed: list[int] = []
    timeline: list[dict[str, Any]] = []
    arrivals = Arrivals()
    before: dict[str, tuple[Any, ...]] = {}
    for step in stream_turn(chunks, driver, buffer, clean_end=clean_end):
        position = len(chunks) if step.chunk is None else step.chunk
        for answer in step.response.results:
            if not answer.refused:
                released.setdefault(answer.call.slot, position)
        completed += [position] * (len(buffer.text_calls) - len(completed))
        added, fragments = arrivals.since_last(buffer)
        timeline.append(
            {
                "chunk": step.chunk,
                "added": added,
                "arguments": {str(k): v for k, v in fragments.items()},
                "shown": step.text,
                "held": buffer.text_queue.held,
                "state": buffer.text_queue.view(driver).state,
                "answered": [r.call.name for r in step.response.results],
                "partial": _partial(step.partial, before),
            }
        )
    stepper = recorder.stepper("verdict", "verdict") if recorder is not None else None
    status = buffer.verdict_of(stepper)
    result = report(buffer)
    for call in result["calls"]:
        call["released_at"] = released.get(call["slot"])
    own = {f["slot"]: f for f in reversed(result["findings"]) if f["slot"] is not None}
    why = {c["slot"]: c["blocked_by"] for c in result["calls"] if "blocked_by" in c}
    text_calls = [
        {
            "slot": slot.key,
            "format": slot.source,
            "id": slot.id,
            "name": slot.name,
            "arguments": slot.arguments if slot.arguments is not None else slot.raw_arguments,
            "completed_at": at,
            "released_at": released.get(slot.key),
            "finding": own.get(slot.key),
            **({"blocked_by": why[slot.key]} if slot.key in why else {}),
        }
        for slot, at in zip(buffer.text_calls, completed, strict=True)
    ]
    findings = result["findings"]
    detector = buffer.text_queue.detector
    if detector is not None:
        findings += [f.as_dict() for f in detector.findings]
    return {
        "wire": result["profile"],
        "policy": policy,
        "tools": sorted(tool_schemas) if tool_schemas is not None else None,
        "chunks": len(chunks),
        "message": buffer.as_dict(),
        "display": "".join(step["shown"] for step in timeline),
        "calls": result["calls"],
        "text_formats": _formats(text_formats, buffer),
        "text_calls": text_calls,
        "status": status,
        "executable": result["executable"],
        "findings": findings,
        "timeline": timeline,
        "hidden": [b.markup for b in buffer.text_queue.blocks if b.vote in _HIDES and not b.shown],
        **({"choices": result["choices"]} if "choices" in result else {}),
    }


def _partial(
    records: Sequence[PartialCall], before: dict[str, tuple[Any, ...]]
) -> list[dict[str, Any]]:
    """The calls whose partial view changed since the last step (``before`` is updated)."""
    changed = []
    for record in records:
        ref = str(record.ref)
        stamp = (record.id, record.name, record.complete, record.text_length, record.source)
        if before.get(ref) == stamp:
            continue
        before[ref] = stamp
        changed.append(
            {
                "ref": ref,
                "id": record.id,
                "name": record.name,
                "source": record.source,
                "complete": record.complete,
                "arguments": record.arguments,
            }
        )
    return changed


def _formats(given: Sequence[str] | None, buffer: LLMStreamBuffer) -> list[str] | None:
    """The text formats the replay read: as given, else those the stream's model chose."""
    if given is not None:
        return list(given)
    return list(buffer.text_formats) if buffer.text_formats is not None else None


def format_replay(result: Mapping[str, Any]) -> str:
    """The replay for people: the text as shown, the calls, the findings, the verdict."""
    lines = [f"wire {result['wire']}, {result['chunks']} chunks, policy {result['policy']}"]
    if result["tools"] is None:
        lines.append("no --tools given: calls are checked for strict JSON only")
    lines.append("--- shown to the user ---")
    lines.append(result["display"] if result["display"] else "(no text)")
    lines.append("--- calls ---")
    for call in result["calls"]:
        if call["source"] != "native":
            continue  # listed below, with the text call's own verdict
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        if len(arguments) > 120:
            arguments = arguments[:117] + "..."
        when = call["released_at"]
        released = "never released" if when is None else f"released after chunk {when}"
        lines.append(
            f"slot {call['slot']}: {call['name']} (id {call['id']}) {arguments} "
            f"-> {call.get('blocked_by', call['state'])}, {released}"
        )
    for call in result["text_calls"]:
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        verdict = "valid" if call["finding"] is None else call["finding"]["code"]
        verdict = call.get("blocked_by", verdict)
        lines.append(
            f"text call ({call['format']}) after chunk {call['completed_at']}: "
            f"{call['name']} {arguments} -> {verdict}"
        )
    if not result["calls"] and not result["text_calls"]:
        lines.append("(no tool call)")
    for item in result["findings"]:
        where = f" slot {item['slot']}" if item["slot"] is not None else ""
        lines.append(f"{item['severity']:<7} {item['code']}{where}: {item['message']}")
    lines += choice_lines(result)
    executable = "executable" if result["executable"] else "not executable"
    lines.append(f"{result['status'].upper()}: {executable}")
    return "\n".join(lines)
