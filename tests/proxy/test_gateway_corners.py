"""Corners of the gateway's turn as a client receives it, driven through the engine in process.

Each test plays an upstream answer through :class:`~callgate.proxy.engine.Engine` and reads
what the client would be sent (its wire's chunks and events), the upstream request a
repair sends, or the audit record: a text call that completes only when the stream ends
(the close was the stop sequence) gets the rest of its streamed arguments on every client
wire; a stream with no chunk at all still tells a Chat client the role; a Responses
client's withheld streamed call ends ``incomplete`` with what was sent; a whole Anthropic
message's ``tool_use`` input becomes the call; ``response.completed`` ends the turn as it
comes; a repair keeps the Responses input list and the model the client asked for; the
time spent at the end of the turn is counted; a call whose arguments already streamed is
withheld rather than re-asked; a whole answer streamed says the role once; repaired
arguments are the ones sent; each Responses item ends where it was added.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest

from agent_clients import responses_turn
from callgate.proxy.engine import (
    Engine,
    GatedMessages,
    GatedResponses,
    GatedTurn,
    Options,
    RequestError,
)
from proxy_cases import chat_chunk, text_turn
from test_gateway_behaviours import MESSAGES, events
from test_gateway_edges import CHAT, RESPONSES

REQUESTS = {"chat": CHAT, "messages": MESSAGES, "responses": RESPONSES}


def played(engine: Engine, chunks: list[dict[str, Any]], clean: bool = True) -> list[Any]:
    out: list[Any] = []
    for chunk in chunks:
        out += engine.feed(chunk)
    return out + engine.finish(clean=clean)


def pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def sent_arguments(client: str, out: list[dict[str, Any]]) -> dict[object, str]:
    """Each call's argument text as the client's wire streamed it, by its place there."""
    got: dict[object, str] = {}
    for event in out:
        if client == "chat":
            for choice in event.get("choices") or ():
                for call in choice["delta"].get("tool_calls") or ():
                    text = call["function"].get("arguments", "")
                    got[call["index"]] = got.get(call["index"], "") + text
        elif client == "messages" and event["type"] == "content_block_delta":
            if event["delta"]["type"] == "input_json_delta":
                text = event["delta"]["partial_json"]
                got[event["index"]] = got.get(event["index"], "") + text
        elif event["type"] == "response.function_call_arguments.delta":
            got[event["output_index"]] = got.get(event["output_index"], "") + event["delta"]
    return got


# -- a text call completed by the stream's end ------------------------------------------

GLM_CUT = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
"""A GLM-4.5 call whose ``</tool_call>`` was the stop sequence: the stream's end closes it."""


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_a_text_call_closed_by_the_streams_end_gets_the_rest_of_its_arguments(
    client: str,
) -> None:
    options = Options(on_blocked="notice", text_formats=("glm45",), stream_args=True)
    engine = Engine(REQUESTS[client], options, client=client, upstream="chat")
    out = played(engine, text_turn(pieces(GLM_CUT)))
    assert [(c.name, json.loads(c.arguments)) for c in engine.calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    streamed = sent_arguments(client, out)
    assert len(streamed) == 1, streamed
    assert json.loads(next(iter(streamed.values()))) == {"city": "Paris"}
    if client == "responses":
        done = [e for e in out if e["type"] == "response.function_call_arguments.done"]
        assert [json.loads(e["arguments"]) for e in done] == [{"city": "Paris"}]


# -- an upstream that sent no chunk ------------------------------------------------------


def test_a_chat_stream_with_no_upstream_chunk_still_tells_the_client_the_role() -> None:
    turn = GatedTurn(CHAT, Options(on_blocked="notice"))
    out = turn.finish(clean=True)  # the upstream sent only [DONE]
    choices = [chunk["choices"][0] for chunk in out]
    assert [c["delta"] for c in choices] == [{"role": "assistant", "content": ""}, {}]
    assert [c["finish_reason"] for c in choices] == [None, "stop"]
    assert {chunk["model"] for chunk in out} == {CHAT["model"]}


# -- a Responses client's streamed call the gate withholds --------------------------------


def test_a_withheld_streamed_call_ends_incomplete_with_what_was_sent() -> None:
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",), stream_args=True)
    bad = '<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>'
    engine = GatedResponses(RESPONSES, options, upstream="chat")
    out = played(engine, text_turn(pieces("Checking. " + bad)))
    assert engine.calls == [] and [r.call.name for r in engine.withheld] == ["get_weather"]
    added = [e for e in out if e["type"] == "response.output_item.added"]
    call = next(e for e in added if e["item"]["type"] == "function_call")
    done = [
        e
        for e in out
        if e["type"] == "response.output_item.done" and e["output_index"] == call["output_index"]
    ]
    assert len(done) == 1
    item = done[0]["item"]
    assert (item["id"], item["type"], item["status"]) == (
        call["item"]["id"],
        "function_call",
        "incomplete",
    )
    # what was sent, its close held back: no client parses a withheld call's arguments whole
    assert item["arguments"] == '{"town": "Paris"'
    with pytest.raises(json.JSONDecodeError):
        json.loads(item["arguments"])
    final = out[-1]["response"]
    assert all(o["type"] != "function_call" for o in final["output"])


# -- a whole Anthropic message's tool_use ----------------------------------------------


def test_a_whole_messages_answers_tool_use_input_becomes_the_call() -> None:
    message = {
        "id": "msg_whole",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Oslo"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    turn = GatedMessages({**MESSAGES, "stream": False}, Options(on_blocked="notice"))
    body = turn.whole(message)
    assert turn.status == "pass"
    uses = [b for b in body["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [
        ("toolu_w", "get_weather", {"city": "Oslo"})
    ]
    assert body["stop_reason"] == "tool_use"


# -- the Responses stream's own end -------------------------------------------------------


def responses_events(
    text: str, call: tuple[str, str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A Responses upstream's stream of ``text`` and then ``call``, as parsed events."""
    body = responses_turn(text, call).body.decode()
    return [data for _, data in events(body) if data != "[DONE]"]


@pytest.mark.parametrize("ending", ["response.completed", "response.incomplete", "response.failed"])
def test_the_responses_upstreams_end_event_ends_the_clients_turn_as_it_comes(ending: str) -> None:
    upstream = responses_events("Mild in Paris.")
    last = upstream[-1]
    assert last["type"] == "response.completed"
    engine = GatedResponses(RESPONSES, Options(on_blocked="notice"))
    out: list[dict[str, Any]] = []
    for chunk in upstream[:-1]:
        out += engine.feed(chunk)
    assert all(e["type"] != ending for e in out)
    ended = engine.feed({**last, "type": ending})
    assert engine.finished
    assert ended and ended[-1]["type"] in (
        "response.completed",
        "response.incomplete",
        "response.failed",
    )
    assert engine.feed(last) == [] and engine.finish() == []  # nothing after the end


# -- a repair -------------------------------------------------------------------------------


BAD_CALL = {"town": "Paris"}


def test_a_repair_on_the_responses_wire_keeps_the_input_list_before_the_history() -> None:
    given = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "Which city?"},
        {"role": "user", "content": "Paris."},
    ]
    request = {**RESPONSES, "input": given}
    engine = GatedResponses(request, Options(on_blocked="repair", repairs=1))
    played(engine, responses_events("", call=("call_1", "get_weather", BAD_CALL)))
    assert engine.repair is not None
    asked = engine.repair["input"]
    assert asked[: len(given)] == given
    kinds = [item.get("type") for item in asked[len(given) :]]
    assert kinds == ["function_call", "function_call_output"], asked
    assert asked[len(given)]["call_id"] == "call_1"


def test_a_repaired_turn_whose_chunks_name_no_model_gives_the_model_asked() -> None:
    """The client's Response names the model it asked for when no upstream chunk does."""
    bad = {"index": 0, "id": "call_1", "type": "function"}
    bad["function"] = {"name": "get_weather", "arguments": json.dumps(BAD_CALL)}
    good = {**bad, "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    nameless = [
        {k: v for k, v in chunk.items() if k != "model"}
        for chunk in (chat_chunk({"tool_calls": [bad]}), chat_chunk({}, "tool_calls"))
    ]
    first = GatedResponses(RESPONSES, Options(on_blocked="repair", repairs=1), upstream="chat")
    out = played(first, nameless)
    assert first.repair is not None and out == []  # nothing shown: the call is re-asked
    second = first.follow_up()
    repaired = [
        {**chunk, "choices": [{**chunk["choices"][0], "delta": {"tool_calls": [good]}}]}
        if n == 0
        else chunk
        for n, chunk in enumerate(nameless)
    ]
    out = played(second, repaired)
    assert out[0]["type"] == "response.created"
    assert {e["response"]["model"] for e in out if "response" in e} == {RESPONSES["model"]}
    assert [json.loads(c.arguments) for c in second.calls] == [{"city": "Paris"}]
    items = [e["item"] for e in out if e["type"] == "response.output_item.done"]
    assert [i["id"][:3] for i in items if i["type"] == "function_call"] == ["fc_"]


# -- the engine's time ------------------------------------------------------------------


def test_the_time_spent_ending_the_turn_is_counted_in_its_audit_record() -> None:
    text = "Mild in Paris. " * 200
    turn = GatedTurn(CHAT, Options(on_blocked="notice", text_formats=("tool_call_tag",)))
    for chunk in text_turn(pieces(text, 50))[:-1]:
        turn.feed(chunk)
    before = turn.audit()["cpu_us"]
    turn.finish(clean=True)
    after = turn.audit()["cpu_us"]
    assert after > before > 0


# -- wires told apart, models named -------------------------------------------------------


def test_a_chat_body_with_a_developer_message_on_the_messages_path_is_refused() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ],
    }
    with pytest.raises(RequestError, match=r"the Chat Completions API.*/v1/chat/completions"):
        GatedMessages(body)


def test_a_responses_client_sees_the_model_a_chat_upstream_named() -> None:
    named = {**chat_chunk({"content": "Mild."}), "model": "served-model"}
    engine = GatedResponses(RESPONSES, Options(on_blocked="notice"), upstream="chat")
    out = played(engine, [named, chat_chunk({}, "stop")])
    assert {e["response"]["model"] for e in out if "response" in e} == {"served-model"}
    assert {e["response"]["id"][:5] for e in out if "response" in e} == {"resp_"}


# -- reasoning at the turn's end, and an item whose id the server rotated ------------------


def test_a_stream_ending_inside_the_reasoning_keeps_its_held_tail_as_reasoning() -> None:
    turn = GatedTurn(CHAT, Options(on_blocked="notice", move_reasoning=True))
    out = played(turn, text_turn(["<think>the user wants", " weather</th"]))
    deltas = [c["choices"][0]["delta"] for c in out]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "the user wants weather</th"
    assert "".join(d.get("content", "") for d in deltas) == ""
    assert out[-1]["choices"][0]["finish_reason"] == "stop"


def test_an_item_done_under_a_new_id_reaches_the_client_under_the_id_it_was_added_with() -> None:
    upstream = responses_events("Mild in Paris.")
    thought = {"type": "reasoning", "summary": [], "content": []}
    reasoning = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**thought, "id": "rs_a"},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": {**thought, "id": "rs_b"}},
    ]
    shifted = [
        {**e, "output_index": e["output_index"] + 1} if "output_index" in e else e
        for e in upstream[1:]
    ]
    engine = GatedResponses(RESPONSES, Options(on_blocked="notice"))
    out = played(engine, [upstream[0], *reasoning, *shifted])
    done = [e for e in out if e["type"] == "response.output_item.done"]
    assert (done[0]["item"]["type"], done[0]["item"]["id"]) == ("reasoning", "rs_a")
    final = out[-1]["response"]["output"]
    assert (final[0]["type"], final[0]["id"]) == ("reasoning", "rs_a")
    assert [o["type"] for o in final] == ["reasoning", "message"]


