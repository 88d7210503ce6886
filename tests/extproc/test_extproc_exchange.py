"""The processor's protocol without Envoy: ext_proc messages in, the answers out.

Each test builds the ``ProcessingRequest`` s Envoy sends (its own protos) and reads the
``ProcessingResponse`` s :class:`~callgate.extproc.exchange.Exchange` gives back: at every
split of the upstream's bytes the client gets what the engine gives the whole stream;
``STREAMED`` replaced chunks add up to the same; trailers, an encoded body, an upstream
error and a path callgate does not gate are each handled as the module says; policy comes
from metadata before headers.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envoy_front import require_envoy

require_envoy()

from envoy.config.core.v3 import base_pb2  # noqa: E402
from envoy.extensions.filters.http.ext_proc.v3 import processing_mode_pb2  # noqa: E402
from envoy.service.ext_proc.v3 import external_processor_pb2 as pb  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402

from callgate.extproc.exchange import Exchange  # noqa: E402
from callgate.extproc.policy import PolicyError, read_policy  # noqa: E402
from callgate.proxy.engine import GatedTurn, Options  # noqa: E402
from callgate.proxy.sse import DONE_EVENT, SSEReader  # noqa: E402
from callgate.proxy.upstream import sse_body  # noqa: E402
from callgate.testing.builders import openai_chunks  # noqa: E402
from callgate.testing.wires import WireCall  # noqa: E402
from proxy_cases import WEATHER, openai_tools  # noqa: E402

MODE = processing_mode_pb2.ProcessingMode
NOTICE = Options(on_blocked="notice")
CALL = WireCall("call_1", "get_weather", ('{"city": ', '"Par', 'is"}'))
CHUNKS = openai_chunks([CALL], [0, 0, 0, 0], text=["Checking ", "the ", "weather."])
BODY = sse_body(CHUNKS)
REQUEST = {
    "model": "gpt-4.1",
    "messages": [{"role": "user", "content": "go"}],
    "tools": openai_tools(WEATHER),
    "stream": True,
}


def _headers(pairs: dict[str, str], *, end: bool = False) -> Any:
    values = [base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
    return pb.HttpHeaders(headers=base_pb2.HeaderMap(headers=values), end_of_stream=end)


def _start(mode: int, path: str = "/v1/chat/completions", method: str = "POST", **kw: Any) -> Any:
    config = pb.ProtocolConfiguration(request_body_mode=MODE.BUFFERED, response_body_mode=mode)
    headers = {":path": path, ":method": method, "content-type": "application/json", **kw}
    return pb.ProcessingRequest(request_headers=_headers(headers), protocol_config=config)


def _open(mode: int, request: dict[str, Any] = REQUEST, **headers: str) -> Exchange:
    """An exchange past its request (headers and body) and the response's headers."""
    exchange = Exchange(NOTICE)
    exchange.receive(_start(mode, **headers))
    body = pb.HttpBody(body=json.dumps(request).encode(), end_of_stream=True)
    assert exchange.receive(pb.ProcessingRequest(request_body=body))[0].HasField("request_body")
    sse = _headers({":status": "200", "content-type": "text/event-stream", "content-length": "9"})
    [answer] = exchange.receive(pb.ProcessingRequest(response_headers=sse))
    mutation = answer.response_headers.response.header_mutation
    assert "content-length" in mutation.remove_headers
    return exchange


def _body(exchange: Exchange, piece: bytes, *, end: bool) -> list[Any]:
    return exchange.receive(
        pb.ProcessingRequest(response_body=pb.HttpBody(body=piece, end_of_stream=end))
    )


def _engine_alone() -> bytes:
    """The whole stream through the engine directly, as ``callgate proxy`` plays it."""
    turn = GatedTurn(REQUEST, NOTICE)
    out = b"".join(turn.play(e) for e in SSEReader().feed(BODY))
    return out + b"".join(turn.encode(c) for c in turn.finish()) + DONE_EVENT


