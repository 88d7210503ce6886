"""Requests across wires: what is translated, what is refused (a 400 naming it), bad input.

The history of a conversation (the assistant's calls and the tools' results) keeps its
ids on every wire, so a call's id means the same call both ways; what a wire cannot carry
is refused by name, never dropped; a body sent to another wire's path says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.core import RequestError
from callgate.proxy.engine import GatedMessages, GatedResponses, GatedTurn, Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script
from callgate.proxy.wires.translate import translate, upstream_wire
from proxy_cases import WEATHER

SCHEMA = WEATHER["get_weather"]
MESSAGES_BODY: dict[str, Any] = {
    "model": "claude-x",
    "max_tokens": 300,
    "system": "Be brief.",
    "stream": True,
    "tools": [{"name": "get_weather", "description": "Weather.", "input_schema": SCHEMA}],
    "tool_choice": {"type": "tool", "name": "get_weather"},
    "messages": [
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "sunny"},
                {"type": "text", "text": "and tomorrow?"},
            ],
        },
    ],
}

SAME_IN_BLOCKS = [
    {"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]},
    *MESSAGES_BODY["messages"][1:],
]
"""The history as it comes back to Messages (a string content as its one text block)."""


def test_a_messages_history_becomes_chat_with_its_ids_and_back() -> None:
    chat = translate("messages", "chat", MESSAGES_BODY)
    assert chat["messages"][0] == {"role": "system", "content": "Be brief."}
    assistant = chat["messages"][2]
    assert assistant["content"] == "Checking."
    assert assistant["tool_calls"][0]["id"] == "toolu_9"
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert chat["messages"][3] == {"role": "tool", "tool_call_id": "toolu_9", "content": "sunny"}
    assert chat["messages"][4] == {"role": "user", "content": "and tomorrow?"}
    assert chat["tools"][0]["function"]["parameters"] == SCHEMA
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["max_tokens"] == 300 and chat["stream_options"] == {"include_usage": True}
    back = translate("chat", "messages", chat)
    assert back["messages"] == SAME_IN_BLOCKS
    assert back["system"] == "Be brief." and back["tools"][0]["input_schema"] == SCHEMA


def test_a_messages_history_becomes_responses_input_items() -> None:
    body = translate("messages", "responses", MESSAGES_BODY)
    kinds = [item.get("type") for item in body["input"]]
    assert kinds == ["message", "message", "function_call", "function_call_output", "message"]
    assert body["input"][2]["call_id"] == "toolu_9"
    assert body["input"][3] == {
        "type": "function_call_output",
        "call_id": "toolu_9",
        "output": "sunny",
    }
    assert body["instructions"] == "Be brief." and body["max_output_tokens"] == 300
    again = translate("responses", "messages", body)
    assert again["messages"] == SAME_IN_BLOCKS


def test_a_tools_description_reaches_every_upstream_wire() -> None:
    chat = translate("messages", "chat", MESSAGES_BODY)
    responses = translate("messages", "responses", MESSAGES_BODY)
    assert chat["tools"][0]["function"]["description"] == "Weather."
    assert responses["tools"][0]["description"] == "Weather."
    for client, body in (("chat", chat), ("responses", responses)):
        tool = translate(client, "messages", body)["tools"][0]
        assert tool == {"name": "get_weather", "description": "Weather.", "input_schema": SCHEMA}


def test_an_empty_assistant_turn_keeps_its_place_as_an_empty_chat_message() -> None:
    body = {
        **MESSAGES_BODY,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "again"},
        ],
    }
    chat = translate("messages", "chat", body)
    assert chat["messages"][1:] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "again"},
    ]


def test_an_empty_text_piece_adds_no_message_item_on_a_responses_upstream() -> None:
    used = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}}
    body = {
        **MESSAGES_BODY,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": ""}, used]},
        ],
    }
    items = translate("messages", "responses", body)["input"]
    assert [item.get("type", "message") for item in items] == ["message", "function_call"]
    assert items[0]["content"] == [{"type": "input_text", "text": "hi"}]


def test_images_are_carried_between_wires() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    words = {"type": "text", "text": "What is this?"}
    body = {**MESSAGES_BODY, "messages": [{"role": "user", "content": [words, image]}]}
    chat = translate("messages", "chat", body)
    assert chat["messages"][1]["content"] == [
        words,
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
    ]
    assert translate("chat", "messages", chat)["messages"][0]["content"] == [words, image]


@pytest.mark.parametrize(
    ("client", "upstream", "change", "named"),
    [
        (
            "messages",
            "chat",
            {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "web_search",
        ),
        ("messages", "chat", {"top_k": 5}, "top_k"),
        ("messages", "chat", {"mystery": 1}, "mystery"),
        (
            "messages",
            "chat",
            {"messages": [{"role": "user", "content": [{"type": "document"}]}]},
            "document",
        ),
        ("messages", "responses", {"stop_sequences": ["x"]}, "stop sequences"),
    ],
)
def test_what_cannot_be_translated_is_refused_by_name(
    client: str, upstream: str, change: dict[str, Any], named: str
) -> None:
    with pytest.raises(RequestError, match=named):
        translate(client, upstream, {**MESSAGES_BODY, **change})


HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("client", "upstream", "body", "carried"),
    [
        (
            "messages",
            "chat",
            {"max_tokens": 50, "stop_sequences": ["END", "STOP"], "temperature": 0.2},
            {"max_tokens": 50, "stop": ["END", "STOP"], "temperature": 0.2},
        ),
        (
            "chat",
            "messages",
            {"max_completion_tokens": 40, "stop": "END", "top_p": 0.9},
            {"max_tokens": 40, "stop_sequences": ["END"], "top_p": 0.9},
        ),
        (
            "responses",
            "chat",
            {"max_output_tokens": 30, "temperature": 0.1},
            {"max_tokens": 30, "temperature": 0.1},
        ),
        ("responses", "messages", {"max_output_tokens": 30}, {"max_tokens": 30}),
    ],
)
def test_limits_stops_and_sampling_are_carried_under_the_upstreams_names(
    client: str, upstream: str, body: dict[str, Any], carried: dict[str, Any]
) -> None:
    """A token limit, stop sequences and sampling reach the upstream as its wire names them."""
    asked = {
        "model": "m",
        **body,
        **({"input": "hi"} if client == "responses" else {"messages": HI}),
    }
    out = translate(client, upstream, asked)
    assert {k: out[k] for k in carried} == carried
    assert not {"stop_sequences", "stop", "max_output_tokens"} - set(carried) & set(out)


SCHEMA_FORMAT = {"type": "json_schema", "name": "weather", "schema": SCHEMA, "strict": True}
"""A structured-output format in the neutral shape."""


def settings_body(wire: str, effort: str, form: dict[str, Any]) -> dict[str, Any]:
    """A request on ``wire`` asking for ``effort`` and the structured output ``form``."""
    messages = [{"role": "user", "content": "weather in Paris?"}]
    spec = {k: v for k, v in form.items() if k != "type"}
    if wire == "chat":
        choice = {"type": form["type"], **({"json_schema": spec} if spec else {})}
        return {
            "model": "m",
            "messages": messages,
            "reasoning_effort": effort,
            "response_format": choice,
        }
    if wire == "responses":
        return {
            "model": "m",
            "input": messages,
            "reasoning": {"effort": effort},
            "text": {"format": form},
        }
    config = {"effort": effort, "format": {"type": "json_schema", "schema": form["schema"]}}
    return {"model": "m", "max_tokens": 9, "messages": messages, "output_config": config}


def settings_of(wire: str, body: Any) -> tuple[Any, Any]:
    """The effort and the format's schema a request on ``wire`` asks for."""
    if wire == "chat":
        return body.get("reasoning_effort"), body["response_format"]["json_schema"]["schema"]
    if wire == "responses":
        return body["reasoning"]["effort"], body["text"]["format"]["schema"]
    return body["output_config"]["effort"], body["output_config"]["format"]["schema"]


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
@pytest.mark.parametrize("upstream", ["chat", "messages", "responses"])
def test_effort_and_structured_output_are_carried_to_every_wire(client: str, upstream: str) -> None:
    """Both change the answer: each goes in the upstream wire's own field, none is dropped."""
    log: list[Any] = []
    sent = translate(client, upstream, settings_body(client, "medium", SCHEMA_FORMAT), log)
    assert settings_of(upstream, sent) == ("medium", SCHEMA)
    assert log == []
    back = translate(upstream, client, sent)
    assert settings_of(client, back) == ("medium", SCHEMA)


