"""A tool declared without a schema, on every client wire and across wires, in process.

A tool given no parameters takes any arguments object (its schema is ``{"type": "object"}``):
the model's call with an object passes the gate whether the request goes upstream on its
own wire or translated to another.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy.engine import Engine, Options

ENVELOPE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "q"}
REQUESTS: dict[str, dict[str, Any]] = {
    "chat": {
        "model": "m",
        "messages": [{"role": "user", "content": "ping"}],
        "tools": [{"type": "function", "function": {"name": "ping"}}],
    },
    "responses": {"model": "m", "input": "ping", "tools": [{"type": "function", "name": "ping"}]},
    "messages": {
        "model": "m",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "ping"}],
        "tools": [{"name": "ping"}],
    },
}


def chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {**ENVELOPE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.mark.parametrize("client", ["chat", "responses", "messages"])
def test_a_call_of_a_tool_without_a_schema_passes_with_an_object(client: str) -> None:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "ping", "arguments": '{"host": "example.org"}'},
    }
    engine = Engine({**REQUESTS[client], "stream": True}, Options(), client=client, upstream="chat")
    for chunk in (chat({"role": "assistant", "tool_calls": [call]}), chat({}, "tool_calls")):
        engine.feed(chunk)
    engine.finish(clean=True)
    assert engine.status == "pass", engine.findings
    assert [(c.name, c.arguments) for c in engine.calls] == [("ping", '{"host": "example.org"}')]
