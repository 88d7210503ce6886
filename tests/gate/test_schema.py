"""Tests for the JSON Schema gate."""

from __future__ import annotations

import json
import socket
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.gate.findings import Finding
from callgate.gate.schema import CHECKED_FORMATS, ToolSchemas
from callgate.gate.strictjson import parse_arguments

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"enum": ["metric", "imperial"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}


DIALECT = "https://json-schema.org/draft/2020-12/schema"


def gate(schema: Any, name: str = "tool") -> ToolSchemas:
    return ToolSchemas({name: schema})


def reason(schema: Any) -> str:
    why = gate(schema).unsupported("tool")
    assert why is not None
    return why


def rejected(schema: Any) -> Finding:
    result = gate(schema).check("tool", {})
    assert result is not None
    assert result.code == "unsupported_schema_keyword"
    return result


# names, unknown and missing tools


def test_valid_call_passes() -> None:
    tools = ToolSchemas({"weather": WEATHER})
    assert tools.names == frozenset({"weather"})
    assert tools.unsupported("weather") is None
    assert tools.check("weather", {"city": "Oslo", "days": 3}) is None


def test_missing_name() -> None:
    tools = ToolSchemas({"weather": WEATHER})
    for name in (None, ""):
        result = tools.check(name, {}, slot=4)
        assert result is not None
        assert result.code == "missing_name"
        assert result.slot == 4
        assert "no tool name" in result.message


def test_unknown_tool_lists_declared() -> None:
    result = ToolSchemas({"weather": WEATHER}).check("wether", {"city": "x"}, slot="call_1")
    assert result is not None
    assert result.code == "unknown_tool"
    assert result.slot == "call_1"
    assert "'wether'" in result.message
    assert "'weather'" in result.message


@pytest.mark.parametrize("schemas", [None, {}])
def test_no_schemas_means_no_tool_is_known(schemas: dict[str, Any] | None) -> None:
    tools = ToolSchemas(schemas)
    assert tools.names == frozenset()
    result = tools.check("anything", {})
    assert result is not None
    assert result.code == "unknown_tool"
    assert "no tools are declared" in result.message


def test_any_tool_only_requires_a_name() -> None:
    tools = ToolSchemas.any_tool()
    assert tools.check("anything", {"whatever": [1, 2]}) is None
    result = tools.check(None, {})
    assert result is not None
    assert result.code == "missing_name"


def test_accepts_read_only_mappings_and_tuples() -> None:
    schema = MappingProxyType({"type": "object", "required": ("a",)})
    tools = ToolSchemas({"t": schema})
    assert tools.unsupported("t") is None
    result = tools.check("t", {})
    assert result is not None
    assert result.code == "schema_invalid"


def test_schema_is_copied_at_construction() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    tools = gate(schema)
    schema["properties"]["a"]["type"] = "integer"
    schema["x-late"] = True
    assert tools.check("tool", {"a": "text"}) is None
    assert tools.unsupported("tool") is None


# schema_invalid


def test_schema_invalid_names_path_and_problem() -> None:
    result = ToolSchemas({"weather": WEATHER}).check("weather", {"city": "Oslo", "days": "3"})
    assert result is not None
    assert result.code == "schema_invalid"
    assert result.severity == "error"
    assert "$.days" in result.message
    assert "'3' is not of type 'integer'" in result.message
    assert "/properties/days/type" in result.message


def test_schema_invalid_nested_array_path() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["id"]}}},
    }
    result = gate(schema).check("tool", {"items": [{"id": 1}, {}]})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "$.items[1]" in result.message
    assert "'id' is a required property" in result.message


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "'city' is a required property"),
        ({"city": "x", "extra": 1}, "Additional properties are not allowed"),
        ({"city": "x", "units": "kelvin"}, "is not one of"),
        ({"city": ""}, "should be non-empty"),
        ({"city": "x", "days": 15}, "greater than the maximum"),
    ],
)
def test_schema_invalid_cases(arguments: dict[str, Any], fragment: str) -> None:
    result = ToolSchemas({"weather": WEATHER}).check("weather", arguments)
    assert result is not None
    assert result.code == "schema_invalid"
    assert fragment in result.message


