"""How a request of each client wire is read before it is written on another.

A system or developer message anywhere in a Responses input is the upstream's system
prompt, joined in order; a text block without its text is empty text; and a body the
reader cannot carry is refused with a 400 whose words name the field, the message or
the item at fault, exactly.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy.core import RequestError
from callgate.proxy.normalize import Rewrite
from callgate.proxy.wires.translate import translate


def said(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


@pytest.mark.parametrize("role", ["system", "developer"])
def test_a_responses_system_message_alone_is_the_upstreams_whole_system_prompt(role: str) -> None:
    body = {"model": "m", "input": [said(role, "Be brief."), said("user", "hi")]}
    assert translate("responses", "messages", body)["system"] == "Be brief."
    chat = translate("responses", "chat", body)["messages"]
    assert chat == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


def test_responses_instructions_and_system_messages_join_in_order() -> None:
    body = {
        "model": "m",
        "instructions": "One.",
        "input": [said("system", "Two."), said("user", "hi"), said("developer", "Three.")],
    }
    assert translate("responses", "messages", body)["system"] == "One.\n\nTwo.\n\nThree."


def test_a_messages_text_block_without_its_text_is_empty_text() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "text"}, {"type": "text", "text": "hi"}]}
        ],
    }
    assert translate("messages", "chat", body)["messages"] == [{"role": "user", "content": "hi"}]
    items = translate("messages", "responses", body)["input"]
    assert items == [said("user", "hi")]


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("chat", {"model": "m"}, "a Chat Completions request needs a messages list"),
    (
        "chat",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}, "hello"]},
        "messages[1] is not an object",
    ),
    ("responses", {"model": "m"}, "a Responses request needs an input"),
    ("responses", {"model": "m", "input": 7}, "a Responses request needs an input"),
    (
        "responses",
        {"model": "m", "input": "hi", "previous_response_id": "resp_1"},
        "callgate cannot translate previous_response_id (send the input)",
    ),
    (
        "responses",
        {"model": "m", "input": "hi", "instructions": 5},
        "callgate cannot read the content of instructions",
    ),
    (
        "responses",
        {"model": "m", "input": "hi", "instructions": [{"type": "input_image"}]},
        "callgate cannot translate a 'input_image' part in instructions",
    ),
    (
        "responses",
        {"model": "m", "input": "hi", "text": {"format": {"type": "xml"}}},
        "callgate cannot translate the output format {'type': 'xml'} in text.format",
    ),
    ("responses", {"model": "m", "input": ["hi"]}, "input[0] is not an object"),
    (
        "responses",
        {"model": "m", "input": [{"type": "web_search_call"}]},
        "callgate cannot translate a 'web_search_call' item in input[0]",
    ),
    (
        "messages",
        {"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]},
        "callgate cannot translate the role 'system' of messages[0]",
    ),
]


@pytest.mark.parametrize(("client", "body", "words"), BAD, ids=[w for _, _, w in BAD])
def test_a_body_that_cannot_be_read_is_refused_in_words_that_name_its_fault(
    client: str, body: dict[str, Any], words: str
) -> None:
    upstream = "messages" if client != "messages" else "chat"
    with pytest.raises(RequestError) as refused:
        translate(client, upstream, body)
    assert str(refused.value) == words


def test_a_json_schema_format_keeps_its_name_on_another_wire() -> None:
    spec = {"name": "weather", "schema": {"type": "object"}, "strict": True}
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": spec},
    }
    out = translate("chat", "responses", body)
    assert out["text"] == {"format": {"type": "json_schema", **spec}}


def test_a_free_text_custom_tool_is_refused_by_name() -> None:
    tool = {"type": "custom", "name": "apply_patch", "description": "Patch files."}
    body = {"model": "m", "input": "hi", "tools": [tool]}
    with pytest.raises(RequestError) as refused:
        translate("responses", "chat", body)
    assert str(refused.value) == "callgate cannot translate the free-text tool 'apply_patch'"


def test_a_model_that_is_not_a_string_is_sent_as_none_named() -> None:
    body = {"model": 7, "messages": [{"role": "user", "content": "hi"}]}
    assert translate("chat", "responses", body)["model"] == ""


MORE_BAD: list[tuple[str, dict[str, Any], str]] = [
    (
        "chat",
        {"model": "m", "messages": [{"role": "assistant", "tool_calls": ["x"]}]},
        "a tool call of messages[0] has no function",
    ),
    (
        "responses",
        {"model": "m", "input": [{"role": "user", "content": [{"type": "refusal"}]}]},
        "callgate cannot translate a 'refusal' part in input[0]",
    ),
    (
        "responses",
        {
            "model": "m",
            "input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "x"}]}],
        },
        "callgate cannot translate a 'x' part in input[0]",
    ),
    (
        "responses",
        {"model": "m", "input": "hi", "tool_choice": {"type": "custom", "name": "apply_patch"}},
        "callgate cannot translate the tool_choice {'type': 'custom', 'name': 'apply_patch'}",
    ),
    (
        "chat",
        {
            "model": "m",
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{bad"}}],
                }
            ],
        },
        "callgate cannot translate the arguments of call 'c1': not JSON",
    ),
]


@pytest.mark.parametrize(("client", "body", "words"), MORE_BAD, ids=[w for _, _, w in MORE_BAD])
def test_a_part_item_or_call_that_cannot_be_read_is_refused_where_it_is(
    client: str, body: dict[str, Any], words: str
) -> None:
    with pytest.raises(RequestError) as refused:
        translate(client, "messages", body)
    assert str(refused.value) == words


def test_a_reasoning_summary_asked_for_is_left_out_and_logged() -> None:
    log: list[Rewrite] = []
    body = {"model": "m", "input": "hi", "reasoning": {"effort": "low", "summary": "auto"}}
    translate("responses", "chat", body, log)
    assert [(r.code, r.where) for r in log] == [("hint_dropped", "reasoning.summary")]


def test_an_empty_responses_message_adds_no_chat_message() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": ""},
    ]
    out = translate("responses", "chat", {"model": "m", "input": items})
    assert out["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."},
    ]


@pytest.mark.parametrize("kind", ["thinking", "redacted_thinking"])
def test_a_messages_reasoning_block_is_left_out_and_logged_with_its_place(kind: str) -> None:
    block = {"type": kind, "thinking": "hmm", "signature": "s", "data": "d"}
    said = {"type": "text", "text": "Hello."}
    body = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [block, said]},
        ],
    }
    log: list[Rewrite] = []
    out = translate("messages", "chat", body, log)
    assert out["messages"][1] == {"role": "assistant", "content": "Hello."}
    assert [(r.code, r.where) for r in log] == [("hint_dropped", "messages[1].content[0]")]
