"""How a gated turn ends, as a client and an operator see it, on each pair of wires.

Driven through :class:`~callgate.proxy.engine.Engine` as the proxy drives it, or through a
real proxy on loopback with the openai SDK's stream helper: text the display held until
the upstream's own end event (``message_stop``, ``response.completed``) reaches the client;
a refused text call that ``pass`` forwards is recorded under its text format; a
Responses request that carries no ``input`` of its own is re-asked with the turn's items; a
text call streamed as it formed, which only the stream's end completes, gets the rest of
its arguments from the turn's end; a
call of a tool declared as ``local_shell`` or ``custom`` is added ``in_progress`` and done
``completed``, like every other item.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Engine, GatedResponses, GatedTurn, Options
from callgate.proxy.serving import ServerThread
from proxy_cases import chat_chunk, scripted_upstream, text_turn
from test_gateway_behaviours import CALL, end, start, text_block
from test_gateway_corners import GLM_CUT, REQUESTS, pieces, sent_arguments
from test_gateway_edges import RESPONSES, leaked
from test_gateway_forms import chat_calls

TAG = ("tool_call_tag",)


def said(client: str, out: list[dict[str, Any]]) -> str:
    """The text a client of ``client``'s wire reads in the chunks ``out``."""
    text = ""
    for chunk in out:
        if client == "chat":
            text += "".join(c["delta"].get("content") or "" for c in chunk.get("choices") or ())
        elif client == "messages" and chunk["type"] == "content_block_delta":
            text += chunk["delta"].get("text", "")
        elif client == "responses" and chunk["type"] == "response.output_text.delta":
            text += chunk["delta"]
    return text


def responses_stream(*pieces: str) -> list[dict[str, Any]]:
    """A Responses upstream's events: one message item of ``pieces``, then completed."""
    head = {"id": "resp_up", "object": "response", "created_at": 1, "model": "m", "output": []}
    message = {"id": "msg_up", "type": "message", "role": "assistant", "content": []}
    where = {"item_id": "msg_up", "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": "", "annotations": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**head, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": message},
        {"type": "response.content_part.added", **where, "part": part},
    ]
    events += [{"type": "response.output_text.delta", **where, "delta": p} for p in pieces]
    done = {**message, "status": "completed", "content": [{**part, "text": "".join(pieces)}]}
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    completed = {**head, "status": "completed", "output": [done], "usage": usage}
    return [*events, {"type": "response.completed", "response": completed}]


ENDED_BY_ITSELF = {
    "messages": [start(), *text_block(0, "Hello <tool"), *end()],
    "responses": responses_stream("Hello ", "<tool"),
}
"""Streams whose own last event ends them, the text ending in what may open a call."""


@pytest.mark.parametrize("upstream", ["messages", "responses"])
@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_text_held_until_the_upstreams_own_end_event_reaches_the_client(
    client: str, upstream: str
) -> None:
    """The display holds ``<tool`` (a call may open there) until the stream's end event,
    which releases it: the client gets it before the turn's end, once."""
    engine = Engine(REQUESTS[client], Options(text_formats=TAG), client=client, upstream=upstream)
    out: list[dict[str, Any]] = []
    for chunk in ENDED_BY_ITSELF[upstream]:
        out += engine.feed(chunk)
    assert engine.finished and engine.status == "not_applicable"
    assert said(client, out) == "Hello <tool"
    assert engine.feed(ENDED_BY_ITSELF[upstream][-1]) == []


def test_a_passed_text_call_is_recorded_under_its_text_format() -> None:
    """``pass`` forwards a refused text call with the model's own arguments; the audit
    record and the metrics count it under the format it was read from, as a sent one."""
    engine = GatedTurn(REQUESTS["chat"], Options(on_blocked="pass", text_formats=TAG))
    written = leaked("Paris").replace('"city"', '"town"')
    for chunk in [chat_chunk({"role": "assistant", "content": "On it. " + written})]:
        engine.feed(chunk)
    engine.feed(chat_chunk({}, "stop"))
    engine.finish(clean=True)
    assert engine.passed
    (call,) = engine.audit()["calls"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"town": "Paris"})
    assert call["source"] == "tool_call_tag"


BAD_CALL = {
    "id": "fc_up",
    "type": "function_call",
    "call_id": "call_up",
    "name": "get_weather",
    "arguments": '{"town": "Paris"}',
    "status": "completed",
}


