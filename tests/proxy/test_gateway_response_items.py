"""What a Responses client's call items carry, driven through the engine in process.

A call converted from the text is added in progress with empty arguments, as the
Responses API adds one; its arguments then arrive as deltas.
"""

from __future__ import annotations

import json
from typing import Any

from callgate.proxy.engine import Engine, Options
from proxy_cases import QWEN_MODEL, WEATHER

TOOLS = [{"type": "function", "name": n, "parameters": s} for n, s in WEATHER.items()]
REQUEST = {"model": QWEN_MODEL, "input": "weather?", "tools": TOOLS, "stream": True}


def played(engine: Engine, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        out += engine.feed(event)
    return out + engine.finish(clean=True)


def test_a_call_from_the_text_is_added_in_progress_with_empty_arguments() -> None:
    """A Qwen call leaked into Chat text reaches a Responses client as a call item."""
    text = "<tool_call>\n" + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"content": text + "\n</tool_call>"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "q"}
    options = Options(text_formats=("tool_call_tag",))
    engine = Engine(REQUEST, options, client="responses", upstream="chat")
    sent = played(engine, [{**envelope, **c} for c in chunks])
    added = [
        e["item"]
        for e in sent
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    ]
    assert [(i["status"], i["arguments"], i["name"]) for i in added] == [
        ("in_progress", "", "get_weather")
    ]
    deltas = [e["delta"] for e in sent if e["type"] == "response.function_call_arguments.delta"]
    assert json.loads("".join(deltas)) == {"city": "Paris"}
