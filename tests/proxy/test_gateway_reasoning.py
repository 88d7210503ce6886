"""The upstream's reasoning reaches a client of another wire in that wire's reasoning shape.

Anthropic ``thinking`` blocks, a Chat Completions ``reasoning_content`` channel and
Responses ``reasoning`` items, each from a loopback upstream of its wire, through
``--upstream-wire`` to a client of each other wire, read with that wire's official SDK:
the reasoning comes as a ``thinking`` block, ``reasoning_content`` deltas, or a
``reasoning`` item with its ``reasoning_text``, before the answer's text, never dropped;
the upstream's token usage comes with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.sse import encode
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body

THOUGHT, ANSWER = "Paris is in France; it is warm there.", "It is sunny in Paris."


def messages_upstream() -> Script:
    message = {
        "id": "msg_up",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for n, (kind, start, delta) in enumerate(
        [
            (
                "thinking",
                {"thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": THOUGHT},
            ),
            ("text", {"text": ""}, {"type": "text_delta", "text": ANSWER}),
        ]
    ):
        events += [
            {"type": "content_block_start", "index": n, "content_block": {"type": kind, **start}},
            {"type": "content_block_delta", "index": n, "delta": delta},
            {"type": "content_block_stop", "index": n},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return Script(b"".join(encode(e, e["type"]) for e in events))


def chat_upstream() -> Script:
    head = {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    deltas: list[tuple[dict[str, Any], str | None]] = [
        ({"role": "assistant", "reasoning_content": THOUGHT[:10]}, None),
        ({"reasoning_content": THOUGHT[10:]}, None),
        ({"content": ANSWER}, None),
        ({}, "stop"),
    ]
    usage = {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}
    return Script(
        sse_body(
            [
                *(
                    {**head, "choices": [{"index": 0, "delta": d, "finish_reason": f}]}
                    for d, f in deltas
                ),
                {**head, "choices": [], "usage": usage},
            ]
        )
    )


def responses_upstream() -> Script:
    head = {"id": "resp_up", "object": "response", "model": "m", "output": []}
    thought = {"id": "rs_up", "type": "reasoning", "summary": [], "content": []}
    done_thought = {**thought, "content": [{"type": "reasoning_text", "text": THOUGHT}]}
    part = {"type": "output_text", "text": ANSWER, "annotations": []}
    message = {
        "id": "msg_up",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }
    at = {"item_id": "rs_up", "output_index": 0, "content_index": 0}
    text_at = {"item_id": "msg_up", "output_index": 1, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**head, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": thought},
        {"type": "response.reasoning_text.delta", **at, "delta": THOUGHT},
        {"type": "response.reasoning_text.done", **at, "text": THOUGHT},
        {"type": "response.output_item.done", "output_index": 0, "item": done_thought},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**message, "content": []},
        },
        {"type": "response.content_part.added", **text_at, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **text_at, "delta": ANSWER},
        {"type": "response.output_text.done", **text_at, "text": ANSWER},
        {"type": "response.content_part.done", **text_at, "part": part},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        {
            "type": "response.completed",
            "response": {
                **head,
                "status": "completed",
                "output": [done_thought, message],
                "usage": {"input_tokens": 3, "output_tokens": 9, "total_tokens": 12},
            },
        },
    ]
    return Script(b"".join(encode(e, e["type"]) for e in events))


UPSTREAMS = {"messages": messages_upstream, "chat": chat_upstream, "responses": responses_upstream}


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[str, str]]:
    """A proxy URL per upstream wire, each in front of an upstream of that wire."""
    with (
        ServerThread(ReplayUpstream(lambda p, b: messages_upstream())) as m,
        ServerThread(ReplayUpstream(lambda p, b: chat_upstream())) as c,
        ServerThread(ReplayUpstream(lambda p, b: responses_upstream())) as r,
        ServerThread(create_app(ProxyConfig(m.url, Options(), upstream_wire="messages"))) as pm,
        ServerThread(create_app(ProxyConfig(c.url, Options(), upstream_wire="chat"))) as pc,
        ServerThread(create_app(ProxyConfig(r.url, Options(), upstream_wire="responses"))) as pr,
    ):
        yield {"messages": pm.url, "chat": pc.url, "responses": pr.url}


PAIRS = [(c, u) for c in UPSTREAMS for u in UPSTREAMS if c != u]


@pytest.mark.parametrize(("client", "upstream"), PAIRS, ids=[f"{c}-from-{u}" for c, u in PAIRS])
def test_the_upstreams_reasoning_reaches_the_client_in_its_wires_shape(
    proxies: dict[str, str], client: str, upstream: str
) -> None:
    url = proxies[upstream]
    ask = [{"role": "user", "content": "weather in Paris?"}]
    if client == "messages":
        sdk = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        with sdk.messages.stream(model="m", max_tokens=50, messages=ask) as answer:
            message = answer.get_final_message()
        got = [
            (b.type, getattr(b, "thinking", None) or getattr(b, "text", None))
            for b in message.content
        ]
        assert got == [("thinking", THOUGHT), ("text", ANSWER)]
        assert (message.usage.input_tokens, message.usage.output_tokens) == (3, 9)
    elif client == "chat":
        sdk_chat = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        thought, text, used = [], [], []
        stream = sdk_chat.chat.completions.create(
            model="m", messages=ask, stream=True, stream_options={"include_usage": True}
        )
        for chunk in stream:
            if chunk.usage is not None:
                used.append((chunk.usage.prompt_tokens, chunk.usage.completion_tokens))
            for choice in chunk.choices:
                extra = choice.delta.model_extra or {}
                thought.append(extra.get("reasoning_content") or "")
                text.append(choice.delta.content or "")
                assert not (extra.get("reasoning_content") and "".join(text)), (
                    "reasoning after text"
                )
        assert ("".join(thought), "".join(text)) == (THOUGHT, ANSWER)
        assert used == [(3, 9)]
    else:
        sdk_responses = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        with sdk_responses.responses.stream(model="m", input=ask) as answer:
            response = answer.get_final_response()
        kinds = [item.type for item in response.output]
        assert kinds == ["reasoning", "message"], kinds
        reasoning = response.output[0].model_dump()
        assert [c["text"] for c in reasoning["content"]] == [THOUGHT]
        assert response.output_text == ANSWER
        assert response.usage is not None
        assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 9)
