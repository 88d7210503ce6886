"""Tools defined once: a JSON Schema from a function's signature, and each provider's spec.

:func:`schema_from_function` reads a function's parameters and type hints (``str``,
``int``, ``float``, ``bool``, ``None``, ``list``/``Sequence``, ``tuple``,
``dict``/``Mapping`` with string keys, ``Literal``, ``Enum``, ``Optional``/unions,
``Annotated[T, "description"]``) into the JSON Schema of its arguments: parameters
without a default are required, no other key is allowed. A hint it cannot express, or a
``*args``/``**kwargs`` parameter, is refused with the parameter's name rather than
guessed. :func:`description_of` takes a docstring's first paragraph, and
:func:`parameter_docs` the per-parameter lines of a Google-style ``Args:`` section or
Sphinx ``:param name:`` fields.

:data:`SPECS` shapes a tool (name, description, schema) as each provider's request
takes it, read from each wire's record (:class:`~callgate.strategies.wire.Wire`): Chat
Completions (and Mistral, Cohere v2, Ollama), Responses, Anthropic Messages, Bedrock
Converse (``toolConfig.tools``) and Gemini (one tool of ``functionDeclarations``, each
schema as ``parametersJsonSchema``).
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from callgate.strategies import WIRE_RECORDS
from callgate.strategies.wire import ToolSpec

Schema = dict[str, Any]

_SCALARS: Mapping[object, Schema] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}
_ARRAYS = (list, set, frozenset, abc.Sequence, abc.Iterable, abc.Collection, abc.Set)
_OBJECTS = (dict, abc.Mapping, abc.MutableMapping)


def schema_of(hint: Any, where: str) -> Schema:
    """The JSON Schema of values of type ``hint`` (``where`` names it in errors)."""
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        schema = schema_of(args[0], where)
        notes = [a for a in args[1:] if isinstance(a, str)]
        return {**schema, "description": notes[0]} if notes else schema
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [schema_of(a, where) for a in args]}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    if hint in _ARRAYS or origin in _ARRAYS:
        return {"type": "array", "items": schema_of(args[0], where)} if args else {"type": "array"}
    if hint is tuple or origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], where)}
        items = [schema_of(a, where) for a in args]
        bounds = {"minItems": len(items), "maxItems": len(items)} if args else {}
        return {"type": "array", "prefixItems": items, **bounds} if args else {"type": "array"}
    if hint in _OBJECTS or origin in _OBJECTS:
        if args and args[0] is not str:
            raise TypeError(f"{where}: JSON object keys are strings, not {args[0]!r}")
        values = {"additionalProperties": schema_of(args[1], where)} if args else {}
        return {"type": "object", **values}
    raise TypeError(f"{where}: no JSON Schema for the type hint {hint!r}; give the schema")


def schema_from_function(function: Callable[..., Any]) -> Schema:
    """The JSON Schema of ``function``'s keyword arguments, from its signature and hints."""
    name = getattr(function, "__name__", repr(function))
    hints = typing.get_type_hints(function, include_extras=True)
    notes = parameter_docs(inspect.getdoc(function) or "")
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        where = f"{name}({parameter.name})"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{where}: a tool's arguments are named; *args and **kwargs cannot be")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"{where}: a tool's arguments are passed by name")
        schema = schema_of(hints.get(parameter.name, Any), where)
        if parameter.name in notes and "description" not in schema:
            schema["description"] = notes[parameter.name]
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        properties[parameter.name] = schema
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    return {**schema, "required": required} if required else schema


def description_of(function: Callable[..., Any]) -> str:
    """The first paragraph of ``function``'s docstring, on one line (empty without one)."""
    doc = inspect.getdoc(function) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


_GOOGLE_ARG = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?\s*:\s*(.+)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.+)$")


def parameter_docs(doc: str) -> dict[str, str]:
    """Per-parameter descriptions from a Google ``Args:`` section or ``:param x:`` fields."""
    found: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        sphinx = _SPHINX_ARG.match(line)
        if sphinx is not None:
            found[sphinx.group(1)] = sphinx.group(2).strip()
            continue
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args and line.strip() and not line.startswith((" ", "\t")):
            in_args = False
        google = _GOOGLE_ARG.match(line) if in_args else None
        if google is not None:
            found[google.group(1)] = google.group(2).strip()
    return found


SPECS: Mapping[str, ToolSpec] = {name: w.tool_spec for name, w in WIRE_RECORDS.items()}
"""Per wire profile: a tool as that provider's request lists it (each wire's record says)."""


def tool_specs(wire: str, tools: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[Any]:
    """``tools`` (name, description, schema) as the ``tools`` list of ``wire``'s request.

    Gemini takes every declaration in one tool (its record's ``tools_key``); the others
    take one entry per tool.
    """
    if wire not in WIRE_RECORDS:
        raise ValueError(f"no tool specs for {wire!r}; known: {', '.join(SPECS)}")
    record = WIRE_RECORDS[wire]
    return record.tools([record.tool_spec(*tool) for tool in tools])
