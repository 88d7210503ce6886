"""A client's request written on the upstream's wire (``--upstream-wire``).

:func:`translate` reads the request on the client's wire into a neutral
:class:`~callgate.proxy.wires.conversation.Conversation` and writes it on the upstream's:
the system prompt, the history (text, images, the assistant's calls with their ids as
they were, the tools' results keyed by those ids), the function tools, the tool choice,
the token limit, the sampling settings, the reasoning effort and a structured-output
format. Ids are kept as they came, so a call's id is the same on both wires and across
the conversation. A request already on the upstream's wire is sent as it came. What is
left out (a client's hint, the history's reasoning) or moved to the nearest value the
upstream has is logged as a :class:`~callgate.proxy.normalize.Rewrite`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from callgate.proxy.core import RequestError
from callgate.proxy.normalize import Rewrite
from callgate.proxy.wires.conversation import AskedCall, Conversation, Image, Part, ToolAnswer, read

__all__ = ["PATHS", "translate", "upstream_wire"]

PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
"""The path each wire is served at."""
_DEFAULT_MAX_TOKENS = 4096
"""The limit a Messages upstream requires when the client's request gave none."""


def upstream_wire(value: str | None) -> str | None:
    """``chat``, ``messages`` or ``responses`` (None or '': the client's own wire).

    ValueError says, in one line, what is wrong (``--upstream-wire`` and
    ``CALLGATE_UPSTREAM_WIRE`` read it).
    """
    if not value:
        return None
    if value not in PATHS:
        raise ValueError(f"--upstream-wire must be chat, messages or responses, not {value!r}")
    return value


def translate(
    client: str, upstream: str, body: Mapping[str, Any], log: list[Rewrite] | None = None
) -> Mapping[str, Any]:
    """The request ``body`` of the ``client`` wire as the ``upstream`` wire's request.

    ``log`` gets a rewrite for each thing left out or moved to the nearest value.
    """
    if client == upstream:
        return body
    talk = read(client, body)
    out = _WRITERS[upstream](talk)
    notes = [Rewrite("hint_dropped", where, what) for where, what in talk.dropped]
    if talk.effort is not None:
        given, sent = talk.effort, _EFFORTS[upstream].get(talk.effort, talk.effort)
        if sent != given:
            notes.append(Rewrite("setting_mapped", "effort", f"{given} -> {sent}"))
        _put_effort(upstream, out, sent)
    if talk.output_format is not None:
        _put_format(upstream, out, talk.output_format)
    if log is not None:
        log += notes
    return out


_EFFORTS: dict[str, dict[str, str]] = {
    "chat": {"max": "high", "xhigh": "high"},
    "responses": {"max": "xhigh"},
    "messages": {"minimal": "low", "none": "low", "xhigh": "max"},
}
"""An effort the upstream's wire has no such name for, as its nearest one."""


def _put_effort(wire: str, body: dict[str, Any], effort: str) -> None:
    if wire == "chat":
        body["reasoning_effort"] = effort
    elif wire == "responses":
        body["reasoning"] = {"effort": effort}
    else:
        body.setdefault("output_config", {})["effort"] = effort


def _put_format(wire: str, body: dict[str, Any], form: Mapping[str, Any]) -> None:
    """A structured-output format in the upstream wire's field (Messages has no JSON mode)."""
    spec = {k: v for k, v in form.items() if k != "type"}
    if wire == "chat":
        schema = {"json_schema": spec} if form["type"] == "json_schema" else {}
        body["response_format"] = {"type": form["type"], **schema}
    elif wire == "responses":
        body["text"] = {"format": dict(form)}
    elif form["type"] == "json_schema":
        body.setdefault("output_config", {})["format"] = {
            "type": "json_schema",
            "schema": form["schema"],
        }
    else:
        raise RequestError("callgate cannot translate a json_object format to the Messages wire")


# -- Chat Completions -------------------------------------------------------------------


def _chat_content(parts: Sequence[Part]) -> Any:
    texts = [p for p in parts if isinstance(p, str)]
    if not any(isinstance(p, Image) for p in parts):
        return "".join(texts) or None
    return [
        {"type": "text", "text": p}
        if isinstance(p, str)
        else {"type": "image_url", "image_url": {"url": p.url}}
        for p in parts
        if isinstance(p, str | Image)
    ]


