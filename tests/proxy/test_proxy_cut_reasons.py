"""The gateway reads a wire's cut reasons off its record, as the library does.

A stop reason the Anthropic record lists as a cut (a length limit or a filter) cuts the
proxied turn too: the client receives no ``tool_use`` and the cut as its stop reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy.engine import Engine, Options
from callgate.proxy.messages import GatedMessages
from callgate.proxy.wires.base import CUT
from callgate.proxy.wires.chat import ChatReader
from callgate.proxy.wires.messages import MessagesReader
from callgate.strategies.anthropic import ANTHROPIC
from callgate.strategies.openai import OPENAI
from callgate.testing.builders import WireText, anthropic_events
from proxy_cases import QWEN, WEATHER

REQUEST = {
    "model": "qwen3-30b-a3b",
    "max_tokens": 512,
    "messages": [{"role": "user", "content": "weather?"}],
    "tools": [{"name": "get_weather", "input_schema": WEATHER["get_weather"]}],
    "stream": True,
}


def played(stop: str) -> list[dict[str, Any]]:
    """A leaked Qwen call in Anthropic text, ended with ``stop``, as the client receives it."""
    events = anthropic_events([WireText(tuple(QWEN))], [0] * (len(QWEN) + 2))
    for event in events:
        if event["type"] == "message_delta":
            event["delta"]["stop_reason"] = stop
    turn = GatedMessages(REQUEST, Options(on_blocked="notice"))
    out: list[dict[str, Any]] = []
    for event in events:
        out += turn.feed(event)
    return out + turn.finish()


def test_every_cut_reason_of_a_record_is_a_cut_for_its_reader() -> None:
    for record, reader in ((ANTHROPIC, MessagesReader), (OPENAI, ChatReader)):
        assert record.terminal.cuts
        for reason in record.terminal.cuts:
            assert reader.finishes.get(reason, reason) in CUT, (record.name, reason)


def through_chat(stop: str) -> list[dict[str, Any]]:
    """The same turn from an Anthropic upstream to a Chat Completions client."""
    request = {
        "model": "qwen3-30b-a3b",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": WEATHER["get_weather"]},
            }
        ],
        "stream": True,
    }
    events = anthropic_events([WireText(tuple(QWEN))], [0] * (len(QWEN) + 2))
    for event in events:
        if event["type"] == "message_delta":
            event["delta"]["stop_reason"] = stop
    engine = Engine(request, Options(on_blocked="notice"), client="chat", upstream="messages")
    out: list[dict[str, Any]] = []
    for event in events:
        out += engine.feed(event)
    return out + engine.finish()


@pytest.mark.parametrize("stop", sorted(ANTHROPIC.terminal.length))
def test_a_turn_cut_by_a_length_reason_is_cut_on_another_wire(stop: str) -> None:
    out = through_chat(stop)
    finishes = [c["choices"][0].get("finish_reason") for c in out if c.get("choices")]
    assert [f for f in finishes if f] == ["length"]
    assert not any(c["choices"][0]["delta"].get("tool_calls") for c in out if c.get("choices"))


@pytest.mark.parametrize("stop", sorted(ANTHROPIC.terminal.length))
def test_a_turn_cut_by_a_length_reason_delivers_no_tool_use(stop: str) -> None:
    out = played(stop)
    assert not [
        e
        for e in out
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"
    ]
    ending = next(e for e in out if e["type"] == "message_delta")
    assert ending["delta"]["stop_reason"] == stop


def test_the_uncut_turn_delivers_its_call() -> None:
    out = played("end_turn")
    assert [
        e
        for e in out
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"
    ]
