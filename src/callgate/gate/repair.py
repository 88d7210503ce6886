"""Lossless, schema-confirmed repair of a call's broken argument JSON (opt-in).

Only edits that keep every value and leave one possible reading are made: a Markdown
fence around the whole arguments, a known chat-template token after the JSON, trailing
commas, Python's ``True``/``False``/``None`` where the schema wants a boolean or null, and
a nested value sent as a JSON string where the schema wants an object or an array. The
result is used only when it then parses as strict JSON and passes the tool's schema;
every edit is named, so that the caller reports it (``repaired_arguments``). Anything else
(cut short, single quotes, unquoted keys, a value that would change) is not repaired.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from callgate.gate.schema import ToolSchemas
from callgate.gate.strictjson import parse_arguments

REPAIRS = ("lossless",)
"""The repair modes a buffer or driver accepts (None: no repair)."""

REPAIRABLE = frozenset({"malformed_json", "trailing_data", "schema_invalid"})
"""The findings a repair may answer; any other stays as found."""

TEMPLATE_TOKENS = (
    "<|im_end|>",  # ChatML: Qwen, Hermes
    "<|eot_id|>",  # Llama 3
    "<|eom_id|>",  # Llama 3 (tool use)
    "<|end|>",  # Phi-3
    "<|endoftext|>",  # GPT-2 and its tokenizers
    "<|end_of_text|>",  # Llama 3 base
    "</s>",  # Llama 2, Mistral
    "<end_of_turn>",  # Gemma
    "<\uff5cend\u2581of\u2581sentence\uff5c>",  # DeepSeek
    "<|call|>",  # gpt-oss harmony
    "<|return|>",  # gpt-oss harmony
)
"""End-of-turn tokens of chat templates that leak after a call's JSON."""