def test_checked_format_is_enforced() -> None:
    assert "date" in CHECKED_FORMATS
    tools = gate({"properties": {"when": {"type": "string", "format": "date"}}})
    assert tools.check("tool", {"when": "2024-02-29"}) is None
    result = tools.check("tool", {"when": "2024-02-30"})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "'date'" in result.message


def test_very_long_instance_is_clipped_in_message() -> None:
    result = gate({"properties": {"a": {"type": "integer"}}}).check("tool", {"a": "x" * 10_000})
    assert result is not None
    assert result.code == "schema_invalid"
    assert len(result.message) < 1000


# unsupported keywords


@pytest.mark.parametrize("fmt", ["uri-reference", "uri", "hostname-typo", "iri"])
def test_unchecked_format_is_unsupported(fmt: str) -> None:
    if fmt in CHECKED_FORMATS:
        pytest.skip(f"{fmt} is checked in this environment")
    result = rejected({"type": "object", "properties": {"u": {"type": "string", "format": fmt}}})
    assert "'format'" in result.message
    assert repr(fmt) in result.message
    assert "/properties/u/format" in result.message
    assert "'tool'" in result.message


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/s.json",
        "s.json",
        "other.json#/$defs/a",
        "urn:example:thing",
        "/absolute/path.json",
    ],
)
def test_non_local_ref_is_unsupported_and_never_fetched(
    ref: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    schema = {"type": "object", "properties": {"a": {"$ref": ref}}}
    tools = gate(schema)
    result = tools.check("tool", {"a": 1})
    assert result is not None
    assert result.code == "unsupported_schema_keyword"
    assert "'$ref'" in result.message
    assert "/properties/a/$ref" in result.message
    assert repr(ref) in result.message


def test_extension_keyword_is_accepted_and_any_other_unknown_key_refused() -> None:
    assert gate({"type": "object", "x-foo": {"type": "string"}}).unsupported("tool") is None
    result = rejected({"type": "object", "foo": {"type": "string"}})
    assert "'foo'" in result.message
    assert "/foo" in result.message


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("frobnicate", {}),
        ("dependencies", {"a": ["b"]}),
        ("additionalItems", False),
        ("$dynamicAnchor", "node"),
        ("$vocabulary", {}),
    ],
)
def test_unenforced_keyword_is_unsupported(keyword: str, value: object) -> None:
    """Under a declared 2020-12 (an undeclared schema reads the older drafts' spellings)."""
    why = reason({"$schema": DIALECT, "type": "object", keyword: value})
    assert repr(keyword) in why
    assert f"/{keyword}" in why
    assert "not enforced" in why


def test_nested_unsupported_keyword_deep_in_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "properties": {
                    "list": {
                        "type": "array",
                        "items": {"anyOf": [{"type": "string"}, {"type": "number", "unit": "m"}]},
                    }
                },
            }
        },
    }
    why = reason(schema)
    assert "'unit'" in why
    assert "/properties/outer/properties/list/items/anyOf/1/unit" in why


def test_unsupported_keyword_in_defs_prefix_items_and_if() -> None:
    assert "/$defs/a/bogus" in reason({"$defs": {"a": {"bogus": 1}}})
    assert "/definitions/a/bogus" in reason({"definitions": {"a": {"bogus": 1}}})
    assert "/prefixItems/1/bogus" in reason({"prefixItems": [{}, {"bogus": 1}]})
    assert "/if/bogus" in reason({"if": {"bogus": 1}, "then": {}})
    assert "/dependentSchemas/a/bogus" in reason({"dependentSchemas": {"a": {"bogus": 1}}})
    assert "/patternProperties/^a/bogus" in reason({"patternProperties": {"^a": {"bogus": 1}}})


