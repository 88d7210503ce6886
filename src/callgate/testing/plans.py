"""The intended content of a generated turn: tools, their arguments, calls and fragments.

Everything here is ground truth: a stream is encoded from a plan, so the calls a correct
reader must find are known before a single chunk exists.
"""

from __future__ import annotations

import callgate.testing.needs  # noqa: F401  (Hypothesis, or its install line)

# isort: split

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from callgate.testing.cuts import pieces

ANY_JSON_TYPE = {"type": ["null", "boolean", "integer", "number", "string", "array", "object"]}

TOOLS: dict[str, dict[str, Any]] = {
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
"""The default tools: {name: JSON Schema}; one with no required argument (``ping``)."""

JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
"""Small JSON values of every type, nested (text may hold any code point but a surrogate)."""

ANY_JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=8,
)
"""JSON values at their edges too: integers beyond 64 bits, any finite float, nested."""

JSON_OBJECTS: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.text(max_size=12), ANY_JSON_VALUES, max_size=4
)
"""Objects of any keys and :data:`ANY_JSON_VALUES`: arguments of a tool without a schema."""

REQUIRED_ARGUMENTS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "get_weather": {"city": st.text(max_size=12)},
    "search": {"query": st.text(max_size=12), "limit": st.integers(1, 10**6)},
    "store": {"key": st.text(max_size=8), "value": JSON_VALUES},
    "ping": {},
}
"""Values for each default tool's required keys (a schema-valid object needs them)."""

ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True)
class CallPlan:
    """One generated call: the unique part of its id, its tool, arguments and fragments."""

    suffix: str
    name: str
    arguments: dict[str, Any]
    fragments: tuple[str, ...]

    @property
    def raw(self) -> str:
        """The whole argument text, as the fragments join."""
        return "".join(self.fragments)


@dataclass(frozen=True)
class StreamPlan:
    """One generated turn: optional text, then its calls."""

    text_parts: tuple[str, ...]
    calls: tuple[CallPlan, ...]


def _required_for(name: str, schema: Mapping[str, Any] | None) -> dict[str, st.SearchStrategy[Any]]:
    if name in REQUIRED_ARGUMENTS and (schema is None or schema == TOOLS.get(name)):
        return REQUIRED_ARGUMENTS[name]
    properties = (schema or {}).get("properties", {})
    return {
        key: st.text(max_size=8) if properties.get(key, {}).get("type") == "string" else JSON_VALUES
        for key in (schema or {}).get("required", [])
    }


@st.composite
def arguments_for(
    draw: st.DrawFn, name: str, schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON object for tool ``name``: its required keys plus a few generated ones.

    For the default tools the object is schema-valid; for a tool of yours, the required
    keys get strings where the schema says ``string`` and any JSON value otherwise.
    """
    extra = draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3))
    required = {key: draw(values) for key, values in _required_for(name, schema).items()}
    return {**extra, **required}


@st.composite
def serialised(draw: st.DrawFn, arguments: Mapping[str, Any]) -> str:
    """``arguments`` as a model writes them: escaped or raw unicode, spaced or compact."""
    separators = draw(st.sampled_from([(", ", ": "), (",", ":")]))
    return json.dumps(arguments, ensure_ascii=draw(st.booleans()), separators=separators)


def argument_texts() -> st.SearchStrategy[str]:
    """The text of :data:`JSON_OBJECTS` as a model writes it (see :func:`serialised`)."""
    return JSON_OBJECTS.flatmap(serialised)


@st.composite
def stream_plans(
    draw: st.DrawFn,
    *,
    tools: Mapping[str, Mapping[str, Any]] | None = None,
    calls: tuple[int, int] = (1, 4),
    text: bool = True,
    alphabet: str = ID_ALPHABET,
    id_size: tuple[int, int] = (4, 24),
    empty_arguments: bool = False,
    empty_fragments: bool = False,
    bare_calls: bool = False,
) -> StreamPlan:
    """Optional text, then ``calls`` calls with distinct ids and fragmented JSON arguments.

    ``empty_arguments``: a call with no arguments may stream no fragment at all;
    ``empty_fragments``: a call's fragments may include empty ones (as servers send them);
    ``bare_calls``: about one call in four is drawn outright as a call of a tool with no
    required argument that streams no fragment (with ``empty_arguments`` alone that case
    comes only when ``{}`` is drawn by chance).
    """
    schemas = TOOLS if tools is None else tools
    body = draw(st.just("") | st.text(min_size=1, max_size=16)) if text else ""
    count = draw(st.integers(*calls))
    suffixes = draw(
        st.lists(
            st.text(alphabet, min_size=id_size[0], max_size=id_size[1]),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    bare = [n for n in sorted(schemas) if not _required_for(n, schemas[n])]
    planned = []
    for suffix in suffixes:
        if bare_calls and bare and draw(st.integers(0, 3)) == 0:
            planned.append(CallPlan(suffix, draw(st.sampled_from(bare)), {}, ()))
            continue
        name = draw(st.sampled_from(sorted(schemas)))
        arguments = draw(arguments_for(name, schemas[name]))
        fragments = draw(pieces(draw(serialised(arguments)), empty=empty_fragments))
        if empty_arguments and not arguments and draw(st.booleans()):
            fragments = []
        planned.append(CallPlan(suffix, name, arguments, tuple(fragments)))
    return StreamPlan(tuple(draw(pieces(body, empty=False))), tuple(planned))


@st.composite
def interleavings(draw: st.DrawFn, lengths: Sequence[int], *, in_order: bool = True) -> list[int]:
    """A merge of items with ``lengths`` pieces each: the item of each emitted piece.

    With ``in_order`` the items open in index order (as providers open calls) and their
    later pieces interleave freely; without, any item may go first.
    """
    remaining, opened, order = list(lengths), 0, []
    while any(remaining):
        if in_order:
            ready = [i for i in range(opened) if remaining[i]]
            if opened < len(lengths):
                ready.append(opened)
        else:
            ready = [i for i, left in enumerate(remaining) if left]
        choice = draw(st.sampled_from(ready))
        opened = max(opened, choice + 1)
        remaining[choice] -= 1
        order.append(choice)
    return order