_FENCE = re.compile(r"\A\s*```(?:json|JSON)?[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```\s*\Z", re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_COMMA = re.compile(r",(?=\s*[}\]])")
_PYTHON = re.compile(r"(?<![\w.])(True|False|None)(?![\w.])")
_MARK = "\ue000callgate-python:"
"""Stands for a Python literal while the text is parsed (a private-use character)."""
_PYTHON_AS = {"True": True, "False": False, "None": None}
_WANTS = {"True": "boolean", "False": "boolean", "None": "null"}

Path = tuple[str | int, ...]


def repair_arguments(
    raw: str, name: str | None, schemas: ToolSchemas, *, max_depth: int = 128
) -> tuple[dict[str, Any], list[str]] | None:
    """``raw`` repaired without changing a value, and each edit; None if it cannot be.

    None also when no edit was needed (the arguments fail for another reason) or when the
    edited text still fails strict JSON or the tool's schema.
    """
    edits: list[str] = []
    text = _untoken(_unfence(_untoken(raw, edits), edits), edits)
    edited = _outside_strings(text, edits)
    if edited is None:
        return None
    value, problem = parse_arguments(edited, max_depth=max_depth)
    if problem is not None or value is None:
        return None
    schema = schemas.raw.get(name or "")
    literals = list(_marked(value, ()))
    if literals and (schema is None or not _python_literals(value, literals, schema, edits)):
        return None
    if schema is not None:
        value = _unstring(value, schema, (), edits, max_depth)
    if not edits or schemas.check(name, value) is not None:
        return None
    return value, edits


def _unfence(text: str, edits: list[str]) -> str:
    match = _FENCE.match(text)
    if match is None or "```" in match.group(1):
        return text
    edits.append("removed a Markdown code fence around the arguments")
    return match.group(1)


def _untoken(text: str, edits: list[str]) -> str:
    while True:
        stripped = text.rstrip()
        token = next((t for t in TEMPLATE_TOKENS if stripped.endswith(t)), None)
        if token is None:
            return text
        edits.append(f"removed the template token {token!r} after the JSON")
        text = stripped[: -len(token)]


def _outside_strings(text: str, edits: list[str]) -> str | None:
    """Trailing commas dropped and Python literals marked, outside JSON strings only.

    None when the text already holds the mark (a literal's mark would be mistaken for it)
    or a string never closes (the arguments were cut short: no edit may close it).
    """
    if _MARK in text:
        return None
    pieces: list[str] = []
    commas = 0
    at = 0
    for match in _STRING.finditer(text):
        commas += _code(text[at : match.start()], pieces)
        pieces.append(match.group())
        at = match.end()
    if text.find('"', at) >= 0:  # a string that never closes, escaped quotes or not
        return None
    commas += _code(text[at:], pieces)
    if commas:
        edits.append(f"removed {commas} trailing comma{'s' if commas > 1 else ''}")
    return "".join(pieces)


def _code(code: str, pieces: list[str]) -> int:
    """One stretch of text between strings, edited into ``pieces``; the commas it dropped."""
    commas = 0
    kept: list[str] = []
    last = 0
    for match in _COMMA.finditer(code):
        if _before(code, match.start(), pieces) in "[{,":  # no value before it: not trailing
            continue
        kept.append(code[last : match.start()])
        last = match.end()
        commas += 1
    kept.append(code[last:])
    joined = "".join(kept)
    pieces.append(_PYTHON.sub(lambda m: f'"{_MARK}{m.group()}"', joined))
    return commas


def _before(code: str, at: int, pieces: list[str]) -> str:
    """The last character before ``at`` that is not whitespace (empty at the very start).

    Walks back over whitespace only, so that every comma costs what lies between it and
    its value: the work stays linear however many trailing commas a text holds.
    """
    j = at - 1
    while j >= 0 and code[j] in " \t\r\n":
        j -= 1
    if j >= 0:
        return code[j]
    return pieces[-1][-1:] if pieces else ""


def _marked(value: Any, path: Path) -> Iterator[tuple[Path, str]]:
    """Each Python literal's mark in ``value``, with its path (a mark as a key too)."""
    if isinstance(value, str):
        if value.startswith(_MARK):
            yield path, value[len(_MARK) :]
    elif isinstance(value, dict):
        for key, item in value.items():
            if key.startswith(_MARK):
                yield (*path, key), "key"
            yield from _marked(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _marked(item, (*path, n))


def _python_literals(
    value: dict[str, Any],
    literals: list[tuple[Path, str]],
    schema: Mapping[str, Any],
    edits: list[str],
) -> bool:
    """Put each literal's JSON value in place, where the schema wants that type only."""
    for path, literal in literals:
        wanted = _WANTS.get(literal)
        sub = _at(schema, path)
        if wanted is None or sub is None or not _wants(sub, wanted):
            return False
        _put(value, path, _PYTHON_AS[literal])
        edits.append(
            f"read Python {literal} as JSON {_json(literal)} at {_pointer(path)} "
            f"(the schema wants {wanted})"
        )
    return True


def _unstring(value: Any, schema: Any, path: Path, edits: list[str], max_depth: int) -> Any:
    """Strings holding the object or array the schema wants there, parsed in place."""
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, str) and not _wants(schema, "string"):
        for kind, shape in (("object", dict), ("array", list)):
            if _wants(schema, kind):
                parsed, problem = parse_arguments(f'{{"v":{value}}}', max_depth=max_depth)
                if (  # one value, nothing around it: the string is exactly its JSON
                    problem is None
                    and parsed is not None
                    and len(parsed) == 1
                    and isinstance(parsed["v"], shape)
                ):
                    edits.append(
                        f"parsed the string at {_pointer(path)} as the {kind} the schema wants"
                    )
                    return _unstring(parsed["v"], schema, path, edits, max_depth)
        return value
    if isinstance(value, dict):
        for key in value:
            value[key] = _unstring(value[key], _at(schema, (key,)), (*path, key), edits, max_depth)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            value[n] = _unstring(item, _at(schema, (n,)), (*path, n), edits, max_depth)
    return value


def _at(schema: Any, path: Path) -> Mapping[str, Any] | None:
    """The plain subschema at ``path`` (properties, additionalProperties, items), or None.

    A schema that combines or refers (``$ref``, ``anyOf``, ...) is not followed: no repair
    relies on what it is not sure of.
    """
    for step in path:
        if not isinstance(schema, Mapping) or not _plain(schema):
            return None
        if isinstance(step, str):
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and step in properties:
                schema = properties[step]
            else:
                schema = schema.get("additionalProperties")
        else:
            prefix = schema.get("prefixItems")
            if isinstance(prefix, list) and step < len(prefix):
                schema = prefix[step]
            else:
                schema = schema.get("items")
    return schema if isinstance(schema, Mapping) and _plain(schema) else None


def _plain(schema: Mapping[str, Any]) -> bool:
    return not any(k in schema for k in ("$ref", "$dynamicRef", "anyOf", "oneOf", "allOf", "not"))


def _wants(schema: Mapping[str, Any], kind: str) -> bool:
    declared = schema.get("type")
    return declared == kind or (isinstance(declared, list) and kind in declared)


def _put(value: Any, path: Path, new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _pointer(path: Path) -> str:
    """``path`` as a JSON Pointer (``/`` for the whole arguments)."""
    return "/" + "/".join(str(s).replace("~", "~0").replace("/", "~1") for s in path)


def _json(literal: str) -> str:
    return {"True": "true", "False": "false", "None": "null"}[literal]
