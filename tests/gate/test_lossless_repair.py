"""Lossless, schema-confirmed repair (``repair="lossless"``): real arguments, every fault.

The corpus is the arguments of every call recorded in tests/captures, as the buffer
assembles them, each also nested under ``options`` beside a boolean and a null (so that
every fault has something to corrupt). Each is corrupted by every repairable fault, sent
as an OpenAI stream, and must come back exactly equal with a ``repaired_arguments``
warning naming the edits; without the option every corrupted call stays blocked, and the
corruptions that are not lossless stay blocked with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Tool
from callgate.audit.trace import Recorder
from callgate.cli.capture import load_capture
from callgate.gate.repair import TEMPLATE_TOKENS

HERE = Path(__file__).resolve().parents[1] / "captures"
MANIFEST = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))


def recorded_arguments() -> list[tuple[str, dict[str, Any]]]:
    """Every call of every capture as the buffer assembles it: (name, arguments)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for entry in MANIFEST:
        if not entry["expect"]["calls"]:
            continue
        buffer = LLMStreamBuffer()
        for chunk in load_capture((HERE / entry["file"]).read_bytes()):
            buffer.add(chunk)
        buffer.end()
        for call in buffer.calls:
            found.setdefault(canonical(call.arguments), (call.name, call.arguments))
    return list(found.values())


def canonical(value: Any) -> str:
    """A value's exact JSON (``True`` and ``1`` differ, key order does not)."""
    return json.dumps(value, sort_keys=True)


def schema_of(value: Any) -> dict[str, Any]:
    """The plain schema a value satisfies, typed all the way down."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        kinds = {canonical(schema_of(v)) for v in value}
        return {"type": "array", "items": json.loads(kinds.pop()) if len(kinds) == 1 else {}}
    return {
        "type": "object",
        "properties": {k: schema_of(v) for k, v in value.items()},
        "required": sorted(value),
        "additionalProperties": False,
    }


CORPUS = [
    case
    for name, arguments in recorded_arguments()
    for case in (
        (name, arguments),
        (name, {"options": arguments, "strict": True, "verbose": False, "note": None}),
    )
]


def dump(value: Any, *, comma: bool = False, python: bool = False) -> str:
    """JSON text of ``value``; ``comma`` adds a trailing comma to every non-empty container,
    ``python`` writes booleans and null as Python does."""
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
        return {"true": "True", "false": "False", "null": "None"}[text] if python else text
    if isinstance(value, dict):
        items = [
            f"{json.dumps(k)}: {dump(v, comma=comma, python=python)}" for k, v in value.items()
        ]
        return "{" + ", ".join(items) + ("," if comma and items else "") + "}"
    if isinstance(value, list):
        items = [dump(v, comma=comma, python=python) for v in value]
        return "[" + ", ".join(items) + ("," if comma and items else "") + "]"
    return json.dumps(value)


def stringified(value: dict[str, Any]) -> Iterator[str]:
    """Each object- or array-valued member at any depth sent as a JSON string instead."""

    def paths(v: Any, at: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        if isinstance(v, dict):
            for k, item in v.items():
                if isinstance(item, (dict, list)):
                    yield (*at, k)
                yield from paths(item, (*at, k))
        elif isinstance(v, list):
            for n, item in enumerate(v):
                yield from paths(item, (*at, n))

    for path in paths(value, ()):
        copy = json.loads(json.dumps(value))
        holder = copy
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = json.dumps(holder[path[-1]])
        yield json.dumps(copy)


def faults(value: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every repairable corruption of ``value``'s JSON: (fault, argument text)."""
    plain = json.dumps(value)
    if "{}" not in plain.replace(" ", "") or value:
        yield "trailing commas", dump(value, comma=True)
    yield "fence", f"```json\n{plain}\n```"
    yield "bare fence", f"```{plain}```"
    for token in TEMPLATE_TOKENS:
        yield f"token {token}", plain + token
    if re.search(r"\b(true|false|null)\b", plain):
        yield "python literals", dump(value, python=True)
    for n, text in enumerate(stringified(value)):
        yield f"string {n}", text
    yield "all at once", f"```json\n{dump(value, comma=True, python=True)}\n```<|im_end|>"