# -- a blocked call whose arguments already streamed is not repaired ---------------------


def native_call(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    call = {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps(arguments)},
    }
    return [chat_chunk({"tool_calls": [call]}), chat_chunk({}, "tool_calls")]


BAD_TEXT_CALL = '<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>'


def streamed_turn(client: str, kind: str) -> list[dict[str, Any]]:
    """A schema-invalid call streamed to ``client`` as it formed: native, or a text call."""
    if kind == "native":
        return native_call({"town": "Paris"})
    return text_turn(pieces(BAD_TEXT_CALL))


@pytest.mark.parametrize(
    ("client", "kind"),
    [("chat", "native"), ("messages", "text"), ("responses", "text"), ("chat", "text")],
)
def test_a_call_whose_arguments_streamed_is_withheld_not_repaired(client: str, kind: str) -> None:
    options = Options(repairs=1, stream_args=True, text_formats=("tool_call_tag",))
    engine = Engine(REQUESTS[client], options, client=client, upstream="chat")
    out = played(engine, streamed_turn(client, kind))
    assert engine.options.on_blocked == "repair"
    assert engine.repair is None and engine.calls == []
    assert [r.call.name for r in engine.withheld] == ["get_weather"]
    streamed = sent_arguments(client, out)
    # the close is held back until the gate accepts: this text never parses whole
    assert list(streamed.values()) == ['{"town": "Paris"']
    if client == "chat":
        assert out[-1]["choices"][0]["finish_reason"] == "stop"
    elif client == "messages":
        ending = next(e for e in out if e["type"] == "message_delta")
        assert ending["delta"]["stop_reason"] == "end_turn"
    else:
        final = out[-1]["response"]
        assert all(o["type"] != "function_call" for o in final["output"])


