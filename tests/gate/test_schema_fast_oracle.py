"""The quick acceptance of simple schemas against jsonschema itself, the oracle.

The quick check may only say "valid" where Draft 2020-12 says valid within the step budget,
and on the simple schemas it must say so for the plain values tools receive (otherwise the
shortcut never fires and the benchmark gains are not real).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from callgate.gate.schema import ToolSchemas
from callgate.gate.schema_fast import compile_acceptor
from callgate.gate.schema_linear import BoundedValidator, Budget, BudgetExceeded, run_within
from callgate.testing import ANY_JSON_VALUES

TYPE_NAMES = ("null", "boolean", "integer", "number", "string", "object", "array")
NAMES = st.sampled_from(["a", "b", "city", "n", ""])


def _types() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(TYPE_NAMES), st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3)
    )


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": _types(),
            "properties": st.dictionaries(NAMES, children, max_size=3),
            "required": st.lists(NAMES, max_size=3, unique=True),
            "additionalProperties": st.one_of(st.booleans(), children),
            "items": children,
            "enum": st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True),
            "description": st.text(max_size=5),
        },
    )


SIMPLE = st.recursive(
    st.one_of(st.just(True), st.just({}), st.builds(lambda t: {"type": t}, _types())),
    _extend,
    max_leaves=8,
)
"""Schemas made only of the keywords the quick check understands (zero of them included)."""


def _value_for(schema: Any) -> st.SearchStrategy[Any]:
    """Values shaped by ``schema``, so that valid ones are common (any JSON value mixed in)."""
    if schema is True or not isinstance(schema, dict):
        return ANY_JSON_VALUES
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), ANY_JSON_VALUES)
    declared = schema.get("type", "object")
    kind = declared if isinstance(declared, str) else declared[0]
    if kind == "object":
        props = schema.get("properties", {})
        keys = {**{k: _value_for(v) for k, v in props.items()}}
        required = {k: keys.get(k, ANY_JSON_VALUES) for k in schema.get("required", [])}
        optional = {k: v for k, v in keys.items() if k not in required}
        return st.fixed_dictionaries(required, optional=optional)
    if kind == "array":
        return st.lists(_value_for(schema.get("items", True)), max_size=3)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "null": st.none(),
        "boolean": st.booleans(),
        "integer": st.integers(),
        "number": st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
        "string": st.text(max_size=4),
    }
    return simple[kind]


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[Any, Any]:
    schema = draw(SIMPLE)
    return schema, draw(st.one_of(_value_for(schema), ANY_JSON_VALUES))


def _steps(schema: Any, value: Any) -> int | None:
    """Keyword steps the bounded validator spends accepting ``value`` (None: it rejects it)."""
    validator = BoundedValidator(schema)
    budget = Budget(10**9)
    errors = run_within(budget, lambda: list(validator.iter_errors(value)))
    return None if errors else 10**9 - budget.left


def _plain(value: Any) -> bool:
    """No float that Draft 2020-12 counts as an integer (the quick check leaves those)."""
    if isinstance(value, float):
        return not value.is_integer()
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return True


@given(schema_and_value())
def test_yes_only_where_jsonschema_accepts_within_the_bound(pair: tuple[Any, Any]) -> None:
    schema, value = pair
    accept = compile_acceptor(schema)
    assert accept is not None, schema
    bound = accept(value)
    steps = _steps(schema, value)
    if bound >= 0:
        assert steps is not None, (schema, value)
        assert steps <= bound
    elif steps is not None:
        assert not _plain(value), (schema, value)  # completeness: plain valid values pass


@given(schema_and_value(), st.integers(min_value=0, max_value=12))
def test_tool_schemas_check_is_unchanged_by_the_shortcut(
    pair: tuple[Any, Any], max_steps: int
) -> None:
    schema, value = pair
    assume(isinstance(value, dict))
    quick = ToolSchemas({"f": schema}, max_steps=max_steps)
    slow = ToolSchemas({"f": schema}, max_steps=max_steps)
    slow._accept.clear()  # the reference: jsonschema alone
    assert quick.check("f", value, 0) == slow.check("f", value, 0)


@pytest.mark.parametrize(
    "schema",
    [
        False,
        {"type": "string", "minLength": 1},
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"anyOf": [{"type": "string"}]},
        {"type": "string", "format": "email"},
        {"enum": [1, "a"]},
        {"enum": []},
        {"type": "decimal"},
        {"type": []},
        {"properties": {"a": {"const": 1}}},
        {"items": [{"type": "string"}]},
        {"required": "a"},
        {"additionalProperties": {"pattern": "x"}},
    ],
)
def test_other_keywords_are_left_to_jsonschema(schema: Any) -> None:
    assert compile_acceptor(schema) is None


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer"}, 1.0),  # an integer to Draft 2020-12, not certain here
        ({"type": "integer"}, True),
        ({"type": "number"}, False),
        ({"type": "object"}, __import__("collections").OrderedDict()),
        ({"enum": ["a"]}, "b"),
        ({"required": ["a"]}, {}),
        ({"additionalProperties": False}, {"a": 1}),
        ({"properties": {"a": {"type": "string"}}}, {"a": 1}),
        ({"items": {"type": "string"}}, ["a", 1]),
    ],
)
def test_unsure_cases(schema: Any, value: Any) -> None:
    accept = compile_acceptor(schema)
    assert accept is not None
    assert accept(value) == -1


def test_the_budget_is_respected_at_its_edge() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}
    value = {"a": ["x"] * 50}
    steps = _steps(schema, value)
    assert steps is not None
    with pytest.raises(BudgetExceeded):
        run_within(Budget(steps - 1), lambda: list(BoundedValidator(schema).iter_errors(value)))
    assert ToolSchemas({"f": schema}, max_steps=steps - 1).check("f", value) is not None
    assert ToolSchemas({"f": schema}, max_steps=10**6).check("f", value) is None
