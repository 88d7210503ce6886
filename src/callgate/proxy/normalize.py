"""Request-side normalization: a client's request body made acceptable to strict servers.

Agent clients drift ahead of the servers they are pointed at: Claude Code puts
``system``-role messages inside ``messages`` (servers that accept only ``user`` and
``assistant`` there refuse the request), Codex declares tools that are not functions
(``web_search``, ``local_shell``, a ``namespace`` of functions), and a history may hold
calls with empty or reused ids, arguments that are not a JSON object, calls never
answered or results of no call, any of which fails the next turn upstream.

:func:`normalize` takes a request body of one wire (``openai`` Chat Completions,
``anthropic`` Messages, ``openai-responses`` Responses) and returns the body to forward
and the :class:`Rewrite` s made, each named by its code, so a caller can count and audit
them. It is pure (the input is never changed: each rewrite copies what it changes, and the
body it returns shares the parts left as they were) and idempotent: a normalized body has
nothing left to rewrite. What has no acceptable form is never dropped silently: a tool
without a function form is left out of the forwarded tools with a ``tool_dropped``
rewrite naming it (a call the model still makes to it is an unknown tool for the gate).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from callgate.proxy.fastjson import loads

__all__ = ["CLIENT_WIRES", "CODES", "WIRES", "Rewrite", "client_forms", "normalize"]

CODES = {
    "role_folded": "a message of a role the wire's servers refuse, moved where they accept it",
    "role_renamed": "a role renamed to the one strict servers accept (developer to system)",
    "turns_merged": "two consecutive messages of one role joined into one",
    "tool_mapped": "a tool that is not a function, declared as the function it stands for",
    "tool_dropped": "a tool with no function form, left out of the forwarded tools",
    "schema_fixed": "a tool schema without type object, made an object schema",
    "id_renamed": "an empty or reused call id replaced by a fresh one (its result follows)",
    "arguments_repaired": "a historical call's arguments that were not a JSON object",
    "call_answered": "a historical call with no result, answered as not run",
    "result_orphaned": "a tool result of no call, kept as the user's text",
    "hint_dropped": "a client's or one provider's hint with no form on the upstream's wire",
    "setting_mapped": "a setting the upstream's wire names otherwise, sent as its nearest",
}
"""Every rewrite's code and what it means."""


@frozen
class Rewrite:
    """One change made to a request: its code (:data:`CODES`), where, and what."""

    code: str
    where: str
    """A path into the request (``messages[3]``, ``tools[2]``, ``input[5]``)."""
    detail: str

    def as_dict(self) -> dict[str, str]:
        """The rewrite as the audit log and a response's annotation carry it."""
        return {"code": self.code, "where": self.where, "detail": self.detail}


Log = list[Rewrite]
_ANTHROPIC_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_NOT_RUN = "callgate: no result of this call was recorded; it was not run."


def _orphan(given: object, content: object) -> str:
    """A tool result of no call, as the user's text (nothing of it lost)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return f"[the result of tool call {given!r}, which no call asked for]\n{text}"


def _fresh(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def _object_arguments(raw: object) -> tuple[dict[str, Any], bool]:
    """Arguments as a JSON object (from a string or an object); whether they had to change."""
    value = raw
    if isinstance(raw, str):
        try:
            value = loads(raw) if raw.strip() else {}
        except ValueError:
            return {}, True
    if isinstance(value, dict):
        return value, not isinstance(raw, (str, dict))
    return {}, True


def _object_schema(schema: object) -> tuple[dict[str, Any], str | None]:
    """A tool schema with ``type: object`` (None when it needed no change)."""
    if schema is None:
        return {"type": "object", "properties": {}}, "no schema: an empty object schema"
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}, "a schema that is not an object"
    kind = schema.get("type")
    if kind == "object":
        return dict(schema), None
    if kind is None:
        fixed = {"type": "object", **schema}
        fixed.setdefault("properties", {})
        return fixed, "type object added"
    return {"type": "object", "properties": {}}, f"type {kind!r} replaced by an object"


# -- ids and answers, shared by every wire ---------------------------------------------


class _Ids:
    """Call ids made unique; each result is matched, in order, to a call of the open turn."""

    def __init__(self, prefix: str, valid: Callable[[str], bool] = bool) -> None:
        self.prefix = prefix
        self.valid = valid
        self.seen: set[str] = set()
        self.pending: dict[str, list[str]] = {}
        """The ids a result may name (as sent) -> the ids forwarded, oldest first."""

    def call(self, given: object, where: str, log: Log) -> str:
        """The id to forward for a call whose id was ``given``."""
        ident = given if isinstance(given, str) else ""
        if ident and ident not in self.seen and self.valid(ident):
            fresh = ident
        else:
            fresh = _fresh(self.prefix)
            why = "empty" if not ident else "reused" if ident in self.seen else "not valid"
            log.append(Rewrite("id_renamed", where, f"{why} id {ident!r} -> {fresh}"))
        self.seen.update((ident, fresh))
        self.pending.setdefault(ident, []).append(fresh)
        return fresh

    def result(self, given: object) -> str | None:
        """The forwarded id of the call a result answers (None: no call of the open turn)."""
        waiting = self.pending.get(given) if isinstance(given, str) else None
        return waiting.pop(0) if waiting else None

    def close(self) -> None:
        """The turn's calls are all answered: a later result names none of them."""
        self.pending.clear()


