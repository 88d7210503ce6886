"""Edges of each wire's reader and writer, read as a client reads them over loopback.

A real proxy (uvicorn on loopback) in front of a scripted upstream: a text call's arguments
streamed into Messages ``tool_use`` blocks numbered in order; an Anthropic ``error`` event
whose error is a bare string (its words kept); an OpenAI chunk without a ``created`` time;
the Responses stream's lifecycle status and sequence numbers; a tool's description carried
to a Chat upstream; a native call's arguments as the model wrote them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agent_clients import responses_turn
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from proxy_cases import WEATHER, chat_chunk, openai_tools, scripted_proxy
from test_gateway_behaviours import MESSAGES, block, end, events, start, text_block

TAG = ("tool_call_tag",)
CHAT = {
    "model": "asked",
    "messages": [{"role": "user", "content": "weather?"}],
    "stream": True,
    "tools": openai_tools(WEATHER),
}


def leaked(city: str) -> str:
    call = {"name": "get_weather", "arguments": {"city": city}}
    return "<tool_call>" + json.dumps(call) + "</tool_call>"


def stream(url: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The data of each event the client receives ([DONE] left out)."""
    got = httpx.post(url + path, json=body, timeout=30)
    assert got.status_code == 200, got.text
    return [data for _, data in events(got.text) if data != "[DONE]"]


def test_streamed_text_calls_open_tool_use_blocks_numbered_in_order() -> None:
    options = Options(on_blocked="notice", text_formats=TAG, stream_args=True)
    text = "Both." + leaked("Paris") + leaked("Oslo")
    with scripted_proxy(options) as (scripted, url):
        pieces = [{"type": "text_delta", "text": text[i : i + 7]} for i in range(0, len(text), 7)]
        opened = block(0, {"type": "text", "text": ""}, *pieces)  # arguments in many pieces
        scripted.script = Script(sse_body([start(), *opened, *end()], done=False, named=True))
        got = stream(url, "/v1/messages", MESSAGES)
    starts = [e for e in got if e["type"] == "content_block_start"]
    assert [(e["index"], e["content_block"]["type"]) for e in starts] == [
        (0, "text"),
        (1, "tool_use"),
        (2, "tool_use"),
    ]
    inputs: dict[int, str] = {}
    for e in got:
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            inputs[e["index"]] = inputs.get(e["index"], "") + e["delta"]["partial_json"]
    assert {i: json.loads(s) for i, s in inputs.items()} == {
        1: {"city": "Paris"},
        2: {"city": "Oslo"},
    }
    ids = [e["content_block"]["id"] for e in starts[1:]]
    assert all(i.startswith("toolu_") for i in ids) and len(set(ids)) == 2


def test_an_anthropic_error_event_whose_error_is_a_string_keeps_its_words() -> None:
    with scripted_proxy(Options(on_blocked="notice")) as (scripted, url):
        broken = [start(), *text_block(0, "Hi."), {"type": "error", "error": "overloaded"}]
        scripted.script = Script(sse_body(broken, done=False, named=True))
        got = stream(url, "/v1/messages", MESSAGES)
    errors = [e for e in got if e["type"] == "error"]
    assert errors == [{"type": "error", "error": {"type": "api_error", "message": "overloaded"}}]
    assert got[2]["delta"]["text"] == "Hi." and got[-1] == {"type": "message_stop"}


def test_a_chunk_without_a_created_time_gets_the_time_it_was_written() -> None:
    with scripted_proxy(Options(on_blocked="notice")) as (scripted, url):
        chunks = [chat_chunk({"role": "assistant", "content": "Mild."}), chat_chunk({}, "stop")]
        for chunk in chunks:
            chunk["created"] = None
        scripted.script = Script(sse_body(chunks))
        got = stream(url, "/v1/chat/completions", CHAT)
    assert got and all(isinstance(c["created"], int) and c["created"] > 0 for c in got), got


RESPONSES = {
    "model": "gpt-x",
    "input": "weather?",
    "stream": True,
    "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER["get_weather"]}],
}


def test_the_responses_stream_opens_in_progress_and_numbers_every_event_in_order() -> None:
    with scripted_proxy(Options(on_blocked="notice")) as (scripted, url):
        scripted.script = responses_turn("It is mild in Paris today.")
        first = stream(url, "/v1/responses", RESPONSES)
        # the same text in many deltas: each written on the message item as it comes
        whole = responses_turn("It is mild in Paris today.")
        pieces = []
        for line in whole.body.split(b"\n\n"):
            if b'"response.output_text.delta"' in line:
                data = json.loads(line.split(b"data: ", 1)[1])
                text = data["delta"]
                pieces += [{**data, "delta": text[i : i + 3]} for i in range(0, len(text), 3)]
            elif line.strip():
                pieces.append(json.loads(line.split(b"data: ", 1)[1]))
        scripted.script = Script(sse_body(pieces, done=False, named=True))
        second = stream(url, "/v1/responses", RESPONSES)
    for got in (first, second):
        assert [e["type"] for e in got[:2]] == ["response.created", "response.in_progress"]
        assert [e["response"]["status"] for e in got[:2]] == ["in_progress", "in_progress"]
        assert got[-1]["response"]["status"] == "completed"
        assert [e["sequence_number"] for e in got] == list(range(len(got))), got
    deltas = [e["delta"] for e in second if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "It is mild in Paris today."


def test_a_tools_description_reaches_a_chat_upstream() -> None:
    upstream = ReplayUpstream(
        lambda path, body: Script(
            sse_body([chat_chunk({"content": "Mild."}), chat_chunk({}, "stop")])
        )
    )
    described = {**MESSAGES, "tools": [{**MESSAGES["tools"][0], "description": "Weather."}]}
    with (
        ServerThread(upstream) as up,
        ServerThread(
            create_app(ProxyConfig(up.url, Options(on_blocked="notice"), upstream_wire="chat"))
        ) as proxy,
    ):
        got = stream(proxy.url, "/v1/messages", described)
    sent = upstream.requests[0][1]["tools"][0]["function"]
    assert (sent["name"], sent["description"]) == ("get_weather", "Weather.")
    assert any(e.get("delta", {}).get("text") == "Mild." for e in got), got


def test_a_native_calls_arguments_reach_the_client_as_the_model_wrote_them() -> None:
    written = '{"city":"Paris" }'  # compact, a space before the brace: not json.dumps's form
    call = {"index": 0, "id": "call_up", "type": "function"}
    pieces = [{**call, "function": {"name": "get_weather", "arguments": written[:6]}}]
    pieces.append({"index": 0, "function": {"arguments": written[6:]}})
    with scripted_proxy(Options(on_blocked="notice")) as (scripted, url):
        chunks = [chat_chunk({"tool_calls": [p]}) for p in pieces]
        scripted.script = Script(sse_body([*chunks, chat_chunk({}, "tool_calls")]))
        got = stream(url, "/v1/chat/completions", CHAT)
    sent = [
        c["function"].get("arguments", "")
        for chunk in got
        for choice in chunk["choices"]
        for c in choice["delta"].get("tool_calls") or ()
    ]
    assert "".join(sent) == written, got
    assert got[-1]["choices"][0]["finish_reason"] == "tool_calls"
