"""Typing raw argument text by the tool's JSON Schema.

Some text formats (Qwen3-Coder's ``<parameter=P>value</parameter>``, GLM-4.5's
``<arg_value>value</arg_value>``) write every argument value as bare text: ``42`` may be
the integer 42 or the string "42", and only the tool's schema says which. ``coerce``
reads the property's declared type and turns the text into that type, or reports that it
cannot. It fails closed: text that is not a valid value of any declared type gives
``(False, None)``, and the parser then gives up on the whole block, so nothing runs.

The rules, per declared ``type`` (the schema of property ``key`` under the tool's
``properties``):

- ``string``: the text exactly as written (no stripping, no unescaping).
- ``integer``: a JSON integer literal (``-12``; not ``+12``, ``012``, ``1_000``, ``1.0``).
- ``number``: a JSON number literal, finite; an int without fraction or exponent, a float
  otherwise (``1e999`` is refused).
- ``boolean``: ``true`` or ``false`` in any letter case. Qwen3-Coder's template writes a
  Python ``True`` through Jinja's ``string`` filter, and vLLM's qwen3_coder parser
  lower-cases the text before comparing, so ``True``/``FALSE`` are accepted too.
- ``null``: ``null`` or ``None`` in any letter case (Qwen3.5's template renders a Python
  None as ``None``; vLLM's qwen3_coder parser accepts both).
- ``object`` / ``array``: strict JSON of that type (callgate's strict JSON rules: no NaN,
  no duplicate keys, no lone surrogates, no trailing data, bounded depth).

Surrounding JSON whitespace is ignored for every type but ``string``. A ``type`` list, or
``anyOf`` / ``oneOf`` alternatives, are tried in their order, except that ``string`` (which
accepts any text) is tried last: otherwise ``{"type": ["string", "null"]}`` could never
produce null, and vLLM's qwen3_coder parser likewise maps ``null`` to None for a nullable
string. A property that is not in the schema, a schema with no type information for it
(no ``type``, ``anyOf`` or ``oneOf``), or no schemas at all: the raw text, as a string.
A type name outside JSON Schema's seven matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callgate.gate.strictjson import parse_arguments
from callgate.strategies.text.base import Schemas

__all__ = ["coerce", "coerce_types", "property_types", "strict_json_value"]

_JSON_WS = " \t\n\r"
_MAX_UNION_DEPTH = 8
_WRAP_KEY = "v"


def strict_json_value(text: str, *, max_depth: int = 128) -> tuple[bool, Any]:
    """Decode ``text`` as exactly one strict JSON value (any type): (True, value) or (False, None).

    Reuses :func:`callgate.gate.strictjson.parse_arguments` by wrapping the text as the single
    member of an object, so every strictness rule applies to values of any type.
    """
    value, problem = parse_arguments('{"' + _WRAP_KEY + '":' + text + "}", max_depth=max_depth + 1)
    if problem is not None or value is None or len(value) != 1 or _WRAP_KEY not in value:
        return False, None
    return True, value[_WRAP_KEY]


def _types_of(schema: Mapping[str, Any], depth: int) -> list[str] | None:
    """The type names a schema admits, in order; None when it declares no type at all."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [item for item in declared if isinstance(item, str)]
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list):
            found: list[str] = []
            for option in options:
                inner = (
                    _types_of(option, depth + 1)
                    if isinstance(option, Mapping) and depth < _MAX_UNION_DEPTH
                    else None
                )
                found.extend(["string"] if inner is None else inner)
            return found
    return None


def property_types(name: str, key: str, schemas: Schemas | None) -> tuple[str, ...] | None:
    """The declared types of argument ``key`` of tool ``name``, or None when nothing is declared.

    None covers: no schemas, an unknown tool, a key absent from ``properties``, and a
    property schema without ``type`` / ``anyOf`` / ``oneOf``.
    """
    if schemas is None:
        return None
    tool = schemas.get(name)
    if not isinstance(tool, Mapping):
        return None
    properties = tool.get("properties")
    if not isinstance(properties, Mapping):
        return None
    prop = properties.get(key)
    if not isinstance(prop, Mapping):
        return None
    found = _types_of(prop, 0)
    if found is None:
        return None
    ordered = list(dict.fromkeys(t for t in found if t != "string"))
    if "string" in found:
        ordered.append("string")
    return tuple(ordered)


def _as_type(type_name: str, raw: str) -> tuple[bool, Any]:
    """Read ``raw`` as one JSON Schema type; (False, None) when it is not one."""
    if type_name == "string":
        return True, raw
    text = raw.strip(_JSON_WS)
    if type_name == "boolean":
        lowered = text.lower()
        if lowered in ("true", "false"):
            return True, lowered == "true"
        return False, None
    if type_name == "null":
        if text.lower() in ("null", "none"):
            return True, None
        return False, None
    if type_name not in ("integer", "number", "object", "array"):
        return False, None
    ok, value = strict_json_value(text)
    if not ok:
        return False, None
    if type_name == "integer":
        good = isinstance(value, int) and not isinstance(value, bool)
    elif type_name == "number":
        good = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif type_name == "object":
        good = isinstance(value, dict)
    else:
        good = isinstance(value, list)
    return (True, value) if good else (False, None)


def coerce_types(types: tuple[str, ...], raw: str) -> tuple[bool, Any]:
    """Read ``raw`` as the first of ``types`` it is valid for; (False, None) if none fits."""
    for type_name in types:
        ok, value = _as_type(type_name, raw)
        if ok:
            return True, value
    return False, None


def coerce(name: str, key: str, raw: str, schemas: Schemas | None) -> tuple[bool, Any]:
    """Type the raw text of argument ``key`` of tool ``name`` by its schema: (ok, value).

    Formats that write values as bare text need this to tell ``42`` from ``"42"``; text
    that is not valid for the declared type gives (False, None), so the call is refused.
    """
    types = property_types(name, key, schemas)
    if types is None:
        return True, raw
    return coerce_types(types, raw)
