"""What the gateway keeps of the upstream's answer, checked over HTTP on loopback.

Every test drives a real proxy (uvicorn on loopback) in front of a scripted upstream and
reads what a client receives, so it holds whatever shape the engine takes inside: the
Anthropic stream's thinking and server-tool blocks in order, a whole answer's thinking
signature and stop sequence, OpenAI token usage and envelope fields, ``--on-blocked
pass`` forwarding the model's own arguments, an event stream with carriage-return line
ends delivered as it comes, a ``message_start`` the proxy writes itself, and the cause
quoted for a call withheld after a late error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

import anthropic
import httpx
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.sse import encode
from callgate.proxy.upstream import Script, sse_body, whole_body
from proxy_cases import WEATHER, chat_response, openai_tools, scripted_upstream
from proxy_cases import ScriptedUpstream as Scripted
from proxy_cases import chat_chunk as chat

CALL = {
    "index": 0,
    "id": "call_up",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
"""A native call of a declared tool, valid for its schema."""
ERROR = {"error": {"message": "the model crashed", "type": "server_error"}}


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Scripted, str]]:
    with scripted_upstream() as running:
        yield running


@pytest.fixture(scope="module")
def proxies(upstream: tuple[Scripted, str]) -> Iterator[dict[str, str]]:
    """Proxy URLs by mode: ``notice`` and ``pass`` (formats: the Hermes tag)."""
    _, url = upstream
    tag = ("tool_call_tag",)
    with (
        ServerThread(
            create_app(ProxyConfig(url, Options(on_blocked="notice", text_formats=tag)))
        ) as notice,
        ServerThread(
            create_app(ProxyConfig(url, Options(on_blocked="pass", text_formats=tag)))
        ) as passing,
    ):
        yield {"notice": notice.url, "pass": passing.url}


def events(text: str) -> list[tuple[str, Any]]:
    """(event name, data parsed) of each event of a well-formed stream ([DONE] as is)."""
    out = []
    for block in text.split("\n\n")[:-1]:
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        joined = "\n".join(data)
        out.append((name, joined if joined == "[DONE]" else json.loads(joined)))
    return out


def post(url: str, path: str, body: Mapping[str, Any]) -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=30)


CHAT = {
    "model": "asked",
    "messages": [{"role": "user", "content": "weather?"}],
    "stream": True,
    "tools": openai_tools(WEATHER),
}
MESSAGES = {
    "model": "claude-x",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "weather?"}],
    "stream": True,
    "tools": [{"name": "get_weather", "input_schema": WEATHER["get_weather"]}],
}


def start(message_id: str = "msg_up") -> dict[str, Any]:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-up",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 21, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def block(index: int, content: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    """One content block's start, deltas and stop at ``index``."""
    return [
        {"type": "content_block_start", "index": index, "content_block": content},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def text_block(index: int, words: str) -> list[dict[str, Any]]:
    return block(index, {"type": "text", "text": ""}, {"type": "text_delta", "text": words})


def thinking_block(index: int, words: str, signature: str) -> list[dict[str, Any]]:
    return block(
        index,
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "thinking_delta", "thinking": words},
        {"type": "signature_delta", "signature": signature},
    )


def end(reason: str = "end_turn", sequence: str | None = None) -> list[dict[str, Any]]:
    delta = {"stop_reason": reason, "stop_sequence": sequence}
    return [
        {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]


# -- the Anthropic wire ---------------------------------------------------------------------


SEARCH_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "Paris weather"},
}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [{"type": "web_search_result", "url": "https://example.org", "title": "Paris"}],
}


