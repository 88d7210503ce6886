"""Whole messages and the ledger: a call runs at most once per conversation, as in a stream.

MCS's non-streaming loop hands every response to the same driver
(``driver.process_llm_response(message)``) and extends its history. A stream's calls are
kept at most once by the buffer's ledger, which outlives ``reset()``; a driver's whole
messages share the driver's ledger the same way (or the conversation's, given as
``ledger=``). The property: processing a message ``k`` times runs what replaying its
stream ``k`` times through one buffer runs, on every wire that replays a message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate import Driver, Ledger, Tool, run_turn
from callgate.strategies import AnthropicStrategy, OpenAIStrategy
from callgate.strategies.base import ExtractionStrategy
from provider_rules import validate_anthropic, validate_openai

OPENAI_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "add", "arguments": '{"a": 1}'}},
    ],
}  # fmt: skip
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4.1",
    "choices": [{"index": 0, "message": OPENAI_MESSAGE, "finish_reason": "tool_calls"}],
}
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude",
    "content": [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}}],
    "stop_reason": "tool_use",
}
TEXT_CALL = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'


class Adder:
    """The one tool ``add``; each run recorded."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def driver(self, **options: Any) -> Driver:
        def add(a: int) -> str:
            self.runs.append({"a": a})
            return str(a + 1)

        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        return Driver([Tool("add", schema, add)], text_formats=["tool_call_tag"], **options)


def test_the_same_message_twice_runs_its_call_once_and_answers_it_twice() -> None:
    adder = Adder()
    driver = adder.driver()
    first = driver.process_llm_response(OPENAI_MESSAGE)
    again = driver.process_llm_response(OPENAI_MESSAGE)
    assert adder.runs == [{"a": 1}]
    assert first.call_executed and again.call_executed
    assert [(r.content, r.replayed) for r in first.results] == [("2", False)]
    assert [(r.content, r.replayed) for r in again.results] == [("2", True)]
    assert again.messages == first.messages
    validate_openai(again.messages)


def test_an_anthropic_message_twice_runs_once_and_its_history_keeps_unique_ids() -> None:
    adder = Adder()
    driver = adder.driver()
    first = driver.process_llm_response(ANTHROPIC_MESSAGE)
    again = driver.process_llm_response(ANTHROPIC_MESSAGE)
    assert adder.runs == [{"a": 1}]
    assert [r.replayed for r in again.results] == [True]
    history = [{"role": "user", "content": "add 1"}, *first.messages, *again.messages]
    validate_anthropic(history)
    ids = [b["id"] for m in history if m["role"] == "assistant" for b in m["content"]]
    assert len(set(ids)) == len(ids) == 2, "Anthropic refuses one tool_use id twice"


def test_each_conversation_s_ledger_is_its_own() -> None:
    adder = Adder()
    driver = adder.driver()
    one, two = Ledger(), Ledger()
    driver.process_llm_response(OPENAI_MESSAGE, ledger=one)
    driver.process_llm_response(OPENAI_MESSAGE, ledger=two)
    driver.process_llm_response(OPENAI_MESSAGE, ledger=one)
    assert adder.runs == [{"a": 1}, {"a": 1}]
    assert "call_1" in one and "call_1" in two


def test_a_call_streamed_once_is_not_run_again_when_its_message_comes_whole() -> None:
    adder = Adder()
    driver = adder.driver()
    ledger = Ledger()
    chunks = OpenAIStrategy().replay(COMPLETION)
    turn = run_turn(chunks, driver, driver.new_stream_buffer(ledger=ledger))
    assert turn.status == "pass"
    whole = driver.process_llm_response(COMPLETION, ledger=ledger)
    assert adder.runs == [{"a": 1}]
    assert [r.replayed for r in whole.results] == [True]


def runs_streamed(wire: ExtractionStrategy, message: Any, times: int) -> list[dict[str, Any]]:
    """What replaying ``message``'s stream ``times`` times through one buffer runs."""
    adder = Adder()
    driver = adder.driver()
    buffer = driver.new_stream_buffer()
    for _ in range(times):
        run_turn(wire.replay(message), driver, buffer)
    return adder.runs


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (OpenAIStrategy(), OPENAI_MESSAGE),
        (OpenAIStrategy(), COMPLETION),
        (AnthropicStrategy(), ANTHROPIC_MESSAGE),
        (OpenAIStrategy(), {"role": "assistant", "content": "Adding. " + TEXT_CALL}),
        (OpenAIStrategy(), {**COMPLETION, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": TEXT_CALL},
             "finish_reason": "stop"}]}),
    ],
    ids=["message", "completion", "anthropic", "text-call", "text-call-with-identity"],
)  # fmt: skip
@pytest.mark.parametrize("times", [1, 2, 3])
def test_processing_a_message_k_times_runs_what_its_stream_k_times_runs(
    wire: ExtractionStrategy, message: Any, times: int
) -> None:
    adder = Adder()
    driver = adder.driver()
    for _ in range(times):
        response = driver.process_llm_response(json.loads(json.dumps(message)))
        assert response.call_executed
    assert adder.runs == runs_streamed(wire, message, times)
    assert adder.runs, "the message's call ran at least once"


def test_a_plain_string_with_a_text_call_is_a_new_turn_each_time() -> None:
    """An id-less text call is known by its turn: a string has no identity, so it runs again."""
    adder = Adder()
    driver = adder.driver()
    driver.process_llm_response(TEXT_CALL)
    driver.process_llm_response(TEXT_CALL)
    assert adder.runs == [{"a": 1}, {"a": 1}]


def test_the_driver_s_own_ledger_is_shared_by_its_whole_messages_only() -> None:
    adder = Adder()
    driver = adder.driver()
    driver.process_llm_response(OPENAI_MESSAGE)
    assert "call_1" in driver.ledger
    assert driver.new_stream_buffer().ledger is not driver.ledger, "a buffer is its own"
    given = Ledger()
    assert adder.driver(ledger=given).ledger is given


# -- bad input -----------------------------------------------------------------------------


def test_a_ledger_that_is_no_ledger_is_refused_and_nothing_runs() -> None:
    adder = Adder()
    with pytest.raises(TypeError, match="ledger must be a Ledger"):
        adder.driver().process_llm_response(OPENAI_MESSAGE, ledger={})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ledger must be a Ledger"):
        adder.driver(ledger="conversation-1")
    assert adder.runs == []


def test_a_buffer_comes_with_its_own_ledger() -> None:
    adder = Adder()
    driver = adder.driver()
    buffer = driver.new_stream_buffer()
    with pytest.raises(ValueError, match="a buffer has its own ledger"):
        driver.process_llm_response(buffer, ledger=Ledger())
    assert driver.process_llm_response(buffer, ledger=buffer.ledger).status is None
