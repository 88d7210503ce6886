"""Tool schemas written for JSON Schema Draft-04, -06 or -07, rewritten as Draft 2020-12.

The gate enforces Draft 2020-12 only (:mod:`callgate.gate.schema`), but many clients send
older drafts: zod-to-json-schema and the Vercel AI SDK declare
``"$schema": "http://json-schema.org/draft-07/schema#"``, and so do many MCP servers. Most
keywords mean the same in every draft; the few whose meaning changed are rewritten here into
their 2020-12 spelling, so that the one audited validator enforces what the declared draft
says:

- ``items`` as a list (a tuple) becomes ``prefixItems``, and ``additionalItems`` beside it
  becomes ``items``; ``additionalItems`` beside a single ``items`` asserts nothing and goes;
- ``dependencies`` becomes ``dependentRequired`` (a list of names) or ``dependentSchemas``
  (a schema);
- Draft-04's boolean ``exclusiveMinimum``/``exclusiveMaximum`` becomes the number it
  qualifies, and Draft-04's ``id`` becomes ``$id``;
- beside ``$ref``, a declared older draft ignores every other keyword, so they go too
  (``definitions`` and ``$defs`` stay: they hold what references point at).

A schema that declares an older draft is first checked against that draft's own
meta-schema, so a malformed one is refused with the draft's words. A schema with no
``$schema`` gets the rewrites whose old spelling means nothing else in 2020-12 (a list
``items``, ``dependencies``, a boolean ``exclusiveMinimum``); everything else is left to the
2020-12 audit, which still refuses any keyword it would not enforce.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft4Validator, Draft6Validator, Draft7Validator
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from callgate.gate.schema_linear import format_checker

DRAFTS: dict[str, type[Validator]] = {
    f"{scheme}://json-schema.org/draft-{number:02d}/schema{tail}": validator
    for number, validator in ((4, Draft4Validator), (6, Draft6Validator), (7, Draft7Validator))
    for scheme in ("http", "https")
    for tail in ("", "#")
}
"""The ``$schema`` values of the older drafts rewritten here, with their validators."""

_NAMES: dict[type[Validator], str] = {
    Draft4Validator: "Draft-04",
    Draft6Validator: "Draft-06",
    Draft7Validator: "Draft-07",
}
SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
"""Keywords whose value maps names to subschemas."""
SUBSCHEMA_ONE_OR_MANY = ("items", "prefixItems", "allOf", "anyOf", "oneOf", "additionalItems")
"""Keywords whose value is a subschema or a list of them."""
SUBSCHEMA_ONE = (
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)
"""Keywords whose value is one subschema."""
_KEPT_BESIDE_REF = frozenset({"$ref", "definitions", "$defs", "$schema", "$id", "$comment"})

Pointer = Callable[[Any], str]


def older_draft(schema: Any) -> type[Validator] | None:
    """The validator of the older draft ``schema`` declares at its root, or None."""
    if isinstance(schema, dict):
        declared = schema.get("$schema")
        if isinstance(declared, str):
            return DRAFTS.get(declared)
    return None


def draft_problem(schema: Any, pointer: Pointer) -> str | None:
    """Why ``schema`` is not valid under the older draft it declares, or None.

    None also when it declares no older draft; ``pointer`` renders an error's location.
    """
    validator = older_draft(schema)
    if validator is None:
        return None
    meta = validator(validator.META_SCHEMA, format_checker=format_checker())
    error = best_match(meta.iter_errors(schema))
    if error is None:
        return None
    return f"the schema is not valid {_NAMES[validator]} at {pointer(error.path)}: {error.message}"


def to_2020_12(schema: Any) -> Any:
    """``schema`` rewritten into Draft 2020-12 (a new object; the argument is not changed).

    A schema declaring Draft-04, -06 or -07 gets every rewrite of its draft and loses its
    ``$schema``; a schema declaring nothing gets the unambiguous ones; any other schema
    comes back as it is.
    """
    if not isinstance(schema, dict):
        return schema
    validator = older_draft(schema)
    if validator is None and "$schema" in schema:
        return schema
    rewritten = _Rewrite(declared=validator is not None, draft_4=validator is Draft4Validator)
    result = rewritten.schema(schema)
    if validator is not None:
        result.pop("$schema", None)
    return result


class _Rewrite:
    """One rewrite of a schema tree (recursive: the audit refuses a schema nested too deep)."""

    def __init__(self, *, declared: bool, draft_4: bool) -> None:
        self.declared = declared
        self.draft_4 = draft_4

    def schema(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        if self.declared and "$ref" in node:
            node = {k: v for k, v in node.items() if k in _KEPT_BESIDE_REF}
        out: dict[str, Any] = {}
        for keyword, value in node.items():
            if keyword in SUBSCHEMA_MAPS and isinstance(value, dict):
                out[keyword] = {name: self.schema(child) for name, child in value.items()}
            elif keyword in SUBSCHEMA_ONE or keyword in SUBSCHEMA_ONE_OR_MANY:
                out[keyword] = (
                    [self.schema(child) for child in value]
                    if isinstance(value, list)
                    else self.schema(value)
                )
            elif keyword == "dependencies" and isinstance(value, dict):
                self._dependencies(value, out)
            else:
                out[keyword] = value
        self._items(out)
        self._exclusive(out, "exclusiveMinimum", "minimum")
        self._exclusive(out, "exclusiveMaximum", "maximum")
        if self.draft_4 and isinstance(out.get("id"), str):
            out["$id"] = out.pop("id")
        return out

    def _dependencies(self, value: dict[str, Any], out: dict[str, Any]) -> None:
        for name, dependency in value.items():
            if isinstance(dependency, list):
                out.setdefault("dependentRequired", {})[name] = dependency
            else:
                out.setdefault("dependentSchemas", {})[name] = self.schema(dependency)

    @staticmethod
    def _items(out: dict[str, Any]) -> None:
        items = out.get("items")
        if isinstance(items, list):
            out["prefixItems"] = out.pop("items")
            if "additionalItems" in out:
                out["items"] = out.pop("additionalItems")
        else:
            out.pop("additionalItems", None)

    @staticmethod
    def _exclusive(out: dict[str, Any], exclusive: str, bound: str) -> None:
        flag = out.get(exclusive)
        if not isinstance(flag, bool):
            return
        del out[exclusive]
        if flag and bound in out:
            out[exclusive] = out.pop(bound)