@pytest.mark.parametrize("stream_args", [False, True])
def test_a_call_no_delta_showed_is_repaired(stream_args: bool) -> None:
    # On a Messages client a translated native call waits for its verdict, streamed or not.
    options = Options(repairs=1, stream_args=stream_args)
    engine = Engine(MESSAGES, options, client="messages", upstream="chat")
    out = played(engine, native_call({"town": "Paris"}))
    assert engine.repair is not None and engine.calls == []
    assert sent_arguments("messages", out) == {}
    follow = engine.follow_up()
    played(follow, native_call({"city": "Paris"}))
    assert [json.loads(c.arguments) for c in follow.calls] == [{"city": "Paris"}]


# -- a whole answer, repaired arguments, a Responses message item's end --------------------

WHOLE_CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"content": "Mild."}, "finish_reason": "stop"}],
}
"""A whole Chat Completions answer (the upstream ignored ``stream``) whose message has no role."""


def test_a_whole_answer_streamed_to_a_chat_client_says_the_role_once() -> None:
    engine = Engine(CHAT, Options(on_blocked="notice"), client="chat", upstream="chat")
    chunks = engine.whole_chunks(WHOLE_CHAT)
    assert [c["choices"][0]["delta"] for c in chunks] == [
        {"role": "assistant", "content": "Mild."},
        {},
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("repair_json", [True, False])
def test_a_native_calls_repaired_arguments_are_the_ones_sent(repair_json: bool) -> None:
    """With ``repair_json`` the repaired call is sent; without it the broken call is withheld."""
    options = Options(on_blocked="notice", repair_json=repair_json)
    engine = Engine(CHAT, options, client="chat", upstream="chat")
    call = {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris",}'},
    }
    out = played(engine, [chat_chunk({"tool_calls": [call]}), chat_chunk({}, "tool_calls")])
    sent = [json.loads(text) for text in sent_arguments("chat", out).values()]
    assert engine.buffer.repair == ("lossless" if repair_json else None)  # the mode it reads
    if repair_json:
        assert [json.loads(c.arguments) for c in engine.calls] == [{"city": "Paris"}]
        assert sent == [{"city": "Paris"}]
    else:
        assert engine.calls == [] and sent == []


def test_each_responses_item_ends_at_the_place_it_was_added() -> None:
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",))
    good = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    engine = GatedResponses(RESPONSES, options, upstream="chat")
    out = played(engine, text_turn(pieces("Checking. " + good)))
    items = [e for e in out if e["type"].startswith("response.output_item.")]
    added = {e["item"]["id"]: e["output_index"] for e in items if e["type"].endswith("added")}
    done = {e["item"]["id"]: e["output_index"] for e in items if e["type"].endswith("done")}
    assert done == added and sorted(added.values()) == [0, 1]


@pytest.mark.parametrize("client", ["messages", "responses"])
def test_a_whole_answer_translated_carries_no_field_of_the_upstreams_wire(client: str) -> None:
    request = {**REQUESTS[client], "stream": False}
    body = Engine(request, Options(on_blocked="notice"), client=client, upstream="chat").whole(
        WHOLE_CHAT
    )
    assert "choices" not in body and body["id"] != WHOLE_CHAT["id"]
    assert body["object" if client == "responses" else "type"] in ("response", "message")
    blocks = body["content"] if client == "messages" else body["output"][0]["content"]
    assert blocks[0]["text"] == "Mild."


def test_every_chunk_a_framework_hands_on_counts_its_time() -> None:
    engine = Engine(CHAT, Options(on_blocked="notice"), client="chat", upstream="chat")
    spent = [engine.cpu_ns]
    for chunk in text_turn(pieces("Mild in Paris, and dry all week.")):
        for choice in chunk["choices"]:
            del choice["logprobs"]  # a plain chunk, which the engine hands back as it came
        engine.feed_unchanged(chunk)
        spent.append(engine.cpu_ns)
    assert all(later > earlier for earlier, later in pairwise(spent))
