"""Message shapes and finding texts of the native wires that real streams reach.

Content given as typed parts (Mistral's magistral), error frames, repeated terminals and
unknown events: what the assembled message holds and what each finding says, exactly.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.strategies.anthropic import AnthropicStrategy
from callgate.strategies.openai import OpenAIStrategy


def openai(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [choice], **extra}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(*pieces: Any) -> dict[str, Any]:
    return {"type": "thinking", "thinking": list(pieces)}


def fed(*chunks: dict[str, Any]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
    for chunk in chunks:
        buffer.add(chunk)
    return buffer


def found(buffer: LLMStreamBuffer) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in buffer.findings]


def test_parts_of_one_kind_merge_and_kinds_keep_their_order() -> None:
    buffer = fed(
        openai({"role": "assistant", "content": [thinking(text("Two "))]}),
        openai({"content": [thinking(text("plus two."), text(" Four."))]}),
        openai({"content": [text("It is "), text("4")]}),
        openai({"content": [text(".")]}),
        openai({"content": [thinking(text("Check."))]}),
        openai({"content": "!"}),
        openai({}, "stop"),
    )
    assert buffer.as_dict()["content"] == [
        thinking(text("Two plus two. Four.")),
        text("It is 4."),
        thinking(text("Check.")),
        text("!"),
    ]
    assert buffer.findings == []


def test_text_before_the_first_part_becomes_the_first_text_part() -> None:
    buffer = fed(
        openai({"role": "assistant", "content": "Hi"}),
        openai({"content": " there"}),
        openai({"content": [thinking(text("hmm"))]}),
        openai({}, "stop"),
    )
    content = buffer.as_dict()["content"]
    assert content == [text("Hi there"), thinking(text("hmm"))]


def test_thinking_pieces_that_are_not_text_are_left_out() -> None:
    buffer = fed(
        openai({"role": "assistant", "content": [thinking(text("a"), "b", {"text": 7})]}),
        openai({"content": [thinking({"type": "text", "text": "c"})]}),
        openai({}, "stop"),
    )
    assert buffer.as_dict()["content"] == [thinking(text("ac"))]


def test_two_thousand_text_parts_make_one_text_part() -> None:
    pieces = [openai({"content": [text("x")]}) for _ in range(2000)]
    buffer = fed(openai({"role": "assistant", "content": [text("")]}), *pieces)
    assert buffer.as_dict()["content"] == [text("x" * 2000)]
    assert buffer.as_dict() == buffer.as_dict(), "reading the message changes nothing"


@pytest.mark.parametrize("content", [5, {"text": "x"}, None])
def test_content_that_is_neither_text_nor_parts_is_a_malformed_chunk(content: object) -> None:
    buffer = fed(openai({"role": "assistant", "content": content}))
    if content is None:
        assert buffer.findings == []
        return
    assert [code for code, _ in found(buffer)] == ["malformed_chunk"]
    assert found(buffer)[0][1].startswith("delta.content is not text or parts: ")


def test_an_error_frame_names_its_code_and_message() -> None:
    buffer = fed(
        openai({"role": "assistant", "content": "Let me"}),
        {"error": {"code": "tool_use_failed", "message": "Failed to call a function"}},
    )
    assert found(buffer)[0] == (
        "provider_error",
        "the provider reported tool_use_failed: Failed to call a function",
    )


def test_a_repeated_bare_terminal_says_which_reason_came_again() -> None:
    buffer = fed(
        openai({"role": "assistant", "content": "Done."}),
        openai({}, "stop"),
        openai({}, "stop", usage={"total_tokens": 3}),
    )
    assert found(buffer) == [
        ("repeated_terminal", "finish_reason 'stop' again, on a bare chunk"),
    ]


def test_an_event_anthropic_does_not_know_is_quoted_in_its_finding() -> None:
    buffer = LLMStreamBuffer(strategy=AnthropicStrategy())
    buffer.add({"type": "message_start", "message": {"id": "m", "role": "assistant",
                                                      "content": []}})  # fmt: skip
    buffer.add({"type": "message_wobble", "n": 1})
    assert found(buffer) == [
        (
            "malformed_chunk",
            "not an Anthropic stream event: {'type': 'message_wobble', 'n': 1}",
        )
    ]


def test_an_anthropic_call_no_turn_call_matches_goes_back_with_its_own_input() -> None:
    history = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": ""},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
            ],
        }
    ]
    repaired, placed = AnthropicStrategy().answerable(history, [])
    assert repaired == [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
        }
    ]
    assert [(c.id, c.name, c.arguments) for c in placed] == [("toolu_1", "f", {"a": 1})]


@pytest.mark.parametrize(
    ("error", "named"),
    [
        ({"type": "rate_limit", "message": "slow down"}, "rate_limit: slow down"),
        ({"code": "", "type": "server_error", "message": "m"}, "server_error: m"),
        ({"message": "no kind given"}, "an error: no kind given"),
        ({"code": "x"}, "x: None"),
    ],
)
def test_an_error_frame_names_its_code_or_type_or_says_an_error(
    error: dict[str, Any], named: str
) -> None:
    buffer = fed(openai({"role": "assistant", "content": "a"}), {"error": error})
    assert found(buffer)[0] == ("provider_error", f"the provider reported {named}")


def test_an_unreadable_content_part_is_a_malformed_chunk_and_the_rest_is_kept() -> None:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
    buffer.add(openai({"role": "assistant", "content": [text("a"), {"type": "image"}, text("b")]}))
    assert [code for code, _ in found(buffer)] == ["malformed_chunk"]
    assert found(buffer)[0][1] == "a content part callgate cannot read: {'type': 'image'}"
    assert buffer.text() == "ab"
    assert buffer.as_dict()["content"] == [text("ab")]


def test_content_that_is_not_text_shows_nothing() -> None:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
    buffer.add(openai({"role": "assistant", "content": "seen "}))
    buffer.add(openai({"content": 5}))
    buffer.add(openai({"content": [text("more")]}))
    assert buffer.text() == "seen more"
    assert buffer.as_dict()["content"] == [text("seen more")]
