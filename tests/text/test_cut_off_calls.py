"""A text call whose turn was cut (a length limit, a filter) is not run, as a native one is not.

A block that closed before the cut is complete as text, but the turn did not end
normally: ``check``, ``replay``, the bare buffer and ``run_turn`` refuse it with
``wrong_terminal_reason``, and the model is told the server cut the turn. The normal end
(``stop``) still runs it. Each refusal test failed before the buffer read the turn's end
for text calls (the call ran under ``length``).
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.cli.check import check_stream
from callgate.cli.replay import replay

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def stream(reason: str, size: int) -> list[dict[str, Any]]:
    """An OpenAI-compatible turn whose content holds one text call, ended with ``reason``."""
    head = {"id": "c1", "object": "chat.completion.chunk", "model": "qwen3-8b"}
    text = "Checking. " + CALL
    chunks = [
        {
            **head,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": text[i : i + size]}}
            ],
        }
        for i in range(0, len(text), size)
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    return chunks


def anthropic_stream(reason: str) -> list[dict[str, Any]]:
    """An Anthropic turn whose text block holds one text call, ended with ``reason``."""
    return [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 0},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": CALL}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]


def loop(chunks: list[dict[str, Any]]) -> tuple[str, list[str], list[str]]:
    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return "sunny"

    driver = Driver([Tool("get_weather", WEATHER, get_weather)], text_formats=["tool_call_tag"])
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    return turn.status, ran, [r.content for r in turn.results]


@pytest.mark.parametrize("size", [1, 7, 1000])
@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_closed_text_call_of_a_cut_turn_is_refused_everywhere(reason: str, size: int) -> None:
    chunks = stream(reason, size)
    status, ran, answers = loop(chunks)
    assert (status, ran) == ("fail", [])
    assert len(answers) == 1 and "not at fault" in answers[0]
    checked = check_stream(chunks, {"get_weather": WEATHER}, text_formats=["tool_call_tag"])
    assert checked["status"] == "fail"
    assert "wrong_terminal_reason" in [f["code"] for f in checked["findings"]]
    assert [c["state"] for c in checked["calls"]] == ["blocked"]
    replayed = replay(chunks, {"get_weather": WEATHER}, text_formats=["tool_call_tag"])
    assert replayed["status"] == "fail"
    assert "<tool_call>" not in "".join(replayed["display"])
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER}, text_formats=["tool_call_tag"])
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    assert buffer.verdict == "fail"


@pytest.mark.parametrize("size", [1, 1000])
def test_the_same_call_after_a_normal_end_runs(size: int) -> None:
    status, ran, _ = loop(stream("stop", size))
    assert (status, ran) == ("pass", ["Paris"])


def test_an_anthropic_text_call_cut_by_max_tokens_is_refused_and_end_turn_runs() -> None:
    assert loop(anthropic_stream("max_tokens"))[:2] == ("fail", [])
    assert loop(anthropic_stream("end_turn"))[:2] == ("pass", ["Paris"])


def test_the_refusal_names_the_reason_and_the_message_keeps_the_text() -> None:
    chunks = stream("length", 1000)
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER}, text_formats=["tool_call_tag"])
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    messages = [f.message for f in buffer.findings if f.code == "wrong_terminal_reason"]
    assert messages and "'length'" in messages[0]
    assert buffer.as_dict()["content"] == "Checking. " + CALL
