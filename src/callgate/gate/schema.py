"""JSON Schema gate for tool-call arguments, using jsonschema's Draft 2020-12 validator.

Schemas declaring Draft-07, -06 or -04 are rewritten into 2020-12 first (schema_drafts).
Each tool's schema is checked once up front; any keyword the validator would silently ignore
makes the tool unsupported rather than quietly half-validated. Nothing is ever fetched.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeAlias

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from callgate.errors import BudgetExceeded, PatternError
from callgate.gate.findings import Finding, finding
from callgate.gate.limits import DEFAULT_LIMITS
from callgate.gate.schema_drafts import (
    SUBSCHEMA_MAPS,
    SUBSCHEMA_ONE,
    SUBSCHEMA_ONE_OR_MANY,
    draft_problem,
    to_2020_12,
)
from callgate.gate.schema_fast import ANNOTATION_KEYWORDS, Acceptor, compile_acceptor
from callgate.gate.schema_linear import (
    BoundedValidator,
    Budget,
    compile_pattern,
    format_checker,
    run_within,
)

CHECKED_FORMATS = frozenset(Draft202012Validator.FORMAT_CHECKER.checkers)
"""Values of `format` the installed jsonschema actually checks (depends on optional packages)."""

_DIALECTS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
    }
)
_IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"})
_NEEDS_SIBLING = {"then": "if", "else": "if", "minContains": "contains", "maxContains": "contains"}
_MESSAGE_LIMIT = 300
ASSERTS_NOTHING = frozenset(
    {
        "strict",
        "example",
        "propertyOrdering",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)
"""Keys that are no Draft 2020-12 assertion and known to constrain nothing, accepted beside
:data:`~callgate.gate.schema_fast.ANNOTATION_KEYWORDS`: OpenAI's function flag ``strict``
copied into the schema (frameworks do), OpenAPI's ``example``, Gemini's ``propertyOrdering``,
and the content vocabulary (annotations only in 2020-12). Vendor extensions (``x-`` keys)
are accepted too. A key that could be a constraint (``nullable``, ``discriminator``, any
other unknown key) still makes the schema unsupported."""

_META_VALIDATOR = Draft202012Validator(
    Draft202012Validator.META_SCHEMA,
    registry=Registry(),
    format_checker=format_checker(),
)

Token: TypeAlias = str | int
Location: TypeAlias = tuple[Token, ...]


def _pointer(location: Iterable[Token]) -> str:
    """Render a location as an RFC 6901 JSON pointer; the root reads as 'the schema root'."""
    text = "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in location)
    return text or "the schema root"


def _clip(text: str) -> str:
    if len(text) > _MESSAGE_LIMIT:
        return text[: _MESSAGE_LIMIT - 3] + "..."
    return text


def _plain(value: Any) -> Any:
    """Copy a schema into plain dicts and lists, so later edits by the caller cannot leak in."""
    if isinstance(value, Mapping):
        return {key: _plain(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(child) for child in value]
    return value


class _Audit:
    """One pass over a valid schema collecting everything the validator would not enforce."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        self.problems: list[str] = []
        self.location_of: dict[int, Location] = {}
        self.refs: list[tuple[Location, dict[str, Any], str]] = []
        self.nested_ids: list[Location] = []
        self.in_place: dict[int, list[dict[str, Any]]] = {}
        self.seen: set[str] = set()

    def run(self) -> list[str]:
        self._walk()
        if {"unevaluatedProperties", "patternProperties"} <= self.seen:
            self.problems.append(
                "keyword 'unevaluatedProperties' in a schema that uses 'patternProperties' "
                "is not supported (its property matching is not linear-time)"
            )
        if self.refs and self.nested_ids:
            for location in self.nested_ids:
                self.problems.append(
                    f"keyword '$id' at {_pointer(location)} starts a nested resource, which "
                    "changes how '$ref' resolves; only a '$id' at the root is supported"
                )
        self._check_refs()
        self._check_cycles()
        return self.problems

    def _walk(self) -> None:
        stack: list[tuple[Any, Location]] = [(self.root, ())]
        while stack:
            node, location = stack.pop()
            if not isinstance(node, dict) or id(node) in self.location_of:
                continue
            self.location_of[id(node)] = location
            children = list(self._children(node, location))
            self.in_place[id(node)] = [
                child
                for keyword, child, _ in children
                if keyword in _IN_PLACE and isinstance(child, dict)
            ]
            stack.extend((child, at) for _, child, at in reversed(children))

    def _children(
        self, node: dict[str, Any], location: Location
    ) -> Iterator[tuple[str, Any, Location]]:
        """Check the keywords of one schema object and yield (keyword, subschema, location)."""
        for keyword, value in node.items():
            here = (*location, keyword)
            self._check_keyword(node, keyword, value, here)
            if keyword in SUBSCHEMA_MAPS and isinstance(value, dict):
                for name, child in value.items():
                    yield keyword, child, (*here, name)
            elif keyword in SUBSCHEMA_ONE_OR_MANY and isinstance(value, list):
                for index, child in enumerate(value):
                    yield keyword, child, (*here, index)
            elif keyword in SUBSCHEMA_ONE or keyword in SUBSCHEMA_ONE_OR_MANY:
                yield keyword, value, here

    def _check_keyword(
        self, node: dict[str, Any], keyword: str, value: Any, here: Location
    ) -> None:
        where = _pointer(here)
        self.seen.add(keyword)
        if keyword == "pattern":
            self._check_pattern(value, where)
        elif keyword == "patternProperties":
            for name in value if isinstance(value, dict) else ():
                self._check_pattern(name, f"{where} (property pattern)")
        elif keyword == "$schema":
            if value not in _DIALECTS:
                self.problems.append(
                    f"keyword '$schema' at {where} names {value!r}; only Draft 2020-12 "
                    "(and Draft-07, -06 and -04 at the root, rewritten into it) is enforced, "
                    "another dialect would change what keywords mean"
                )
        elif keyword == "$id":
            if len(here) > 1:
                self.nested_ids.append(here)
        elif keyword in ANNOTATION_KEYWORDS or keyword in ASSERTS_NOTHING:
            pass
        elif keyword == "format":
            if value not in CHECKED_FORMATS:
                self.problems.append(
                    f"keyword 'format' at {where} is {value!r}, which is not checked here "
                    f"(checked: {', '.join(sorted(CHECKED_FORMATS))})"
                )
        elif keyword == "$ref":
            self.refs.append((here, node, value))
        elif keyword in ("$dynamicRef", "$recursiveRef"):
            self.problems.append(f"keyword {keyword!r} at {where} is not supported")
        elif keyword in _NEEDS_SIBLING:
            if _NEEDS_SIBLING[keyword] not in node:
                self.problems.append(
                    f"keyword {keyword!r} at {where} has no sibling "
                    f"{_NEEDS_SIBLING[keyword]!r}, so the validator ignores it"
                )
        elif keyword not in Draft202012Validator.VALIDATORS and not keyword.startswith("x-"):
            self.problems.append(
                f"keyword {keyword!r} at {where} is not enforced by the Draft 2020-12 validator"
            )

    def _check_pattern(self, pattern: Any, where: str) -> None:
        """A pattern is enforced only if the linear-time engine compiles it."""
        try:
            compile_pattern(pattern)
        except PatternError as error:
            self.problems.append(
                f"pattern {_clip(repr(pattern))} at {where} cannot be compiled by the "
                f"linear-time regex engine (RE2: {_clip(str(error))}), so it would not be enforced"
            )

    def _check_refs(self) -> None:
        resolver = Registry().resolver_with_root(DRAFT202012.create_resource(self.root))
        for here, owner, ref in self.refs:
            where = _pointer(here)
            if not isinstance(ref, str) or not ref.startswith("#"):
                self.problems.append(
                    f"keyword '$ref' at {where} is {ref!r}; only local references starting "
                    "with '#' are supported and nothing is fetched"
                )
                continue
            try:
                target = resolver.lookup(ref).contents
            except Exception as error:
                self.problems.append(
                    f"keyword '$ref' at {where} is {ref!r}, which does not resolve inside "
                    f"the schema ({type(error).__name__})"
                )
                continue
            if isinstance(target, dict) and id(target) in self.location_of:
                self.in_place[id(owner)].append(target)
            elif not isinstance(target, bool):
                self.problems.append(
                    f"keyword '$ref' at {where} is {ref!r}, which points at data rather "
                    "than at a subschema"
                )

    def _check_cycles(self) -> None:
        """Refuse a loop of $ref / allOf-style links that never descends into the arguments."""
        state: dict[int, int] = {}
        for start in self.in_place:
            if start in state:
                continue
            state[start] = 1
            stack: list[tuple[int, Iterator[dict[str, Any]]]] = [
                (start, iter(self.in_place[start]))
            ]
            while stack:
                current, pending = stack[-1]
                child = next(pending, None)
                if child is None:
                    state[current] = 2
                    stack.pop()
                elif state.get(id(child)) == 1:
                    self.problems.append(
                        f"'$ref' loop through {_pointer(self.location_of[id(child)])} "
                        "never descends into the arguments, so validation would not end"
                    )
                    return
                elif id(child) not in state and id(child) in self.in_place:
                    state[id(child)] = 1
                    stack.append((id(child), iter(self.in_place[id(child)])))


