"""The next request's history keeps each provider's documented request rules.

Anthropic: no text block empty or only whitespace ("text content blocks must contain
non-whitespace text"), and no two ``tool_use`` blocks with one id in the whole
conversation ("tool_use ids must be unique"). Bedrock: no blank text block ("The text
field in the ContentBlock object is blank"). Gemini: no empty text part ("an empty text
parameter"); a space is accepted there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import callgate
from callgate import Tool
from callgate.testing.builders import WireText, anthropic_events, split
from callgate.testing.wires import WireCall
from provider_rules import anthropic_problems, validate_anthropic, validate_bedrock

Chunk = dict[str, Any]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def driver(ran: list[str] | None = None) -> callgate.Driver:
    def get_weather(city: str = "") -> str:
        if ran is not None:
            ran.append(city)
        return f"sunny in {city}"

    return callgate.Driver([Tool("get_weather", SCHEMA, get_weather)], text_formats=())


def anthropic_turn(text: str | None, *calls: WireCall) -> list[Chunk]:
    blocks: list[Any] = [WireText(split(text, (3,)) or ("",))] if text is not None else []
    blocks += calls
    order = [n for n, block in enumerate(blocks) for _ in range(2 + len(block.fragments))]
    return anthropic_events(blocks, order)


def weather(call_id: str, city: str) -> WireCall:
    return WireCall(call_id, "get_weather", (json.dumps({"city": city}),))


def converse(turns: list[list[Chunk]]) -> tuple[list[Any], list[callgate.Turn]]:
    """Play the turns through one buffer; the messages a client would send, and the turns."""
    chosen = driver()
    buffer = chosen.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": "weather?"}]
    played = []
    for chunks in turns:
        played.append(callgate.run_turn(chunks, chosen, buffer))
        messages += played[-1].history
    return messages, played


@pytest.mark.parametrize("text", ["", " ", "\n\n", " \t\n "])
def test_an_anthropic_text_block_of_whitespace_is_left_out_of_the_history(text: str) -> None:
    messages, [turn] = converse([anthropic_turn(text, weather("toolu_1", "Paris"))])
    assert turn.text == text
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use"]
    validate_anthropic(messages)


def test_text_with_something_in_it_stays_as_it_came() -> None:
    messages, _ = converse([anthropic_turn("\n Checking. \n", weather("toolu_1", "Paris"))])
    assert messages[1]["content"][0] == {"type": "text", "text": "\n Checking. \n"}


def test_a_turn_of_only_whitespace_text_leaves_no_message() -> None:
    messages, [turn] = converse([anthropic_turn("\n\n")])
    assert turn.history == ()
    assert messages == [{"role": "user", "content": "weather?"}]


def test_an_id_reused_on_a_later_anthropic_turn_gets_a_stand_in_in_message_and_answer() -> None:
    messages, turns = converse(
        [
            anthropic_turn("Paris.", weather("toolu_1", "Paris")),
            anthropic_turn("Rome.", weather("toolu_1", "Rome")),
        ]
    )
    assert not anthropic_problems(messages)
    validate_anthropic(messages)
    [first], [second] = (t.results for t in turns)
    assert (first.call.id, first.content) == ("toolu_1", "sunny in Paris")
    assert (second.call.id, second.content) == ("callgate_1", "sunny in Rome")
    assert messages[3]["content"][1]["id"] == "callgate_1"
    assert messages[4]["content"][0]["tool_use_id"] == "callgate_1"


def test_stand_ins_do_not_repeat_across_turns_either() -> None:
    turns = [
        anthropic_turn("a", weather("toolu_1", "Paris")),
        anthropic_turn("b", weather("toolu_1", "Rome")),
        anthropic_turn("c", weather("toolu_1", "Oslo")),
        anthropic_turn("d", weather("callgate_1", "Bern")),
    ]
    messages, played = converse(turns)
    validate_anthropic(messages)
    assert [t.results[0].call.id for t in played] == [
        "toolu_1",
        "callgate_1",
        "callgate_1_2",
        "callgate_1_3",
    ]


def test_gathering_a_turn_twice_gives_the_same_history() -> None:
    chosen = driver()
    buffer = chosen.new_stream_buffer()
    callgate.run_turn(anthropic_turn("a", weather("toolu_1", "Paris")), chosen, buffer)
    steps = list(
        callgate.stream_turn(anthropic_turn("b", weather("toolu_1", "Rome")), chosen, buffer)
    )
    once, twice = callgate.finish_turn(buffer, steps), callgate.finish_turn(buffer, steps)
    assert once.history == twice.history
    assert once.history[0]["content"][1]["id"] == "callgate_1"


def test_openai_ids_reused_per_turn_go_back_as_they_came() -> None:
    """Chat Completions accepts an id another turn used (servers number ids per turn)."""
    chunk = {"choices": [{"index": 0, "delta": {}, "finish_reason": None}]}

    def turn(city: str) -> list[Chunk]:
        call = {"index": 0, "id": "call_0", "function": {"name": "get_weather"}}
        call["function"]["arguments"] = json.dumps({"city": city})
        opening = json.loads(json.dumps(chunk))
        opening["choices"][0]["delta"] = {"tool_calls": [call]}
        end = json.loads(json.dumps(chunk))
        end["choices"][0]["finish_reason"] = "tool_calls"
        return [opening, end]

    chosen = driver()
    buffer = chosen.new_stream_buffer()
    ids = [callgate.run_turn(turn(city), chosen, buffer).results[0].call.id for city in ("a", "b")]
    assert ids == ["call_0", "call_0"]


def bedrock_turn(text: str) -> list[Chunk]:
    use = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}}
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": text}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"contentBlockIndex": 1, "start": use}},
        {
            "contentBlockDelta": {
                "contentBlockIndex": 1,
                "delta": {"toolUse": {"input": '{"city": "Paris"}'}},
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


@pytest.mark.parametrize("text", [" ", "\n\n"])
def test_a_blank_bedrock_text_block_is_left_out_of_the_history(text: str) -> None:
    ran: list[str] = []
    chosen = driver(ran)
    turn = callgate.run_turn(bedrock_turn(text), chosen, chosen.new_stream_buffer())
    assert ran == ["Paris"]
    assert [list(b) for b in turn.history[0]["content"]] == [["toolUse"]]
    validate_bedrock([{"role": "user", "content": [{"text": "weather?"}]}, *turn.history])


def gemini_turn(text: str) -> list[Chunk]:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    return [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]},
    ]


def test_an_empty_gemini_text_part_is_left_out_and_whitespace_kept() -> None:
    """The stream's assembly already drops an empty text part (this held before the sweep)."""
    chosen = driver()
    empty = callgate.run_turn(gemini_turn(""), chosen, chosen.new_stream_buffer())
    assert [list(p) for p in empty.history[0]["parts"]] == [["functionCall"]]
    space = callgate.run_turn(gemini_turn(" "), chosen, chosen.new_stream_buffer())
    assert space.history[0]["parts"][0] == {"text": " "}


def test_a_steps_messages_carry_the_same_stand_in_as_the_turns_history() -> None:
    """A driver's step answers with the assistant message too: it avoids earlier ids alike."""
    chosen = driver()
    buffer = chosen.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": "weather?"}]
    for city in ("Paris", "Rome"):
        steps = list(
            callgate.stream_turn(anthropic_turn(city, weather("toolu_1", city)), chosen, buffer)
        )
        [answered] = [s.response for s in steps if s.response.messages]
        turn = callgate.finish_turn(buffer, steps)
        assert list(answered.messages) == list(turn.history)
        messages += answered.messages
    validate_anthropic(messages)
    assert messages[3]["content"][1]["id"] == "callgate_1"
    assert messages[4]["content"][0]["tool_use_id"] == "callgate_1"
