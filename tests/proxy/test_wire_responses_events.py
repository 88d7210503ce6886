"""The whole event stream a Responses client gets, driven through the engine in process.

Another wire's reasoning becomes a ``reasoning`` item whose ``reasoning_text`` deltas carry
its item id and place; released text a message item; an accepted call a ``function_call``
item whose arguments arrive in one delta and again in its ``.done``; each event numbered
in turn. Every event is compared whole (the ids callgate makes are checked by prefix and
then named by their order of appearance). An upstream's ``error`` event reaches the
client with its code, message and param.
"""

from __future__ import annotations

import json
import re
from typing import Any

from callgate.proxy.engine import Engine, Options

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
REQUEST = {
    "model": "m",
    "input": "weather?",
    "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
    "stream": True,
}
ARGS = '{"city": "Paris"}'
ENVELOPE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "q"}


def chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {**ENVELOPE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def played(engine: Engine, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += engine.feed(chunk)
    return out + engine.finish(clean=True)


def named(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with each id callgate made as ``<prefix>#n`` (n: its order of appearance)."""
    text = json.dumps(events)
    made: dict[str, str] = {}
    for given in re.findall(r'"((?:rs|msg|fc|resp)_[0-9a-f]+)"', text):
        made.setdefault(given, f"{given.split('_')[0]}_#{len(made)}")
    for given, name in made.items():
        text = text.replace(f'"{given}"', f'"{name}"')
    return list(json.loads(text))


def test_reasoning_text_and_a_call_of_a_chat_upstream_are_the_whole_responses_stream() -> None:
    chunks = [
        chat({"role": "assistant", "reasoning_content": "Think "}),
        chat({"reasoning_content": "hard."}),
        chat({"content": "Hi."}),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ARGS},
                    }
                ]
            }
        ),
        chat({}, "tool_calls"),
    ]
    engine = Engine(REQUEST, Options(), client="responses", upstream="chat")
    events = named(played(engine, chunks))
    thought = {"id": "rs_#1", "type": "reasoning", "summary": []}
    said = {"type": "output_text", "text": "Hi.", "annotations": []}
    message = {"id": "msg_#2", "type": "message", "role": "assistant"}
    call = {"id": "fc_#3", "type": "function_call", "call_id": "call_1", "name": "get_weather"}
    at_thought = {"item_id": "rs_#1", "output_index": 0, "content_index": 0}
    at_text = {"item_id": "msg_#2", "output_index": 1, "content_index": 0}
    at_call = {"item_id": "fc_#3", "output_index": 2}
    done_thought = {**thought, "content": [{"type": "reasoning_text", "text": "Think hard."}]}
    done_message = {**message, "status": "completed", "content": [said]}
    done_call = {**call, "status": "completed", "arguments": ARGS}
    body = [
        ("response.output_item.added", {"output_index": 0, "item": {**thought, "content": []}}),
        ("response.reasoning_text.delta", {**at_thought, "delta": "Think "}),
        ("response.reasoning_text.delta", {**at_thought, "delta": "hard."}),
        ("response.reasoning_text.done", {**at_thought, "text": "Think hard."}),
        ("response.output_item.done", {"output_index": 0, "item": done_thought}),
        (
            "response.output_item.added",
            {"output_index": 1, "item": {**message, "status": "in_progress", "content": []}},
        ),
        ("response.content_part.added", {**at_text, "part": {**said, "text": ""}}),
        ("response.output_text.delta", {**at_text, "delta": "Hi.", "logprobs": []}),
        ("response.output_text.done", {**at_text, "text": "Hi.", "logprobs": []}),
        ("response.content_part.done", {**at_text, "part": said}),
        ("response.output_item.done", {"output_index": 1, "item": done_message}),
        (
            "response.output_item.added",
            {"output_index": 2, "item": {**call, "status": "in_progress", "arguments": ""}},
        ),
        ("response.function_call_arguments.delta", {**at_call, "delta": ARGS}),
        ("response.function_call_arguments.done", {**at_call, "arguments": ARGS}),
        ("response.output_item.done", {"output_index": 2, "item": done_call}),
    ]
    assert events[2:-1] == [
        {"type": kind, "sequence_number": n, **fields} for n, (kind, fields) in enumerate(body, 2)
    ]
    ending = events[-1]
    assert ending["type"] == "response.completed" and ending["sequence_number"] == 17
    assert ending["response"]["output"] == [done_thought, done_message, done_call]
    assert ending["response"]["status"] == "completed"
    head = {"id": "resp_#0", "object": "response", "model": "q", "output": []}
    for n, kind in enumerate(("response.created", "response.in_progress")):
        started = events[n]
        assert (started["type"], started["sequence_number"]) == (kind, n)
        assert {k: started["response"][k] for k in head} == head
        assert started["response"]["status"] == "in_progress"


def test_an_upstream_error_event_reaches_the_client_with_its_code_message_and_param() -> None:
    error = {"code": "rate_limit_exceeded", "message": "slow down", "param": "model"}
    events = [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}},
        {"type": "error", "sequence_number": 1, **error},
    ]
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    sent = [e for e in played(engine, events) if e["type"] == "error"]
    assert sent == [{"type": "error", "sequence_number": 2, **error, "error": error}]