def _audit(schema: Any) -> tuple[Any, str | None]:
    """Return (plain copy of schema, first reason it is unsupported or None)."""
    try:
        plain = _plain(schema)
        problem = draft_problem(plain, _pointer)
        if problem is not None:
            return plain, _clip(problem)
        plain = to_2020_12(plain)
        error = best_match(_META_VALIDATOR.iter_errors(plain))
    except RecursionError:
        return None, "the schema nests too deeply to check"
    if error is not None:
        return plain, (
            f"the schema is not valid Draft 2020-12 at {_pointer(error.path)}: "
            f"{_clip(error.message)}"
        )
    if not isinstance(plain, dict):
        return plain, None
    problems = _Audit(plain).run()
    if not problems:
        return plain, None
    more = len(problems) - 1
    return plain, problems[0] + (f" (and {more} more problem(s))" if more else "")


_Compiled: TypeAlias = tuple[str | None, Acceptor | None, Any]
"""A schema checked and compiled: why it cannot be enforced (or None), its quick
acceptor (or None) and its validator (None when it cannot be enforced)."""
_COMPILED: OrderedDict[str, _Compiled] = OrderedDict()
_COMPILED_MAX = 256
_COMPILED_LOCK = threading.Lock()


def _compile(schema: Any) -> _Compiled:
    plain, problem = _audit(schema)
    if problem is not None:
        return problem, None, None
    validator = BoundedValidator(
        plain, registry=Registry(), format_checker=BoundedValidator.FORMAT_CHECKER
    )
    return None, compile_acceptor(plain), validator