def test_thinking_and_server_tool_blocks_keep_their_place_between_text_blocks(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    stream = [
        start(),
        *thinking_block(0, "They want weather.", "sig-abc"),
        *text_block(1, "Searching."),
        *block(2, SEARCH_USE),
        *block(3, SEARCH_RESULT),
        *block(4, {"type": "redacted_thinking", "data": "opaque"}),
        *text_block(5, "It is mild."),
        *end(),
    ]
    scripted.script = Script(sse_body(stream, done=False, named=True))
    got = events(post(proxies["notice"], "/v1/messages", MESSAGES).text)
    starts = [
        (d["index"], d["content_block"]["type"])
        for _, d in got
        if d["type"] == "content_block_start"
    ]
    assert starts == [
        (0, "thinking"),
        (1, "text"),
        (2, "server_tool_use"),
        (3, "web_search_tool_result"),
        (4, "redacted_thinking"),
        (5, "text"),
    ]
    opened: set[int] = set()
    for name, data in got:  # every block closes before the next opens, names match types
        assert name == data["type"]
        if data["type"] == "content_block_start":
            assert not opened, (opened, data)
            opened.add(data["index"])
        elif data["type"] == "content_block_stop":
            opened.remove(data["index"])
        elif data["type"] == "content_block_delta":
            assert data["index"] in opened
    assert not opened
    blocks = {d["index"]: d["content_block"] for _, d in got if d["type"] == "content_block_start"}
    assert blocks[2] == SEARCH_USE
    assert blocks[3] == SEARCH_RESULT
    assert blocks[4] == {"type": "redacted_thinking", "data": "opaque"}
    deltas = [(d["index"], d["delta"]) for _, d in got if d["type"] == "content_block_delta"]
    assert (0, {"type": "thinking_delta", "thinking": "They want weather."}) in deltas
    assert (0, {"type": "signature_delta", "signature": "sig-abc"}) in deltas
    text = {i: d.get("text") for i, d in deltas if d["type"] == "text_delta"}
    assert text == {1: "Searching.", 5: "It is mild."}


def test_the_anthropic_sdk_rebuilds_thinking_and_server_blocks_in_order(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    stream = [
        start(),
        *thinking_block(0, "Hmm.", "sig-xyz"),
        *block(1, SEARCH_USE),
        *text_block(2, "Done."),
        *end(),
    ]
    scripted.script = Script(sse_body(stream, done=False, named=True))
    client = anthropic.Anthropic(base_url=proxies["notice"], api_key="k", max_retries=0)
    body = {k: v for k, v in MESSAGES.items() if k != "stream"}
    with client.messages.stream(**body) as answer:
        message = answer.get_final_message()
    kinds = [b.type for b in message.content]
    assert kinds == ["thinking", "server_tool_use", "text"]
    thinking = message.content[0]
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == ("Hmm.", "sig-xyz")
    assert message.id == "msg_up"


def test_a_whole_answer_keeps_its_thinking_signature_and_stop_sequence(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    answer = {
        "id": "msg_whole",
        "type": "message",
        "role": "assistant",
        "model": "claude-up",
        "content": [
            {"type": "thinking", "thinking": "Short.", "signature": "sig-whole"},
            {"type": "text", "text": "It is 18 C"},
        ],
        "stop_reason": "stop_sequence",
        "stop_sequence": "###",
        "usage": {"input_tokens": 5, "output_tokens": 6},
    }
    scripted.script = Script(whole_body(answer), content_type="application/json")
    got = post(proxies["notice"], "/v1/messages", {**MESSAGES, "stream": False}).json()
    assert got["content"] == answer["content"]
    assert (got["stop_reason"], got["stop_sequence"]) == ("stop_sequence", "###")
    assert (got["id"], got["model"], got["usage"]) == ("msg_whole", "claude-up", answer["usage"])


@pytest.mark.parametrize("cut", [None, 0], ids=["empty", "dropped"])
def test_a_message_start_the_proxy_writes_is_complete(
    upstream: tuple[Scripted, str], proxies: dict[str, str], cut: int | None
) -> None:
    """An upstream stream that ends (or drops) before any event: the proxy's own
    ``message_start`` has every field a client's accumulator reads, and comes first; a
    dropped one then ends in an ``error`` event, never a quiet ``end_turn``."""
    scripted, _ = upstream
    scripted.script = Script(
        sse_body([start()], done=False, named=True) if cut == 0 else b"", cut_at=cut
    )
    got = events(post(proxies["notice"], "/v1/messages", MESSAGES).text)
    name, first = got[0]
    assert (name, first["type"]) == ("message_start", "message_start")
    message = first["message"]
    assert message["id"].startswith("msg_") and len(message["id"]) > len("msg_")
    assert {k: v for k, v in message.items() if k != "id"} == {
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    assert [d["type"] for _, d in got].count("message_start") == 1
    client = anthropic.Anthropic(base_url=proxies["notice"], api_key="k", max_retries=0)
    request = {k: v for k, v in MESSAGES.items() if k != "stream"}
    if cut == 0:  # a dropped upstream ends in the wire's error event, which the SDK raises
        assert [d["type"] for _, d in got][-1] == "error"
        assert got[-1][1]["error"]["message"], got[-1]
        with pytest.raises(anthropic.APIError), client.messages.stream(**request) as answer:
            answer.get_final_message()
        return
    assert [d["type"] for _, d in got][-2:] == ["message_delta", "message_stop"]
    with client.messages.stream(**request) as answer:
        final = answer.get_final_message()
    assert (final.content, final.model, final.stop_reason) == ([], "claude-x", "end_turn")
    assert (final.usage.input_tokens, final.usage.output_tokens) == (0, 0)


@pytest.mark.parametrize("late_start", [False, True], ids=["no-start", "start-after-ping"])
def test_a_ping_first_stream_still_opens_with_message_start(
    upstream: tuple[Scripted, str], proxies: dict[str, str], late_start: bool
) -> None:
    """An upstream that sends ``ping`` before (or instead of) its ``message_start``: the
    client's stream opens with one ``message_start`` (the upstream's when it comes) before
    the ping and the text, and the Anthropic SDK rebuilds the text."""
    scripted, _ = upstream
    ping = {"type": "ping"}
    head = [ping, start("msg_late")] if late_start else [ping]
    scripted.script = Script(
        sse_body([*head, *text_block(0, "Hi there."), *end()], done=False, named=True)
    )
    kinds = [d["type"] for _, d in events(post(proxies["notice"], "/v1/messages", MESSAGES).text)]
    assert kinds[:2] == ["message_start", "ping"], kinds
    assert kinds.count("message_start") == 1 and kinds.count("ping") == 1
    client = anthropic.Anthropic(base_url=proxies["notice"], api_key="k", max_retries=0)
    request = {k: v for k, v in MESSAGES.items() if k != "stream"}
    with client.messages.stream(**request) as answer:
        final = answer.get_final_message()
    assert [(b.type, getattr(b, "text", None)) for b in final.content] == [("text", "Hi there.")]
    assert final.id.startswith("msg_late" if late_start else "msg_")
    assert final.usage.output_tokens == 9


# -- the OpenAI wire ------------------------------------------------------------------------


USAGE = {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}


def test_usage_sent_alone_comes_alone_after_the_final_chunk(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    chunks = [
        chat({"role": "assistant", "content": "Mild."}),
        chat({}, "stop"),
        {**chat({}), "choices": [], "usage": USAGE},
    ]
    scripted.script = Script(sse_body(chunks))
    body = {**CHAT, "stream_options": {"include_usage": True}}
    got = [d for _, d in events(post(proxies["notice"], "/v1/chat/completions", body).text)]
    assert got[-1] == "[DONE]"
    alone = got[-2]
    assert alone["choices"] == [] and alone["usage"] == USAGE
    assert alone["id"] == "chatcmpl-up"
    final = got[-3]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert "usage" not in final
    assert sum(1 for d in got[:-1] if "usage" in d) == 1


def test_usage_on_the_last_chunk_stays_on_the_final_chunk(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    chunks = [chat({"role": "assistant", "content": "Mild."}), chat({}, "stop", usage=USAGE)]
    scripted.script = Script(sse_body(chunks))
    got = [d for _, d in events(post(proxies["notice"], "/v1/chat/completions", CHAT).text)]
    final = got[-2]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["usage"] == USAGE
    assert all("usage" not in d for d in got[:-2])


def test_a_whole_response_keeps_its_usage(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    message = {"role": "assistant", "content": "Mild."}
    response = chat_response(
        "up-model",
        message,
        created=1_700_000_123,
        usage=USAGE,
        system_fingerprint="fp_up",
        service_tier="default",
    )
    scripted.script = Script(whole_body(response), content_type="application/json")
    got = post(proxies["notice"], "/v1/chat/completions", {**CHAT, "stream": False}).json()
    assert got["usage"] == USAGE
    assert (got["system_fingerprint"], got["service_tier"]) == ("fp_up", "default")
    assert (got["created"], got["id"], got["model"]) == (
        1_700_000_123,
        "chatcmpl-whole",
        "up-model",
    )
    assert [c["index"] for c in got["choices"]] == [0]
    assert got["choices"][0]["message"]["content"] == "Mild."


def test_every_chunk_keeps_the_upstreams_envelope_and_choice_index(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    chunks = [
        chat({"role": "assistant", "content": "Let me check."}),
        chat({"tool_calls": [CALL]}),
        chat({}, "tool_calls"),
    ]
    scripted.script = Script(sse_body(chunks))
    got = [d for _, d in events(post(proxies["notice"], "/v1/chat/completions", CHAT).text)][:-1]
    assert len(got) >= 3
    for chunk in got:
        assert chunk["created"] == 1_712_345_678
        assert (chunk["id"], chunk["model"]) == ("chatcmpl-up", "up-model")
        assert chunk["system_fingerprint"] == "fp_up"
        assert [c["index"] for c in chunk["choices"]] == [0]
    assert got[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_pass_forwards_a_refused_text_call_with_the_models_own_arguments(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    scripted, _ = upstream
    leaked = (
        '<tool_call>{"name": "get_weather", "arguments": {"town": "Paris", "days": 2}}</tool_call>'
    )
    chunks = [chat({"role": "assistant", "content": "Checking. " + leaked}), chat({}, "stop")]
    scripted.script = Script(sse_body(chunks))
    got = [d for _, d in events(post(proxies["pass"], "/v1/chat/completions", CHAT).text)][:-1]
    calls = [e for c in got for e in c["choices"][0]["delta"].get("tool_calls") or ()]
    assert len(calls) == 1
    assert calls[0]["function"]["name"] == "get_weather"
    assert json.loads(calls[0]["function"]["arguments"]) == {"town": "Paris", "days": 2}
    assert calls[0]["id"].startswith("call_")
    final = got[-1]
    assert final["choices"][0]["finish_reason"] == "tool_calls"
    assert final["callgate"]["passed"] is True
    assert final["callgate"]["withheld"] == ["get_weather"]
    assert "schema_invalid" in [f["code"] for f in final["callgate"]["findings"]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in got)
    assert text == "Checking. "


def test_a_withheld_call_quotes_the_first_finding_of_a_late_failure(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    """A whole valid call, then an error frame and a broken event after the finish."""
    scripted, _ = upstream
    chunks = [chat({"role": "assistant", "content": "Hi"}), chat({"tool_calls": [CALL]})]
    body = sse_body([*chunks, chat({}, "tool_calls"), ERROR], done=False)
    scripted.script = Script(body + b"data: {not json\n\n" + b"data: [DONE]\n\n")
    got = [d for _, d in events(post(proxies["notice"], "/v1/chat/completions", CHAT).text)][:-1]
    assert all(not c.get("choices") or "tool_calls" not in c["choices"][0]["delta"] for c in got)
    final = got[-1]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["callgate"]["status"] == "fail"
    assert final["callgate"]["withheld"] == ["get_weather"]
    codes = [f["code"] for f in final["callgate"]["findings"]]
    assert codes[:2] == ["provider_error", "malformed_chunk"]
    notice = "".join(c["choices"][0]["delta"].get("content") or "" for c in got if c.get("choices"))
    assert notice == (
        "Hi\n\nA call to get_weather was not run: the model's server reported an error."
    )


def test_carriage_return_line_ends_are_delivered_as_they_come(
    upstream: tuple[Scripted, str], proxies: dict[str, str]
) -> None:
    """An event ended by ``\\r\\r`` at the end of a read reaches the client at once."""
    scripted, _ = upstream
    first = encode(chat({"role": "assistant", "content": "Early."})).replace(b"\n", b"\r")
    rest = (encode(chat({}, "stop")) + b"data: [DONE]\n\n").replace(b"\n", b"\r")
    scripted.script = Script(first + rest, write_sizes=(len(first), len(rest)), delay=1.0)
    seen: list[tuple[float, bytes]] = []
    with httpx.stream(
        "POST", proxies["notice"] + "/v1/chat/completions", json=CHAT, timeout=30
    ) as r:
        for piece in r.iter_raw():
            seen.append((time.monotonic(), piece))
    ended = seen[-1][0]
    early = next(t for t, piece in seen if b"Early." in piece)
    assert ended - early > 0.5, [(round(ended - t, 2), p[:40]) for t, p in seen]
    text = b"".join(p for _, p in seen).decode()
    assert [d for _, d in events(text)][-1] == "[DONE]"


@pytest.mark.parametrize("tail", ["<tool_ca", '<tool_call>{"name": "get_wea'])
def test_text_held_to_the_end_of_the_stream_is_released_then(
    upstream: tuple[Scripted, str], proxies: dict[str, str], tail: str
) -> None:
    """A stream that ends (``[DONE]``, no finish reason) inside what could have been a
    call's markup: the held text is the answer's last text, after the text before it."""
    scripted, _ = upstream
    head = {"id": "chatcmpl-end", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    deltas = [({"role": "assistant", "content": "The tag is "}, None), ({"content": tail}, None)]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": f}]} for d, f in deltas
    ]
    scripted.script = Script(sse_body(chunks))  # no finish reason: [DONE] ends it
    got = events(post(proxies["notice"], "/v1/chat/completions", CHAT).text)
    said = "".join(
        (d["choices"][0]["delta"].get("content") or "")
        for _, d in got
        if d != "[DONE]" and d.get("choices")
    )
    assert said.startswith("The tag is ")
    assert tail in said


def test_a_reasoning_tags_held_tail_is_the_answers_last_text_when_moving_reasoning(
    upstream: tuple[Scripted, str],
) -> None:
    """With the reasoning moved to ``reasoning_content``, a stream ending (``[DONE]``
    alone) in what could have opened a think tag gives that tail as content, not lost."""
    scripted, url = upstream
    head = {"id": "chatcmpl-end", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    delta = {"role": "assistant", "content": "<think>hm</think>Done <thi"}
    scripted.script = Script(sse_body([{**head, "choices": [{"index": 0, "delta": delta}]}]))
    with ServerThread(create_app(ProxyConfig(url, Options(move_reasoning=True)))) as proxy:
        got = events(post(proxy.url, "/v1/chat/completions", CHAT).text)
    deltas = [d["choices"][0]["delta"] for _, d in got if d != "[DONE]" and d.get("choices")]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == "hm"
    assert "".join(d.get("content") or "" for d in deltas) == "Done <thi"
