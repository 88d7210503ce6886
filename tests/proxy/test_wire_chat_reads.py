"""What a Chat Completions upstream's chunks give a client, read by the gateway's Chat reader.

Under ``--stream-args`` one chunk may carry several native calls: a declared tool's call
streams its deltas as they come even when an undeclared tool's call comes first in that
chunk (the undeclared one is held for the gate). Token counts a server sends on its text
chunks reach the client's last chunk. Under ``--move-reasoning`` a stream that ends without
a finish chunk gives the client all the text the gate held to its end, a tail that might
have opened ``<think>`` included.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from callgate.proxy.engine import Engine, Options
from callgate.proxy.sse import DONE_EVENT, SSEReader, encode
from proxy_cases import chat_chunk
from test_gateway_behaviours import CALL
from test_gateway_corners import REQUESTS, sent_arguments
from test_gateway_edges import TAG


def test_a_declared_call_streams_when_an_undeclared_one_comes_first_in_its_chunk() -> None:
    engine = Engine(
        REQUESTS["chat"],
        Options(on_blocked="notice", stream_args=True),
        client="chat",
        upstream="chat",
    )
    unknown = {
        **copy.deepcopy(CALL),
        "id": "call_rm",
        "function": {"name": "delete_files", "arguments": ""},
    }
    declared = {
        **copy.deepcopy(CALL),
        "index": 1,
        "function": {"name": "get_weather", "arguments": ""},
    }
    rest = {"index": 1, "function": {"arguments": '{"city": "Oslo"}'}}
    out: list[dict[str, Any]] = []
    for chunk in [
        chat_chunk({"role": "assistant", "content": ""}),
        chat_chunk({"tool_calls": [unknown, declared]}),
        chat_chunk({"tool_calls": [rest]}),
    ]:
        out += engine.feed(chunk)
    (streamed,) = sent_arguments("chat", out).values()
    assert streamed == '{"city": "Oslo"'  # its close waits for the gate's acceptance


def _usage(completion: int) -> dict[str, int]:
    return {"prompt_tokens": 5, "completion_tokens": completion, "total_tokens": 5 + completion}


def test_usage_that_comes_on_a_text_chunk_is_the_usage_the_client_gets() -> None:
    """A server that counts tokens on every chunk (vLLM's continuous usage) and not on its
    finish chunk: the count of its last text chunk is the one the client's last chunk
    carries, read byte by byte as the proxy reads the upstream."""
    chunks = [
        chat_chunk({"role": "assistant", "content": ""}, usage=_usage(0)),
        chat_chunk({"content": "Mild "}, usage=_usage(1)),
        chat_chunk({"content": "in Paris."}, usage=_usage(2)),
        chat_chunk({}, "stop"),
    ]
    engine = Engine(REQUESTS["chat"], Options(), client="chat", upstream="chat")
    sent = b"".join(engine.play_bytes(encode(chunk)) for chunk in chunks)
    sent += engine.play_bytes(DONE_EVENT)
    events = [json.loads(e.data) for e in SSEReader().feed(sent) if e.data != "[DONE]"]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in events) == "Mild in Paris."
    assert [c.get("usage") for c in events] == [None, None, None, _usage(2)]


def test_text_held_to_a_stream_end_without_finish_chunk_reaches_the_client_whole() -> None:
    """The gate holds a call cut off in its arguments; the splitter holds a ``<thi`` tail."""
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "<thi'
    options = Options(text_formats=TAG, move_reasoning=True, on_blocked="notice")
    engine = Engine(REQUESTS["chat"], options, client="chat", upstream="chat")
    out = engine.feed(chat_chunk({"role": "assistant", "content": text}))
    out += engine.finish(clean=True)
    deltas = [c["choices"][0]["delta"] for c in out if c.get("choices")]
    assert "".join(d.get("content") or "" for d in deltas) == text
    assert not any(d.get("reasoning_content") for d in deltas)