def _to_chat(talk: Conversation) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if talk.system:
        messages.append({"role": "system", "content": talk.system})
    for turn in talk.turns:
        results = [p for p in turn.parts if isinstance(p, ToolAnswer)]
        messages += [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results
        ]
        rest = [p for p in turn.parts if not isinstance(p, ToolAnswer)]
        calls = [p for p in rest if isinstance(p, AskedCall)]
        if turn.role == "assistant" and (rest or not results):
            content = _chat_content(rest)
            if content is None and not calls:  # OpenAI refuses null content without calls
                content = ""
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in calls
                ]
            messages.append(message)
        elif rest:
            messages.append({"role": "user", "content": _chat_content(rest)})
    body: dict[str, Any] = {"model": talk.model, "messages": messages, **_sampling(talk)}
    if talk.max_tokens is not None:
        body["max_tokens"] = talk.max_tokens
    if talk.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": n, "description": d, "parameters": dict(s)},
            }
            for n, d, s in talk.tools
        ]
    if talk.tool_choice is not None:
        name = _named(talk.tool_choice)
        body["tool_choice"] = (
            {"type": "function", "function": {"name": name}} if name else talk.tool_choice
        )
    if talk.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _sampling(talk: Conversation) -> dict[str, Any]:
    return {k: v for k, v in talk.sampling.items() if k != "stop"} | (
        {"stop": talk.sampling["stop"]} if "stop" in talk.sampling else {}
    )


def _named(choice: str) -> str | None:
    return choice.removeprefix("name:") if choice.startswith("name:") else None


# -- Anthropic Messages -----------------------------------------------------------------


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if isinstance(part, Image):
        return {"type": "image", "source": _image_source(part.url)}
    if isinstance(part, AskedCall):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": _input(part)}
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": part.call_id,
        "content": part.content,
    }
    if part.is_error:
        block["is_error"] = True
    return block


def _image_source(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media, _, data = url[5:].partition(";base64,")
        return {"type": "base64", "media_type": media, "data": data}
    return {"type": "url", "url": url}


def _input(call: AskedCall) -> Any:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError as exc:
        raise RequestError(
            f"callgate cannot translate the arguments of call {call.id!r}: not JSON"
        ) from exc
    if not isinstance(value, dict):
        raise RequestError(f"callgate cannot translate the arguments of call {call.id!r}")
    return value


def _to_messages(talk: Conversation) -> dict[str, Any]:
    messages = []
    for turn in talk.turns:
        blocks = [_block(p) for p in turn.parts if not (isinstance(p, str) and not p)]
        if turn.role == "user":  # tool results first, as Messages requires
            blocks.sort(key=lambda b: b["type"] != "tool_result")
        if blocks:
            messages.append({"role": turn.role, "content": blocks})
    body: dict[str, Any] = {
        "model": talk.model,
        "messages": messages,
        "max_tokens": talk.max_tokens if talk.max_tokens is not None else _DEFAULT_MAX_TOKENS,
    }
    if talk.system:
        body["system"] = talk.system
    body |= {k: v for k, v in talk.sampling.items() if k != "stop"}
    if "stop" in talk.sampling:
        body["stop_sequences"] = talk.sampling["stop"]
    if talk.tools:
        body["tools"] = [
            {"name": n, "description": d, "input_schema": dict(s)} for n, d, s in talk.tools
        ]
    if talk.tool_choice is not None:
        name = _named(talk.tool_choice)
        kinds = {"required": {"type": "any"}, "auto": {"type": "auto"}, "none": {"type": "none"}}
        body["tool_choice"] = {"type": "tool", "name": name} if name else kinds[talk.tool_choice]
    if talk.stream:
        body["stream"] = True
    return body


# -- OpenAI Responses -------------------------------------------------------------------


def _to_responses(talk: Conversation) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for turn in talk.turns:
        content: list[dict[str, Any]] = []
        kind = "output_text" if turn.role == "assistant" else "input_text"
        for part in turn.parts:
            if isinstance(part, str):
                content += [{"type": kind, "text": part}] if part else []
            elif isinstance(part, Image):
                content.append({"type": "input_image", "image_url": part.url})
            else:
                items += [*_flush(turn.role, content), _item(part)]
                content = []
        items += _flush(turn.role, content)
    body: dict[str, Any] = {"model": talk.model, "input": items}
    if talk.system:
        body["instructions"] = talk.system
    body |= {k: v for k, v in talk.sampling.items() if k != "stop"}
    if "stop" in talk.sampling:
        raise RequestError("callgate cannot translate stop sequences to the Responses wire")
    if talk.max_tokens is not None:
        body["max_output_tokens"] = talk.max_tokens
    if talk.tools:
        body["tools"] = [
            {"type": "function", "name": n, "description": d, "parameters": dict(s)}
            for n, d, s in talk.tools
        ]
    if talk.tool_choice is not None:
        name = _named(talk.tool_choice)
        body["tool_choice"] = {"type": "function", "name": name} if name else talk.tool_choice
    if talk.stream:
        body["stream"] = True
    return body


def _item(part: AskedCall | ToolAnswer) -> dict[str, Any]:
    """A call or a result of the history as a Responses input item."""
    if isinstance(part, AskedCall):
        return {
            "type": "function_call",
            "call_id": part.id,
            "name": part.name,
            "arguments": part.arguments,
        }
    return {"type": "function_call_output", "call_id": part.call_id, "output": part.content}


def _flush(role: str, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "message", "role": role, "content": content}] if content else []


_WRITERS = {"chat": _to_chat, "messages": _to_messages, "responses": _to_responses}
