"""A request's ``tools`` list, in any wire's shape, as ``{tool name: JSON Schema}``.

``callgate check``, ``replay`` and ``diagram --trace`` take ``--tools`` as a map of schemas;
a record extracted from an audit log or a client's request holds the wire's own list
instead. Each entry is read in the shape it comes in: Chat Completions
(``{"type": "function", "function": {"name", "parameters"}}``), Responses
(``{"type": "function", "name", "parameters"}``), Anthropic (``{"name", "input_schema"}``),
Bedrock (``{"toolSpec": {"name", "inputSchema": {"json"}}}``), Gemini
(``{"functionDeclarations": [{"name", "parameters"}]}``), Cohere and Ollama as Chat
Completions. A provider's built-in tool (a ``type`` and a ``name``, no schema) declares no
schema and is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callgate.errors import ToolListError

__all__ = ["ToolListError", "schemas_of_tools"]


def _one(entry: Any, at: int) -> list[tuple[str, Any]]:
    """The (name, schema) pairs one entry declares."""
    if not isinstance(entry, Mapping):
        raise ToolListError(f"tools[{at}] is not an object")
    if isinstance(entry.get("functionDeclarations"), list):
        return [p for d in entry["functionDeclarations"] for p in _one(d, at)]
    if isinstance(entry.get("function_declarations"), list):
        return [p for d in entry["function_declarations"] for p in _one(d, at)]
    if isinstance(entry.get("toolSpec"), Mapping):
        spec = entry["toolSpec"]
        schema = spec.get("inputSchema")
        schema = schema.get("json") if isinstance(schema, Mapping) else None
        return [(_name(spec, at), schema)]
    spec = entry["function"] if isinstance(entry.get("function"), Mapping) else entry
    for key in ("parameters", "input_schema", "parametersJsonSchema"):
        if key in spec:
            return [(_name(spec, at), spec[key])]
    if "type" in entry and "name" in entry and "function" not in entry:
        return []  # a provider's built-in tool
    return [(_name(spec, at), None)]


def _name(spec: Mapping[str, Any], at: int) -> str:
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ToolListError(f"tools[{at}] has no name")
    return name


def schemas_of_tools(tools: Any) -> dict[str, Any]:
    """``{name: schema}`` of a tools list (a tool without a schema takes any object)."""
    if not isinstance(tools, list):
        raise ToolListError("a tools list must be a JSON array")
    schemas: dict[str, Any] = {}
    for at, entry in enumerate(tools):
        for name, schema in _one(entry, at):
            if name in schemas:
                raise ToolListError(f"tools[{at}] declares {name!r} a second time")
            schemas[name] = schema if schema is not None else {"type": "object"}
    return schemas
