"""Strict validators of a request body per wire, and a loopback server that applies them.

Each validator lists what a strict server refuses in a request, after the providers'
documented request schemas and what local servers enforce:

- Anthropic Messages: ``model``, ``max_tokens`` and ``messages`` given; roles only
  ``user`` and ``assistant``; ``tool_use`` ids unique and of ``[A-Za-z0-9_-]``, inputs
  objects; every ``tool_use`` answered by a ``tool_result`` at the start of the next user
  turn and every result naming a call of the turn before; tools with a name and an
  ``input_schema`` of type object (server tools are not served by a local server).
- OpenAI Chat Completions: roles ``system``, ``user``, ``assistant``, ``tool``; call ids
  unique and non-empty, arguments a JSON object's text; every call answered by ``tool``
  messages before the next other message, every ``tool`` message answering one; tools of
  type ``function`` whose parameters are an object schema.
- OpenAI Responses: message items of roles ``user``, ``assistant``, ``system``,
  ``developer``; ``function_call`` items with a unique ``call_id`` and arguments that are
  a JSON object's text; every ``function_call_output`` answering an earlier call; only
  ``function`` tools with object schemas (what the local servers serve).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from callgate.proxy.upstream import Script, whole_body

_ANTHROPIC_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def _object_text(raw: object) -> bool:
    try:
        return isinstance(raw, str) and isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def _schema_problem(where: str, schema: object) -> list[str]:
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return [f"{where}: the schema's type must be object"]
    return []


def anthropic_problems(body: Mapping[str, Any]) -> list[str]:
    """What a strict Messages server refuses in ``body`` (empty: accepted)."""
    problems = [
        f"{key} is required" for key in ("model", "max_tokens", "messages") if key not in body
    ]
    seen: set[str] = set()
    waiting: list[str] = []
    for n, message in enumerate(body.get("messages") or ()):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"messages.{n}.role: {role!r} is not 'user' or 'assistant'")
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if role == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            leading = 0
            while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
                leading += 1
            if leading != len(results):
                problems.append(f"messages.{n}: tool_result blocks must come first")
            answered: set[object] = set()
            for ident in results:
                if ident not in waiting or ident in answered:  # a call is answered once
                    problems.append(f"messages.{n}: tool_result {ident!r} answers no tool_use")
                answered.add(ident)
            missing = [i for i in waiting if i not in results]
            if missing:
                problems.append(f"messages.{n}: tool_use ids without tool_result: {missing}")
            waiting = []
            continue
        if waiting:
            problems.append(f"messages.{n}: tool_use ids without tool_result: {waiting}")
        waiting = []
        for k, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            ident = block.get("id")
            if not isinstance(ident, str) or not _ANTHROPIC_ID.match(ident) or ident in seen:
                problems.append(f"messages.{n}.content.{k}.id: {ident!r} empty, invalid or reused")
            if not isinstance(block.get("input"), dict):
                problems.append(f"messages.{n}.content.{k}.input must be an object")
            seen.add(str(ident))
            waiting.append(str(ident))
    for n, tool in enumerate(body.get("tools") or ()):
        if tool.get("type") not in (None, "custom") or not isinstance(tool.get("name"), str):
            problems.append(f"tools.{n}: only custom tools with a name are served")
            continue
        problems += _schema_problem(f"tools.{n}.input_schema", tool.get("input_schema"))
    return problems


def chat_problems(body: Mapping[str, Any]) -> list[str]:
    """What a strict Chat Completions server refuses in ``body`` (empty: accepted)."""
    problems = [f"{key} is required" for key in ("model", "messages") if key not in body]
    seen: set[str] = set()
    waiting: list[str] = []
    for n, message in enumerate(body.get("messages") or ()):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"messages.{n}.role: {role!r} is not accepted")
        if role == "tool":
            ident = message.get("tool_call_id")
            if ident not in waiting:
                problems.append(f"messages.{n}: a tool message answering no call ({ident!r})")
            else:
                waiting.remove(ident)
            continue
        if waiting:
            problems.append(f"messages.{n}: tool_calls without tool messages: {waiting}")
        waiting = []
        for k, call in enumerate(message.get("tool_calls") or ()):
            ident = call.get("id")
            if not isinstance(ident, str) or not ident or ident in seen:
                problems.append(f"messages.{n}.tool_calls.{k}.id: {ident!r} empty or reused")
            if not _object_text((call.get("function") or {}).get("arguments")):
                problems.append(f"messages.{n}.tool_calls.{k}: arguments are not a JSON object")
            seen.add(str(ident))
            waiting.append(str(ident))
    if waiting:
        problems.append(f"tool_calls without tool messages: {waiting}")
    for n, tool in enumerate(body.get("tools") or ()):
        if tool.get("type") != "function":
            problems.append(f"tools.{n}: type {tool.get('type')!r} is not function")
            continue
        problems += _schema_problem(f"tools.{n}", (tool.get("function") or {}).get("parameters"))
    return problems


def responses_problems(body: Mapping[str, Any]) -> list[str]:
    """What a strict Responses server refuses in ``body`` (empty: accepted)."""
    problems = [f"{key} is required" for key in ("model", "input") if key not in body]
    calls: set[str] = set()
    answered: set[str] = set()
    items = body.get("input")
    for n, item in enumerate(items if isinstance(items, list) else ()):
        kind = item.get("type", "message")
        if kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                problems.append(f"input.{n}.role: {item.get('role')!r} is not accepted")
            if calls - answered:  # a call is answered before the conversation goes on
                problems.append(f"input.{n}: calls {sorted(calls - answered)} have no output yet")
        elif kind == "function_call":
            ident = item.get("call_id")
            if not isinstance(ident, str) or not ident or ident in calls:
                problems.append(f"input.{n}.call_id: {ident!r} empty or reused")
            if not _object_text(item.get("arguments")):
                problems.append(f"input.{n}: arguments are not a JSON object")
            calls.add(str(ident))
        elif kind == "function_call_output":
            ident = item.get("call_id")
            if ident not in calls or ident in answered:
                problems.append(f"input.{n}: an output answering no call ({ident!r})")
            answered.add(str(ident))
        elif kind != "reasoning":
            problems.append(f"input.{n}: item type {kind!r} is not served")
    unanswered = sorted(calls - answered)
    if unanswered:
        problems.append(f"no output for the function calls {unanswered}")
    for n, tool in enumerate(body.get("tools") or ()):
        if tool.get("type") != "function" or not isinstance(tool.get("name"), str):
            problems.append(f"tools.{n}: type {tool.get('type')!r} is not a named function")
            continue
        problems += _schema_problem(f"tools.{n}", tool.get("parameters"))
    return problems


VALIDATORS: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "/v1/messages": anthropic_problems,
    "/v1/chat/completions": chat_problems,
    "/v1/responses": responses_problems,
}
"""Each wire's path and its validator."""


def validating(path: str, body: dict[str, Any]) -> Script:
    """A ``ReplayUpstream`` pick: 400 with the problems, else 200 with an empty answer."""
    problems = VALIDATORS[path.split("?", maxsplit=1)[0].rstrip("/")](body)
    if problems:
        error = {"error": {"type": "invalid_request_error", "message": "; ".join(problems)}}
        return Script(whole_body(error), status=400, content_type="application/json")
    return Script(whole_body({"accepted": True}), content_type="application/json")
