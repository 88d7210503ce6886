"""Lossless repair reads the schema at a value's place, and says where it edited.

The place is followed through ``properties``, ``additionalProperties``, ``prefixItems``
and ``items`` only; a place whose schema refers or combines is not followed, so no repair
relies on it. Each edit names its place as a JSON Pointer.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.gate.repair import repair_arguments
from callgate.gate.schema import ToolSchemas

BOOL = {"type": "boolean"}
OBJECT = {"type": "object"}


def repaired(raw: str, schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]] | None:
    return repair_arguments(raw, "t", ToolSchemas({"t": schema}))


def test_a_python_literal_is_read_at_a_property_an_additional_property_and_an_item() -> None:
    schema = {
        "type": "object",
        "properties": {"a": BOOL, "n": {"type": "null"}},
        "additionalProperties": {
            "type": "array",
            "prefixItems": [BOOL, {"type": "string"}],
            "items": {"type": ["boolean", "integer"]},
        },
    }
    got = repaired('{"a": True, "n": None, "x": [False, "s", 1, True]}', schema)
    assert got == (
        {"a": True, "n": None, "x": [False, "s", 1, True]},
        [
            "read Python True as JSON true at /a (the schema wants boolean)",
            "read Python None as JSON null at /n (the schema wants null)",
            "read Python False as JSON false at /x/0 (the schema wants boolean)",
            "read Python True as JSON true at /x/3 (the schema wants boolean)",
        ],
    )


def test_an_item_past_the_prefix_is_read_by_items() -> None:
    schema = {"type": "array", "prefixItems": [{"type": "string"}], "items": BOOL}
    wrapped = {"type": "object", "properties": {"v": schema}}
    assert repaired('{"v": ["s", True]}', wrapped) is not None
    assert repaired('{"v": [True]}', wrapped) is None  # the prefix wants a string there


@pytest.mark.parametrize("key", ["$ref", "$dynamicRef", "anyOf", "oneOf", "allOf", "not"])
def test_a_place_whose_schema_refers_or_combines_is_not_followed(key: str) -> None:
    marker: dict[str, Any] = {key: "#/x" if "Ref" in key or key == "$ref" else [BOOL]}
    if key == "not":
        marker = {"not": {"type": "string"}}
    leaf = {**BOOL, **marker}
    assert repaired('{"a": True}', {"type": "object", "properties": {"a": leaf}}) is None
    inner = {"type": "object", **marker, "properties": {"b": BOOL}}
    assert repaired('{"a": {"b": True}}', {"type": "object", "properties": {"a": inner}}) is None
    assert repaired('{"a": True}', {**OBJECT, **marker, "properties": {"a": BOOL}}) is None
    nested = {"type": "object", "properties": {"a": {**OBJECT, **marker}}}
    assert repaired('{"a": "{\\"b\\": 1}"}', nested) is None


def test_a_pointer_escapes_its_keys() -> None:
    schema = {"type": "object", "additionalProperties": BOOL}
    got = repaired('{"a/b~c": True}', schema)
    assert got is not None
    assert got[1] == ["read Python True as JSON true at /a~1b~0c (the schema wants boolean)"]


def test_a_string_holding_an_object_is_parsed_in_place_and_so_is_one_inside_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "array", "items": OBJECT}}}
        },
    }
    got = repaired('{"a": "{\\"b\\": \\"[{}]\\"}"}', schema)
    assert got == (
        {"a": {"b": [{}]}},
        [
            "parsed the string at /a as the object the schema wants",
            "parsed the string at /a/b as the array the schema wants",
        ],
    )
    for raw in ('{"a": "[1]"}', '{"a": "{} {}"}', '{"a": " {}x"}', '{"a": "1"}'):
        assert repaired(raw, schema) is None, raw


@pytest.mark.parametrize("space", [" ", "\t", "\r", "\n", " \t\r\n"])
def test_a_trailing_comma_after_any_whitespace_is_removed(space: str) -> None:
    got = repaired('{"a": [1,' + space + "]," + space + "}", OBJECT)
    assert got == ({"a": [1]}, ["removed 2 trailing commas"])


def test_one_trailing_comma_is_said_in_the_singular() -> None:
    assert repaired('{"a": 1,}', OBJECT) == ({"a": 1}, ["removed 1 trailing comma"])


def test_a_comma_with_no_value_before_it_is_not_a_trailing_comma() -> None:
    for raw in ('{"a": [,1]}', '{"a": [1,,]}', ',{"a": 1}', '{,"a": 1}'):
        assert repaired(raw, OBJECT) is None, raw
