"""The gateway against hostile or odd input, and the library's termination evidence wired in.

Each test states a behaviour the gateway owes:
- the request's max_tokens / max_completion_tokens / max_output_tokens reach the buffer
  (``callgate.proxy.requests.output_token_limit``), so usage at the limit is a cut;
- a clean end without a finish reason ([DONE], or a whole response: TGI) runs the call;
- the request body read by ``callgate.proxy.requests.read_request`` (a 400, never a 500);
- an upstream 301 on a stream and a 204 (no empty 200, no body under 204);
- deep and huge upstream events (the client's stream still ends with a finish and keeps
  every text delta; the whole path never 500s; 1e400 never comes back as Infinity);
- Anthropic: ``"thinking": null`` in a whole response, an unreadable message_start and
  an unreadable content_block_start;
- ``--repair-json``: a call's broken argument JSON repaired losslessly, the edit in the
  audit record (and without the flag the call stays withheld).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from callgate.cli.commands import build_parser
from callgate.cli.proxy import turn_options
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.audit import AUDIT_FILE, load_records
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body, whole_body
from proxy_cases import ScriptedUpstream, chat_response, scripted_proxy
from proxy_cases import chat_chunk as chunk

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
CALL_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ScriptedUpstream, str]]:
    with scripted_proxy() as running:
        yield running


def call_chunks(arguments: str = '{"city": "Paris"}') -> list[dict[str, Any]]:
    function = {"name": "get_weather", "arguments": arguments}
    entry = {"index": 0, "id": "call_1", "type": "function", "function": function}
    return [chunk({"role": "assistant", "tool_calls": [entry]})]


def events(body: bytes) -> list[dict[str, Any]]:
    """The JSON events of an SSE body ([DONE] left out)."""
    found = []
    for line in body.decode("utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            found.append(json.loads(line[5:]))
    return found


def post(url: str, request: dict[str, Any], path: str = "/v1/chat/completions") -> httpx.Response:
    return httpx.post(url + path, json=request, timeout=30)


def finishes(body: bytes) -> list[Any]:
    return [c["choices"][0].get("finish_reason") for c in events(body) if c.get("choices")]


def tool_call_deltas(body: bytes) -> list[Any]:
    return [
        c["choices"][0]["delta"]["tool_calls"]
        for c in events(body)
        if c.get("choices") and c["choices"][0].get("delta", {}).get("tool_calls")
    ]


# -- usage at the request's token limit ----------------------------------------------------


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_a_stream_relabelled_tool_calls_with_usage_at_the_limit_sends_no_call(
    servers: tuple[ScriptedUpstream, str], field: str
) -> None:
    upstream, url = servers
    stream = [
        *call_chunks(),
        chunk({}, "tool_calls"),
        {**chunk({}), "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 12}},
    ]
    upstream.script = Script(sse_body(stream))
    request = {"model": "m", "stream": True, "tools": TOOLS, field: 12}
    reply = post(url, request)
    assert reply.status_code == 200
    assert tool_call_deltas(reply.content) == [] and "tool_calls" not in finishes(reply.content)
    one_more = post(url, {**request, field: 13})  # one token below the limit: the call runs
    assert tool_call_deltas(one_more.content) and "tool_calls" in finishes(one_more.content)


@pytest.mark.parametrize("cut", range(1, 4))
def test_a_cut_call_relabelled_tool_calls_at_the_limit_is_never_sent(
    servers: tuple[ScriptedUpstream, str], cut: int
) -> None:
    upstream, url = servers
    text = '{"city": "Paris"}'
    pieces = [text[: cut * 5]]
    stream = [*call_chunks(pieces[0]), chunk({}, "tool_calls", usage={"completion_tokens": 8})]
    upstream.script = Script(sse_body(stream))
    reply = post(url, {"model": "m", "stream": True, "tools": TOOLS, "max_tokens": 8})
    assert tool_call_deltas(reply.content) == [] and "tool_calls" not in finishes(reply.content)


def test_a_whole_response_with_usage_at_the_limit_sends_no_call(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    usage = {"prompt_tokens": 5, "completion_tokens": 12, "total_tokens": 17}
    response = chat_response("m", CALL_MESSAGE, usage=usage)
    upstream.script = Script(whole_body(response), content_type="application/json")
    reply = post(url, {"model": "m", "tools": TOOLS, "max_completion_tokens": 12})
    assert reply.status_code == 200
    assert not reply.json()["choices"][0]["message"].get("tool_calls")


# -- a clean end without a finish reason (TGI) ------------------------------------------------


def test_the_tgi_shape_runs_its_call_through_the_proxy(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    upstream.script = Script(sse_body(call_chunks(), done=True))  # no finish_reason at all
    reply = post(url, {"model": "m", "stream": True, "tools": TOOLS})
    assert tool_call_deltas(reply.content) and "tool_calls" in finishes(reply.content)
    notes = [c.get("callgate") for c in events(reply.content) if c.get("callgate")]
    assert any("no_finish_reason" in json.dumps(n) for n in notes)


def test_without_done_the_tgi_shape_is_still_cut_off(servers: tuple[ScriptedUpstream, str]) -> None:
    upstream, url = servers
    upstream.script = Script(sse_body(call_chunks(), done=False))
    reply = post(url, {"model": "m", "stream": True, "tools": TOOLS})
    assert tool_call_deltas(reply.content) == []


def test_a_whole_response_with_a_null_finish_reason_runs_its_call(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    response = chat_response("m", CALL_MESSAGE)
    response["choices"][0]["finish_reason"] = None
    upstream.script = Script(whole_body(response), content_type="application/json")
    reply = post(url, {"model": "m", "tools": TOOLS})
    assert reply.json()["choices"][0]["message"]["tool_calls"]


# -- the request body ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": NaN, "stream": true}',
        b'{"model": "m", "temperature": 1e400}',
        b'{"model": "m", "stream": "true"}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' * 100_000 + b"1" + b"}" * 100_000,
    ],
)
def test_a_hostile_request_body_is_a_400(
    servers: tuple[ScriptedUpstream, str], body: bytes
) -> None:
    _, url = servers
    reply = httpx.post(
        url + "/v1/chat/completions",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert reply.status_code == 400, reply.text
    assert "error" in reply.json()


# -- odd upstream statuses ---------------------------------------------------------------------


def test_an_upstream_301_on_a_stream_is_no_empty_200(servers: tuple[ScriptedUpstream, str]) -> None:
    upstream, url = servers
    upstream.script = Script(b"", status=301, headers=(("location", "http://elsewhere/"),))
    reply = post(url, {"model": "m", "stream": True, "tools": TOOLS})
    assert reply.status_code != 200 or finishes(reply.content)


def test_an_upstream_204_gets_no_body_under_204(servers: tuple[ScriptedUpstream, str]) -> None:
    upstream, url = servers
    upstream.script = Script(b"", status=204, content_type="application/json")
    for stream in (True, False):
        reply = post(url, {"model": "m", "stream": stream, "tools": TOOLS})
        assert reply.status_code < 500
        assert reply.status_code != 204 or reply.content == b""


# -- deep and huge upstream events -------------------------------------------------------------


def test_a_deep_event_does_not_end_the_stream_or_lose_text(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    deep = b'data: {"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n\n"
    body = (
        sse_body([chunk({"role": "assistant", "content": "Hello"})], done=False)
        + deep
        + sse_body([chunk({"content": " again"}), chunk({}, "stop")], done=True)
    )
    upstream.script = Script(body)
    reply = post(url, {"model": "m", "stream": True})
    text = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in events(reply.content)
        if c.get("choices")
    )
    assert "Hello" in text and " again" in text
    assert [f for f in finishes(reply.content) if f]  # the stream ends with a finish


def test_a_deep_whole_response_is_no_500(servers: tuple[ScriptedUpstream, str]) -> None:
    upstream, url = servers
    body = (
        b'{"choices": [{"message": {"content": "hi"}}], "x": '
        + b"[" * 50_000
        + b"]" * 50_000
        + b"}"
    )
    upstream.script = Script(body, content_type="application/json")
    reply = post(url, {"model": "m"})
    assert reply.status_code < 500


def test_a_huge_number_is_never_written_back_as_infinity(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    stream = sse_body(
        [chunk({"role": "assistant", "content": "hi"}, logprobs={"x": 1}), chunk({}, "stop")],
        done=True,
    )
    stream = stream.replace(b'{"x": 1}', b'{"x": 1e400}')
    upstream.script = Script(stream)
    reply = post(url, {"model": "m", "stream": True})
    assert b"Infinity" not in reply.content
    response = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"x": 1},
    }
    raw = whole_body(response).replace(b'"x": 1', b'"x": 1e400')
    upstream.script = Script(raw, content_type="application/json")
    whole = post(url, {"model": "m"})
    assert whole.status_code < 500 and b"Infinity" not in whole.content


# -- Anthropic ---------------------------------------------------------------------------------


def anthropic_events(body: bytes) -> list[dict[str, Any]]:
    return events(body)


def test_an_anthropic_whole_response_with_null_thinking_is_no_500(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [
            {"type": "thinking", "thinking": None, "signature": "s"},
            {"type": "text", "text": "hi"},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    upstream.script = Script(whole_body(response), content_type="application/json")
    reply = post(url, {"model": "claude", "max_tokens": 64, "messages": []}, "/v1/messages")
    assert reply.status_code < 500


def _anthropic_stream(start: bytes, block_start: bytes) -> bytes:
    def event(kind: str, data: dict[str, Any]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

    return (
        start
        + block_start
        + event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hello"},
            },
        )
        + event("content_block_stop", {"type": "content_block_stop", "index": 0})
        + event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
        )
        + event("message_stop", {"type": "message_stop"})
    )


GOOD_START = (
    b'event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_1", '
    b'"type": "message", "role": "assistant", "model": "claude", "content": [], '
    b'"stop_reason": null, "usage": {"input_tokens": 1, "output_tokens": 1}}}\n\n'
)
GOOD_BLOCK = (
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    b'"content_block": {"type": "text", "text": ""}}\n\n'
)


def test_an_unreadable_message_start_never_lets_blocks_come_first(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    broken = b"event: message_start\ndata: {not json\n\n"
    upstream.script = Script(_anthropic_stream(broken, GOOD_BLOCK))
    reply = post(
        url, {"model": "claude", "max_tokens": 64, "stream": True, "messages": []}, "/v1/messages"
    )
    kinds = [e.get("type") for e in anthropic_events(reply.content)]
    blocks = [n for n, k in enumerate(kinds) if str(k).startswith("content_block")]
    assert "message_start" in kinds and all(n > kinds.index("message_start") for n in blocks)


def test_an_unreadable_content_block_start_keeps_the_blocks_text(
    servers: tuple[ScriptedUpstream, str],
) -> None:
    upstream, url = servers
    broken = (
        b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
        b'"content_block": "oops"}\n\n'
    )
    upstream.script = Script(_anthropic_stream(GOOD_START, broken))
    reply = post(
        url, {"model": "claude", "max_tokens": 64, "stream": True, "messages": []}, "/v1/messages"
    )
    text = "".join(
        e["delta"].get("text", "")
        for e in anthropic_events(reply.content)
        if e.get("type") == "content_block_delta"
    )
    assert "Hello" in text


# -- --repair-json -------------------------------------------------------------------------


@pytest.mark.parametrize("repair_json", [True, False])
def test_repair_json_runs_a_losslessly_repaired_call_and_audits_the_edit(
    tmp_path: Path, repair_json: bool
) -> None:
    stream = [*call_chunks('{"city": "Paris",}'), chunk({}, "tool_calls")]
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(stream)))
    options = Options(on_blocked="notice", repair_json=repair_json)
    with ServerThread(upstream) as up:
        config = ProxyConfig(upstream=up.url, options=options, audit_dir=tmp_path)
        with ServerThread(create_app(config)) as proxy:
            reply = post(proxy.url, {"model": "m", "stream": True, "tools": TOOLS})
    (record,) = load_records((tmp_path / AUDIT_FILE).read_text(encoding="utf-8"))
    codes = [f["code"] for f in record["turn"]["findings"]]
    sent = [d for ds in tool_call_deltas(reply.content) for d in ds]
    if repair_json:
        assert json.loads(sent[0]["function"]["arguments"]) == {"city": "Paris"}
        assert "repaired_arguments" in codes and record["turn"]["status"] == "pass"
        assert record["options"]["repair_json"] is True
    else:
        assert sent == [] and "repaired_arguments" not in codes


@pytest.mark.parametrize("command", [["proxy"], ["ext-proc"]])
def test_the_repair_json_flag_sets_the_option(command: list[str]) -> None:
    assert turn_options(build_parser().parse_args([*command, "--repair-json"])).repair_json
    assert not turn_options(build_parser().parse_args(command)).repair_json