def _compiled(schema: Any) -> _Compiled:
    """:func:`_compile`, remembered for the last schemas seen (by their JSON text).

    A buffer is built per turn with the same tools each time; checking a schema against
    the metaschema costs far more than a turn's chunks. Validators and acceptors hold no
    state, so turns share them; a schema that is not JSON text is compiled every time.
    The key keeps the schema's key order: the validator meets keywords in that order and
    reports the first of equally good errors, so a reordered schema is its own entry.
    """
    try:
        key = json.dumps(schema)
    except (TypeError, ValueError, RecursionError):
        return _compile(schema)
    with _COMPILED_LOCK:
        hit = _COMPILED.get(key)
        if hit is not None:
            _COMPILED.move_to_end(key)
            return hit
    made = _compile(schema)
    with _COMPILED_LOCK:
        _COMPILED[key] = made
        if len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    return made


_Tools: TypeAlias = tuple[
    dict[str, Mapping[str, Any]], dict[str, str], dict[str, Any], dict[str, Acceptor]
]
"""A tool mapping made ready: its schemas in JSON Schema's dialect, why a tool cannot be
enforced, its validators and its quick acceptors, by tool name."""
_TOOLS: OrderedDict[str | bytes, _Tools] = OrderedDict()
"""What :func:`_tools` made of the last tool mappings seen, by their content (see
:func:`_tools_key`): a buffer built per turn from the same mapping skips the dialect
rewrite and the schema lookups."""


