"""callgate inside a real Envoy: an SDK receives through Envoy what ``callgate proxy`` gives.

One Envoy for the module (tests/envoy_front.py) with the processor in both response body
modes (``FULL_DUPLEX_STREAMED``, ``STREAMED``), in front of a replaying upstream. Every
recorded OpenAI and Anthropic stream of tests/captures, whole and one character per text
delta (written to the processor in pieces cut inside events), gives each SDK client the
same text, calls and finish through Envoy as through the proxy; a cut or dropped turn
delivers no call; paths callgate does not gate pass unchanged; an unreadable request is
a 400 in the wire's shape; per-request policy headers apply; each turn's span carries the
verdict and finding codes and never an argument value.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from callgate.cli.replay import replay
from callgate.proxy.upstream import Script, sse_body
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from envoy_front import (
    ROUTES,
    Front,
    anthropic_turn,
    openai_turn,
    require_envoy,
    responses_turn,
    weather_request,
)
from proxy_cases import (
    QWEN_MODEL,
    WEATHER,
    anthropic_by_char,
    anthropic_request,
    by_char,
    capture_cases,
    cut_at,
    openai_tools,
    qwen_case,
    responses_by_char,
    responses_request,
    wire_captures,
)

require_envoy()

OPENAI = capture_cases()
ANTHROPIC = wire_captures("anthropic")
RESPONSES = wire_captures("openai-responses")
SPLIT = (61, 7, 150, 1)
"""Write sizes of the one-character variants: events reach the processor cut anywhere."""


@pytest.fixture(scope="module")
def front() -> Iterator[Front]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from callgate.proxy.telemetry import TurnSpans

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with Front(spans=TurnSpans(provider)) as running:
        running.exporter = exporter  # type: ignore[attr-defined]
        yield running


def _same_everywhere(front: Front, play: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the client gets through the proxy, asserted equal through each Envoy route."""
    want: dict[str, Any] = play(front.url("proxy"), kwargs)
    ids = want.pop("ids", [])
    for route in ROUTES:
        got = play(front.url(route), kwargs)
        assert len(got.pop("ids", [])) == len(ids)
        assert got == want, route
    return want


@pytest.mark.parametrize("case", OPENAI, ids=[c.id for c in OPENAI])
def test_every_recorded_openai_stream_reaches_the_sdk_as_through_the_proxy(
    front: Front, case: Any
) -> None:
    for variant, sizes in ((case, ()), (by_char(case), SPLIT)):
        front.scripts[variant.id] = Script(sse_body(variant.chunks), write_sizes=sizes)
        kwargs = {**variant.create_kwargs, "metadata": {"case": variant.id}}
        got = _same_everywhere(front, openai_turn, kwargs)
        want = variant.expected()
        assert [c for c, _ in got["calls"]] == [c for c, _ in want["calls"]], variant.id
        assert got["content"].startswith(want["display"]), variant.id


@pytest.mark.parametrize(("name", "events"), ANTHROPIC, ids=[n for n, _ in ANTHROPIC])
def test_every_recorded_anthropic_stream_reaches_the_sdk_as_through_the_proxy(
    front: Front, name: str, events: list[dict[str, Any]]
) -> None:
    for key, played, sizes in ((name, events, ()), (name + "/1", anthropic_by_char(events), SPLIT)):
        front.scripts[key] = Script(sse_body(played, done=False, named=True), write_sizes=sizes)
        request = anthropic_request(played, metadata={"user_id": key})
        got = _same_everywhere(front, anthropic_turn, request)
        result = replay(played)
        if result["status"] == "pass":
            assert [c for c, _ in got["calls"]] == [c["name"] for c in result["calls"]], key


@pytest.mark.parametrize(("name", "events"), RESPONSES, ids=[n for n, _ in RESPONSES])
def test_every_recorded_responses_stream_reaches_the_sdk_as_through_the_proxy(
    front: Front, name: str, events: list[dict[str, Any]]
) -> None:
    for key, played, sizes in ((name, events, ()), (name + "/1", responses_by_char(events), SPLIT)):
        front.scripts[key] = Script(sse_body(played, done=False, named=True), write_sizes=sizes)
        request = responses_request(played, metadata={"case": key})
        try:
            want = responses_turn(front.url("proxy"), request)
        except (RuntimeError, openai.APIError) as refused:  # the SDK refuses the stream itself
            for route in ROUTES:
                with pytest.raises(type(refused)):
                    responses_turn(front.url(route), request)
            continue
        for route in ROUTES:
            assert responses_turn(front.url(route), request) == want, (key, route)
        result = replay(played)
        if result["status"] == "pass":
            assert [c for c, _ in want["calls"]] == [c["name"] for c in result["calls"]], key