def unrepairable(value: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Corruptions no lossless edit undoes, or that would change a value."""
    plain = json.dumps(value)
    yield "cut short", plain[:-1]
    yield "cut in a string", plain[: plain.rfind('"')] if '"' in plain else "{"
    if '"' in plain:
        yield "single quotes", plain.replace('"', "'")
    if value:
        yield "unquoted keys", re.sub(r'"(\w+)":', r"\1:", plain)
        yield "double comma", plain[:-1] + ",,}"
        yield "leading comma", "{," + plain[1:]
    yield "another value after", plain + " {}"
    yield "NaN", plain[:-1] + (", " if value else "") + '"x": NaN}'
    yield "unknown token", plain + "<|made_up|>"


def stream(name: str, text: str) -> list[dict[str, Any]]:
    """An OpenAI stream of one call whose arguments are ``text``, in 5-character fragments."""
    opening = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name}}
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [opening]}}]}]
    for at in range(0, len(text), 5):
        entry = {"index": 0, "function": {"arguments": text[at : at + 5]}}
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return chunks


def gated(name: str, text: str, schema: dict[str, Any], **options: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas={name: schema}, **options)
    for chunk in stream(name, text):
        buffer.add(chunk)
    buffer.end()
    return buffer


def test_the_corpus_is_the_recorded_calls() -> None:
    assert len(CORPUS) >= 40
    assert any(isinstance(v, list) for _, a in CORPUS for v in a.values())


@pytest.mark.parametrize(
    ("name", "value"), CORPUS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CORPUS)]
)
def test_every_repairable_fault_comes_back_exactly_with_the_finding(
    name: str, value: dict[str, Any]
) -> None:
    schema = schema_of(value)
    for fault, text in faults(value):
        repaired = gated(name, text, schema, repair="lossless")
        assert repaired.verdict == "pass", (fault, text, repaired.findings)
        assert [canonical(c.arguments) for c in repaired.calls] == [canonical(value)], fault
        found = [f for f in repaired.findings if f.code == "repaired_arguments"]
        assert len(found) == 1 and found[0].severity == "warning", (fault, repaired.findings)
        assert found[0].slot == 0 and "repaired" in found[0].message
        blocked = gated(name, text, schema)
        assert blocked.verdict == "fail" and blocked.calls == [], (fault, text)


@pytest.mark.parametrize(
    ("name", "value"), CORPUS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CORPUS)]
)
def test_what_no_lossless_edit_undoes_stays_blocked(name: str, value: dict[str, Any]) -> None:
    schema = schema_of(value)
    for fault, text in unrepairable(value):
        buffer = gated(name, text, schema, repair="lossless")
        assert buffer.verdict == "fail" and buffer.calls == [], (fault, text)
        assert "repaired_arguments" not in [f.code for f in buffer.findings], fault


WANTS = {
    "type": "object",
    "properties": {
        "flag": {"type": "boolean"},
        "label": {"type": "string"},
        "note": {"type": ["string", "null"]},
        "filter": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "any": {},
    },
}


@pytest.mark.parametrize(
    ("text", "edit"),
    [
        ('{"flag": True}', "read Python True as JSON true at /flag (the schema wants boolean)"),
        ('{"note": None}', "read Python None as JSON null at /note (the schema wants null)"),
        ('{"filter": "{\\"a\\": 1}"}', "parsed the string at /filter as the object"),
        ('{"tags": "[\\"x\\"]"}', "parsed the string at /tags as the array"),
        ('{"label": "a",}', "removed 1 trailing comma"),
        ('{"label": "a"}\n<|eot_id|>', "removed the template token '<|eot_id|>'"),
    ],
)
def test_each_edit_is_named(text: str, edit: str) -> None:
    buffer = gated("t", text, WANTS, repair="lossless")
    assert buffer.verdict == "pass"
    (found,) = [f for f in buffer.findings if f.code == "repaired_arguments"]
    assert edit in found.message


@pytest.mark.parametrize(
    "text",
    [
        '{"label": True}',  # the schema wants a string: "True" or true? Two readings
        '{"any": True}',  # the schema does not say it wants a boolean
        '{"label": "{\\"a\\": 1}", "flag": 1}',  # a string where a string is wanted stays one
        '{"filter": "{\\"a\\": 1}, \\"b\\": 2"}',  # not exactly one value
        '{"filter": "{\\"a\\": 1, \\"a\\": 2}"}',  # a repeated key inside
        "{True: 1}",
        '{"label": "x"}<|im_end|>junk',
    ],
)
def test_a_repair_the_schema_does_not_confirm_is_not_made(text: str) -> None:
    buffer = gated("t", text, WANTS, repair="lossless")
    assert buffer.verdict == "fail" and buffer.calls == []


def test_valid_arguments_are_never_edited() -> None:
    buffer = gated("t", '{"label": "a, }", "note": "True"}', WANTS, repair="lossless")
    assert buffer.verdict == "pass" and buffer.findings == []
    assert buffer.calls[0].arguments == {"label": "a, }", "note": "True"}


def test_the_driver_runs_the_repaired_call_and_the_trace_names_the_repair() -> None:
    ran: list[dict[str, Any]] = []
    tool: Callable[..., str] = lambda **kw: ran.append(kw) or "ok"  # noqa: E731
    driver = Driver([Tool("t", WANTS, tool)], repair="lossless")
    recorder = Recorder()
    buffer = driver.new_stream_buffer(recorder=recorder)
    for chunk in stream("t", '```json\n{"flag": True,}\n```'):
        buffer.add(chunk)
        driver.process_llm_response(buffer)
    buffer.end()
    driver.process_llm_response(buffer)
    assert ran == [{"flag": True}]
    accepted = [s for s in recorder.steps if s.machine == "slot" and s.event == "accept"]
    assert [s.output for s in accepted] == ["repaired_arguments"]


def test_repair_takes_lossless_or_nothing() -> None:
    with pytest.raises(ValueError, match="repair must be one of"):
        LLMStreamBuffer(repair="aggressive")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="repair must be one of"):
        Driver([], repair="yes")  # type: ignore[arg-type]