def _tools_key(schemas: Mapping[str, Any] | None) -> str | bytes | None:
    """A tool mapping's content (names and schemas in their order) as a key, or None if none.

    A plain dict of plain values is keyed by its ``marshal`` bytes (version 2: no
    back-references, so equal content gives equal bytes whatever is shared): a few times
    cheaper than JSON text, and as exact (it keeps ``1``, ``1.0`` and ``True`` apart, and
    every key's order). Any other mapping, or a value marshal does not take, is keyed by
    its JSON text. Either way only a mapping that is JSON text is remembered (see
    :class:`ToolSchemas`).
    """
    if not schemas:
        return "[]"
    if type(schemas) is dict:
        try:
            return marshal.dumps(schemas, 2)
        except ValueError:
            pass
    return _json_key(schemas)


def _json_key(schemas: Mapping[str, Any]) -> str | None:
    """A tool mapping as JSON text (names and schemas in their order), or None if it is not."""
    try:
        return json.dumps([[name, schema] for name, schema in schemas.items()])
    except (TypeError, ValueError, RecursionError):
        return None


_SHARED: OrderedDict[tuple[str | bytes, int], ToolSchemas] = OrderedDict()
"""The :meth:`ToolSchemas.shared` objects of the last tool mappings seen, by content and
steps."""


def _tools(schemas: Mapping[str, Mapping[str, Any]] | None) -> _Tools:
    """Every tool's schema rewritten from Gemini's dialect, checked and compiled."""
    with contextlib.suppress(RecursionError):  # too deep to rewrite: the audit refuses it
        schemas = {name: from_gemini_dialect(schema) for name, schema in (schemas or {}).items()}
    made: _Tools = (dict(schemas or {}), {}, {}, {})
    _, unsupported, validators, accept = made
    for name, schema in (schemas or {}).items():
        problem, acceptor, validator = _compiled(schema)
        if problem is not None:
            unsupported[name] = problem
        else:
            if acceptor is not None:
                accept[name] = acceptor
            validators[name] = validator
    return made


_GEMINI_TYPES = {
    "STRING": "string",
    "NUMBER": "number",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "OBJECT": "object",
    "NULL": "null",
}
"""Gemini's schema dialect (the OpenAPI subset its API takes) names types in upper case."""
_GEMINI_ONLY = frozenset({"propertyOrdering", "property_ordering", "example"})
"""Gemini keywords that only order or illustrate: they assert nothing."""


