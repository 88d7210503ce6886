"""Parsers for the text formats whose payload is JSON: one call object, or several.

Every parser here takes the text between a block's delimiters (see
:mod:`callgate.strategies.text.base`) and returns the calls only when the whole payload,
surrounding whitespace aside, is exactly its format's call syntax; anything else (prose,
an example that is not call-shaped, broken or non-strict JSON) gives None. All formats
share one reader of *call objects*:

- the name is under ``name``, ``tool`` or ``tool_name``, or nested OpenAI-style as
  ``{"type": "function", "function": {"name": ..., "arguments": ...}}``;
- the arguments are under ``arguments``, ``parameters``, ``args`` or ``input``: a JSON
  object, or a string that strictly parses to one (double encoding); absent means ``{}``;
- an optional string ``id`` (or ``tool_call_id``);
- other keys (such as ``type``) are tolerated, but a name or arguments key given twice
  under two aliases is ambiguous, so not a call.

The formats (opening delimiter, then payload):

``tool_call_tag`` (Hermes, Qwen2.5, Qwen3)
    ``<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>``;
    one object, or an array of them.
``tools_tag`` (Gemma's fallback)
    ``<tools>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tools>``.
``fenced_json`` (prompted models)
    a fence opened by three backticks and ``json``, holding
    ``{"name": "get_weather", "arguments": {"city": "Paris"}}`` (or an array); a JSON
    example without a name key is not a call.
``bracket_tool_calls`` (Mistral)
    ``[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]``
    before tokenizer v11, and from v11 on one marker per call:
    ``[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}``, with
    ``[CALL_ID]a1b2c3d4e`` between the name and ``[ARGS]`` in v11 (v13 drops it); an end-of-sequence
    ``</s>`` may follow.
``bare_json`` (the whole content)
    ``{"name": "get_weather", "arguments": {"city": "Paris"}}`` or an array of such
    objects with exactly a name key and an arguments key, checked against the schemas.
``python_tag`` (Llama 3.x)
    ``<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {...}``,
    optionally ending with ``<|eom_id|>`` or ``<|eot_id|>``.
``granite`` (IBM Granite 3.0)
    ``<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]``.
``command_r`` (Cohere Command R7B)
    ``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather",
    "parameters": {"city": "Paris"}}]<|END_ACTION|>``.
``codec`` (callgate's own)
    ``<callgate:call>{"name": "get_weather", "arguments": {"city": "Paris"}}</callgate:call>``:
    exactly the keys name and arguments (and optionally id), the arguments an object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from callgate.gate.schema import ToolSchemas
from callgate.gate.strictjson import parse_arguments
from callgate.strategies.text.base import Parser, Schemas, TextCall

__all__ = [
    "JSON_PARSERS",
    "parse_bare_json",
    "parse_bracket_tool_calls",
    "parse_codec",
    "parse_command_r",
    "parse_fenced_json",
    "parse_granite",
    "parse_python_tag",
    "parse_tool_call_json",
    "parse_tools_tag",
]

NAME_KEYS = ("name", "tool", "tool_name")
"""Keys under which a call object may carry the tool's name."""
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
"""Keys under which a call object may carry the call's arguments."""
ID_KEYS = ("id", "tool_call_id")
"""Keys under which a call object may carry the call's id."""

_FUNCTION = "function"
_PAYLOAD_DEPTH = 128 + 4
"""Nesting allowed for a whole payload: the arguments' own limit plus the call wrapping."""

_MISSING = object()
_AMBIGUOUS = object()

_SPACE = re.compile(r"[ \t\n\r]*")
_LOCATOR = json.JSONDecoder()
"""Finds where one JSON value ends; what it finds is then re-read strictly."""

_TOOL_CALLS = "[TOOL_CALLS]"
_ARGS = "[ARGS]"
_MISTRAL_EOS = "</s>"
_MISTRAL_HEAD = re.compile(
    r"[ \t\n\r]*([^\s\[\]{}]+)(?:\[CALL_ID\]([^\s\[\]{}]+)\[ARGS\]|\[ARGS\])?[ \t\n\r]*"
)
"""``NAME``, then ``[CALL_ID]ID[ARGS]`` (v11), ``[ARGS]`` (v13) or nothing."""
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>")
_LLAMA_SEPARATORS = (";", "<|python_tag|>")


_DESCRIPTION = "description"
"""A tool definition (name, description, parameters schema) is never a call."""
_BARE_CALL_KEYS = frozenset({*NAME_KEYS, "type", "id", "tool_call_id"})
"""Without an arguments key, a call object may hold only these (else it is just data)."""


def _valid_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not any(c.isspace() for c in value)


