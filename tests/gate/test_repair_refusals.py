"""Where lossless repair stops: each edit at the edge of what it may do, and what it refuses.

A trailing comma is dropped wherever whitespace stands before it, but a comma with no value
before it is no trailing comma; a string that never closes is cut short, whatever escaped
quotes it holds; a template token may sit inside a fence or before a newline; a value is
read through ``prefixItems`` but never through a schema that refers or combines; a string's
JSON is held to the same depth limit as the arguments; and a repaired value must still pass
the tool's schema.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.gate.repair import repair_arguments
from callgate.gate.schema import ToolSchemas
from test_lossless_repair import gated

BOOL = {"type": "boolean"}
OBJECT = {"type": "object"}


def repaired(
    raw: str, properties: dict[str, Any], **limits: int
) -> tuple[dict[str, Any], list[str]] | None:
    """``raw`` repaired for a tool ``t`` whose arguments have ``properties``."""
    schema = {"type": "object", "properties": properties}
    return repair_arguments(raw, "t", ToolSchemas({"t": schema}), **limits)


COMMA = ["removed 1 trailing comma"]


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('{"a": [1 ,]}', {"a": [1]}),
        ('{"a": [ 1 ,]}', {"a": [1]}),
        ('{"a": ["s" ,]}', {"a": ["s"]}),
        ('{"a": ["s"\n\t ,\n]}', {"a": ["s"]}),
        ('{"a": 1 ,}', {"a": 1}),
    ],
)
def test_a_trailing_comma_after_whitespace_is_dropped(raw: str, value: dict[str, Any]) -> None:
    assert repaired(raw, {}) == (value, COMMA)


@pytest.mark.parametrize("raw", ['{"a": [,]}', '{"a": [ ,]}', '{"a": {,}}', ",}", " ,}", "{,}"])
def test_a_comma_with_no_value_before_it_is_not_trailing(raw: str) -> None:
    assert repaired(raw, {}) is None


def test_a_string_holding_escaped_quotes_keeps_the_comma_after_it_trailing() -> None:
    got = repaired('{"a": "say \\"hi\\"", "b": "\\"",}', {})
    assert got == ({"a": 'say "hi"', "b": '"'}, COMMA)


@pytest.mark.parametrize(
    "raw",
    [
        '{"b": 1, "a": "x\\"y\\True,}',
        '{"b": 1, "a": "x\\"y\\"z,}',
        '{"a": "\\"\\"\\"None,}',
    ],
)
def test_a_string_that_never_closes_is_not_repaired_whatever_quotes_it_escapes(raw: str) -> None:
    assert repaired(raw, {"a": {"type": "string"}, "b": {"type": "integer"}}) is None
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    buffer = gated("t", raw, schema, repair="lossless")
    assert buffer.verdict == "fail" and buffer.calls == []
    assert "repaired_arguments" not in [f.code for f in buffer.findings]


def test_the_fence_edit_is_named_as_the_caller_reports_it() -> None:
    got = repaired('```json\n{"a": 1}\n```', {})
    assert got == ({"a": 1}, ["removed a Markdown code fence around the arguments"])


def test_a_fence_whose_arguments_hold_a_fence_is_not_removed() -> None:
    assert repaired('```json\n{"code": "```"}\n```', {"code": {"type": "string"}}) is None


def test_a_template_token_before_a_newline_is_removed() -> None:
    got = repaired('{"a": 1}<|im_end|>\n', {})
    assert got == ({"a": 1}, ["removed the template token '<|im_end|>' after the JSON"])


def test_a_template_token_inside_a_fence_is_removed_with_the_fence() -> None:
    got = repaired('```json\n{"a": 1}<|eot_id|>\n```', {})
    assert got == (
        {"a": 1},
        [
            "removed a Markdown code fence around the arguments",
            "removed the template token '<|eot_id|>' after the JSON",
        ],
    )


def test_a_literal_in_the_prefix_is_read_by_prefix_items_not_items() -> None:
    prefixed = {"type": "array", "prefixItems": [BOOL], "items": {"type": "integer"}}
    got = repaired('{"v": [True, 1]}', {"v": prefixed})
    assert got == (
        {"v": [True, 1]},
        ["read Python True as JSON true at /v/0 (the schema wants boolean)"],
    )


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("$ref", "#/$defs/flag"),
        ("anyOf", [BOOL]),
        ("oneOf", [BOOL]),
        ("allOf", [BOOL]),
        ("not", {"type": "string"}),
    ],
)
def test_a_place_whose_schema_refers_or_combines_is_not_followed(keyword: str, value: Any) -> None:
    schema = {
        "type": "object",
        "$defs": {"flag": BOOL},
        "properties": {"flag": {keyword: value, "type": "boolean"}},
    }
    schemas = ToolSchemas({"t": schema})
    assert schemas.check("t", {"flag": True}) is None
    assert repair_arguments('{"flag": True}', "t", schemas) is None


def test_a_python_literal_where_the_schema_wants_a_string_stays_refused() -> None:
    assert repaired('{"name": True,}', {"name": {"type": "string"}}) is None
    assert (
        repaired('{"ok": False, "name": None,}', {"ok": BOOL, "name": {"type": "string"}}) is None
    )


def test_a_repair_whose_value_still_fails_the_schema_is_refused() -> None:
    assert repaired('{"city": 5,}', {"city": {"type": "string"}}) is None
    assert repaired('{"city": "Paris",}', {"city": {"type": "string"}}) == (
        {"city": "Paris"},
        COMMA,
    )


def test_a_string_that_may_stay_a_string_is_not_parsed() -> None:
    either = {"type": ["string", "object"]}
    got = repaired('{"o": "{\\"a\\": 1}", "n": 1,}', {"o": either})
    assert got == ({"o": '{"a": 1}', "n": 1}, COMMA)


def test_each_item_of_a_list_is_parsed_as_the_object_its_items_schema_wants() -> None:
    points = {"type": "array", "items": {"type": "object", "required": ["x"]}}
    got = repaired('{"points": ["{\\"x\\": 1}", "{\\"x\\": [2]}"]}', {"points": points})
    assert got == (
        {"points": [{"x": 1}, {"x": [2]}]},
        [
            "parsed the string at /points/0 as the object the schema wants",
            "parsed the string at /points/1 as the object the schema wants",
        ],
    )
    deep = '{"points": ["{\\"x\\": [[1]]}"]}'
    assert repaired(deep, {"points": points}, max_depth=3) is None
    assert repaired(deep, {"points": points}, max_depth=4) is not None


def test_a_string_s_json_is_held_to_the_depth_limit() -> None:
    raw = '{"o": "{\\"a\\": {\\"b\\": 1}}"}'
    assert repaired(raw, {"o": OBJECT}, max_depth=2) is None
    assert repaired(raw, {"o": OBJECT}, max_depth=3) == (
        {"o": {"a": {"b": 1}}},
        ["parsed the string at /o as the object the schema wants"],
    )


def test_the_arguments_are_held_to_the_depth_limit_of_128_unless_told() -> None:
    def nested(depth: int) -> str:
        return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + ",}"

    assert repaired(nested(128), {}) is not None
    assert repaired(nested(129), {}) is None
    assert repaired(nested(3), {}, max_depth=3) is not None
    assert repaired(nested(3), {}, max_depth=2) is None


def test_the_comma_edit_counts_the_commas_of_every_stretch_between_strings() -> None:
    got = repaired('{"a": [1,], "b": [2,], "c": [3,]}', {})
    assert got == ({"a": [1], "b": [2], "c": [3]}, ["removed 3 trailing commas"])