def test_pointer_escapes_slash_and_tilde() -> None:
    assert "/properties/a~1b~0c/bogus" in reason({"properties": {"a/b~c": {"bogus": 1}}})


def test_keyword_like_names_and_data_are_not_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {"x-foo": {"type": "string"}, "format": {}, "$ref": {}},
        "required": ["x-foo"],
        "const": {"x-foo": 1, "format": "uri-reference"},
        "enum": [{"$ref": "https://example.com"}],
        "default": {"bogus": 1},
        "examples": [{"bogus": 1}],
        "dependentRequired": {"x-foo": ["format"]},
    }
    assert gate(schema).unsupported("tool") is None


def test_annotations_are_supported() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.com/tool.json",
        "$comment": "note",
        "title": "T",
        "description": "D",
        "deprecated": False,
        "readOnly": False,
        "writeOnly": False,
        "properties": {"a": {"$anchor": "a", "examples": [1], "default": 1}},
    }
    assert gate(schema).unsupported("tool") is None


def test_other_dialect_is_unsupported() -> None:
    why = reason({"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"})
    assert "'$schema'" in why
    assert "draft-03" in why


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        ({"then": {"type": "string"}}, "then"),
        ({"else": {"type": "string"}}, "else"),
        ({"minContains": 2}, "minContains"),
        ({"maxContains": 2}, "maxContains"),
    ],
)
def test_keyword_without_its_sibling_is_ignored_so_unsupported(
    schema: dict[str, Any], keyword: str
) -> None:
    why = reason(schema)
    assert repr(keyword) in why


def test_keyword_with_its_sibling_is_enforced() -> None:
    tools = gate({"contains": {"type": "string"}, "minContains": 2, "maxContains": 2})
    assert tools.unsupported("tool") is None
    cond = gate(
        {
            "if": {"required": ["a"]},
            "then": {"required": ["b"]},
            "else": {"required": ["c"]},
        }
    )
    assert cond.check("tool", {"a": 1, "b": 2}) is None
    assert cond.check("tool", {"c": 1}) is None
    result = cond.check("tool", {"a": 1})
    assert result is not None
    assert result.code == "schema_invalid"


@pytest.mark.parametrize("keyword", ["$dynamicRef", "$recursiveRef"])
def test_dynamic_refs_are_unsupported(keyword: str) -> None:
    assert repr(keyword) in reason({"$defs": {"n": {}}, keyword: "#/$defs/n"})


def test_invalid_schema_is_unsupported() -> None:
    result = rejected({"type": "object", "properties": {"a": {"type": 5}}})
    assert "not valid Draft 2020-12" in result.message
    assert "/properties/a/type" in result.message


def test_invalid_regex_in_schema_is_unsupported() -> None:
    assert "/pattern" in reason({"pattern": "("})


def test_first_problem_reported_with_count_of_others() -> None:
    why = reason({"a-bogus": 1, "b-bogus": 2, "c-bogus": 3})
    assert "'a-bogus'" in why
    assert "2 more" in why


def test_one_bad_tool_does_not_affect_another() -> None:
    tools = ToolSchemas({"good": WEATHER, "bad": {"foo": 1}})
    assert tools.names == frozenset({"good", "bad"})
    assert tools.check("good", {"city": "x"}) is None
    result = tools.check("bad", {})
    assert result is not None
    assert result.code == "unsupported_schema_keyword"


# local $ref


def test_local_ref_is_accepted_and_enforced() -> None:
    schema = {
        "$defs": {"positive": {"type": "integer", "minimum": 1}},
        "type": "object",
        "properties": {"count": {"$ref": "#/$defs/positive"}},
    }
    tools = gate(schema)
    assert tools.unsupported("tool") is None
    assert tools.check("tool", {"count": 3}) is None
    result = tools.check("tool", {"count": 0})
    assert result is not None
    assert result.code == "schema_invalid"
    assert "$.count" in result.message
    assert "minimum" in result.message