def from_gemini_dialect(schema: Any) -> Any:
    """A schema in Gemini's dialect as JSON Schema; any other schema comes back unchanged.

    Upper-case ``type`` names become JSON Schema's; ``nullable: true`` adds ``"null"`` to
    the type; ordering and example keywords are dropped. Only objects whose ``type`` is an
    upper-case name are rewritten, so a JSON Schema is never changed.
    """
    if isinstance(schema, list):
        return [from_gemini_dialect(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    converted = {key: from_gemini_dialect(value) for key, value in schema.items()}
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _GEMINI_TYPES:
        return converted
    converted["type"] = _GEMINI_TYPES[kind]
    if converted.pop("nullable", False) is True:
        converted["type"] = [converted["type"], "null"]
    for key in _GEMINI_ONLY:
        converted.pop(key, None)
    return converted


class ToolSchemas:
    """Declared tools and their JSON Schemas, each checked once and compiled once.

    An empty mapping declares no tool; ToolSchemas.any_tool() accepts any named call unchecked.
    Validating one call's arguments may apply at most ``max_steps`` schema keywords
    (default ``Limits.max_schema_steps``); past that the call gets ``limit_exceeded``.
    """

    __slots__ = ("_accept", "_any", "_max_steps", "_raw", "_unsupported", "_validators")

    def __init__(
        self,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        max_steps: int | None = None,
    ) -> None:
        """Check and compile the schema of every tool in schemas."""
        self._any = False
        self._max_steps = DEFAULT_LIMITS.max_schema_steps if max_steps is None else max_steps
        key = _tools_key(schemas)
        made = _TOOLS.get(key) if key is not None else None
        if made is None:
            made = _tools(schemas)
            if type(key) is bytes and schemas and _json_key(schemas) is None:
                key = None  # marshal takes what JSON does not (sets, bytes): never remembered
            if key is not None:
                with _COMPILED_LOCK:
                    _TOOLS[key] = made
                    if len(_TOOLS) > _COMPILED_MAX:
                        _TOOLS.popitem(last=False)
        raw, unsupported, validators, accept = made  # its own tables (the schemas are shared)
        self._raw: dict[str, Mapping[str, Any]] = dict(raw)
        self._unsupported: dict[str, str] = dict(unsupported)
        self._validators: dict[str, Any] = dict(validators)
        self._accept: dict[str, Acceptor] = dict(accept)
        """Quick checks that accept valid arguments of the simplest schemas (schema_fast)."""

    @classmethod
    def shared(
        cls, schemas: Mapping[str, Mapping[str, Any]] | None, *, max_steps: int
    ) -> ToolSchemas:
        """The checked tools of ``schemas``: one object for every equal mapping (and steps).

        A buffer is built per turn from the same tools; a ToolSchemas never changes once
        made, so turns share it instead of each copying the remembered tables. Keyed as
        :class:`ToolSchemas` keys its tables (:func:`_tools_key`): a mapping that is not
        JSON text gets an object of its own.
        """
        key = _tools_key(schemas)
        if key is None:
            return cls(schemas, max_steps=max_steps)
        made = _SHARED.get((key, max_steps))
        if made is None:
            made = cls(schemas, max_steps=max_steps)
            if key in _TOOLS:  # remembered: JSON text (see __init__)
                with _COMPILED_LOCK:
                    _SHARED[key, max_steps] = made
                    if len(_SHARED) > _COMPILED_MAX:
                        _SHARED.popitem(last=False)
        return made

    @classmethod
    def any_tool(cls) -> ToolSchemas:
        """Return a gate that checks no schema at all and only requires a tool name."""
        gate = cls()
        gate._any = True
        return gate

    def knows(self, name: str | None) -> bool:
        """Whether ``name`` is a declared tool (any non-empty name for any_tool())."""
        if not name:
            return False
        return self._any or name in self._validators or name in self._unsupported

    @property
    def names(self) -> frozenset[str]:
        """Return the declared tool names (empty for any_tool())."""
        return frozenset(self._validators) | frozenset(self._unsupported)

    @property
    def raw(self) -> Mapping[str, Mapping[str, Any]]:
        """Return the schemas as given, by tool name (text parsers type raw values by them)."""
        return self._raw

    def unsupported(self, name: str) -> str | None:
        """Return why the named tool's schema cannot be enforced, or None if it can."""
        return self._unsupported.get(name)

    def check(
        self, name: str | None, arguments: dict[str, Any], slot: int | str | None = None
    ) -> Finding | None:
        """Gate one call: return the first finding for its name and arguments, or None."""
        if not name:
            return finding("missing_name", "the tool call has no tool name", slot)
        if self._any:
            return None
        accept = self._accept.get(name)
        if accept is not None and 0 <= accept(arguments) <= self._max_steps:
            return None
        problem = self._unsupported.get(name)
        if problem is not None:
            return finding(
                "unsupported_schema_keyword", f"schema of tool {name!r}: {problem}", slot
            )
        validator = self._validators.get(name)
        if validator is None:
            return finding("unknown_tool", self._unknown_message(name), slot)
        try:
            error = run_within(
                Budget(self._max_steps), lambda: best_match(validator.iter_errors(arguments))
            )
        except RecursionError:
            return finding(
                "limit_exceeded", f"arguments of tool {name!r} nest too deeply to validate", slot
            )
        except BudgetExceeded:
            return finding(
                "limit_exceeded",
                f"validating the arguments of tool {name!r} needs more than {self._max_steps} "
                "schema steps (Limits.max_schema_steps)",
                slot,
            )
        if error is None:
            return None
        return finding("schema_invalid", _invalid_message(name, error), slot)

    def _unknown_message(self, name: str) -> str:
        known = sorted(self.names)
        if not known:
            return f"tool {name!r} is not declared (no tools are declared)"
        listed = ", ".join(repr(n) for n in known[:10])
        if len(known) > 10:
            listed += f", ... ({len(known)} in all)"
        return f"tool {name!r} is not declared (declared: {listed})"


def _invalid_message(name: str, error: ValidationError) -> str:
    keyword_at = _pointer(error.schema_path)
    return (
        f"arguments of tool {name!r} fail the schema at {error.json_path}: "
        f"{_clip(error.message)} (keyword {error.validator!r} at {keyword_at})"
    )