def test_the_captures_hold_calls_and_text_so_the_comparison_means_something(front: Front) -> None:
    with_calls = [c for c in OPENAI if c.expected()["calls"]]
    assert len(with_calls) >= 5 and len(ANTHROPIC) >= 10


def test_a_leaked_text_call_becomes_one_native_call_with_no_markup(front: Front) -> None:
    case = qwen_case()
    front.scripts[case.id] = Script(sse_body(case.chunks), write_sizes=(1,))
    for route in ROUTES:
        got = openai_turn(front.url(route), case.create_kwargs)
        assert got["content"] == "Let me check."
        assert got["calls"] == [("get_weather", {"city": "Paris"})]
        assert got["finish_reason"] == "tool_calls"


NATIVE = WireCall("call_1", "get_weather", ('{"city": ', '"Par', 'is"}'))


def _native_chunks() -> list[dict[str, Any]]:
    chunks = openai_chunks([NATIVE], [0, 0, 0, 0], text=["Checking."])
    for chunk in chunks:
        chunk["model"] = "gpt-4.1"
    return chunks


def test_a_call_cut_by_length_never_reaches_the_client(front: Front) -> None:
    chunks = _native_chunks()
    for at in range(1, len(chunks)):
        cut = cut_at(chunks, at, "length")
        if not cut:
            continue
        key = f"length-{at}"
        front.scripts[key] = Script(sse_body(cut))
        kwargs = weather_request(key)
        for route in ROUTES:
            got = openai_turn(front.url(route), kwargs)
            assert got["calls"] == [] and got["finish_reason"] == "length", (route, at)