def test_a_responses_request_without_input_is_reasked_with_the_turns_items() -> None:
    """A request that continues a stored response (``previous_response_id``, no ``input``):
    the repair asks with the blocked call's item and its refusal as the whole input."""
    request = {k: v for k, v in RESPONSES.items() if k != "input"}
    request["previous_response_id"] = "resp_before"
    engine = GatedResponses(request, Options(on_blocked="repair"))
    head = {"id": "resp_up", "object": "response", "model": "m", "output": []}
    for event in [
        {"type": "response.created", "response": {**head, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": BAD_CALL},
        {"type": "response.output_item.done", "output_index": 0, "item": BAD_CALL},
        {"type": "response.completed", "response": {**head, "status": "completed"}},
    ]:
        engine.feed(event)
    assert engine.repair is not None
    asked = engine.repair["input"]
    assert [item["type"] for item in asked] == ["function_call", "function_call_output"]
    assert asked[0]["call_id"] == asked[1]["call_id"] == "call_up"
    assert engine.repair["previous_response_id"] == "resp_before"


def test_a_declared_forms_call_item_is_added_in_progress_and_done_completed() -> None:
    """Codex's ``local_shell`` and a ``custom`` tool, a Chat-only upstream: each call item
    the Responses client is given opens ``in_progress`` and closes ``completed``."""
    tools = [
        {"type": "local_shell"},
        {"type": "custom", "name": "apply_patch", "description": "Patch files."},
    ]
    with scripted_upstream() as (scripted, url):
        scripted.script = chat_calls(
            ("call_sh", "local_shell", {"command": ["ls"]}),
            ("call_patch", "apply_patch", {"input": "*** Begin Patch\n*** End Patch"}),
        )
        config = ProxyConfig(url, Options(), upstream_wire="chat")
        with ServerThread(create_app(config)) as proxy:
            client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
            statuses: list[tuple[str, str, str | None]] = []
            with client.responses.stream(model="m", input="list", tools=tools) as answer:  # type: ignore[arg-type]
                for event in answer:
                    if event.type in ("response.output_item.added", "response.output_item.done"):
                        statuses.append((event.type, event.item.type, event.item.status))
    assert statuses == [
        ("response.output_item.added", "local_shell_call", "in_progress"),
        ("response.output_item.done", "local_shell_call", "completed"),
        ("response.output_item.added", "custom_tool_call", "in_progress"),
        ("response.output_item.done", "custom_tool_call", "completed"),
    ]


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_a_forming_call_completed_only_by_the_streams_end_gets_its_rest_then(
    client: str,
) -> None:
    """A GLM call whose close never came, in a stream that ends with no finish reason
    (``[DONE]`` alone): no chunk after the last one completes it, so the turn's end sends
    the rest of its arguments (``"}``) as one more delta of the same entry."""
    options = Options(on_blocked="notice", text_formats=("glm45",), stream_args=True)
    engine = Engine(REQUESTS[client], options, client=client, upstream="chat")
    out: list[dict[str, Any]] = []
    for chunk in text_turn(pieces(GLM_CUT))[:-1]:  # the finish chunk left out
        out += engine.feed(chunk)
    before = sent_arguments(client, out)
    end = engine.finish(clean=True)
    assert [json.loads(c.arguments) for c in engine.calls] == [{"city": "Paris"}]
    (streamed,) = before.values()
    with pytest.raises(ValueError):
        json.loads(streamed)  # not yet whole
    (ended,) = sent_arguments(client, out + end).values()
    assert ended.startswith(streamed) and json.loads(ended) == {"city": "Paris"}


def test_a_call_withheld_after_a_broken_chunk_past_the_finish_quotes_that_chunk() -> None:
    """A whole valid call, its finish, then a chunk the reader refuses: the call is withheld
    and its line names the broken chunk's own finding, not a generic failure."""
    engine = GatedTurn(REQUESTS["chat"], Options())
    engine.feed(chat_chunk({"role": "assistant", "content": "Hi"}))
    engine.feed(chat_chunk({"tool_calls": [CALL]}))
    engine.feed(chat_chunk({}, "tool_calls"))
    engine.feed({"choices": "broken"})
    engine.finish(clean=True)
    record = engine.audit()
    assert not engine.passed
    assert record["calls"] == []
    assert record["withheld"] == [
        "The call to get_weather was not run: choices is not a list: 'broken' (malformed_chunk)."
    ]