# -- Chat Completions ---------------------------------------------------------------------


def _chat(body: dict[str, Any], log: Log) -> None:
    messages = body.get("messages")
    if isinstance(messages, list):
        body["messages"] = _chat_messages(messages, log)
    tools = body.get("tools")
    if isinstance(tools, list):
        kept = []
        for n, tool in enumerate(tools):
            if not isinstance(tool, Mapping) or tool.get("type") != "function":
                name = _name(tool)
                log.append(Rewrite("tool_dropped", f"tools[{n}]", f"{name}: not a function"))
                continue
            given = tool.get("function")
            function = dict(given or {})
            schema, why = _object_schema(function.get("parameters"))
            if why is None and isinstance(given, Mapping):  # as it came
                kept.append(tool)
                continue
            if why is not None:
                function["parameters"] = schema
                log.append(Rewrite("schema_fixed", f"tools[{n}]", f"{function.get('name')}: {why}"))
            kept.append({**tool, "function": function})
        body["tools"] = kept


def _name(tool: object) -> str:
    if not isinstance(tool, Mapping):
        return repr(tool)
    return str(tool.get("name") or tool.get("type") or "a tool")


def _chat_messages(messages: list[Any], log: Log) -> list[Any]:
    ids = _Ids("call_")
    out: list[Any] = []
    waiting: list[str] = []
    orphans: list[Any] = []
    """Results of no call, kept as user text after the open turn's answers."""
    for n, sent in enumerate(messages):
        if not _is_mapping(sent):
            out.append(sent)
            continue
        message = sent  # copied only where something in it is rewritten
        role = message.get("role")
        if role != "tool":
            if waiting or orphans:
                out += _chat_answers(waiting, ids, f"messages[{n}]", log) + orphans
                waiting, orphans = [], []
            else:
                ids.close()
        if role == "developer":
            message = {**message, "role": "system"}
            log.append(Rewrite("role_renamed", f"messages[{n}]", "developer -> system"))
        elif role == "assistant" and isinstance(given_calls := message.get("tool_calls"), list):
            calls = [
                _chat_call(call, ids, f"messages[{n}].tool_calls[{k}]", log)
                for k, call in enumerate(given_calls)
            ]
            if any(c is not g for c, g in zip(calls, given_calls, strict=True)):
                message = {**message, "tool_calls": calls}
            elif type(message) is not dict:
                message = dict(message)
            waiting = [c["id"] for c in calls if _is_mapping(c)]
        elif role == "tool":
            given = message.get("tool_call_id")
            forwarded = ids.result(given)
            if forwarded is None or forwarded not in waiting:
                log.append(Rewrite("result_orphaned", f"messages[{n}]", f"id {given!r}"))
                orphans.append({"role": "user", "content": _orphan(given, message.get("content"))})
                continue
            if forwarded != given:
                message = {**message, "tool_call_id": forwarded}
            waiting.remove(forwarded)
        if type(message) is not dict:
            message = dict(message)
        out.append(message)
    return out + _chat_answers(waiting, ids, f"messages[{len(messages)}]", log) + orphans


def _chat_call(call: Any, ids: _Ids, where: str, log: Log) -> Any:
    """The call as forwarded: ``call`` itself when nothing in it is rewritten."""
    if not _is_mapping(call):
        return call
    given = call.get("id")
    fresh = ids.call(given, where, log)
    function = call.get("function")
    raw = function.get("arguments") if _is_mapping(function) else None
    arguments, changed = _object_arguments(raw)
    if changed or not isinstance(raw, str):
        function = dict(function or {})
        function["arguments"] = json.dumps(arguments)
        log.append(Rewrite("arguments_repaired", where, f"{function.get('name')}: {raw!r:.80}"))
    elif fresh == given and type(call) is dict and type(function) is dict:
        return call
    call = dict(call)
    call["id"] = fresh
    call["function"] = dict(function)
    return call


