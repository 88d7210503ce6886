"""A history with native and text answers never holds two user messages in a row.

Anthropic (and Bedrock, and Gemini) answer native calls in a user message; the answers of
calls written in the text are a text-style continuation, also from the user. A turn with
both (a text call set aside beside native calls, or a text call nobody here owns) puts
them in one user message, the results first and the text after: user and assistant turns
alternate, as the providers want them. Checked on every mix of native and text calls, in
any order, and against the anthropic SDK's own request types.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import Driver, Tool, run_turn
from callgate.driver.responses import TEXT_RESULTS, shaped
from callgate.strategies import BedrockStrategy, GeminiStrategy
from callgate.strategies.base import ExtractedCall, ToolResult
from callgate.testing import interleavings
from callgate.testing.builders import Block, WireText, anthropic_events
from callgate.testing.wires import WireCall
from provider_rules import validate_anthropic

CALL = '<tool_call>{{"name": "{name}", "arguments": {{"a": {a}}}}}</tool_call>'
"""A call written into the text (Hermes' tag)."""


@st.composite
def blocks(draw: st.DrawFn) -> list[Block]:
    """One to four blocks: native calls (owned, unknown, malformed) and text with calls."""
    made: list[Block] = []
    for n in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(["add", "sub"]))
        if draw(st.booleans()):
            arguments = draw(st.sampled_from([f'{{"a": {n}}}', "{", '{"a": NaN}']))
            made.append(WireCall(f"toolu_{n}", name, (arguments,)))
        else:
            made.append(WireText((f"Text {n}. ", CALL.format(name=name, a=n))))
    return made


def adder(ran: list[Any]) -> Driver:
    tool = Tool("add", {"type": "object"}, lambda **arguments: ran.append(arguments) or "ok")
    return Driver([tool], text_formats=["tool_call_tag"])


def alternates(history: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in history]
    return all(a != b for a, b in pairwise(roles))


@settings(max_examples=150, deadline=None)
@given(turn=blocks(), data=st.data())
def test_a_turn_s_history_alternates_and_the_sdk_accepts_it(turn: list[Block], data: Any) -> None:
    order = data.draw(interleavings([2 + len(block.fragments) for block in turn]))
    events = anthropic_events(turn, order)
    ran: list[Any] = []
    driver = adder(ran)
    buffer = driver.new_stream_buffer()
    played = run_turn(events, driver, buffer)
    history = [{"role": "user", "content": "go"}, *played.history]
    assert alternates(history), [m["role"] for m in history]
    validate_anthropic(history)
    whole = driver.process_llm_response(buffer.as_dict())
    if whole.messages:
        assert alternates([{"role": "user", "content": "go"}, *whole.messages])
        validate_anthropic([{"role": "user", "content": "go"}, *whole.messages])


def results(*slots: int | str) -> list[ToolResult]:
    return [ToolResult(ExtractedCall(f"id_{s}", "add", {}, s), f"answer {s}") for s in slots]


def test_bedrock_and_gemini_answers_take_the_text_in_their_one_user_message() -> None:
    bedrock = shaped(BedrockStrategy(), results(0), TEXT_RESULTS, results("text-0.0"))
    assert [m["role"] for m in bedrock] == ["user"]
    assert bedrock[0]["content"][-1] == {"text": "[result of add] answer text-0.0"}
    assert "toolResult" in bedrock[0]["content"][0]
    gemini = shaped(GeminiStrategy(), results(0), TEXT_RESULTS, results("text-0.0"))
    assert [m["role"] for m in gemini] == ["user"]
    assert gemini[0]["parts"][-1] == {"text": "[result of add] answer text-0.0"}


def test_text_answers_alone_are_one_user_message_in_the_wire_s_shape() -> None:
    words = "[result of add] answer text-0.0"
    alone = shaped(BedrockStrategy(), [], TEXT_RESULTS, results("text-0.0"))
    assert alone == [{"role": "user", "content": [{"text": words}]}]
    alone = shaped(GeminiStrategy(), [], TEXT_RESULTS, results("text-0.0"))
    assert alone == [{"role": "user", "parts": [{"text": words}]}]
    alone = shaped(None, [], TEXT_RESULTS, results("text-0.0"))
    assert alone == [{"role": "user", "content": words}]