def test_local_ref_with_root_id_and_anchor() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "$defs": {"name": {"$anchor": "name", "type": "string"}},
        "properties": {"a": {"$ref": "#name"}, "b": {"$ref": "#/$defs/name"}},
    }
    tools = gate(schema)
    assert tools.unsupported("tool") is None
    assert tools.check("tool", {"a": "x", "b": "y"}) is None
    result = tools.check("tool", {"a": 1})
    assert result is not None
    assert result.code == "schema_invalid"


TREE: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
    "unevaluatedProperties": False,
}


def tree_of(levels: int, leaf_name: object) -> dict[str, Any]:
    tree: dict[str, Any] = {"name": leaf_name}
    for _ in range(levels):
        tree = {"name": "node", "kids": [tree]}
    return tree


def test_recursive_local_ref_is_enforced_at_full_parse_depth() -> None:
    tools = gate(TREE)
    assert tools.unsupported("tool") is None
    text = json.dumps(tree_of(63, "leaf"))
    arguments, problem = parse_arguments(text)
    assert problem is None
    assert arguments is not None
    assert tools.check("tool", arguments) is None
    result = tools.check("tool", tree_of(63, 5))
    assert result is not None
    assert result.code == "schema_invalid"
    assert "$.kids[0].kids[0]" in result.message


def test_too_deep_for_the_validator_is_limit_exceeded() -> None:
    result = gate(TREE).check("tool", tree_of(5000, "leaf"), slot=1)
    assert result is not None
    assert result.code == "limit_exceeded"
    assert "too deeply" in result.message


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [
        ("#/$defs/missing", "does not resolve"),
        ("#/properties/b/default", "points at data"),
        ("#nowhere", "does not resolve"),
    ],
)
def test_bad_local_ref_is_unsupported(ref: str, fragment: str) -> None:
    schema = {"properties": {"a": {"$ref": ref}, "b": {"default": {"type": "string"}}}}
    why = reason(schema)
    assert fragment in why
    assert "/properties/a/$ref" in why


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {
            "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
            "$ref": "#/$defs/a",
        },
    ],
)
def test_ref_loop_that_never_descends_is_unsupported(schema: dict[str, Any]) -> None:
    assert "loop" in reason(schema)


def test_nested_id_with_ref_is_unsupported() -> None:
    schema = {
        "$defs": {"a": {"$id": "https://example.com/a", "type": "string"}},
        "$ref": "#/$defs/a",
    }
    why = reason(schema)
    assert "'$id'" in why
    assert "/$defs/a/$id" in why


def test_nested_id_without_ref_is_fine() -> None:
    schema = {"$defs": {"a": {"$id": "https://example.com/a", "type": "string"}}}
    assert gate(schema).unsupported("tool") is None


# properties

names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=10)


@given(names, st.dictionaries(names, st.integers() | st.text(), max_size=5))
def test_any_tool_accepts_every_named_call(name: str, arguments: dict[str, Any]) -> None:
    assert ToolSchemas.any_tool().check(name, arguments) is None


@given(st.dictionaries(names, st.integers() | st.text() | st.none(), max_size=5))
def test_result_is_none_or_schema_invalid(arguments: dict[str, Any]) -> None:
    result = ToolSchemas({"weather": WEATHER}).check("weather", arguments)
    assert result is None or result.code == "schema_invalid"


@given(st.dictionaries(st.text(min_size=1, max_size=8).map(lambda s: "x-" + s), st.integers()))
def test_any_extension_keyword_is_accepted(extras: dict[str, int]) -> None:
    schema: dict[str, Any] = {"type": "object", **extras}
    assert gate(schema).unsupported("tool") is None