def _is_mapping(value: object) -> bool:
    """``isinstance(value, Mapping)``, a plain dict told without the ABC's check."""
    return type(value) is dict or isinstance(value, Mapping)


def _chat_answers(waiting: list[str], ids: _Ids, where: str, log: Log) -> list[dict[str, Any]]:
    ids.close()
    for ident in waiting:
        log.append(Rewrite("call_answered", where, f"id {ident}"))
    return [{"role": "tool", "tool_call_id": ident, "content": _NOT_RUN} for ident in waiting]


# -- Anthropic Messages ---------------------------------------------------------------------


def _messages(body: dict[str, Any], log: Log) -> None:
    messages = body.get("messages")
    if isinstance(messages, list):
        kept = _anthropic_roles(body, messages, log)
        body["messages"] = _anthropic_calls(_merged(kept, log), log)
    tools = body.get("tools")
    if isinstance(tools, list):
        fixed = []
        for n, tool in enumerate(tools):
            if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
                log.append(Rewrite("tool_dropped", f"tools[{n}]", f"{_name(tool)}: no name"))
                continue
            if "type" in tool and tool["type"] != "custom":  # a server tool: no schema
                log.append(
                    Rewrite("tool_dropped", f"tools[{n}]", f"{tool['name']}: {tool['type']}")
                )
                continue
            schema, why = _object_schema(tool.get("input_schema"))
            if why is not None:
                log.append(Rewrite("schema_fixed", f"tools[{n}]", f"{tool['name']}: {why}"))
            fixed.append({**tool, "input_schema": schema})
        body["tools"] = fixed


def _text_of(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [dict(b) for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
    return []


def _anthropic_roles(body: dict[str, Any], messages: list[Any], log: Log) -> list[Any]:
    """Messages of roles other than user and assistant: their text joins ``system``."""
    kept = []
    folded: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in ("user", "assistant") or not isinstance(message, Mapping):
            kept.append(message)
            continue
        blocks = _text_of(message.get("content"))
        folded += blocks
        log.append(Rewrite("role_folded", f"messages[{n}]", f"role {role!r} -> system"))
    if folded:
        system = body.get("system")
        body["system"] = _text_of(system) + folded if system is not None else folded
    return kept


def _merged(messages: list[Any], log: Log) -> list[Any]:
    """Consecutive messages of one role joined (their contents as blocks, in order)."""
    out: list[Any] = []
    for n, message in enumerate(messages):
        last = out[-1] if out else None
        if (
            isinstance(message, Mapping)
            and isinstance(last, dict)
            and last.get("role") == message.get("role")
        ):
            last["content"] = _blocks(last.get("content")) + _blocks(message.get("content"))
            log.append(Rewrite("turns_merged", f"messages[{n}]", str(message.get("role"))))
            continue
        out.append(dict(message) if isinstance(message, Mapping) else message)
    return out


def _blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _anthropic_calls(messages: list[Any], log: Log) -> list[Any]:
    """Unique valid ids, object inputs, every call answered in the next user turn."""
    ids = _Ids("toolu_", lambda s: bool(_ANTHROPIC_ID.match(s)))
    out: list[Any] = []
    waiting: list[str] = []
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            out.append(message)
            continue
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            ids.close()
            if waiting:
                out.append({"role": "user", "content": _answers(waiting, f"messages[{n}]", log)})
            message["content"] = [
                _anthropic_call(b, ids, f"messages[{n}].content[{k}]", log)
                for k, b in enumerate(content)
            ]
            waiting = [b["id"] for b in message["content"] if _is(b, "tool_use")]
        elif message.get("role") == "user":
            blocks = _blocks(content) if waiting or isinstance(content, list) else None
            if blocks is not None:
                message["content"] = _results(blocks, ids, waiting, f"messages[{n}]", log)
            ids.close()
            waiting = []
        out.append(message)
    if waiting:
        out.append({"role": "user", "content": _answers(waiting, f"messages[{len(out)}]", log)})
    return out


def _is(block: object, kind: str) -> bool:
    return isinstance(block, Mapping) and block.get("type") == kind


def _anthropic_call(block: Any, ids: _Ids, where: str, log: Log) -> Any:
    if not _is(block, "tool_use"):
        return block
    block = dict(block)
    block["id"] = ids.call(block.get("id"), where, log)
    arguments, changed = _object_arguments(block.get("input"))
    if changed or not isinstance(block.get("input"), dict):
        log.append(Rewrite("arguments_repaired", where, f"{block.get('name')}: input"))
    block["input"] = arguments
    return block


def _results(blocks: list[Any], ids: _Ids, waiting: list[str], where: str, log: Log) -> list[Any]:
    """A user turn's blocks: results first (remapped), orphans as text, missing answered."""
    results: list[Any] = []
    rest: list[Any] = []
    for block in blocks:
        if not _is(block, "tool_result"):
            rest.append(block)
            continue
        given = block.get("tool_use_id")
        forwarded = ids.result(given)
        if forwarded is None or forwarded not in waiting:
            log.append(Rewrite("result_orphaned", where, f"id {given!r}"))
            rest.append({"type": "text", "text": _orphan(given, block.get("content"))})
            continue
        waiting.remove(forwarded)
        results.append({**block, "tool_use_id": forwarded})
    missing = _answers(waiting, where, log) if waiting else []
    return [*results, *missing, *rest]


def _answers(waiting: list[str], where: str, log: Log) -> list[dict[str, Any]]:
    out = []
    for ident in waiting:
        log.append(Rewrite("call_answered", where, f"id {ident}"))
        out.append(
            {"type": "tool_result", "tool_use_id": ident, "content": _NOT_RUN, "is_error": True}
        )
    return out


# -- Responses ------------------------------------------------------------------------------

_LOCAL_SHELL = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}},
        "working_directory": {"type": "string"},
        "timeout_ms": {"type": "integer"},
    },
    "required": ["command"],
}
"""The function form of Responses' ``local_shell`` tool (its action's documented fields)."""
_FREEFORM = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
"""The function form of a ``custom`` (freeform text) tool: its text as one argument."""


