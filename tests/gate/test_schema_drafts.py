"""Tool schemas declaring Draft-04, -06 or -07 (or nothing) are enforced as their draft says.

The gate rewrites them into Draft 2020-12 (:mod:`callgate.gate.schema_drafts`); a property
compares its verdicts with jsonschema's validator of the declared draft on generated schemas
that use every keyword whose meaning changed, and the keywords nothing enforces still fail
closed.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft6Validator, Draft7Validator
from jsonschema.protocols import Validator

from callgate.gate.schema import ToolSchemas
from callgate.gate.schema_drafts import to_2020_12

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_04 = "http://json-schema.org/draft-04/schema#"
ZOD = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
    "additionalProperties": False,
    "$schema": DRAFT_07,
}
"""What zod-to-json-schema (and so the Vercel AI SDK) sends for a zod object."""


def verdict(schema: Any, arguments: dict[str, Any]) -> str | None:
    """The finding code the gate gives ``arguments`` under ``schema`` (None: accepted)."""
    found = ToolSchemas({"tool": schema}).check("tool", arguments)
    return None if found is None else found.code


def test_a_zod_draft_07_schema_is_enforced() -> None:
    assert ToolSchemas({"tool": ZOD}).unsupported("tool") is None
    assert verdict(ZOD, {"city": "Oslo", "days": 3}) is None
    assert verdict(ZOD, {"city": "Oslo", "days": 15}) == "schema_invalid"
    assert verdict(ZOD, {"days": 3}) == "schema_invalid"
    assert verdict(ZOD, {"city": "Oslo", "extra": 1}) == "schema_invalid"


@pytest.mark.parametrize("declared", [DRAFT_07, "http://json-schema.org/draft-06/schema#", None])
def test_items_as_a_list_is_a_tuple(declared: str | None) -> None:
    pair = {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"pair": {**pair, "additionalItems": False}},
    }
    if declared:
        schema["$schema"] = declared
    assert verdict(schema, {"pair": ["a", 1]}) is None
    assert verdict(schema, {"pair": ["a", "b"]}) == "schema_invalid"
    assert verdict(schema, {"pair": ["a", 1, 2]}) == "schema_invalid"


def test_draft_04_boolean_exclusive_bounds() -> None:
    schema = {
        "$schema": DRAFT_04,
        "type": "object",
        "properties": {
            "above": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            "upto": {"type": "number", "maximum": 5, "exclusiveMaximum": False},
        },
    }
    assert verdict(schema, {"above": 0.5, "upto": 5}) is None
    assert verdict(schema, {"above": 0}) == "schema_invalid"
    assert verdict(schema, {"upto": 5.5}) == "schema_invalid"


def test_dependencies_of_both_kinds() -> None:
    schema = {
        "$schema": DRAFT_07,
        "type": "object",
        "dependencies": {
            "card": ["billing"],
            "vip": {"required": ["lounge"]},
        },
    }
    assert verdict(schema, {"card": 1, "billing": 2}) is None
    assert verdict(schema, {"card": 1}) == "schema_invalid"
    assert verdict(schema, {"vip": True}) == "schema_invalid"
    assert verdict(schema, {"vip": True, "lounge": "A"}) is None


def test_definitions_and_a_ref_whose_siblings_the_draft_ignores() -> None:
    schema = {
        "$schema": DRAFT_07,
        "definitions": {"count": {"type": "integer"}},
        "type": "object",
        "properties": {"n": {"$ref": "#/definitions/count", "type": "string"}},
    }
    assert verdict(schema, {"n": 3}) is None  # Draft-07 ignores "type" beside "$ref"
    assert verdict(schema, {"n": "3"}) == "schema_invalid"


def test_a_schema_invalid_under_its_own_draft_is_refused_in_its_words() -> None:
    why = ToolSchemas({"tool": {"$schema": DRAFT_04, "required": []}}).unsupported("tool")
    assert why is not None and "not valid Draft-04" in why, why


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"nullable": True}, "'nullable'"),
        ({"properties": {"a": {"format": "no-such-format"}}}, "'format'"),
        ({"properties": {"a": {"$ref": "https://example.com/a.json"}}}, "nothing is fetched"),
    ],
)
def test_what_nothing_enforces_still_fails_closed(extra: dict[str, Any], says: str) -> None:
    schema = {"$schema": DRAFT_07, "type": "object", **extra}
    why = ToolSchemas({"tool": schema}).unsupported("tool")
    assert why is not None and says in why, why
    assert verdict(schema, {}) == "unsupported_schema_keyword"


def test_another_dialect_is_still_refused() -> None:
    schema = {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}
    assert verdict(schema, {}) == "unsupported_schema_keyword"


def test_the_rewrite_leaves_its_argument_alone() -> None:
    schema = {"$schema": DRAFT_07, "items": [{"type": "string"}], "dependencies": {"a": ["b"]}}
    copy = {**schema}
    to_2020_12(schema)
    assert schema == copy


DRAFTS: dict[str, type[Validator]] = {
    "http://json-schema.org/draft-04/schema#": Draft4Validator,
    "http://json-schema.org/draft-06/schema#": Draft6Validator,
    DRAFT_07: Draft7Validator,
}
LEAF = st.sampled_from(
    [
        {"type": "integer"},
        {"type": "string"},
        {"type": "number", "minimum": 1},
        {"enum": [1, "a", None]},
        {},
    ]
)


def _node(children: st.SearchStrategy[Any], draft_4: bool) -> st.SearchStrategy[Any]:
    """One schema object using a keyword whose meaning changed between the drafts."""
    bound = st.integers(-2, 2)
    exclusive = (
        st.builds(lambda n, b: {"minimum": n, "exclusiveMinimum": b}, bound, st.booleans())
        | st.builds(lambda n, b: {"maximum": n, "exclusiveMaximum": b}, bound, st.booleans())
        if draft_4
        else st.builds(lambda n: {"exclusiveMinimum": n}, bound)
        | st.builds(lambda n: {"exclusiveMaximum": n}, bound)
    )
    return st.one_of(
        exclusive,
        st.builds(lambda xs: {"items": xs}, st.lists(children, max_size=3)),
        st.builds(
            lambda xs, more: {"items": xs, "additionalItems": more},
            st.lists(children, max_size=2),
            children | st.booleans(),
        ),
        st.builds(lambda x, more: {"items": x, "additionalItems": more}, children, children),
        st.builds(
            lambda required, schema: {"dependencies": {"a": required, "b": schema}},
            st.lists(st.sampled_from(["b", "c"]), min_size=1, unique=True),
            children,
        ),
        st.builds(lambda x: {"properties": {"a": x, "b": x}}, children),
        st.builds(lambda x: {"$ref": "#/definitions/leaf", "type": "string", "not": x}, children),
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.5, -1.5]) | st.text("abc"),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def draft_cases(draw: st.DrawFn) -> tuple[type[Validator], dict[str, Any], Any]:
    uri = draw(st.sampled_from(sorted(DRAFTS)))
    validator = DRAFTS[uri]
    draft_4 = validator is Draft4Validator
    sub = draw(st.recursive(LEAF, lambda inner: _node(inner, draft_4), max_leaves=4))
    schema = {
        "$schema": uri,
        "definitions": {"leaf": {"type": "integer"}},
        "type": "object",
        "properties": {"v": sub},
    }
    return validator, schema, draw(JSON)


@settings(max_examples=300, deadline=None)
@given(draft_cases())
def test_the_gate_agrees_with_the_declared_drafts_validator(
    case: tuple[type[Validator], dict[str, Any], Any],
) -> None:
    validator, schema, value = case
    gate = ToolSchemas({"tool": schema})
    if not validator(validator.META_SCHEMA).is_valid(schema):
        assert verdict(schema, {"v": value}) == "unsupported_schema_keyword"
        return
    assert gate.unsupported("tool") is None, gate.unsupported("tool")
    expected = validator(schema).is_valid({"v": value})
    assert (verdict(schema, {"v": value}) is None) is expected