@pytest.mark.parametrize("client", ["chat", "responses"])
def test_structured_output_without_an_effort_reaches_a_messages_upstream(client: str) -> None:
    body = settings_body(client, "medium", SCHEMA_FORMAT)
    body.pop("reasoning_effort" if client == "chat" else "reasoning")
    sent = translate(client, "messages", body)
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}


@pytest.mark.parametrize(
    ("client", "upstream", "given", "sent"),
    [
        ("messages", "chat", "max", "high"),
        ("responses", "messages", "minimal", "low"),
        ("messages", "responses", "max", "xhigh"),
    ],
)
def test_an_effort_the_upstream_names_otherwise_goes_as_its_nearest_and_is_logged(
    client: str, upstream: str, given: str, sent: str
) -> None:
    log: list[Any] = []
    out = translate(client, upstream, settings_body(client, given, SCHEMA_FORMAT), log)
    assert settings_of(upstream, out)[0] == sent
    assert [(r.code, r.where, r.detail) for r in log] == [
        ("setting_mapped", "effort", f"{given} -> {sent}")
    ]


def test_claude_codes_hints_are_left_out_of_another_wire_and_each_logged() -> None:
    """The recorded Claude Code body: its effort carried; ``thinking``, ``metadata`` and
    ``context_management`` (hints of Anthropic's service) left out, each with a rewrite."""
    body = dict(MESSAGES_BODY)
    body |= {
        "metadata": {"user_id": "u"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": []},
        "output_config": {"effort": "high"},
    }
    body["messages"] = [
        *MESSAGES_BODY["messages"][:1],
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                *MESSAGES_BODY["messages"][1]["content"],
            ],
        },
        *MESSAGES_BODY["messages"][2:],
    ]
    for upstream in ("chat", "responses"):
        log: list[Any] = []
        out = translate("messages", upstream, body, log)
        assert not {"thinking", "metadata", "context_management", "output_config"} & set(out)
        assert "hmm" not in str(out)
        assert sorted((r.code, r.where) for r in log) == [
            ("hint_dropped", "context_management"),
            ("hint_dropped", "messages[1].content[0]"),
            ("hint_dropped", "metadata"),
            ("hint_dropped", "thinking"),
        ]