def _responses(body: dict[str, Any], log: Log) -> None:
    tools = body.get("tools")
    if isinstance(tools, list):
        body["tools"] = _responses_tools(tools, log)
    items = body.get("input")
    if isinstance(items, list):
        body["input"] = _responses_items(items, log)


def _function(name: str, description: object, schema: Mapping[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": name, "parameters": dict(schema)}
    if isinstance(description, str):
        tool["description"] = description
    return tool


def client_forms(wire: str, body: Mapping[str, Any]) -> dict[str, str]:
    """The non-function tools a Responses client declared, by their function's name.

    :func:`normalize` declares ``local_shell`` and ``custom`` tools as functions; a call
    of such a function goes back to the client in the form it declared.
    """
    tools = body.get("tools") if wire == "openai-responses" else None
    forms: dict[str, str] = {}
    for tool in tools if isinstance(tools, list) else ():
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind == "local_shell":
            forms["local_shell"] = "local_shell"
        elif kind == "custom" and isinstance(tool.get("name"), str):
            forms[tool["name"]] = "custom"
    return forms


def _responses_tools(tools: list[Any], log: Log) -> list[Any]:
    out: list[Any] = []
    names = {t.get("name") for t in tools if isinstance(t, Mapping) and t.get("type") == "function"}
    for n, tool in enumerate(tools):
        where = f"tools[{n}]"
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind == "function":
            schema, why = _object_schema(tool.get("parameters"))
            if why is not None:
                log.append(Rewrite("schema_fixed", where, f"{tool.get('name')}: {why}"))
            out.append({**tool, "parameters": schema})
        elif kind == "local_shell":
            out.append(_function("local_shell", "Run a shell command.", _LOCAL_SHELL))
            log.append(Rewrite("tool_mapped", where, "local_shell -> function local_shell"))
        elif kind == "custom" and isinstance(tool.get("name"), str):
            out.append(_function(tool["name"], tool.get("description"), _FREEFORM))
            log.append(Rewrite("tool_mapped", where, f"custom {tool['name']} -> function"))
        elif kind == "namespace" and isinstance(tool.get("tools"), list):
            for inner in tool["tools"]:
                if _is(inner, "function") and inner.get("name") not in names:
                    names.add(inner.get("name"))
                    out += _responses_tools([inner], log)
                    detail = f"{tool.get('name')}.{inner.get('name')} -> {inner.get('name')}"
                    log.append(Rewrite("tool_mapped", where, detail))
                else:
                    detail = f"{tool.get('name')}.{_name(inner)}: no distinct function form"
                    log.append(Rewrite("tool_dropped", where, detail))
        else:
            log.append(Rewrite("tool_dropped", where, f"{_name(tool)}: no function form"))
    return out


_BESIDE_CALLS = frozenset({"reasoning"})
"""Responses input items that may come between calls and their outputs (the others close
the calls' turn)."""
_OUTPUTS = ("function_call_output", "local_shell_call_output", "custom_tool_call_output")


def _responses_items(items: list[Any], log: Log) -> list[Any]:
    ids = _Ids("call_")
    out: list[Any] = []
    waiting: list[str] = []
    orphans: list[Any] = []
    for n, item in enumerate(items):
        where = f"input[{n}]"
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call = _responses_call(dict(item), ids, where, log)
            waiting.append(call["call_id"])
            out.append(call)
            continue
        if kind in _OUTPUTS:
            forwarded = ids.result(item.get("call_id"))
            if forwarded is None or forwarded not in waiting:
                log.append(Rewrite("result_orphaned", where, f"id {item.get('call_id')!r}"))
                orphans.append(_user_text(_orphan(item.get("call_id"), item.get("output"))))
                continue
            waiting.remove(forwarded)
            output = {"type": "function_call_output", "call_id": forwarded, "output": _output(item)}
            out.append({**item, **output})
            continue
        if kind not in _BESIDE_CALLS:
            out += _responses_answers(waiting, ids, where, log) + orphans
            waiting, orphans = [], []
        out.append(item)
    out += _responses_answers(waiting, ids, f"input[{len(items)}]", log) + orphans
    return out


def _user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _output(item: Mapping[str, Any]) -> str:
    output = item.get("output")
    return output if isinstance(output, str) else json.dumps(output)


def _responses_call(item: dict[str, Any], ids: _Ids, where: str, log: Log) -> dict[str, Any]:
    """A historical call as a ``function_call`` item: its id unique, its arguments an object."""
    kind = item.get("type")
    call_id = ids.call(item.get("call_id") or item.get("id"), where, log)
    if kind == "local_shell_call":
        action = item.get("action")
        arguments = {k: v for k, v in (action or {}).items() if k in _LOCAL_SHELL["properties"]}
        log.append(Rewrite("tool_mapped", where, "local_shell_call -> function_call"))
        return _call_item(call_id, "local_shell", json.dumps(arguments))
    if kind == "custom_tool_call":
        log.append(Rewrite("tool_mapped", where, f"custom_tool_call {item.get('name')}"))
        return _call_item(call_id, str(item.get("name")), json.dumps({"input": item.get("input")}))
    raw = item.get("arguments")
    arguments, changed = _object_arguments(raw)
    if changed or not isinstance(raw, str):
        log.append(Rewrite("arguments_repaired", where, f"{item.get('name')}: {raw!r:.80}"))
        raw = json.dumps(arguments)
    return {**item, "call_id": call_id, "arguments": raw}


def _call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _responses_answers(waiting: list[str], ids: _Ids, where: str, log: Log) -> list[dict[str, Any]]:
    ids.close()
    out = []
    for ident in waiting:
        log.append(Rewrite("call_answered", where, f"id {ident}"))
        out.append({"type": "function_call_output", "call_id": ident, "output": _NOT_RUN})
    waiting.clear()
    return out


# -- the entry point ------------------------------------------------------------------------

_WIRES: dict[str, Callable[[dict[str, Any], Log], None]] = {
    "openai": _chat,
    "anthropic": _messages,
    "openai-responses": _responses,
}
WIRES = tuple(_WIRES)
"""The wires :func:`normalize` reads, by the names of callgate's strategies."""
CLIENT_WIRES = {"chat": "openai", "messages": "anthropic", "responses": "openai-responses"}
"""The :data:`WIRES` name of each client wire the proxy serves (the engine's names)."""


def normalize(wire: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[Rewrite]]:
    """The request ``body`` of ``wire`` as it is forwarded, and the rewrites made.

    ``body`` is not changed; the result shares its unchanged parts (copy them before
    changing them in place). ValueError for a wire not in :data:`WIRES`.
    """
    rewrite = _WIRES.get(wire)
    if rewrite is None:
        raise ValueError(f"unknown wire {wire!r}; one of: {', '.join(WIRES)}")
    out = dict(body)
    log: Log = []
    rewrite(out, log)
    return out, log
