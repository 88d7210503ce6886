"""Schemas meet hostile arguments: every check ends in a verdict, never a traceback or a hang.

The model writes the arguments, so a schema keyword must not overflow on a huge number,
backtrack on a crafted string, compare items pairwise, or multiply its work through nested
references without bound. Each case here raised or ran for minutes before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import callgate
from callgate.cli.commands import main
from callgate.driver.tools import Tool
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas

REDOS = r"^([a-zA-Z0-9]+\s?)*$"


def check(schema: dict[str, Any], arguments: dict[str, Any], **options: Any) -> Any:
    return ToolSchemas({"f": schema}, **options).check("f", arguments)


def one(key: str, keyword: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {key: keyword}}


def nested_all_of(depth: int) -> dict[str, Any]:
    """``d{n}`` is allOf of two refs to ``d{n-1}``: 2**depth evaluations of the leaf."""
    defs: dict[str, Any] = {"d0": {"type": "string"}}
    for level in range(1, depth + 1):
        ref = {"$ref": f"#/$defs/d{level - 1}"}
        defs[f"d{level}"] = {"allOf": [ref, dict(ref)]}
    return {"type": "object", "$defs": defs, "properties": {"r": {"$ref": f"#/$defs/d{depth}"}}}


# multipleOf: exact arithmetic


def test_multiple_of_a_fraction_with_a_400_digit_integer_is_a_verdict() -> None:
    assert check(one("n", {"multipleOf": 0.01}), {"n": 10**400}) is None
    assert check(one("n", {"multipleOf": 0.03}), {"n": 10**400 + 2}) is None
    result = check(one("n", {"multipleOf": 0.03}), {"n": 10**400 + 1})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "multiple of 0.03" in result.message


def test_multiple_of_reads_decimals_as_written() -> None:
    assert check(one("n", {"multipleOf": 0.01}), {"n": 0.07}) is None
    assert check(one("n", {"multipleOf": 0.01}), {"n": 12.34}) is None
    result = check(one("n", {"multipleOf": 0.01}), {"n": 0.071})
    assert result is not None
    assert result.code == "schema_invalid"
    assert check(one("n", {"multipleOf": 7}), {"n": 10**300 * 7}) is None
    assert check(one("n", {"multipleOf": 7}), {"n": 10**300 * 7 + 1}) is not None


@given(st.integers(), st.sampled_from([0.5, 0.25, 0.01, 2, 3, 1e-9]))
def test_multiple_of_never_raises(number: int, divisor: float) -> None:
    result = check(one("n", {"multipleOf": divisor}), {"n": number})
    assert result is None or result.code == "schema_invalid"


def test_multiple_of_through_run_turn_and_check(tmp_path: Path) -> None:
    schema = one("n", {"multipleOf": 0.01})
    digits = "9" * 400
    chunks = openai_call(f'{{"n": {digits}}}')
    seen: list[int] = []
    driver = callgate.Driver([Tool("f", schema, lambda n: seen.append(n) or "ok")])
    turn = callgate.run_turn(chunks, driver, driver.new_stream_buffer())
    assert turn.status == "pass"
    assert seen == [int(digits)]
    fixture = tmp_path / "fixture.json"
    fixture.write_text(
        json.dumps({"profile": "openai", "tool_schemas": {"f": schema}, "chunks": chunks})
    )
    assert main(["check", str(fixture)]) == 0


def openai_call(arguments: str) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "c1", "type": "function"}
    return [
        chunk({"tool_calls": [{**call, "function": {"name": "f", "arguments": arguments}}]}),
        chunk({}, "tool_calls"),
    ]


# format: regex, and patterns in the schema itself


def test_format_regex_with_a_huge_repetition_is_invalid_not_an_overflow() -> None:
    schema = one("r", {"type": "string", "format": "regex"})
    result = check(schema, {"r": "a{99999999999}"})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "regex" in result.message
    assert check(schema, {"r": "a{2,3}"}) is None


def test_format_regex_through_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = one("r", {"type": "string", "format": "regex"})
    fixture = tmp_path / "fixture.json"
    chunks = openai_call(json.dumps({"r": "a{99999999999}"}))
    fixture.write_text(
        json.dumps({"profile": "openai", "tool_schemas": {"f": schema}, "chunks": chunks})
    )
    assert main(["check", str(fixture), "--report", "json"]) == 1
    codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert codes == ["schema_invalid"]


def test_a_schema_pattern_with_a_huge_repetition_fails_closed() -> None:
    result = check(one("r", {"pattern": "a{99999999999}"}), {"r": "a"})
    assert result is not None
    assert result.code == "unsupported_schema_keyword"


@pytest.mark.parametrize(
    "pattern",
    [r"(a)\1", "(?=a)b", "(?<!a)b", "(a{1000}){1000}"],
    ids=["backreference", "lookahead", "lookbehind", "repetition-too-large"],
)
def test_patterns_the_linear_engine_cannot_run_fail_closed(pattern: str) -> None:
    for schema in (
        one("r", {"type": "string", "pattern": pattern}),
        {"type": "object", "patternProperties": {pattern: {"type": "string"}}},
    ):
        why = ToolSchemas({"f": schema}).unsupported("f")
        assert why is not None
        assert "linear-time regex engine" in why
        result = check(schema, {"r": "ab"})
        assert result is not None
        assert result.code == "unsupported_schema_keyword"


def test_unevaluated_properties_with_pattern_properties_fails_closed() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x": {"type": "string"}},
        "unevaluatedProperties": False,
    }
    why = ToolSchemas({"f": schema}).unsupported("f")
    assert why is not None
    assert "unevaluatedProperties" in why


# linear matching


def test_catastrophic_backtracking_pattern_is_a_verdict() -> None:
    schema = one("r", {"type": "string", "pattern": REDOS})
    result = check(schema, {"r": "a" * 34 + "!"})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "does not match" in result.message
    assert check(schema, {"r": "a" * 34}) is None
    assert check(schema, {"r": "ab cd ef"}) is None


def test_pattern_properties_and_additional_properties_match_linearly() -> None:
    schema = {
        "type": "object",
        "patternProperties": {REDOS: {"type": "integer"}},
        "additionalProperties": False,
    }
    assert check(schema, {"abc": 1, "a b": 2}) is None
    result = check(schema, {"a" * 34 + "!": 1})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "Additional properties" in result.message
    wrong = check(schema, {"abc": "x"})
    assert wrong is not None
    assert wrong.code == "schema_invalid"


def test_ecma_unicode_escapes_in_patterns_are_read() -> None:
    schema = one("r", {"type": "string", "pattern": r"^\u00e9+$"})
    assert check(schema, {"r": "éé"}) is None
    assert check(schema, {"r": "e"}) is not None


def test_pattern_against_a_lone_surrogate_is_a_verdict() -> None:
    result = check(one("r", {"type": "string", "pattern": "^a"}), {"r": "a\ud800"})
    assert result is not None
    assert result.code == "schema_invalid"


# uniqueItems: linear, with JSON Schema's equality


def test_unique_items_over_8000_objects() -> None:
    schema = one("r", {"type": "array", "uniqueItems": True})
    items: list[Any] = [{"k": i, "v": [i, str(i)]} for i in range(8000)]
    assert check(schema, {"r": items}) is None
    result = check(schema, {"r": [*items, {"v": [7999, "7999"], "k": 7999}]})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "non-unique" in result.message


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),
        ([True, 1], True),
        ([False, 0], True),
        ([{"a": 1}, {"a": 1.0}], False),
        ([[1, 2], [2, 1]], True),
        ([{"a": [True]}, {"a": [1]}], True),
        ([None, "null"], True),
        ([], True),
        (["x"], True),
    ],
)
def test_unique_items_equality_is_json_schemas(items: list[Any], unique: bool) -> None:
    result = check(one("r", {"uniqueItems": True}), {"r": items})
    assert (result is None) is unique


# the step budget


def test_nested_all_of_references_end_in_a_limit_finding() -> None:
    result = check(nested_all_of(30), {"r": 1})
    assert result is not None
    assert result.code == "limit_exceeded"
    assert "max_schema_steps" in result.message


def test_the_budget_admits_what_fits_and_refuses_what_does_not() -> None:
    schema = one("r", {"type": "array", "items": {"type": "integer"}})
    arguments = {"r": list(range(100))}
    assert check(schema, arguments, max_steps=1000) is None
    result = check(schema, arguments, max_steps=50)
    assert result is not None
    assert result.code == "limit_exceeded"
    assert check(nested_all_of(4), {"r": "s"}, max_steps=1000) is None


def test_the_default_budget_is_the_limits_default() -> None:
    assert Limits().max_schema_steps == 1_000_000
    rows = [{"a": "v", "b": "w"} for _ in range(20_000)]
    schema = one(
        "rows",
        {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
    )
    assert check(schema, {"rows": rows}) is None


def test_the_budget_is_set_through_a_driver_or_a_buffer() -> None:
    schema = one("r", {"type": "array", "items": {"type": "integer"}})
    chunks = openai_call(json.dumps({"r": list(range(100))}))
    tight = Limits(max_schema_steps=50)
    driver = callgate.Driver([Tool("f", schema, lambda r: "ok")], limits=tight)
    buffer = driver.new_stream_buffer()
    assert callgate.run_turn(chunks, driver, buffer).status == "fail"
    assert [f.code for f in buffer.findings] == ["limit_exceeded"]
    plain = callgate.LLMStreamBuffer(tool_schemas={"f": schema}, limits=tight)
    for chunk in chunks:
        plain.add(chunk)
    plain.end()
    assert [f.code for f in plain.findings] == ["limit_exceeded"]
    roomy = callgate.Driver([Tool("f", schema, lambda r: "ok")])
    assert callgate.run_turn(chunks, roomy, roomy.new_stream_buffer()).status == "pass"