def _sent(answers: list[Any]) -> bytes:
    out = b""
    for answer in answers:
        mutation = answer.response_body.response.body_mutation
        out += (
            mutation.streamed_response.body
            if mutation.HasField("streamed_response")
            else mutation.body
        )
    return out


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    edges = [0, *sorted(set(points)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


@given(
    st.lists(st.integers(1, len(BODY) - 1), max_size=40), st.sampled_from(["duplex", "streamed"])
)
def test_at_every_split_the_client_gets_what_the_engine_gives_the_whole_stream(
    points: list[int], mode: str
) -> None:
    exchange = _open(MODE.FULL_DUPLEX_STREAMED if mode == "duplex" else MODE.STREAMED)
    pieces = _cuts(BODY, points)
    answers: list[Any] = []
    for n, piece in enumerate(pieces):
        got = _body(exchange, piece, end=n == len(pieces) - 1)
        if mode == "streamed":
            assert len(got) == 1  # one answer per chunk in STREAMED mode
        answers += got
    assert _sent(answers) == _engine_alone()
    if mode == "duplex":
        assert answers[-1].response_body.response.body_mutation.streamed_response.end_of_stream
    assert b"tool_calls" in _engine_alone() and exchange.ended


def test_a_text_event_the_client_receives_unchanged_goes_on_as_the_upstreams_bytes() -> None:
    """Plain text events pass as they were written (spaced, keys reordered), not re-encoded."""
    envelope = {"id": "c-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1"}
    loose = [
        {"choices": [{"finish_reason": None, "delta": {"content": t}, "index": 0}], **envelope}
        for t in ("Plain ", "prose, ", "as it came.")
    ]
    first = {**envelope, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in loose]
    exchange = _open(MODE.FULL_DUPLEX_STREAMED)
    sent = _sent(_body(exchange, sse_body([first], done=False), end=False))
    for event in events:
        assert _sent(_body(exchange, event, end=False)) == event
    assert b'"finish_reason":"stop"' in _sent(_body(exchange, DONE_EVENT, end=True))
    assert exchange.gated is not None and exchange.gated.turn.status == "not_applicable"
    assert sent.startswith(b"data: ") and b"role" in sent


def test_the_call_is_held_until_the_stream_ends() -> None:
    exchange = _open(MODE.FULL_DUPLEX_STREAMED)
    before_end = _sent(_body(exchange, BODY[: BODY.rindex(b"data: [DONE]")], end=False))
    assert b"Checking" in before_end and b"get_weather" not in before_end
    assert b"get_weather" in _sent(_body(exchange, b"data: [DONE]\n\n", end=True))


def test_trailers_end_the_body_and_what_is_left_goes_before_them() -> None:
    exchange = _open(MODE.FULL_DUPLEX_STREAMED)
    first = _sent(_body(exchange, BODY, end=False))
    answers = exchange.receive(pb.ProcessingRequest(response_trailers=pb.HttpTrailers()))
    assert [a.WhichOneof("response") for a in answers] == ["response_body", "response_trailers"]
    assert first + _sent(answers[:1]) == _engine_alone()


def test_an_encoded_body_is_never_released() -> None:
    exchange = Exchange(NOTICE)
    exchange.receive(_start(MODE.FULL_DUPLEX_STREAMED))
    body = pb.HttpBody(body=json.dumps(REQUEST).encode(), end_of_stream=True)
    exchange.receive(pb.ProcessingRequest(request_body=body))
    headers = {":status": "200", "content-type": "text/event-stream", "content-encoding": "gzip"}
    exchange.receive(pb.ProcessingRequest(response_headers=_headers(headers)))
    sent = _sent(_body(exchange, BODY, end=True))
    assert b"get_weather" not in sent and b"Checking" not in sent
    assert exchange.gated is not None and exchange.gated.turn.status == "fail"


def test_an_upstream_error_and_an_ungated_path_pass_unchanged() -> None:
    exchange = Exchange(NOTICE)
    exchange.receive(_start(MODE.FULL_DUPLEX_STREAMED))
    exchange.receive(pb.ProcessingRequest(request_body=pb.HttpBody(body=b"{}", end_of_stream=True)))
    [answer] = exchange.receive(pb.ProcessingRequest(response_headers=_headers({":status": "429"})))
    assert not answer.response_headers.response.header_mutation.remove_headers
    assert _sent(_body(exchange, b'{"error": 1}', end=True)) == b'{"error": 1}'

    passing = Exchange(NOTICE)
    [answer] = passing.receive(_start(MODE.STREAMED, path="/v1/models", method="GET"))
    assert answer.mode_override.response_body_mode == MODE.NONE
    assert passing.wire is None
    [unchanged] = _body(passing, b"anything", end=True)
    assert not unchanged.response_body.response.HasField("body_mutation")


def test_a_request_without_a_body_or_with_a_bad_policy_is_answered_at_once() -> None:
    exchange = Exchange(NOTICE)
    request = pb.ProcessingRequest(
        request_headers=_headers({":path": "/v1/messages", ":method": "POST"}, end=True)
    )
    [answer] = exchange.receive(request)
    assert answer.immediate_response.status.code == 400
    assert json.loads(answer.immediate_response.body)["type"] == "error"

    bad = Exchange(NOTICE)
    [answer] = bad.receive(_start(MODE.STREAMED, **{"x-callgate-text-formats": "nope"}))
    assert answer.immediate_response.status.code == 400
    assert b"unknown format 'nope'" in answer.immediate_response.body


def test_metadata_policy_wins_over_headers_and_allowed_tools_only_narrow() -> None:
    metadata = {"callgate": {"on_blocked": "pass", "allowed_tools": ["a", "b"]}}
    headers = {"x-callgate-on-blocked": "notice", "x-callgate-allowed-tools": "b,c"}
    policy = read_policy(NOTICE, metadata, headers)
    assert policy.options.on_blocked == "pass"
    assert policy.allowed_tools == frozenset({"b"})
    tools = [{"type": "function", "function": {"name": n}} for n in ("a", "b", "c")]
    assert policy.request({"tools": tools})["tools"] == [tools[1]]
    assert read_policy(NOTICE, {}, {}).allowed_tools is None
    with pytest.raises(PolicyError, match="notice or pass"):
        read_policy(NOTICE, {"callgate": {"on_blocked": "repair"}})
    with pytest.raises(PolicyError, match="list of names"):
        read_policy(NOTICE, {"callgate": {"allowed_tools": 5}})


def test_policy_reaches_the_exchange_from_envoys_metadata_context() -> None:
    exchange = Exchange(NOTICE)
    start = _start(MODE.FULL_DUPLEX_STREAMED, **{"x-callgate-allowed-tools": "get_weather"})
    struct = struct_pb2.Struct()
    struct.update({"allowed_tools": "search"})
    start.metadata_context.filter_metadata["callgate"].CopyFrom(struct)
    exchange.receive(start)
    assert exchange.policy is not None and exchange.policy.allowed_tools == frozenset()


def test_a_full_duplex_request_body_is_held_whole_then_sent_on_unchanged() -> None:
    """agentgateway streams the request body full-duplex by default."""
    exchange = Exchange(NOTICE)
    start = _start(MODE.FULL_DUPLEX_STREAMED)
    start.protocol_config.request_body_mode = MODE.FULL_DUPLEX_STREAMED
    exchange.receive(start)
    data = json.dumps(REQUEST).encode()
    first = pb.ProcessingRequest(request_body=pb.HttpBody(body=data[:10]))
    assert exchange.receive(first) == []
    last = pb.ProcessingRequest(request_body=pb.HttpBody(body=data[10:], end_of_stream=True))
    [answer] = exchange.receive(last)
    streamed = answer.request_body.response.body_mutation.streamed_response
    assert streamed.body == data and streamed.end_of_stream
    assert exchange.gated is not None

    broken = Exchange(NOTICE)
    broken.receive(start)
    bad = pb.ProcessingRequest(request_body=pb.HttpBody(body=b"{", end_of_stream=True))
    [answer] = broken.receive(bad)
    assert answer.immediate_response.status.code == 400


def test_a_routes_grpc_metadata_is_a_policy_source_before_the_headers() -> None:
    exchange = Exchange(NOTICE, {"x-callgate-on-blocked": "pass"})
    exchange.receive(_start(MODE.STREAMED, **{"x-callgate-on-blocked": "notice"}))
    assert exchange.policy is not None and exchange.policy.options.on_blocked == "pass"


MESSAGES_REQUEST = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "go"}],
    "tools": [{"name": "get_weather", "input_schema": WEATHER["get_weather"]}],
    "stream": True,
}


