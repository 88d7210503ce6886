"""A quick acceptance test for the commonest tool schemas, so valid arguments skip jsonschema.

Most tool schemas are objects of typed properties with a ``required`` list. For a schema built
only from the keywords below, :func:`compile_acceptor` returns a check that runs in a few
microseconds and answers one question: would the Draft 2020-12 validator accept these
arguments within its step budget? It answers yes only when that is certain. Anything it
cannot be sure of (a float that may count as an integer, an enum of non-strings, a budget
near its end) is a no, and jsonschema, which also words the findings, decides.

Keywords understood: ``type``, ``properties``, ``required``, ``additionalProperties``,
``items`` (one schema), ``enum`` (of strings), and the annotations, which assert nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ANNOTATION_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$anchor",
    }
)
"""Keywords that carry no assertion, so the validator ignoring them loses nothing."""

Acceptor = Callable[[object], int]
"""Steps the validator would take at most on a value it accepts, or -1 when not certain."""

_UNSURE = -1

_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "object": (dict,),
    "array": (list,),
}
"""Python types that are certainly of each JSON type (``bool`` is never a number here)."""
_EXACT = frozenset(t for kinds in _TYPES.values() for t in kinds)
"""A subclass (an OrderedDict, a str enum) is left to jsonschema."""

_UNDERSTOOD = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum"})


def compile_acceptor(schema: object) -> Acceptor | None:
    """The quick check for ``schema``, or None when it uses a keyword not understood here.

    The check returns an upper bound on the keyword steps jsonschema would spend on a value
    it accepts (each schema object visited counts all its keywords), or -1.
    """
    if schema is True:
        return lambda value: 0
    if not isinstance(schema, Mapping) or any(
        k not in _UNDERSTOOD and k not in ANNOTATION_KEYWORDS for k in schema
    ):
        return None
    weight = len(schema)
    kinds = _kinds(schema.get("type"))
    if kinds is None:
        return None
    shape = _object_check(schema)
    items = compile_acceptor(schema["items"]) if "items" in schema else None
    enum = _enum(schema)
    if shape is None or ("items" in schema and items is None) or enum is None:
        return None

    def accept(value: object) -> int:
        kind = type(value)
        if kind not in _EXACT or (kinds and kind not in kinds):
            return _UNSURE
        if enum and (kind is not str or value not in enum):
            return _UNSURE
        steps = weight
        if kind is dict:
            more = shape(value)  # type: ignore[arg-type]
            if more < 0:
                return _UNSURE
            steps += more
        elif kind is list and items is not None:
            for item in value:  # type: ignore[attr-defined]
                more = items(item)
                if more < 0:
                    return _UNSURE
                steps += more
        return steps

    return accept


def _kinds(declared: object) -> frozenset[type] | None:
    """The Python types ``type`` certainly admits (empty: no ``type``), None if not understood."""
    if declared is None:
        return frozenset()
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names:
        return None
    kinds: set[type] = set()
    for name in names:
        if not isinstance(name, str) or name not in _TYPES:
            return None
        kinds.update(_TYPES[name])
    return frozenset(kinds)


def _enum(schema: Mapping[str, Any]) -> frozenset[str] | None:
    """An enum of strings as a set (empty: no ``enum``), None for any other enum."""
    values = schema.get("enum")
    if values is None:
        return frozenset()
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        return None
    return frozenset(values)


def _object_check(schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], int] | None:
    """What ``properties``, ``required`` and ``additionalProperties`` ask of an object."""
    properties: dict[str, Acceptor] = {}
    for name, sub in (schema.get("properties") or {}).items():
        accept = compile_acceptor(sub)
        if accept is None:
            return None
        properties[name] = accept
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    extra_schema = schema.get("additionalProperties", True)
    closed = extra_schema is False
    extra = None if closed else compile_acceptor(extra_schema)
    if not closed and extra is None:
        return None

    def check(value: dict[str, Any]) -> int:
        steps = 0
        for name in required:
            if name not in value:
                return _UNSURE
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                if closed or extra is None:
                    return _UNSURE
                sub = extra
            more = sub(item)
            if more < 0:
                return _UNSURE
            steps += more
        return steps

    return check
