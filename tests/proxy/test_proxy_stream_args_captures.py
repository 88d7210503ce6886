"""``--stream-args`` on every recorded stream, every client wire in front of every upstream.

Each stream of tests/captures (and a call leaked into a local model's text), whole and one
character per text delta, is played through the engine twice: with ``stream_args`` and
without. A client that runs every call whose streamed arguments parse once its stream
ends, whatever the finish says (the Vercel AI SDK: a blank text as an empty object, a
Responses item whatever its status), must run exactly the calls the turn without the flag
sends, or none when a call shown as it formed was set aside beside others (the turn is
stranded, and the records say so). A Messages client's blocks stay well formed: each
started once, stopped once, nothing after its stop, every tool_use block stopped only once
the upstream's stream ended.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate.cli.replay import replay
from callgate.proxy.engine import Engine, Options
from callgate.proxy.wires.forming import STRANDED_WHY
from proxy_cases import WEATHER
from test_proxy_stream_args_messages import accumulated, chat_runnable, parsed, runnable
from test_proxy_wire_matrix import WIRES, _captures, _qwen, _tools, by_char

STREAM = Options(on_blocked="notice", stream_args=True)
PLAIN = Options(on_blocked="notice")
ENDS = {
    "chat": lambda chunk: bool((chunk.get("choices") or [{}])[0].get("finish_reason")),
    "messages": lambda event: event.get("type") in ("message_delta", "message_stop"),
    "responses": lambda event: event.get("type") in ("response.completed", "response.incomplete"),
}
"""Whether an upstream event ends its stream's content (what comes after it is the end)."""


def request(client: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """A streamed request of ``client``'s wire declaring ``schemas``."""
    body: dict[str, Any] = {"model": "m", "stream": True}
    if client == "responses":
        body["input"] = "go"
    else:
        body["messages"] = [{"role": "user", "content": "go"}]
    if client == "messages":
        body["max_tokens"] = 1000
    if schemas:
        body["tools"] = _tools(client, schemas)
    return body


def responses_runnable(out: list[dict[str, Any]]) -> list[Any]:
    """What a client running every function_call item whose arguments parse runs: an
    item's arguments are its done item's, else the deltas it got."""
    texts: dict[int, str] = {}
    done: dict[int, str] = {}
    for event in out:
        kind = event.get("type")
        item = event.get("item") or {}
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            texts[event["output_index"]] = item.get("arguments") or ""
        elif kind == "response.function_call_arguments.delta":
            texts[event["output_index"]] += event["delta"]
        elif kind == "response.output_item.done" and item.get("type") == "function_call":
            done[event["output_index"]] = item.get("arguments") or ""
    return [value for i in sorted(texts) for value in parsed(done.get(i, texts[i]))]


def played(
    client: str,
    upstream: str,
    schemas: dict[str, Any],
    stream: list[dict[str, Any]],
    options: Options,
) -> tuple[Engine, list[dict[str, Any]], list[dict[str, Any]]]:
    """The turn's client events before the upstream's stream ended, and from its end."""
    engine = Engine(request(client, schemas), options, client=client, upstream=upstream)
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for event in stream:
        ended = bool(after) or ENDS[upstream](event)
        (after if ended else before).extend(engine.feed(event))
    after += engine.finish(clean=upstream == "chat")
    return engine, before, after


@pytest.mark.parametrize("upstream", WIRES)
@pytest.mark.parametrize("client", WIRES)
def test_every_recorded_stream_runs_what_the_turn_sends_with_or_without_stream_args(
    client: str, upstream: str
) -> None:
    seen = 0
    for name, whole in [("qwen", _qwen(upstream)), *_captures(upstream)]:
        for stream in (whole, by_char(upstream, whole)):
            found = replay(stream, clean_end=upstream == "chat")
            schemas = {c["name"]: {"type": "object"} for c in found["calls"]}
            if name == "qwen":
                schemas = WEATHER
            engine, before, after = played(client, upstream, schemas, stream, STREAM)
            plain, _, _ = played(client, upstream, schemas, stream, PLAIN)
            sent = [json.loads(c.arguments) for c in plain.calls]
            stranded = any(STRANDED_WHY in w.content for w in engine.withheld)
            if client == "messages":
                shown = accumulated(before)
                assert not any(b["stopped"] for b in shown if b["type"] == "tool_use"), name
                ran = runnable(accumulated(before + after))
            elif client == "chat":
                ran = chat_runnable(before + after)
            else:
                ran = responses_runnable(before + after)
            assert ran == ([] if stranded else sent), name
            assert [json.loads(c.arguments) for c in engine.calls] == ran, name
            seen += bool(sent)
    assert seen  # calls were among them