@pytest.mark.parametrize("request_mode", [MODE.BUFFERED, MODE.FULL_DUPLEX_STREAMED])
def test_an_upstream_wire_rewrites_the_path_and_replaces_the_body(request_mode: int) -> None:
    exchange = Exchange(NOTICE, upstream_wire="chat")
    start = _start(MODE.FULL_DUPLEX_STREAMED, path="/v1/messages?beta=true")
    start.protocol_config.request_body_mode = request_mode
    [answer] = exchange.receive(start)
    common = answer.request_headers.response
    assert common.clear_route_cache
    assert [(h.header.key, h.header.raw_value) for h in common.header_mutation.set_headers] == [
        (":path", b"/v1/chat/completions?beta=true")
    ]
    assert "content-length" in common.header_mutation.remove_headers
    body = pb.HttpBody(body=json.dumps(MESSAGES_REQUEST).encode(), end_of_stream=True)
    [answer] = exchange.receive(pb.ProcessingRequest(request_body=body))
    mutation = answer.request_body.response.body_mutation
    if request_mode == MODE.BUFFERED:
        sent = mutation.body
        [length] = answer.request_body.response.header_mutation.set_headers
        assert (length.header.key, length.header.raw_value) == ("content-length", b"%d" % len(sent))
    else:
        assert mutation.streamed_response.end_of_stream
        sent = mutation.streamed_response.body
    chat = json.loads(sent)
    assert chat["messages"] == [{"role": "user", "content": "go"}]
    assert chat["max_tokens"] == 64 and chat["stream"] is True
    assert [t["function"]["name"] for t in chat["tools"]] == ["get_weather"]
    sse = _headers({":status": "200", "content-type": "text/event-stream"})
    exchange.receive(pb.ProcessingRequest(response_headers=sse))
    [piece] = _body(exchange, BODY, end=True)
    out = piece.response_body.response.body_mutation.streamed_response.body
    assert b"event: message_start" in out and b'"tool_use"' in out


def test_a_request_already_on_the_upstream_wire_keeps_its_path_and_body() -> None:
    exchange = Exchange(NOTICE, upstream_wire="chat")
    [answer] = exchange.receive(_start(MODE.FULL_DUPLEX_STREAMED))
    common = answer.request_headers.response
    assert not common.clear_route_cache and not common.header_mutation.set_headers
    body = pb.HttpBody(body=json.dumps(REQUEST).encode(), end_of_stream=True)
    [answer] = exchange.receive(pb.ProcessingRequest(request_body=body))
    assert not answer.request_body.response.HasField("body_mutation")
