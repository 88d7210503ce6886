"""A request of any served wire as one neutral conversation, read from each wire's shape.

:func:`read` turns a Chat Completions, Messages or Responses request body into a
:class:`Conversation`: the system prompt, the turns (text, images, the assistant's calls,
the tools' results), the tools, the tool choice and the limits. What the reader cannot
carry across is refused with a :class:`~callgate.proxy.core.RequestError` that names it,
never dropped; fields that only steer one provider's service (caching, storage, metadata)
are listed in :data:`HINTS` and left out, each noted in :attr:`Conversation.dropped` so the
gateway reports it. The reasoning effort and a structured-output format are carried.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from attrs import define, field, frozen

from callgate.proxy.core import RequestError

__all__ = ["HINTS", "AskedCall", "Conversation", "Entry", "Image", "ToolAnswer", "read"]


@frozen
class Image:
    """An image: a URL (``data:`` URLs carry the bytes)."""

    url: str


@frozen
class AskedCall:
    """An assistant's tool call in the history."""

    id: str
    name: str
    arguments: str


@frozen
class ToolAnswer:
    """A tool's result, answering the call of ``call_id``."""

    call_id: str
    content: str
    is_error: bool = False


Part = str | Image | AskedCall | ToolAnswer


@define
class Entry:
    """One message of the history: its role (``user`` or ``assistant``) and its parts."""

    role: str
    parts: list[Part] = field(factory=list)


@define
class Conversation:
    """A request's content and settings, on no wire."""

    model: str
    system: str = ""
    turns: list[Entry] = field(factory=list)
    tools: list[tuple[str, str, Mapping[str, Any]]] = field(factory=list)
    tool_choice: str | None = None
    """``auto``, ``none``, ``required``, or ``name:<tool>``; None: not given."""
    max_tokens: int | None = None
    stream: bool = False
    sampling: dict[str, Any] = field(factory=dict)
    """``temperature``, ``top_p`` and stop sequences (``stop``), as given."""
    effort: str | None = None
    """The reasoning effort asked for (``low``, ``medium``, ``high``...); None: not given."""
    output_format: Mapping[str, Any] | None = None
    """A structured-output format: ``{"type": "json_object"}`` or ``{"type": "json_schema",
    "name", "schema", "strict"}``; None: free text."""
    dropped: list[tuple[str, str]] = field(factory=list)
    """What was left out as a client's or one provider's hint: (where, what)."""


HINTS = frozenset(
    {
        "metadata",
        "user",
        "store",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
        "include",
        "parallel_tool_calls",
        "stream_options",
        "truncation",
        "cache_control",
        "context_management",
        "thinking",
        "client_metadata",
        "betas",
    }
)
"""Request fields that steer one provider's service, not the conversation: left out when
the request is translated to another wire (Messages' ``thinking`` included: the effort,
which every wire has, carries how hard the model reasons)."""
_COMMON = frozenset({"model", "stream", "temperature", "top_p", "tools", "tool_choice"})


def _refuse_unknown(
    talk: Conversation, body: Mapping[str, Any], known: frozenset[str], wire: str
) -> None:
    """Refuse a field no reader carries; note each hint left out."""
    for key in body:
        if key in HINTS:
            talk.dropped.append((key, f"the {wire} hint {key!r}, which no other wire has"))
        elif key not in known and key not in _COMMON:
            raise RequestError(
                f"callgate cannot translate the {wire} field {key!r} to another wire"
            )


_FORMATS = frozenset({"json_object", "json_schema"})


