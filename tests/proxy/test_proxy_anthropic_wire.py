"""The proxy on the Anthropic Messages wire: the engine, and the anthropic SDK over loopback.

Every recorded Anthropic stream of tests/captures, whole and one character per text
delta, gives the client what callgate's buffer and driver give (replay); a call leaked
into the text of a local model served on ``/v1/messages`` becomes a ``tool_use`` block
(its input in one ``input_json_delta``), read by the anthropic SDK's stream helper; a
turn cut by ``max_tokens`` delivers no ``tool_use``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from callgate.cli.replay import replay
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.messages import GatedMessages
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.testing.builders import WireText, anthropic_events
from callgate.testing.wires import WireCall
from proxy_cases import NOT_RUN, QWEN, WEATHER, anthropic_request, closed_url, wire_captures
from proxy_cases import anthropic_by_char as by_char

NOTICE = Options(on_blocked="notice")


CAPTURES = wire_captures("anthropic")


def play(request: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    turn = GatedMessages(request, NOTICE)
    out: list[dict[str, Any]] = []
    for event in events:
        out += turn.feed(event)
    out += turn.finish()
    assert [e["type"] for e in out].count("message_start") == 1
    assert [e["type"] for e in out][-2:] == ["message_delta", "message_stop"]
    return turn.assemble({}, out)


def summary(message: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    text = "".join(b.get("text", "") for b in message["content"] if b["type"] == "text")
    calls = [(b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"]
    return text, calls


def expected(request: dict[str, Any], events: list[dict[str, Any]]) -> tuple[str, list[Any], str]:
    schemas = {t["name"]: t["input_schema"] for t in request.get("tools", [])}
    result = replay(events, schemas)
    calls = (
        [(c["name"], c["arguments"]) for c in result["calls"]] if result["status"] == "pass" else []
    )
    return result["display"], calls, result["status"]


@pytest.mark.parametrize(("name", "events"), CAPTURES, ids=[c[0] for c in CAPTURES])
def test_a_recorded_anthropic_stream_gives_what_the_buffer_and_driver_give(
    name: str, events: list[dict[str, Any]]
) -> None:
    request = anthropic_request(events, stream=True)
    for played in (events, by_char(events)):
        message = play(request, played)
        text, calls = summary(message)
        display, want, status = expected(request, played)
        assert calls == want, name
        assert text.startswith(display), name
        assert text == display or (status == "fail" and NOT_RUN.search(text) is not None), name
        assert (message["stop_reason"] == "tool_use") is bool(want), name
        assert message["callgate"]["status"] == status or message["callgate"]["status"] == "fail"


def qwen_events(text: str = QWEN, stop: str = "end_turn") -> list[dict[str, Any]]:
    events = anthropic_events([WireText(tuple(text))], [0] * (len(text) + 2))
    for event in events:
        if event["type"] == "message_delta":
            event["delta"]["stop_reason"] = stop
    return events


WHOLE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "qwen3-30b-a3b",
    "content": [{"type": "text", "text": QWEN}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 9},
}
"""A stream=false message with a leaked Qwen call."""
QWEN_REQUEST = {
    "model": "qwen3-30b-a3b",
    "max_tokens": 512,
    "messages": [{"role": "user", "content": "weather?"}],
    "tools": [{"name": "get_weather", "input_schema": WEATHER["get_weather"]}],
    "stream": True,
}


def test_a_call_leaked_into_anthropic_text_becomes_a_tool_use_block() -> None:
    message = play(QWEN_REQUEST, qwen_events())
    text, calls = summary(message)
    assert text == "Let me check."
    assert calls == [("get_weather", {"city": "Paris"})]
    assert message["stop_reason"] == "tool_use"
    assert message["content"][1]["id"].startswith("toolu_")


def test_a_turn_cut_by_max_tokens_delivers_no_tool_use() -> None:
    call = WireCall("toolu_1", "get_weather", ('{"city": ', '"Paris"}'))
    events = anthropic_events([WireText(("Checking.",)), call], [0, 0, 0, 1, 1, 1, 1])
    for at in range(1, len(events)):
        cut = [
            *events[:at],
            {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {}},
            {"type": "message_stop"},
        ]
        message = play({**QWEN_REQUEST, "model": "claude-x"}, cut)
        assert summary(message)[1] == [] and message["stop_reason"] == "max_tokens", at
    for at in range(1, len(events)):  # the stream just stops
        message = play({**QWEN_REQUEST, "model": "claude-x"}, events[:at])
        assert summary(message)[1] == [] and message["stop_reason"] != "tool_use", at


def test_a_whole_message_is_gated_as_the_stream_is() -> None:
    response = WHOLE
    message = GatedMessages(QWEN_REQUEST, NOTICE).whole(response)
    assert summary(message) == ("Let me check.", [("get_weather", {"city": "Paris"})])
    assert message["stop_reason"] == "tool_use" and message["usage"] == response["usage"]


# -- over loopback, with the anthropic SDK ----------------------------------------------


class Scripts:
    def __init__(self) -> None:
        self.next = Script(b"")
        self.app = ReplayUpstream(lambda path, body: self.next)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Scripts, str]]:
    scripts = Scripts()
    config = lambda url: ProxyConfig(upstream=url, options=NOTICE)  # noqa: E731
    with ServerThread(scripts.app) as up, ServerThread(create_app(config(up.url))) as proxy:
        yield scripts, proxy.url


def sdk_stream(url: str, request: dict[str, Any]) -> Any:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-loopback", max_retries=0)
    kwargs = {k: v for k, v in request.items() if k != "stream"}
    with client.messages.stream(**kwargs) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def test_the_sdk_stream_helper_reads_the_leaked_call_as_tool_use(
    servers: tuple[Scripts, str],
) -> None:
    scripts, url = servers
    for events in (qwen_events(), by_char(qwen_events())):
        scripts.next = Script(sse_body(events, done=False, named=True), write_sizes=(7, 3, 11))
        final = sdk_stream(url, QWEN_REQUEST)
        kinds = [b.type for b in final.content]
        assert kinds == ["text", "tool_use"]
        assert final.content[0].text == "Let me check."
        assert final.content[1].name == "get_weather" and final.content[1].input == {
            "city": "Paris"
        }
        assert final.stop_reason == "tool_use"


@pytest.mark.parametrize(("name", "events"), CAPTURES, ids=[c[0] for c in CAPTURES])
def test_every_recorded_anthropic_stream_reaches_the_sdk_as_callgate_gives_it(
    servers: tuple[Scripts, str], name: str, events: list[dict[str, Any]]
) -> None:
    scripts, url = servers
    request = anthropic_request(events, stream=True)
    scripts.next = Script(sse_body(events, done=False, named=True))
    final = sdk_stream(url, request)
    display, want, _ = expected(request, events)
    calls = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    text = "".join(b.text for b in final.content if b.type == "text")
    assert calls == want, name
    assert text.startswith(display), name


def test_anthropic_errors_are_in_anthropics_shape(servers: tuple[Scripts, str]) -> None:
    _, url = servers
    reply = httpx.post(url + "/v1/messages", content=b"nope")
    assert reply.status_code == 400
    assert (
        reply.json()["type"] == "error" and reply.json()["error"]["type"] == "invalid_request_error"
    )
    proxy = create_app(ProxyConfig(upstream=closed_url(), connect_timeout=2))
    with ServerThread(proxy) as server:
        reply = httpx.post(server.url + "/v1/messages", json=QWEN_REQUEST)
        assert reply.status_code == 502 and reply.json()["error"]["type"] == "api_error"
        with pytest.raises(anthropic.APIStatusError):
            sdk_stream(server.url, QWEN_REQUEST)


def test_a_whole_message_over_loopback(servers: tuple[Scripts, str]) -> None:
    scripts, url = servers
    response = WHOLE
    scripts.next = Script(json.dumps(response).encode(), content_type="application/json")
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    kwargs = {k: v for k, v in QWEN_REQUEST.items() if k != "stream"}
    message = client.messages.create(**kwargs)
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"city": "Paris"}


# -- --move-reasoning on the Anthropic wire ---------------------------------------------

THINK = "<think>the user wants weather</think>"
REASONING = Options(on_blocked="notice", move_reasoning=True)


def test_reasoning_in_anthropic_text_becomes_a_thinking_block_when_asked() -> None:
    for events in (qwen_events(THINK + QWEN), by_char(qwen_events(THINK + QWEN))):
        turn = GatedMessages(QWEN_REQUEST, REASONING)
        out = [e for event in events for e in turn.feed(event)] + turn.finish()
        message = turn.assemble({}, out)
        assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use"]
        assert message["content"][0] == {
            "type": "thinking",
            "thinking": "the user wants weather",
            "signature": "",
        }
        assert summary(message) == ("Let me check.", [("get_weather", {"city": "Paris"})])
        starts = [e["index"] for e in out if e["type"] == "content_block_start"]
        stops = [e["index"] for e in out if e["type"] == "content_block_stop"]
        assert starts == stops == [0, 1, 2]  # each block closed before the next opens
    message = play(QWEN_REQUEST, qwen_events(THINK + QWEN))  # not asked: the text as it came
    assert summary(message)[0] == THINK + "Let me check."


def test_text_around_and_between_reasoning_keeps_its_order_in_blocks() -> None:
    text = "Hi.<think>one</think>Then.<think>two</think>"
    turn = GatedMessages({**QWEN_REQUEST, "tools": []}, REASONING)
    out = [e for event in by_char(qwen_events(text)) for e in turn.feed(event)] + turn.finish()
    blocks = turn.assemble({}, out)["content"]
    assert [(b["type"], b.get("text", b.get("thinking"))) for b in blocks] == [
        ("text", "Hi."),
        ("thinking", "one"),
        ("text", "Then."),
        ("thinking", "two"),
    ]


def test_the_sdk_stream_helper_reads_moved_reasoning_as_a_thinking_block() -> None:
    scripts = Scripts()
    with (
        ServerThread(scripts.app) as up,
        ServerThread(create_app(ProxyConfig(upstream=up.url, options=REASONING))) as proxy,
    ):
        for events in (qwen_events(THINK + QWEN), by_char(qwen_events(THINK + QWEN))):
            body = sse_body(events, done=False, named=True)
            scripts.next = Script(body, write_sizes=(5, 13, 2))
            final = sdk_stream(proxy.url, QWEN_REQUEST)
            assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
            assert final.content[0].thinking == "the user wants weather"
            assert final.content[1].text == "Let me check."
            assert final.content[2].input == {"city": "Paris"}
            assert final.stop_reason == "tool_use"
        whole = {**WHOLE, "content": [{"type": "text", "text": THINK + QWEN}]}
        scripts.next = Script(json.dumps(whole).encode(), content_type="application/json")
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        kwargs = {k: v for k, v in QWEN_REQUEST.items() if k != "stream"}
        message = client.messages.create(**kwargs)
        assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
