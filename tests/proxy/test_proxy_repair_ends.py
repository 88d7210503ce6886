"""A repaired turn, as a client receives it: every block closed, the preamble shown once.

The writer of the client's wire is kept across the attempts of one exchange, so a text
block the first answer opened is closed in the repaired turn; the text of an answer to a
repair that repeats what the client already saw is not shown again.
"""

from __future__ import annotations

from typing import Any

from callgate.proxy.engine import Engine, GatedMessages, GatedTurn, Options
from callgate.testing.builders import WireText, anthropic_events, openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import WEATHER

REPAIR = Options(on_blocked="repair", repairs=2)
MESSAGES_REQUEST = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 512,
    "messages": [{"role": "user", "content": "go"}],
    "tools": [{"name": "get_weather", "input_schema": WEATHER["get_weather"]}],
    "stream": True,
}
CHAT_REQUEST = {
    "model": "gpt-4.1",
    "messages": [{"role": "user", "content": "go"}],
    "tools": [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": WEATHER["get_weather"]},
        }
    ],
    "stream": True,
}
BAD = WireCall("toolu_1", "get_weather", ('{"town": "Paris"}',))
GOOD = WireCall("toolu_2", "get_weather", ('{"city": "Paris"}',))


def _answer(preamble: str, call: WireCall) -> list[dict[str, Any]]:
    blocks = [WireText((preamble[:5], preamble[5:])), call]
    return anthropic_events(blocks, [0, 0, 0, 0, 1, 1, 1])


def _exchange(first: Engine, answers: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every attempt's events through one exchange, as the proxy plays them."""
    turn, out = first, []
    for n, answer in enumerate(answers):
        if n:
            assert turn.repair is not None
            turn = turn.follow_up()
        for chunk in answer:
            out += turn.feed(chunk)
        out += turn.finish()
    if turn.repair is not None:
        out += turn.give_up()
    return out


def _blocks(out: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Each content block's events by index, in order."""
    seen: dict[int, list[str]] = {}
    for event in out:
        if event["type"].startswith("content_block"):
            seen.setdefault(event["index"], []).append(event["type"])
    return seen


def _text(out: list[dict[str, Any]]) -> str:
    return "".join(e["delta"].get("text", "") for e in out if e["type"] == "content_block_delta")


def test_a_repaired_messages_turn_closes_every_block_it_opened() -> None:
    out = _exchange(
        GatedMessages(MESSAGES_REQUEST, REPAIR),
        [_answer("Sure, checking.", BAD), _answer("Sure, checking.", GOOD)],
    )
    blocks = _blocks(out)
    assert sorted(blocks) == list(range(len(blocks)))
    for index, kinds in blocks.items():
        assert kinds[0] == "content_block_start" and kinds[-1] == "content_block_stop", index
        assert kinds.count("content_block_stop") == 1, index
    assert [e["type"] for e in out][-2:] == ["message_delta", "message_stop"]
    assert out[-2]["delta"]["stop_reason"] == "tool_use"


LINE = "A call to get_weather was not run: its arguments did not match the tool."
"""The notice a person reads once the repairs are spent."""


def test_a_failed_repair_shows_the_preamble_once() -> None:
    out = _exchange(
        GatedMessages(MESSAGES_REQUEST, REPAIR),
        [_answer("Sure, checking both.", BAD)] * 3,
    )
    text = _text(out)
    assert text.count("Sure, checking both.") == 1
    assert text.endswith("\n\n" + LINE)
    assert out[-2]["delta"]["stop_reason"] == "end_turn"


def test_a_repair_that_says_something_new_shows_what_is_new() -> None:
    out = _exchange(
        GatedMessages(MESSAGES_REQUEST, REPAIR),
        [_answer("Sure, checking.", BAD), _answer("Sure, checking again.", GOOD)],
    )
    assert _text(out) == "Sure, checking. again."


def test_a_failed_chat_repair_shows_the_preamble_once() -> None:
    bad = WireCall("call_1", "get_weather", ('{"town": "Paris"}',))
    answer = openai_chunks([bad], [0, 0], text=["Sure, ", "checking both."])
    out = _exchange(GatedTurn(CHAT_REQUEST, REPAIR), [answer] * 3)
    content = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in out if c.get("choices")
    )
    assert content.count("Sure, checking both.") == 1
    assert content.endswith("\n\n" + LINE)
    assert sum(1 for c in out if c.get("choices") and c["choices"][0]["finish_reason"]) == 1
