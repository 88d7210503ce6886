"""Whole request bodies across wires: every field the upstream gets, compared as a whole.

A conversation with a system prompt, text in pieces, an image, a text-only assistant
turn, an assistant call, its result and a user's words after it is written on each other
wire exactly as that wire's API takes it: nothing missing, nothing renamed, nothing added.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy.core import RequestError
from callgate.proxy.normalize import Rewrite
from callgate.proxy.wires.translate import translate

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ARGS = '{"city": "Paris"}'

CHAT: dict[str, Any] = {
    "model": "m",
    "stream": True,
    "max_tokens": 100,
    "temperature": 0.3,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Use tools."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is "},
                {"type": "text", "text": "this?"},
                {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
            ],
        },
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ARGS},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "user", "content": "thanks"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather.", "parameters": SCHEMA},
        }
    ],
    "tool_choice": "required",
}

MESSAGES: dict[str, Any] = {
    "model": "m",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is "},
                {"type": "text", "text": "this?"},
                {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ],
    "max_tokens": 100,
    "system": "Be brief.\n\nUse tools.",
    "temperature": 0.3,
    "tools": [{"name": "get_weather", "description": "Weather.", "input_schema": SCHEMA}],
    "tool_choice": {"type": "any"},
    "stream": True,
}


def said(role: str, *texts: str) -> dict[str, Any]:
    """A Responses message item of plain text pieces."""
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts]}


RESPONSES: dict[str, Any] = {
    "model": "m",
    "input": [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is "},
                {"type": "input_text", "text": "this?"},
                {"type": "input_image", "image_url": "https://x/cat.png"},
            ],
        },
        said("assistant", "A cat."),
        said("user", "Weather in Paris?"),
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ARGS},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        said("user", "thanks"),
    ],
    "instructions": "Be brief.\n\nUse tools.",
    "temperature": 0.3,
    "max_output_tokens": 100,
    "tools": [
        {"type": "function", "name": "get_weather", "description": "Weather.", "parameters": SCHEMA}
    ],
    "tool_choice": "required",
    "stream": True,
}


def test_a_chat_conversation_is_the_whole_messages_request() -> None:
    assert translate("chat", "messages", CHAT) == MESSAGES


def test_a_chat_conversation_is_the_whole_responses_request() -> None:
    assert translate("chat", "responses", CHAT) == RESPONSES


def test_a_messages_conversation_is_the_whole_responses_request() -> None:
    assert translate("messages", "responses", MESSAGES) == RESPONSES


def test_a_responses_conversation_is_the_whole_messages_request() -> None:
    assert translate("responses", "messages", RESPONSES) == MESSAGES


CHAT_BACK: dict[str, Any] = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "Be brief.\n\nUse tools."},
        CHAT["messages"][2],
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "Weather in Paris?"},
        CHAT["messages"][5],
        CHAT["messages"][6],
        {"role": "user", "content": "thanks"},
    ],
    "temperature": 0.3,
    "max_tokens": 100,
    "tools": CHAT["tools"],
    "tool_choice": "required",
    "stream": True,
    "stream_options": {"include_usage": True},
}
"""The conversation as Chat Completions takes it: the two system prompts joined in one."""


@pytest.mark.parametrize(("client", "body"), [("messages", MESSAGES), ("responses", RESPONSES)])
def test_a_conversation_is_the_whole_chat_request(client: str, body: dict[str, Any]) -> None:
    assert translate(client, "chat", body) == CHAT_BACK


@pytest.mark.parametrize("upstream", ["chat", "messages", "responses"])
@pytest.mark.parametrize(("client", "body"), [("chat", CHAT), ("responses", RESPONSES)])
def test_a_request_that_does_not_stream_does_not_ask_to(
    client: str, body: dict[str, Any], upstream: str
) -> None:
    if client == upstream:
        return
    out = translate(client, upstream, {**body, "stream": False})
    assert "stream" not in out and "stream_options" not in out


def test_a_messages_upstream_gets_its_required_limit_when_the_client_gave_none() -> None:
    body = {k: v for k, v in CHAT.items() if k != "max_tokens"}
    assert translate("chat", "messages", body)["max_tokens"] == 4096
    asked = {k: v for k, v in RESPONSES.items() if k != "max_output_tokens"}
    assert translate("responses", "messages", asked)["max_tokens"] == 4096


def test_a_users_words_before_a_tool_result_go_after_it_on_a_messages_upstream() -> None:
    """Messages wants a user turn's tool results first; the words follow them."""
    items = [
        said("user", "Weather?"),
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ARGS},
        said("user", "quickly"),
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    out = translate("responses", "messages", {"model": "m", "input": items})
    assert out["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
            {"type": "text", "text": "quickly"},
        ],
    }


def test_an_assistant_turn_of_calls_only_has_null_content_on_chat() -> None:
    """Chat Completions takes null content beside tool_calls (and "" only without them)."""
    out = translate("messages", "chat", MESSAGES)
    assert out["messages"][4]["content"] is None
    assert out["messages"][2] == {"role": "assistant", "content": "A cat."}


def test_stop_sequences_reach_a_chat_upstream_under_stop() -> None:
    out = translate("messages", "chat", {**MESSAGES, "stop_sequences": ["END"]})
    assert out["stop"] == ["END"] and "stop_sequences" not in out


def test_a_json_object_format_on_a_messages_upstream_is_refused_by_its_wires_name() -> None:
    body = {**CHAT, "response_format": {"type": "json_object"}}
    with pytest.raises(RequestError) as refused:
        translate("chat", "messages", body)
    assert str(refused.value) == (
        "callgate cannot translate a json_object format to the Messages wire"
    )


def test_a_reasoning_item_of_the_history_is_left_out_and_logged_with_its_place() -> None:
    thought = {"type": "reasoning", "id": "rs_1", "summary": []}
    body = {**RESPONSES, "input": [thought, *RESPONSES["input"]]}
    log: list[Rewrite] = []
    out = translate("responses", "chat", body, log)
    assert out == CHAT_BACK
    assert [(r.code, r.where) for r in log] == [("hint_dropped", "input[0]")]


def test_text_pieces_of_one_message_are_one_string_on_chat() -> None:
    pieces = [{"type": "text", "text": "Weather "}, {"type": "text", "text": "in Paris?"}]
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": pieces}]}
    out = translate("messages", "chat", body)
    assert out["messages"] == [{"role": "user", "content": "Weather in Paris?"}]


def test_an_image_url_that_only_holds_base64_in_its_path_stays_a_url_on_messages() -> None:
    url = "https://x/img;base64,abc.png"
    content = [{"type": "image_url", "image_url": {"url": url}}]
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    out = translate("chat", "messages", body)
    assert out["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": url}}
    ]