def _format(value: object, where: str) -> Mapping[str, Any] | None:
    """A structured-output format of any wire in the neutral shape (None: free text)."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind == "text":
        return None
    if not isinstance(value, Mapping) or kind not in _FORMATS:
        raise RequestError(f"callgate cannot translate the output format {value!r} in {where}")
    if kind == "json_object":
        return {"type": "json_object"}
    spec = value.get("json_schema", value)
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if not isinstance(schema, Mapping):
        raise RequestError(
            f"callgate cannot translate a json_schema format without a schema in {where}"
        )
    name = spec.get("name")
    out: dict[str, Any] = {
        "type": "json_schema",
        "name": name if isinstance(name, str) else "output",
    }
    out["schema"] = schema
    if isinstance(spec.get("strict"), bool):
        out["strict"] = spec["strict"]
    return out


def _effort(value: object, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise RequestError(f"{where} must be a string, not {value!r}")


def _settings(
    talk: Conversation, value: object, where: str, keys: Mapping[str, str]
) -> Mapping[str, Any]:
    """An object of settings (``output_config``, ``reasoning``, ``text``), checked.

    Each key is one ``keys`` names: carried (the caller reads it), or ``"hint"`` (left
    out, noted); any other key is refused.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RequestError(f"{where} must be an object")
    for key in value:
        role = keys.get(key)
        if role is None:
            raise RequestError(f"callgate cannot translate {where}.{key} to another wire")
        if role == "hint" and value[key] is not None:
            talk.dropped.append((f"{where}.{key}", f"{where}.{key}: a client hint"))
    return value


def _text(content: object, where: str) -> str:
    """Text content (a string, or text parts) as one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                raise RequestError(f"callgate cannot translate a {kind!r} part in {where}")
        return "".join(texts)
    raise RequestError(f"callgate cannot read the content of {where}")


def _arguments(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def _choice(value: object) -> str | None:
    """A tool_choice of any wire as ``auto``/``none``/``required``/``name:<tool>``."""
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return str(value)
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind in ("auto", "none"):
            return str(kind)
        if kind == "any":
            return "required"
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else value.get("name")
        if kind in ("function", "tool") and isinstance(name, str):
            return "name:" + name
    raise RequestError(f"callgate cannot translate the tool_choice {value!r}")


def _tools(raw: object) -> list[tuple[str, str, Mapping[str, Any]]]:
    """Function tools of any wire; a provider's built-in tool is refused by name."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RequestError("tools must be a list")
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise RequestError("each tool must be an object")
        nested = entry.get("function") if entry.get("type") == "function" else None
        spec = nested if isinstance(nested, Mapping) else entry
        kind = entry.get("type")
        schema = spec.get("parameters", spec.get("input_schema"))
        name = spec.get("name")
        if kind not in (None, "function", "custom") or not isinstance(name, str):
            raise RequestError(
                f"callgate cannot translate the built-in tool {name or kind!r} to another wire"
            )
        if kind == "custom" and "input_schema" not in spec:
            raise RequestError(f"callgate cannot translate the free-text tool {name!r}")
        description = spec.get("description")
        out.append(
            (
                name,
                description if isinstance(description, str) else "",
                schema if isinstance(schema, Mapping) else {"type": "object"},
            )
        )
    return out


def _sampling(body: Mapping[str, Any], stop_key: str) -> dict[str, Any]:
    out = {k: body[k] for k in ("temperature", "top_p") if body.get(k) is not None}
    if body.get(stop_key) is not None:
        stop = body[stop_key]
        out["stop"] = [stop] if isinstance(stop, str) else list(stop)
    return out