def _chunks_until_error(base: str, kwargs: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The chunks an SDK client got before the stream broke, and whether it broke."""
    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-loopback", max_retries=0, timeout=20)
    got: list[dict[str, Any]] = []
    try:
        with client:
            for chunk in client.chat.completions.create(**kwargs, stream=True):
                got.append(chunk.model_dump())
    except (openai.APIError, httpx.HTTPError):
        return got, True
    return got, False


def test_a_dropped_upstream_connection_never_delivers_a_call(front: Front) -> None:
    body = sse_body(_native_chunks())
    marks = [body.find(b'"Par'), body.find(b'is\\"}'), body.find(b'tool_calls"}'), len(body) - 20]
    for at in marks:
        key = f"dropped-{at}"
        front.scripts[key] = Script(body, cut_at=at)
        kwargs = weather_request(key)
        for route in ROUTES:
            chunks, _ = _chunks_until_error(front.url(route), kwargs)
            sent = [c for c in chunks for ch in c["choices"] if ch["delta"].get("tool_calls")]
            finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"]]
            assert sent == [] and "tool_calls" not in finishes, (route, at)


def test_a_client_disconnect_ends_the_processor_stream(front: Front) -> None:
    chunks = openai_chunks([], [], text=["x"] * 400)
    key = "slow"
    front.scripts[key] = Script(sse_body(chunks), delay=0.01)
    body = {"model": "gpt-4.1", "messages": [], "stream": True, "metadata": {"case": key}}
    for route in ROUTES:
        with (
            httpx.Client(timeout=10) as client,
            client.stream("POST", front.url(route) + "/v1/chat/completions", json=body) as reply,
        ):
            assert reply.status_code == 200
            next(reply.iter_bytes())
        deadline = time.monotonic() + 10
        while front.processor.active and time.monotonic() < deadline:
            time.sleep(0.02)
        assert front.processor.active == 0, route
    ended = [
        e.gated.turn
        for e in front.processor.finished
        if e.gated is not None and e.gated.request.get("metadata") == {"case": key}
    ]
    assert len(ended) == 2 and all(turn.status == "fail" for turn in ended)
    assert front.upstream.aborted >= 2


def test_a_path_callgate_does_not_gate_passes_unchanged(front: Front) -> None:
    front.upstream.models = ["m-1", "m-2"]
    bare = httpx.get(front.url("bare") + "/v1/models", timeout=10)
    for route in ROUTES:
        reply = httpx.get(front.url(route) + "/v1/models", timeout=10)
        assert reply.status_code == 200 and reply.content == bare.content
    key = "/v1/embeddings"
    front.scripts[key] = Script(
        b'{"data": [{"embedding": [0.5]}]}', content_type="application/json"
    )
    for route in (*ROUTES, "bare"):
        reply = httpx.post(front.url(route) + key, json={"input": "x"}, timeout=10)
        assert reply.json() == {"data": [{"embedding": [0.5]}]}


@pytest.mark.parametrize(
    ("path", "body", "shape"),
    [
        ("/v1/chat/completions", b"not json", "chat"),
        ("/v1/chat/completions", b"[1, 2]", "chat"),
        ("/v1/chat/completions", json.dumps({"model": "m", "n": 2}).encode(), "chat"),
        ("/v1/chat/completions", json.dumps({"model": "m", "tools": 5}).encode(), "chat"),
        ("/v1/messages", b"{", "messages"),
        ("/v1/responses", b"{", "responses"),
    ],
)
def test_a_request_the_gate_cannot_read_is_a_400_in_the_wires_shape(
    front: Front, path: str, body: bytes, shape: str
) -> None:
    seen = len(front.upstream.requests)
    for route in ROUTES:
        reply = httpx.post(front.url(route) + path, content=body, timeout=10)
        assert reply.status_code == 400
        assert reply.headers["content-type"] == "application/json"
        error = reply.json()
        if shape == "messages":
            assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        else:
            assert error["error"]["type"] == "invalid_request_error" and error["error"]["code"]
    assert len(front.upstream.requests) == seen


HOSTILE = [
    b'{"model": NaN, "stream": true}',
    b'{"model": "m", "temperature": 1e400}',
    b'{"model": "m", "model": "n"}',
    b'{"model": "m", "stream": "true"}',
    b'{"model": "m", "max_tokens": 0}',
    b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"a": ' * 5_000 + b"1" + b"}" * 5_000,
]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_hostile_request_body_gets_the_proxys_400_through_envoy(front: Front, path: str) -> None:
    """Read as strictly as the proxy reads it: the same status and error, never a 5xx."""
    seen = len(front.upstream.requests)
    for body in HOSTILE:
        want = httpx.post(front.url("proxy") + path, content=body, timeout=30)
        assert want.status_code == 400, body[:40]
        for route in ROUTES:
            reply = httpx.post(front.url(route) + path, content=body, timeout=30)
            assert (reply.status_code, reply.json()) == (400, want.json()), (route, body[:40])
    assert len(front.upstream.requests) == seen


@pytest.mark.parametrize(
    "data",
    [b'{"id": "x", "object": "chat.completion", "n": 1e400, "choices": []}', b"[" * 50_000],
)
def test_an_upstream_whole_response_is_read_strictly_through_envoy(
    front: Front, data: bytes
) -> None:
    """1e400 is never written back as Infinity, deep nesting never fails the engine."""
    key = f"strict-whole-{len(data)}"
    front.scripts[key] = Script(data, content_type="application/json")
    body = {**qwen_case().request, "stream": False, "metadata": {"case": key}}
    want = httpx.post(front.url("proxy") + "/v1/chat/completions", json=body, timeout=30)
    for route in ROUTES:
        reply = httpx.post(front.url(route) + "/v1/chat/completions", json=body, timeout=30)
        assert reply.status_code == want.status_code < 500, route
        assert b"Infinity" not in reply.content and b"engine_error" not in reply.content
        assert (
            reply.json()["choices"][0]["finish_reason"]
            == want.json()["choices"][0]["finish_reason"]
        )


def test_a_whole_response_is_gated_and_its_length_fixed(front: Front) -> None:
    case = qwen_case()
    from callgate.proxy.upstream import whole_body, whole_response

    key = "whole-qwen"
    front.scripts[key] = Script(
        whole_body(whole_response(case.chunks)), content_type="application/json"
    )
    body = {**case.request, "stream": False, "metadata": {"case": key}}
    want = httpx.post(front.url("proxy") + "/v1/chat/completions", json=body, timeout=10).json()
    for route in ROUTES:
        reply = httpx.post(front.url(route) + "/v1/chat/completions", json=body, timeout=10)
        length = reply.headers.get("content-length")
        assert length is None or int(length) == len(reply.content)
        message = reply.json()["choices"][0]["message"]
        assert message["content"] == "Let me check." == want["choices"][0]["message"]["content"]
        assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
        assert "x-callgate" not in json.dumps(front.upstream.requests[-1][2])


def test_policy_headers_narrow_the_tools_and_never_reach_the_upstream(front: Front) -> None:
    front.scripts["narrowed"] = Script(sse_body(_native_chunks()))
    kwargs = weather_request("narrowed")
    assert openai_turn(front.url("duplex"), kwargs)["calls"] == [("get_weather", {"city": "Paris"})]
    narrowed = {**kwargs, "extra_headers": {"x-callgate-allowed-tools": "search"}}
    for route in ROUTES:
        got = openai_turn(front.url(route), narrowed)
        assert got["calls"] == [] and got["finish_reason"] == "stop", route
        sent = front.upstream.requests[-1][2]
        assert not any(k.startswith("x-callgate") for k in sent)
        assert "accept-encoding" not in sent
    bad = {**kwargs, "extra_headers": {"x-callgate-on-blocked": "repair 2"}}
    with pytest.raises(openai.BadRequestError, match="notice or pass"):
        openai_turn(front.url("duplex"), bad)


def test_each_turn_has_a_span_with_verdict_and_findings_and_no_argument_values(
    front: Front,
) -> None:
    exporter = front.exporter  # type: ignore[attr-defined]
    exporter.clear()
    invalid = WireCall("call_9", "get_weather", ('{"town": "Atlantis-Secret"}',))
    chunks = openai_chunks([invalid], [0, 0], text=[])
    front.scripts["span-invalid"] = Script(sse_body(chunks))
    case = qwen_case()
    front.scripts[case.id] = Script(sse_body(case.chunks))
    kwargs = {
        "model": QWEN_MODEL,
        "messages": [{"role": "user", "content": "go"}],
        "tools": openai_tools(WEATHER),
    }
    openai_turn(front.url("duplex"), {**kwargs, "metadata": {"case": "span-invalid"}})
    openai_turn(front.url("duplex"), case.create_kwargs)
    deadline = time.monotonic() + 5
    while len(exporter.get_finished_spans()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    failed, passed = exporter.get_finished_spans()[-2:]
    assert failed.name == passed.name == f"chat {QWEN_MODEL}"
    assert failed.attributes["callgate.verdict"] == "fail"
    assert "schema_invalid" in failed.attributes["callgate.finding_codes"]
    assert failed.attributes["gen_ai.operation.name"] == "chat"
    assert [e.attributes["gen_ai.tool.name"] for e in failed.events] == ["get_weather"]
    assert [e.attributes["callgate.call.outcome"] for e in failed.events] == ["withheld"]
    assert passed.attributes["callgate.verdict"] == "pass"
    assert passed.attributes["callgate.text_formats"]
    assert [e.attributes["callgate.call.source"] for e in passed.events] == ["tool_call_tag"]
    everything = repr(
        [(dict(s.attributes), [dict(e.attributes) for e in s.events]) for s in (failed, passed)]
    )
    assert "Atlantis-Secret" not in everything and "Paris" not in everything


def test_turns_are_counted_in_the_proxys_metrics(front: Front) -> None:
    from prometheus_client.exposition import generate_latest

    page = generate_latest(front.processor.metrics.registry).decode()
    assert 'callgate_proxy_turns_total{status="pass",wire="openai"}' in page
    assert 'callgate_proxy_turns_total{status="pass",wire="anthropic"}' in page


def test_a_request_over_envoys_default_buffer_of_one_mib_is_gated(front: Front) -> None:
    case = qwen_case()
    front.scripts[case.id] = Script(sse_body(case.chunks))
    long = [{"role": "user", "content": "x" * (3 * 1024 * 1024 // 2)}]
    got = openai_turn(front.url("duplex"), {**case.create_kwargs, "messages": long})
    assert got["calls"] == [("get_weather", {"city": "Paris"})]
    assert len(front.upstream.requests[-1][1]["messages"][0]["content"]) == len(long[0]["content"])
