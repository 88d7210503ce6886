"""What OpenAI and Anthropic accept as a next request's history, checked two ways.

- The SDKs' own request param types (``ChatCompletionMessageParam``, ``MessageParam``),
  validated with pydantic, every lazily validated iterable walked to its end.
- The providers' documented rules on tool calls, which no type states: every call id of
  an assistant message is answered in the very next message(s), ids are unique strings,
  answers name only ids of that assistant message, Anthropic ``tool_use.input`` is an
  object. The loopback server refuses a request that breaks one (HTTP 400, as the APIs
  do), so a client loop meets the same refusal it would meet in production.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

_OPENAI = TypeAdapter(ChatCompletionMessageParam)
_ANTHROPIC = TypeAdapter(MessageParam)


def _walk(value: Any) -> Any:
    """Consume every lazily validated iterable pydantic left in ``value`` (raises if bad)."""
    if isinstance(value, dict):
        return {k: _walk(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, (list, tuple, Iterator)):
        return [_walk(v) for v in value]
    return value


def validate_openai(messages: Sequence[Any]) -> None:
    """Every message is a ``ChatCompletionMessageParam``, and the tool-call rules hold."""
    for message in messages:
        _walk(_OPENAI.validate_python(message))
    problems = openai_problems(messages)
    assert not problems, problems


def validate_anthropic(messages: Sequence[Any]) -> None:
    """Every message is a ``MessageParam``, and the tool-use rules hold."""
    for message in messages:
        _walk(_ANTHROPIC.validate_python(message))
    problems = anthropic_problems(messages)
    assert not problems, problems


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def openai_problems(messages: Sequence[Any]) -> list[str]:
    """Chat Completions: each assistant ``tool_calls`` id answered by the ``tool`` messages
    that follow it, and only those."""
    problems: list[str] = []
    position = 0
    while position < len(messages):
        message = messages[position]
        position += 1
        if message.get("role") == "tool":
            problems.append(f"message {position - 1}: a tool message answers no assistant call")
            continue
        if message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls") or []
        if not calls and message.get("content") is None:
            problems.append(f"message {position - 1}: an assistant message with nothing in it")
        ids = [call.get("id") for call in calls]
        for call in calls:
            name = (call.get("function") or {}).get("name")
            if not _is_id(call.get("id")) or not isinstance(name, str) or not name:
                problems.append(f"message {position - 1}: a tool call without id or name: {call}")
        if len(set(ids)) != len(ids):
            problems.append(f"message {position - 1}: tool call ids repeat: {ids}")
        answered = []
        while position < len(messages) and messages[position].get("role") == "tool":
            answered.append(messages[position].get("tool_call_id"))
            position += 1
        if sorted(map(str, answered)) != sorted(map(str, ids)):
            problems.append(f"message {position - 1}: calls {ids} answered by {answered}")
    return problems


def anthropic_problems(messages: Sequence[Any]) -> list[str]:
    """Messages: each ``tool_use`` id answered by a ``tool_result`` of the next user message,
    results first, inputs objects, ids unique in the whole conversation, and no text block
    empty or only whitespace (the API's 400 messages are quoted)."""
    problems: list[str] = []
    seen: set[Any] = set()
    for position, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            text = block.get("text")
            if block.get("type") == "text" and (not isinstance(text, str) or not text.strip()):
                problems.append(
                    f"message {position}: text content blocks must contain non-whitespace "
                    f"text: {block}"
                )
        for block in blocks:
            if block.get("type") != "tool_use":
                continue
            if block.get("id") in seen:
                problems.append(
                    f"message {position}: tool_use ids must be unique: {block.get('id')!r}"
                )
            seen.add(block.get("id"))
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            before = messages[position - 1] if position else {}
            before_blocks = before.get("content") if isinstance(before.get("content"), list) else []
            asked = {b.get("id") for b in before_blocks or [] if b.get("type") == "tool_use"}
            stray = [r.get("tool_use_id") for r in results if r.get("tool_use_id") not in asked]
            if stray:
                problems.append(f"message {position}: tool_result for unknown ids {stray}")
            if blocks[: len(results)] != results:
                problems.append(f"message {position}: tool_result blocks must come first")
        if not uses:
            continue
        ids = [b.get("id") for b in uses]
        if not all(_is_id(i) for i in ids) or len(set(ids)) != len(ids):
            problems.append(f"message {position}: tool_use ids missing or repeated: {ids}")
        for block in uses:
            if not isinstance(block.get("input"), dict):
                problems.append(f"message {position}: tool_use input is not an object: {block}")
            if not isinstance(block.get("name"), str) or not block.get("name"):
                problems.append(f"message {position}: tool_use without a name: {block}")
        following = messages[position + 1] if position + 1 < len(messages) else {}
        after = following.get("content") if isinstance(following.get("content"), list) else []
        answered = [b.get("tool_use_id") for b in after if b.get("type") == "tool_result"]
        if following.get("role") != "user" or sorted(map(str, answered)) != sorted(map(str, ids)):
            problems.append(f"message {position}: tool_use ids {ids} answered by {answered}")
    return problems


def validate_bedrock(messages: Sequence[Any]) -> None:
    """The messages make a valid Converse request (botocore's service model), and every
    client ``toolUse`` id is answered by a ``toolResult`` of the next user message (a
    server tool's use is answered by the server)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("Converse").input_shape
    report = ParamValidator().validate({"modelId": "m", "messages": list(messages)}, shape)
    assert not report.has_errors(), report.generate_report()
    for position, message in enumerate(messages):
        uses = [
            b["toolUse"]["toolUseId"]
            for b in message["content"]
            if "toolUse" in b and b["toolUse"].get("type") != "server_tool_use"
        ]
        if not uses:
            continue
        following = messages[position + 1]["content"] if position + 1 < len(messages) else []
        answered = [b["toolResult"]["toolUseId"] for b in following if "toolResult" in b]
        assert sorted(answered) == sorted(uses), (position, uses, answered)
        assert len(set(uses)) == len(uses), uses


def validate_responses(items: Sequence[Any]) -> None:
    """Every input item is a Responses ``ResponseInputItemParam``, every ``function_call``
    is answered by a ``function_call_output`` of its ``call_id``, and only those."""
    from openai.types.responses import ResponseInputItemParam

    adapter = TypeAdapter(ResponseInputItemParam)
    for item in items:
        _walk(adapter.validate_python(item))
    calls = [i.get("call_id") for i in items if i.get("type") == "function_call"]
    outputs = [i.get("call_id") for i in items if i.get("type") == "function_call_output"]
    assert all(_is_id(c) for c in calls) and len(set(calls)) == len(calls), calls
    assert sorted(map(str, outputs)) == sorted(map(str, calls)), (calls, outputs)


def validate_cohere(messages: Sequence[Any]) -> None:
    """Cohere v2 takes the Chat Completions tool-call rules (no SDK here to check types)."""
    problems = openai_problems(messages)
    assert not problems, problems


def validate_gemini(contents: Sequence[Any]) -> None:
    """Every content is a google-genai ``Content``; each model content's function calls
    (object ``args``) are answered, by name and in order, in the next user content."""
    from google.genai import types

    for position, content in enumerate(contents):
        types.Content.model_validate(content)
        calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
        if not calls:
            continue
        assert all(isinstance(c.get("args", {}), dict) for c in calls), calls
        following = contents[position + 1]["parts"] if position + 1 < len(contents) else []
        answers = [p["functionResponse"]["name"] for p in following if "functionResponse" in p]
        assert answers == [c["name"] for c in calls], (calls, answers)


def validate_ollama(messages: Sequence[Any]) -> None:
    """Ollama's /api/chat: each assistant ``tool_calls`` entry has a name and object
    ``arguments`` and is answered by one ``tool`` message, in order."""
    for position, message in enumerate(messages):
        calls = [c["function"] for c in message.get("tool_calls") or ()]
        if not calls:
            continue
        assert all(c.get("name") and isinstance(c.get("arguments"), dict) for c in calls), calls
        following = messages[position + 1 : position + 1 + len(calls)]
        answers = [m.get("tool_name") for m in following if m.get("role") == "tool"]
        assert answers == [c["name"] for c in calls], (calls, answers)
