"""The proxy over real loopback: uvicorn servers started here, the real openai clients.

A replaying upstream (:class:`callgate.proxy.upstream.ReplayUpstream`, served by uvicorn
on a free port) answers each request with the stream its ``x-case`` header names,
written in small pieces cut at arbitrary bytes; the proxy (another uvicorn server) sits
in front of it. Every recorded OpenAI stream of tests/captures and every case of the
peer text corpus, whole and one character per chunk, reaches the openai-python client
(sync, async, and the ``.stream()`` helper) as callgate's buffer and driver give it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import Script
from proxy_cases import (
    CUT_REASONS,
    NEGATIVE,
    NOT_RUN,
    WEATHER,
    Harness,
    StreamCase,
    by_char,
    capture_cases,
    chat_response,
    closed_url,
    corpus_cases,
    cut_at,
    rebuilt,
    text_turn,
)

CAPTURES = capture_cases()
CORPUS = corpus_cases()
SIZES = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3)


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    made = Harness()
    made.start()
    yield made
    made.stop()


def expect(case: StreamCase, got: dict[str, Any]) -> None:
    want = case.expected()
    assert got["calls"] == want["calls"], case.id
    notice = got["content"][len(want["display"]) :]
    assert got["content"].startswith(want["display"]), case.id
    assert notice == "" or NOT_RUN.fullmatch(notice) is not None, case.id
    assert bool(notice) is (want["status"] == "fail" and bool(case.schemas)), case.id
    assert (got["finish_reason"] == "tool_calls") is bool(want["calls"]), case.id


def sync_stream(harness: Harness, case: StreamCase, sizes: tuple[int, ...] = ()) -> dict[str, Any]:
    kwargs = harness.add(case, sizes)
    stream = harness.client(case).chat.completions.create(stream=True, **kwargs)
    return rebuilt([chunk.model_dump() for chunk in stream])


def helper_stream(harness: Harness, case: StreamCase) -> dict[str, Any]:
    kwargs = harness.add(case)
    with harness.client(case).chat.completions.stream(**kwargs) as stream:
        for _ in stream:
            pass
        final = stream.current_completion_snapshot.choices[0]
    calls = [
        (c.function.name, json.loads(c.function.arguments)) for c in final.message.tool_calls or []
    ]
    content = final.message.content or ""
    return {"content": content, "calls": calls, "finish_reason": final.finish_reason}


async def async_stream(harness: Harness, case: StreamCase) -> dict[str, Any]:
    kwargs = harness.add(case)
    async with harness.aclient(case) as client:
        stream = await client.chat.completions.create(stream=True, **kwargs)
        return rebuilt([chunk.model_dump() async for chunk in stream])


@pytest.mark.parametrize("case", CAPTURES, ids=[c.id for c in CAPTURES])
def test_a_recorded_stream_reaches_every_openai_client_as_callgate_gives_it(
    harness: Harness, case: StreamCase
) -> None:
    expect(case, sync_stream(harness, case, SIZES))  # the upstream's writes cut anywhere
    single = by_char(case)
    expect(single, sync_stream(harness, single))
    # The helper and the async client on every split of a turn with calls; on the long
    # text-only recordings (hundreds of characters each) whole: the sync run covers those.
    for played in (case, single) if case.schemas else (case,):
        expect(played, helper_stream(harness, played))
        expect(played, asyncio.run(async_stream(harness, played)))


def test_the_peer_corpus_reaches_the_client_as_callgate_gives_it(harness: Harness) -> None:
    # Every case goes through the engine whole and by character (test_proxy_engine.py);
    # over the wire: half the corpus whole, a sixteenth by character, every format both.
    per_format = list({c.formats: c for c in CORPUS}.values())
    for case in CORPUS[::2] + per_format:
        expect(case, sync_stream(harness, case))
    for case in CORPUS[::16] + per_format:
        expect(by_char(case), sync_stream(harness, by_char(case)))


def test_a_whole_response_is_gated_as_the_stream_is(harness: Harness) -> None:
    for case in CAPTURES:
        message = case.expected()
        kwargs = harness.add(case)
        from callgate.cli.replay import replay

        response = chat_response(case.model, replay(case.chunks)["message"])
        harness.scripts[case.id] = Script(
            json.dumps(response).encode(), content_type="application/json"
        )
        got = harness.client(case).chat.completions.create(**kwargs).choices[0]
        calls = [
            (c.function.name, json.loads(c.function.arguments))
            for c in got.message.tool_calls or []
        ]
        assert calls == message["calls"], case.id
        assert (got.message.content or "") == message["display"], case.id


def test_other_paths_pass_through_and_headers_reach_the_upstream(harness: Harness) -> None:
    harness.upstream.models = ["qwen3", "llama3.1"]
    reply = httpx.get(harness.url + "/v1/models", headers={"Authorization": "Bearer sk-secret"})
    assert reply.status_code == 200
    assert [m["id"] for m in reply.json()["data"]] == ["qwen3", "llama3.1"]
    case = CAPTURES[0]
    kwargs = harness.add(case)
    list(harness.client(case).chat.completions.create(stream=True, **kwargs))
    path, _, headers = harness.upstream.requests[-1]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-loopback"


def test_health_readiness_and_metrics(harness: Harness) -> None:
    assert httpx.get(harness.url + "/healthz").json() == {"status": "ok"}
    assert httpx.get(harness.url + "/readyz").status_code == 200
    metrics = httpx.get(harness.url + "/metrics").text
    assert 'callgate_proxy_turns_total{status="pass",wire="openai"}' in metrics
    assert "callgate_proxy_added_seconds_bucket" in metrics
    assert 'callgate_proxy_calls_total{format="native"}' in metrics


def test_a_body_that_is_not_json_is_a_400_in_openais_shape(harness: Harness) -> None:
    reply = httpx.post(harness.url + "/v1/chat/completions", content=b"{not json")
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "invalid_json"
    assert "not strict JSON" in reply.json()["error"]["message"]
    reply = httpx.post(harness.url + "/v1/chat/completions", json=[1, 2])
    assert reply.status_code == 400
    reply = httpx.post(harness.url + "/v1/chat/completions", json={"tools": "x", "messages": []})
    assert reply.status_code == 400 and "tools" in reply.json()["error"]["message"]


def test_an_upstream_http_error_is_relayed_as_it_is(harness: Harness) -> None:
    case = StreamCase("err429", [], {})
    kwargs = harness.add(case)
    body = {"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limited"}}
    harness.scripts[case.id] = Script(
        json.dumps(body).encode(),
        status=429,
        content_type="application/json",
        headers=(("retry-after", "7"),),
    )
    reply = httpx.post(harness.url + "/v1/chat/completions", json={**kwargs, "stream": True})
    assert reply.status_code == 429 and reply.json() == body
    assert reply.headers["retry-after"] == "7"
    with pytest.raises(openai.RateLimitError):
        harness.client(case).chat.completions.create(**kwargs)


def test_an_unreachable_upstream_is_a_502_in_openais_shape() -> None:
    proxy = create_app(ProxyConfig(upstream=closed_url(), connect_timeout=2))
    with ServerThread(proxy) as server:
        for stream in (True, False):
            reply = httpx.post(
                server.url + "/v1/chat/completions",
                json={"model": "m", "messages": [], "stream": stream},
            )
            assert reply.status_code == 502
            assert reply.json()["error"]["code"] == "upstream_unreachable"
        metrics = httpx.get(server.url + "/metrics").text
        assert 'callgate_proxy_upstream_errors_total{kind="ConnectError"} 2.0' in metrics


def test_an_upstream_that_answers_nothing_in_time_is_a_504_that_says_so(
    harness: Harness,
) -> None:
    case = StreamCase("slow-whole", [], {})
    kwargs = harness.add(case)
    body = json.dumps({"choices": []}).encode()
    harness.scripts[case.id] = Script(body, content_type="application/json", delay=3.0)
    proxy = create_app(ProxyConfig(upstream=harness.router.upstream, read_timeout=0.5))
    with ServerThread(proxy) as server:
        reply = httpx.post(server.url + "/v1/chat/completions", json=kwargs, timeout=10)
        assert reply.status_code == 504
        error = reply.json()["error"]
        assert error["code"] == "upstream_timeout"
        assert error["message"].startswith("The model did not answer in time")
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(**kwargs)
        assert raised.value.status_code == 504


def test_a_request_over_the_size_bound_is_a_413(harness: Harness) -> None:
    proxy = create_app(ProxyConfig(upstream=harness.router.upstream, max_request_bytes=1000))
    with ServerThread(proxy) as server:
        reply = httpx.post(
            server.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]},
        )
        assert reply.status_code == 413
        assert reply.json()["error"]["code"] == "request_too_large"


def test_an_upstream_base_url_ending_in_v1_is_not_doubled(harness: Harness) -> None:
    case = CAPTURES[1]
    kwargs = harness.add(case)
    proxy = create_app(ProxyConfig(upstream=harness.router.upstream + "/v1"))
    with (
        ServerThread(proxy) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0) as client,
    ):
        chunks = client.chat.completions.create(stream=True, **kwargs)
        expect(case, rebuilt([c.model_dump() for c in chunks]))
    assert harness.upstream.requests[-1][0] == "/v1/chat/completions"


def test_a_recorded_stream_cut_at_any_chunk_delivers_no_call_over_the_wire(
    harness: Harness,
) -> None:
    cases = [c for c in CAPTURES if c.schemas and len(c.chunks) < 50]
    assert len(cases) >= 5
    for case in cases:
        for at in range(len(case.chunks)):
            for reason in CUT_REASONS:
                chunks = cut_at(case.chunks, at, reason)
                if not chunks:
                    continue
                cut = StreamCase(f"{case.id}@{at}{reason}", chunks, case.schemas, model=case.model)
                got = sync_stream(harness, cut)
                assert got["calls"] == [] and got["finish_reason"] == reason, (case.id, at)


@pytest.mark.parametrize(("why", "model", "content"), NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_the_negative_corpus_converts_nothing_over_the_wire(
    harness: Harness, why: str, model: str, content: str
) -> None:
    for extra in ({}, {"tool_choice": "none"}):
        case = StreamCase(why, text_turn(list(content)), WEATHER, model=model, extra=extra)
        got = sync_stream(harness, case)
        assert got["calls"] == [] and got["content"] == content
        assert got["finish_reason"] == "stop"
