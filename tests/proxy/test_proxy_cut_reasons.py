"""The gateway reads a wire's cut reasons off its record, as the library does.

A stop reason the Anthropic record lists as a cut (a length limit or a filter) cuts the
proxied turn too: the client receives no ``tool_use`` and the cut as its stop reason. So
does a Responses ``response.incomplete`` whose reason the Responses record lists: its call
is withheld, and the client is told the answer was cut.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy.engine import Engine, GatedResponses, Options
from callgate.proxy.messages import GatedMessages
from callgate.proxy.wires.base import CUT, Reader
from callgate.proxy.wires.chat import ChatReader
from callgate.proxy.wires.messages import MessagesReader
from callgate.proxy.wires.responses import ResponsesReader
from callgate.strategies.anthropic import ANTHROPIC
from callgate.strategies.openai import OPENAI
from callgate.strategies.responses import RESPONSES, ResponsesStrategy
from callgate.strategies.wire import Wire
from callgate.testing.builders import WireText, anthropic_events
from proxy_cases import QWEN, WEATHER
from test_proxy_responses_wire import QWEN_REQUEST, QWEN_RESPONSE

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


READERS: list[tuple[Wire, type[Reader]]] = [
    (ANTHROPIC, MessagesReader),
    (OPENAI, ChatReader),
    (RESPONSES, ResponsesReader),
]


def on_the_wire(reason: str) -> str:
    """A record's reason as the upstream's event carries it (Responses: after ``incomplete: ``)."""
    return reason.removeprefix("incomplete: ")


def test_every_cut_reason_of_a_record_is_a_cut_for_its_reader() -> None:
    for record, reader in READERS:
        assert record.terminal.cuts
        for reason in record.terminal.cuts:
            assert reader.finishes.get(on_the_wire(reason)) in CUT, (record.name, reason)


@pytest.mark.parametrize(("record", "reader"), READERS, ids=[r.name for r, _ in READERS])
def test_a_reader_cuts_on_exactly_the_reasons_of_its_record(
    record: Wire, reader: type[Reader]
) -> None:
    cuts = {reason for reason, kind in reader.finishes.items() if kind in CUT}
    assert cuts == {on_the_wire(reason) for reason in record.terminal.cuts}
    length = {reason for reason, kind in reader.finishes.items() if kind == "length"}
    assert length == {on_the_wire(reason) for reason in record.terminal.length}


CHAT_REQUEST = {
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
"""A Chat Completions client's request for the same turn."""


def through_chat(stop: str) -> list[dict[str, Any]]:
    """The same turn from an Anthropic upstream to a Chat Completions client."""
    events = anthropic_events([WireText(tuple(QWEN))], [0] * (len(QWEN) + 2))
    for event in events:
        if event["type"] == "message_delta":
            event["delta"]["stop_reason"] = stop
    engine = Engine(CHAT_REQUEST, Options(on_blocked="notice"), client="chat", upstream="messages")
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


def responses_turn(reason: str | None) -> list[dict[str, Any]]:
    """A Responses turn whose text holds a whole Qwen call of get_weather.

    It ends with ``response.incomplete`` for ``reason`` (None: ``response.completed``).
    """
    events = ResponsesStrategy().replay(QWEN_RESPONSE)
    if reason is None:
        return events
    details = {"reason": reason}
    response = {**QWEN_RESPONSE, "status": "incomplete", "incomplete_details": details}
    return [*events[:-1], {"type": "response.incomplete", "response": response}]


RESPONSES_CUTS = sorted(RESPONSES.terminal.cuts)


@pytest.mark.parametrize("reason", RESPONSES_CUTS)
def test_a_responses_turn_cut_by_a_record_reason_withholds_its_call(reason: str) -> None:
    upstream = on_the_wire(reason)
    turn = GatedResponses(QWEN_REQUEST, Options(on_blocked="notice"))
    out = [e for event in responses_turn(upstream) for e in turn.feed(event)] + turn.finish()
    assert not [e for e in out if e["type"].startswith("response.function_call")]
    ending = out[-1]
    assert ending["type"] == "response.incomplete"
    assert ending["response"]["incomplete_details"] == {"reason": upstream}
    assert ending["response"]["callgate"]["withheld"] == ["get_weather"]
    shown = "".join(e["delta"] for e in out if e["type"] == "response.output_text.delta")
    assert shown.endswith("the answer was cut off before the call was complete.")


def through_chat_from_responses(reason: str | None) -> list[dict[str, Any]]:
    """The Qwen turn from a Responses upstream to a Chat Completions client."""
    engine = Engine(CHAT_REQUEST, Options(on_blocked="notice"), client="chat", upstream="responses")
    out: list[dict[str, Any]] = []
    for event in responses_turn(reason):
        out += engine.feed(event)
    return out + engine.finish()


@pytest.mark.parametrize("reason", RESPONSES_CUTS)
def test_a_responses_cut_reaches_a_chat_client_as_its_cut(reason: str) -> None:
    out = through_chat_from_responses(on_the_wire(reason))
    choices = [c["choices"][0] for c in out if c.get("choices")]
    kind = "length" if reason in RESPONSES.terminal.length else "content_filter"
    assert [c["finish_reason"] for c in choices if c.get("finish_reason")] == [kind]
    assert not any(c["delta"].get("tool_calls") for c in choices)


def test_a_responses_turn_that_completes_delivers_its_call() -> None:
    out = through_chat_from_responses(None)
    choices = [c["choices"][0] for c in out if c.get("choices")]
    assert [c["finish_reason"] for c in choices if c.get("finish_reason")] == ["tool_calls"]
    calls = [t for c in choices for t in c["delta"].get("tool_calls", [])]
    assert [t["function"]["name"] for t in calls] == ["get_weather"]