def test_an_upstream_error_object_without_a_message_is_said_to_have_failed() -> None:
    events = [{"type": "error", "sequence_number": 0, "error": {"code": "server_error"}}]
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    sent = [e for e in played(engine, events) if e["type"] == "error"]
    assert [(e["code"], e["message"], e["param"]) for e in sent] == [
        ("server_error", "the upstream failed", None)
    ]


UPSTREAM_HEAD = {
    "type": "response.created",
    "sequence_number": 0,
    "response": {"id": "resp_up", "created_at": 1234, "model": "m", "output": []},
}


def test_an_upstream_failure_ends_the_clients_stream_failed_with_its_error() -> None:
    failure = {"code": "server_error", "message": "boom"}
    failed = {
        "type": "response.failed",
        "sequence_number": 1,
        "response": {"id": "resp_up", "status": "failed", "output": [], "error": failure},
    }
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    ending = played(engine, [UPSTREAM_HEAD, failed])[-1]
    assert ending["type"] == "response.failed"
    answer = ending["response"]
    assert (answer["id"], answer["created_at"]) == ("resp_up", 1234)
    assert (answer["status"], answer["error"]) == ("failed", failure)


def test_a_stream_that_broke_off_ends_failed_with_an_upstream_error() -> None:
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    out = engine.feed(UPSTREAM_HEAD)
    engine.interrupted("the upstream closed the connection")
    ending = (out + engine.finish(clean=False))[-1]
    assert ending["type"] == "response.failed"
    answer = ending["response"]
    assert answer["status"] == "failed"
    assert answer["error"]["code"] == "upstream_error"
    assert answer["error"]["message"].startswith("The connection to the model broke")


def test_text_held_to_the_end_is_released_in_the_message() -> None:
    """A possible call's start the stream never finished is the model's text after all."""
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "m1", "type": "message", "role": "assistant", "content": []},
    }
    delta = {
        "type": "response.output_text.delta",
        "output_index": 0,
        "item_id": "m1",
        "content_index": 0,
        "delta": "Hi <tool_call",
    }
    options = Options(text_formats=("tool_call_tag",))
    engine = Engine(REQUEST, options, client="responses", upstream="responses")
    out = played(engine, [UPSTREAM_HEAD, added, delta])
    said = "".join(e["delta"] for e in out if e["type"] == "response.output_text.delta")
    assert said == "Hi <tool_call"
    ending = out[-1]["response"]
    assert ending["output"][0]["content"][0]["text"] == "Hi <tool_call"


def test_a_failure_without_an_error_object_is_said_to_have_failed() -> None:
    failed = {"type": "response.failed", "sequence_number": 1, "response": {"id": "resp_up"}}
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    ending = played(engine, [UPSTREAM_HEAD, failed])[-1]
    assert ending["type"] == "response.failed"
    assert ending["response"]["error"] == {"message": "failed"}
    assert engine.audit()["upstream_finish"] == "failed"


def test_an_incomplete_upstream_answer_keeps_its_reason() -> None:
    cut = {
        "type": "response.incomplete",
        "sequence_number": 1,
        "response": {"id": "resp_up", "incomplete_details": {"reason": "content_filter"}},
    }
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    ending = played(engine, [UPSTREAM_HEAD, cut])[-1]
    assert ending["type"] == "response.incomplete"
    assert ending["response"]["incomplete_details"] == {"reason": "content_filter"}


def test_a_shell_call_item_without_a_call_id_is_called_by_its_item_id() -> None:
    schema = {"type": "object", "properties": {"command": {"type": "array"}}}
    request = {
        "model": "m",
        "input": "list",
        "stream": True,
        "tools": [{"type": "function", "name": "local_shell", "parameters": schema}],
    }
    action = {"type": "exec", "command": ["ls"]}
    item = {"type": "local_shell_call", "id": "lsh_1", "action": action, "status": "completed"}
    events = [
        UPSTREAM_HEAD,
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_up", "output": [item]}},
    ]
    engine = Engine(request, Options(), client="responses", upstream="responses")
    played(engine, events)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in engine.calls] == [
        ("lsh_1", "local_shell", {"command": ["ls"]})
    ]


def test_an_upstream_reasoning_item_is_forwarded_field_for_field() -> None:
    thought = {"id": "rs_up", "type": "reasoning", "summary": []}
    where = {"output_index": 0, "item_id": "rs_up", "summary_index": 0}
    delta = {"type": "response.reasoning_summary_text.delta", **where, "delta": "Hmm."}
    events = [
        UPSTREAM_HEAD,
        {"type": "response.output_item.added", "output_index": 0, "item": thought},
        {**delta, "sequence_number": 7},
    ]
    engine = Engine(REQUEST, Options(), client="responses", upstream="responses")
    out = played(engine, events)
    forwarded = [e for e in out if e["type"] == delta["type"]]
    assert forwarded == [{**delta, "sequence_number": 3}]