@pytest.mark.parametrize(
    ("client", "upstream", "body", "named"),
    [
        ("chat", "messages", {"response_format": {"type": "json_object"}}, "json_object"),
        ("messages", "chat", {"output_config": {"task_budget": 3}}, "output_config.task_budget"),
        ("responses", "chat", {"reasoning": {"mode": "x"}}, "reasoning.mode"),
        ("chat", "responses", {"response_format": {"type": "grammar"}}, "grammar"),
        ("chat", "responses", {"reasoning_effort": 3}, "reasoning_effort"),
    ],
)
def test_a_setting_that_cannot_be_carried_is_refused_by_name(
    client: str, upstream: str, body: dict[str, Any], named: str
) -> None:
    messages = [{"role": "user", "content": "hi"}]
    base: dict[str, Any] = {"model": "m"}
    base |= {"input": messages} if client == "responses" else {"messages": messages}
    with pytest.raises(RequestError, match=named):
        translate(client, upstream, {**base, **body})


@pytest.mark.parametrize(
    ("given", "messages", "responses"),
    [
        ("auto", {"type": "auto"}, "auto"),
        ("none", {"type": "none"}, "none"),
        ("required", {"type": "any"}, "required"),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "tool", "name": "get_weather"},
            {"type": "function", "name": "get_weather"},
        ),
    ],
)
def test_each_tool_choice_is_written_as_the_upstream_wire_names_it(
    given: Any, messages: dict[str, Any], responses: Any
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": given}
    assert translate("chat", "messages", body)["tool_choice"] == messages
    assert translate("chat", "responses", body)["tool_choice"] == responses
    back = translate("messages", "chat", translate("chat", "messages", body))
    assert back["tool_choice"] == given


def test_responses_previous_response_id_is_refused_across_wires() -> None:
    body = {"model": "m", "input": "hi", "previous_response_id": "resp_1"}
    with pytest.raises(RequestError, match="previous_response_id"):
        GatedResponses(body, upstream="chat")
    assert GatedResponses(body).request is body  # on its own wire it goes as it came


@pytest.mark.parametrize(
    ("engine", "body", "says"),
    [
        (GatedTurn, MESSAGES_BODY, "Anthropic Messages API, sent to the Chat Completions"),
        (GatedTurn, {"model": "m", "input": "hi"}, "a request of the Responses API"),
        (GatedMessages, {"model": "m", "input": "hi"}, "send it to /v1/responses"),
        (
            GatedResponses,
            {"model": "m", "messages": [{"role": "system", "content": "x"}]},
            "a request of the Chat Completions API",
        ),
    ],
)
def test_a_body_of_another_wire_is_a_request_error_that_says_so(
    engine: type[GatedTurn], body: dict[str, Any], says: str
) -> None:
    with pytest.raises(RequestError, match=says):
        engine(body)


def test_a_bad_upstream_wire_is_a_one_line_error() -> None:
    with pytest.raises(
        ValueError, match=r"^--upstream-wire must be chat, messages or responses, not 'grpc'$"
    ):
        upstream_wire("grpc")
    with pytest.raises(ValueError, match="--upstream-wire"):
        ProxyConfig(upstream="http://x", upstream_wire="grpc")
    assert upstream_wire("") is None and upstream_wire("chat") == "chat"


# -- over loopback ------------------------------------------------------------------------


class Upstream:
    def __init__(self) -> None:
        self.next = Script(b"")
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.app = ReplayUpstream(self.pick)

    def pick(self, path: str, body: dict[str, Any]) -> Script:
        self.seen.append((path, body))
        return self.next


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[Upstream, str]]:
    upstream = Upstream()
    with (
        ServerThread(upstream.app) as up,
        ServerThread(
            create_app(ProxyConfig(upstream=up.url, options=Options(), upstream_wire="chat"))
        ) as proxy,
    ):
        yield upstream, proxy.url


def test_a_messages_client_in_front_of_a_chat_upstream_sends_chat(
    proxied: tuple[Upstream, str],
) -> None:
    upstream, url = proxied
    upstream.next = Script(b'{"error": {"message": "model not found", "type": "x"}}', status=404)
    reply = httpx.post(url + "/v1/messages", json=MESSAGES_BODY)
    path, sent = upstream.seen[-1]
    assert (
        path == "/v1/chat/completions" and sent["messages"][2]["tool_calls"][0]["id"] == "toolu_9"
    )
    assert reply.status_code == 404
    assert reply.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "model not found"},
    }
    refused = httpx.post(url + "/v1/messages", json={**MESSAGES_BODY, "top_k": 3})
    assert refused.status_code == 400 and "top_k" in refused.json()["error"]["message"]
    assert upstream.seen[-1][1] is not None and len(upstream.seen) == 1