def _limit(body: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


# -- Chat Completions -------------------------------------------------------------------

_CHAT = frozenset(
    {
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "n",
        "reasoning_effort",
        "response_format",
        "verbosity",
    }
)


def _parts(
    content: object, where: str, image_url: Callable[[Mapping[str, Any]], object]
) -> list[Part]:
    """Text and image parts; ``image_url`` reads a part's image URL (None: not an image)."""
    if not isinstance(content, list):
        return [_text(content, where)] if content else []
    parts: list[Part] = []
    for part in content:
        url = image_url(part) if isinstance(part, Mapping) else None
        parts.append(Image(url) if isinstance(url, str) else _text([part], where))
    return parts


def _chat_image(part: Mapping[str, Any]) -> object:
    image = part.get("image_url") if part.get("type") == "image_url" else None
    return image.get("url") if isinstance(image, Mapping) else None


def _chat_parts(content: object, where: str) -> list[Part]:
    return _parts(content, where, _chat_image)


def _from_chat(body: Mapping[str, Any]) -> Conversation:
    talk = _start(body, _limit(body, "max_completion_tokens", "max_tokens"), "stop")
    _refuse_unknown(talk, body, _CHAT, "Chat Completions")
    talk.effort = _effort(body.get("reasoning_effort"), "reasoning_effort")
    talk.output_format = _format(body.get("response_format"), "response_format")
    if body.get("verbosity") is not None:
        talk.dropped.append(("verbosity", "verbosity: a client hint"))
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise RequestError("a Chat Completions request needs a messages list")
    for n, message in enumerate(messages):
        where = f"messages[{n}]"
        if not isinstance(message, Mapping):
            raise RequestError(f"{where} is not an object")
        role = message.get("role")
        if role in ("system", "developer"):
            talk.system += ("\n\n" if talk.system else "") + _text(message.get("content"), where)
        elif role == "user":
            _add(talk, "user", _chat_parts(message.get("content"), where))
        elif role == "assistant":
            parts = _chat_parts(message.get("content"), where)
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(function, Mapping):
                    raise RequestError(f"a tool call of {where} has no function")
                parts.append(
                    AskedCall(
                        str(call.get("id")),
                        str(function.get("name")),
                        _arguments(function.get("arguments")),
                    )
                )
            _add(talk, "assistant", parts)
        elif role == "tool":
            result = ToolAnswer(
                str(message.get("tool_call_id")), _text(message.get("content"), where)
            )
            _add(talk, "user", [result])
        else:
            raise RequestError(f"callgate cannot translate the role {role!r} of {where}")
    return talk


def _start(body: Mapping[str, Any], limit: int | None, stop_key: str) -> Conversation:
    model = body.get("model")
    return Conversation(
        model=model if isinstance(model, str) else "",
        tools=_tools(body.get("tools")),
        tool_choice=_choice(body.get("tool_choice")),
        max_tokens=limit,
        stream=body.get("stream") is True,
        sampling=_sampling(body, stop_key),
    )


def _add(talk: Conversation, role: str, parts: list[Part]) -> None:
    """Append parts as a turn of ``role``, joining a turn of the same role before it."""
    if talk.turns and talk.turns[-1].role == role:
        talk.turns[-1].parts += parts
    else:
        talk.turns.append(Entry(role, parts))


# -- Anthropic Messages -----------------------------------------------------------------

_MESSAGES = frozenset(
    {"messages", "system", "max_tokens", "stop_sequences", "top_k", "output_config"}
)


def _messages_parts(content: object, where: str) -> list[Part]:
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        raise RequestError(f"callgate cannot read the content of {where}")
    parts: list[Part] = []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "image":
            parts.append(_image_of(block.get("source"), where))
        elif kind == "tool_use":
            parts.append(
                AskedCall(
                    str(block.get("id")), str(block.get("name")), _arguments(block.get("input"))
                )
            )
        elif kind == "tool_result":
            inner = block.get("content")
            text = inner if isinstance(inner, str) else _text(inner, where)
            parts.append(
                ToolAnswer(str(block.get("tool_use_id")), text, block.get("is_error") is True)
            )
        elif kind in ("thinking", "redacted_thinking"):
            continue  # the upstream's own reasoning is not sent to another wire (noted)
        else:
            raise RequestError(f"callgate cannot translate a {kind!r} block in {where}")
    return parts


def _image_of(source: object, where: str) -> Image:
    if isinstance(source, Mapping):
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return Image(source["url"])
        if source.get("type") == "base64":
            return Image(f"data:{source.get('media_type')};base64,{source.get('data')}")
    raise RequestError(f"callgate cannot translate the image source in {where}")


def _from_messages(body: Mapping[str, Any]) -> Conversation:
    if body.get("top_k") is not None:
        raise RequestError("callgate cannot translate the Messages field 'top_k' to another wire")
    talk = _start(body, _limit(body, "max_tokens"), "stop_sequences")
    _refuse_unknown(talk, body, _MESSAGES, "Messages")
    config = _settings(
        talk, body.get("output_config"), "output_config", {"effort": "effort", "format": "format"}
    )
    talk.effort = _effort(config.get("effort"), "output_config.effort")
    talk.output_format = _format(config.get("format"), "output_config.format")
    talk.system = _text(body.get("system"), "system")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise RequestError("a Messages request needs a messages list")
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            raise RequestError(f"callgate cannot translate the role {role!r} of messages[{n}]")
        _add(talk, str(role), _messages_parts(message.get("content"), f"messages[{n}]"))
        content = message.get("content")
        for m, block in enumerate(content if isinstance(content, list) else ()):
            if block.get("type") in ("thinking", "redacted_thinking"):
                what = f"a {block['type']} block: the reasoning of the model that wrote it"
                talk.dropped.append((f"messages[{n}].content[{m}]", what))
    return talk


# -- OpenAI Responses -------------------------------------------------------------------

_RESPONSES = frozenset(
    {"input", "instructions", "max_output_tokens", "reasoning", "text", "previous_response_id"}
)
_UNSENT_ITEMS = frozenset({"reasoning"})
"""Input items of the upstream's own reasoning: not sent to another wire."""


def _from_responses(body: Mapping[str, Any]) -> Conversation:
    talk = _start(body, _limit(body, "max_output_tokens"), "stop")
    _refuse_unknown(talk, body, _RESPONSES, "Responses")
    reasoning = _settings(
        talk, body.get("reasoning"), "reasoning", {"effort": "effort", "summary": "hint"}
    )
    talk.effort = _effort(reasoning.get("effort"), "reasoning.effort")
    shape = _settings(talk, body.get("text"), "text", {"format": "format", "verbosity": "hint"})
    talk.output_format = _format(shape.get("format"), "text.format")
    if body.get("previous_response_id") is not None:
        raise RequestError("callgate cannot translate previous_response_id (send the input)")
    talk.system = _text(body.get("instructions"), "instructions")
    given = body.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else given
    if not isinstance(items, list):
        raise RequestError("a Responses request needs an input")
    for n, item in enumerate(items):
        where = f"input[{n}]"
        if not isinstance(item, Mapping):
            raise RequestError(f"{where} is not an object")
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role in ("system", "developer"):
            talk.system += ("\n\n" if talk.system else "") + _text(item.get("content"), where)
        elif kind == "message" and role in ("user", "assistant"):
            _add(talk, str(role), _responses_parts(item.get("content"), where))
        elif kind == "function_call":
            call = AskedCall(
                str(item.get("call_id")), str(item.get("name")), _arguments(item.get("arguments"))
            )
            _add(talk, "assistant", [call])
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output, where)
            _add(talk, "user", [ToolAnswer(str(item.get("call_id")), text)])
        elif kind in _UNSENT_ITEMS:
            talk.dropped.append((where, f"a {kind} item: the reasoning of the model that wrote it"))
        else:
            raise RequestError(f"callgate cannot translate a {kind!r} item in {where}")
    return talk


def _responses_parts(content: object, where: str) -> list[Part]:
    return _parts(
        content, where, lambda p: p.get("image_url") if p.get("type") == "input_image" else None
    )


_READERS = {"chat": _from_chat, "messages": _from_messages, "responses": _from_responses}


def read(wire: str, body: Mapping[str, Any]) -> Conversation:
    """The conversation of a request on ``wire`` (RequestError: what cannot be carried)."""
    return _READERS[wire](body)
