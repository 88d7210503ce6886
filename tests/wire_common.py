"""Constants and generators shared by the wire formats' stateful tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

Expectation = tuple[frozenset[str], int | None]
"""A finding a step must add: one of these codes, on this slot (None: turn-wide)."""

JSON_CODES = frozenset(
    {
        "malformed_json",
        "trailing_data",
        "non_object_arguments",
        "duplicate_key",
        "non_finite_number",
        "lone_surrogate",
    }
)

SLOT_RANK = {
    "unseen": 0,
    "accumulating": 1,
    "replaying": 1,
    "terminal": 2,
    "validated": 3,
    "blocked": 4,
}

ANY_JSON_TYPE = {"type": ["null", "boolean", "integer", "number", "string", "array", "object"]}

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": True,
    },
    "search": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["query", "limit"],
        "additionalProperties": True,
    },
    "store": {
        "type": "object",
        "properties": {"key": {"type": "string"}, "value": ANY_JSON_TYPE},
        "required": ["key", "value"],
        "additionalProperties": True,
    },
    "ping": {"type": "object", "additionalProperties": True},
}

JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)

REQUIRED_ARGUMENTS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "get_weather": {"city": st.text(max_size=12)},
    "search": {"query": st.text(max_size=12), "limit": st.integers(1, 10**6)},
    "store": {"key": st.text(max_size=8), "value": JSON_VALUES},
    "ping": {},
}