def _load(text: str) -> tuple[bool, Any]:
    """Strictly decode text as exactly one JSON value (of any type); (False, None) if not.

    parse_arguments only accepts an object, so the value is decoded as the sole member of
    a wrapping object: one member with no duplicate key and no trailing data can only mean
    that the text is one JSON value, and every strictness rule (NaN, duplicate keys, lone
    surrogates, depth) then applies to it unchanged.
    """
    wrapped, _ = parse_arguments('{"v":' + text + "}", max_depth=_PAYLOAD_DEPTH)
    if wrapped is None or len(wrapped) != 1:
        return False, None
    return True, wrapped["v"]


def _object_end(text: str, start: int) -> int | None:
    """Return where the JSON object opening at text[start] ends, or None if it does not."""
    if not text.startswith("{", start):
        return None
    try:
        _, end = _LOCATOR.raw_decode(text, start)
    except (ValueError, RecursionError, OverflowError):
        return None
    return end


def _lookup(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The value under the one key of keys present in obj, _MISSING, or _AMBIGUOUS."""
    found = [key for key in keys if key in obj]
    if not found:
        return _MISSING
    if len(found) > 1:
        return _AMBIGUOUS
    return obj[found[0]]


def _arguments(value: Any) -> dict[str, Any] | None:
    """Arguments given as an object, or as a string that strictly parses to one."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        parsed, _ = parse_arguments(value)
        return parsed
    return None


def _read_call(obj: Any) -> TextCall | None:
    """Read one call object with the key aliases; None when it is not a call."""
    if not isinstance(obj, dict):
        return None
    inner = obj
    function = obj.get(_FUNCTION)
    if isinstance(function, dict):
        if _lookup(obj, NAME_KEYS) is not _MISSING or _lookup(obj, ARGUMENT_KEYS) is not _MISSING:
            return None
        inner = function
    name = _lookup(inner, NAME_KEYS)
    if not _valid_name(name) or _DESCRIPTION in inner:
        return None
    raw_arguments = _lookup(inner, ARGUMENT_KEYS)
    if raw_arguments is _AMBIGUOUS:
        return None
    if raw_arguments is _MISSING and not set(inner) <= _BARE_CALL_KEYS:
        return None
    arguments = {} if raw_arguments is _MISSING else _arguments(raw_arguments)
    if arguments is None:
        return None
    call_id = _lookup(obj, ID_KEYS)
    if call_id is _MISSING:
        call_id = None
    elif not isinstance(call_id, str):
        return None
    return TextCall(name=name, arguments=arguments, id=call_id or None)


def _read_all(items: list[Any]) -> list[TextCall] | None:
    """Read every item as a call; all or nothing, and an empty list is not a call."""
    if not items:
        return None
    calls: list[TextCall] = []
    for item in items:
        call = _read_call(item)
        if call is None:
            return None
        calls.append(call)
    return calls


def _calls(payload: str, *, single: bool, array: bool) -> list[TextCall] | None:
    """Decode the payload as one call object (if single) or an array of them (if array)."""
    ok, value = _load(payload.strip())
    if not ok:
        return None
    if single and isinstance(value, dict):
        return _read_all([value])
    if array and isinstance(value, list):
        return _read_all(value)
    return None


def parse_tool_call_json(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read the JSON inside ``<tool_call>…</tool_call>`` (Hermes, Qwen2.5, Qwen3).

    One call object, or an array of them; the markup forms sharing the tag are not JSON.
    """
    # Hermes 2 Pro / Qwen2.5 / Qwen3 chat templates: one {"name", "arguments"} object per
    # <tool_call> block, on its own lines; vLLM's hermes parser reads exactly that.
    return _calls(payload, single=True, array=True)


def parse_tools_tag(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read the JSON inside Gemma's fallback ``<tools>…</tools>`` block: object or array."""
    return _calls(payload, single=True, array=True)


def parse_fenced_json(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read a json code fence's body as a call object or array of them.

    Ordinary JSON examples are common in fences, so only call-shaped objects count.
    """
    return _calls(payload, single=True, array=True)


def _mistral_v11(text: str) -> list[TextCall] | None:
    """Read ``NAME[ARGS]{json}`` calls, each after its own ``[TOOL_CALLS]`` marker."""
    # mistral-common's InstructTokenizerV11 writes [TOOL_CALLS] NAME [CALL_ID] ID [ARGS]
    # JSON per call (the [CALL_ID] part only when the call has an id) and V13 never writes
    # it; vLLM's Mistral parser also meets NAME{json} where the decoder left out the [ARGS]
    # token, so that is read too.
    calls: list[TextCall] = []
    position = 0
    while True:
        head = _MISTRAL_HEAD.match(text, position)
        if head is None:
            return None
        name, call_id = head.groups()
        start = head.end()
        end = _object_end(text, start)
        if end is None:
            return None
        arguments, _ = parse_arguments(text[start:end])
        if arguments is None:
            return None
        calls.append(TextCall(name=name, arguments=arguments, id=call_id))
        space = _SPACE.match(text, end)
        position = space.end() if space else end
        if position == len(text):
            return calls
        if not text.startswith(_TOOL_CALLS, position):
            return None
        position += len(_TOOL_CALLS)


def parse_bracket_tool_calls(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read Mistral's calls after ``[TOOL_CALLS]``: a JSON array, or the v11+ NAME[ARGS]{json} run.

    The payload starts after the first marker; later markers of the v11+ form stay in it.
    """
    # Before tokenizer v11 (mistral-common InstructTokenizerV3/V7) the model writes one
    # [TOOL_CALLS] then a JSON array of {"name", "arguments", "id"?}; the stream may end
    # with the end-of-sequence text </s>.
    text = payload.strip()
    if text.endswith(_MISTRAL_EOS):
        text = text[: -len(_MISTRAL_EOS)].rstrip()
    if text.startswith("["):
        return _calls(text, single=False, array=True)
    return _mistral_v11(text)


def parse_bare_json(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read content that is nothing but a call object or an array of them.

    Stricter than the delimited formats, since ``{`` also starts ordinary answers: each
    object holds exactly a name key and an arguments key, and with schemas the call must
    name a declared tool and its arguments must validate.
    """
    ok, value = _load(payload.strip())
    if not ok:
        return None
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list) or not items:
        return None
    for item in items:
        if not isinstance(item, dict) or len(item) != 2:
            return None
        if _lookup(item, NAME_KEYS) is _MISSING or _lookup(item, ARGUMENT_KEYS) is _MISSING:
            return None
    calls = _read_all(items)
    if calls is None or schemas is None:
        return calls
    gate = ToolSchemas(schemas)
    for call in calls:
        if call.name not in schemas or gate.check(call.name, call.arguments) is not None:
            return None
    return calls


def parse_python_tag(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read Llama 3.x calls after ``<|python_tag|>``: JSON objects joined by ``;``.

    A repeated ``<|python_tag|>`` also separates two calls (the payload holds the later
    markers); a trailing ``<|eom_id|>`` or ``<|eot_id|>`` end token is dropped.
    """
    # Llama 3.1-3.3 JSON tool calling: {"name", "parameters"} objects (some prompts make
    # it say "arguments"), several separated by "; "; Meta's format ends the message with
    # <|eom_id|> when it waits for a tool result. vLLM's llama3_json parser reads the same.
    text = payload.strip()
    for end_token in _LLAMA_ENDS:
        if text.endswith(end_token):
            text = text[: -len(end_token)].rstrip()
            break
    calls: list[TextCall] = []
    position = 0
    while True:
        end = _object_end(text, position)
        if end is None:
            return None
        obj, _ = parse_arguments(text[position:end], max_depth=_PAYLOAD_DEPTH)
        call = _read_call(obj)
        if call is None:
            return None
        calls.append(call)
        position = _skip_space(text, end)
        if position == len(text):
            return calls
        separator = next((s for s in _LLAMA_SEPARATORS if text.startswith(s, position)), None)
        if separator is None:
            return None
        position = _skip_space(text, position + len(separator))


def _skip_space(text: str, position: int) -> int:
    space = _SPACE.match(text, position)
    return space.end() if space else position


def parse_granite(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read IBM Granite's calls after ``<|tool_call|>``: a JSON array of call objects."""
    # Granite 3.0 instruct: <|tool_call|> followed by a JSON list of {"name", "arguments"},
    # with no closing token (vLLM's granite parser).
    return _calls(payload, single=False, array=True)


def parse_command_r(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read Cohere Command R7B's ``<|START_ACTION|>…<|END_ACTION|>`` JSON array of calls."""
    # Command R7B chat template: a JSON list of {"tool_call_id", "tool_name",
    # "parameters"} between the two action tokens (llama.cpp and vLLM read it so).
    return _calls(payload, single=False, array=True)


def parse_codec(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """Read callgate's own ``<callgate:call>`` payload: one object, exactly name and arguments.

    The format callgate prompts for, so nothing beyond it is accepted (an id is optional).
    """
    ok, value = _load(payload.strip())
    if not ok or not isinstance(value, dict):
        return None
    if set(value) - {"id"} != {"name", "arguments"}:
        return None
    name, arguments = value["name"], value["arguments"]
    if not _valid_name(name) or not isinstance(arguments, dict):
        return None
    if "id" in value and not _valid_name(value["id"]):
        return None
    return [TextCall(name=name, arguments=arguments, id=value.get("id"))]


JSON_PARSERS: dict[str, Parser] = {
    "tool_call_tag": parse_tool_call_json,
    "tools_tag": parse_tools_tag,
    "fenced_json": parse_fenced_json,
    "bracket_tool_calls": parse_bracket_tool_calls,
    "bare_json": parse_bare_json,
    "python_tag": parse_python_tag,
    "granite": parse_granite,
    "command_r": parse_command_r,
    "codec": parse_codec,
}
"""The JSON-payload parsers by their format's contract name."""
