"""The proxy against a broken upstream: mutated event streams over real loopback.

Hypothesis mutates recorded streams as servers break them (bad UTF-8, a BOM, writes cut
inside ``data:`` lines, ``\\r\\n`` line ends, error frames, events that are not JSON,
``[DONE]`` twice, chunks after ``[DONE]``, a dropped connection). Every response is
HTTP 200 with a well-formed event stream that ends in ``[DONE]``, finishes once, and
never finishes with ``tool_calls`` unless the turn's calls came whole; the openai client
reads it or raises its clean APIError for a relayed error frame; never a 5xx.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.notices import upstream_notice
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from proxy_cases import ScriptedUpstream as Upstream
from proxy_cases import capture_cases, chat_response, scripted_proxy

CASES = [c for c in capture_cases() if c.schemas and len(c.chunks) < 60]
ERROR_FRAME = b'data: {"error": {"message": "the model crashed", "type": "server_error"}}\n\n'


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Upstream, str]]:
    with scripted_proxy() as running:
        yield running


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Any, bytes, tuple[int, ...], int | None, set[str]]:
    """A capture's stream broken in some of the ways servers break streams."""
    case = draw(st.sampled_from(CASES))
    events = [sse_body([c], done=False) for c in case.chunks]
    kinds: set[str] = set()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(events)))
        events.insert(at, ERROR_FRAME)
        kinds.add("error")
    if draw(st.booleans()):
        at = draw(st.integers(0, len(events)))
        events.insert(at, b"data: {not json\n\n")
        kinds.add("broken")
    if draw(st.booleans()):
        at = draw(st.integers(0, len(events) - 1))
        event = bytearray(events[at])
        event[draw(st.integers(6, len(event) - 3))] = 0xFF
        events[at] = bytes(event)
        kinds.add("broken")
    done = draw(st.sampled_from([b"", b"data: [DONE]\n\n", b"data: [DONE]\n\ndata: [DONE]\n\n"]))
    events.append(done)
    if done and draw(st.booleans()):
        events.append(sse_body(case.chunks[:2], done=False))  # chunks after [DONE]
    body = b"".join(events)
    if draw(st.booleans()):
        body = b"\xef\xbb\xbf" + body
    if draw(st.booleans()):
        body = body.replace(b"\n", b"\r\n")
    sizes = tuple(draw(st.lists(st.integers(1, 40), min_size=1, max_size=5)))
    cut = draw(st.none() | st.integers(0, len(body)))
    if cut is not None:
        kinds.add("cut")
    return case, body, sizes, cut, kinds


def events_of(text: str) -> list[str]:
    """The data of each event of a well-formed stream (it fails on anything else)."""
    assert text.endswith("\n\n"), text[-200:]
    data = []
    for block in text[:-2].split("\n\n"):
        lines = block.split("\n")
        assert len(lines) == 1 and lines[0].startswith("data: "), block
        data.append(lines[0][6:])
    return data


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutated())
def test_a_broken_upstream_stream_still_gives_a_well_formed_one(
    servers: tuple[Upstream, str], example: tuple[Any, bytes, tuple[int, ...], int | None, set[str]]
) -> None:
    upstream, url = servers
    case, body, sizes, cut, kinds = example
    upstream.script = Script(body, write_sizes=sizes, cut_at=cut)
    reply = httpx.post(url + "/v1/chat/completions", json=case.request, timeout=30)
    assert reply.status_code == 200
    data = events_of(reply.text)
    assert data[-1] == "[DONE]" and data.count("[DONE]") == 1
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(isinstance(c, dict) for c in chunks)
    finishes = [
        ch["finish_reason"] for c in chunks for ch in c.get("choices", []) if ch["finish_reason"]
    ]
    assert len(finishes) == 1
    [final] = [c for c in chunks if c.get("callgate")]
    if finishes == ["tool_calls"]:  # calls only from a turn the gate passed
        assert final["callgate"]["status"] == "pass"
    if kinds & {"broken", "error"} and cut is None:
        assert final["callgate"]["status"] == "fail"
        assert finishes != ["tool_calls"]
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    try:
        stream = client.chat.completions.create(stream=True, **_kwargs(case.request))
        list(stream)
    except openai.APIError as exc:  # an error the upstream sent, or the stream it broke off
        assert "error" in kinds or "error" in final, exc
        assert not isinstance(exc, openai.InternalServerError)
    finally:
        client.close()


def _kwargs(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "stream"}


def test_an_upstream_that_drops_before_any_byte_ends_cleanly(
    servers: tuple[Upstream, str],
) -> None:
    upstream, url = servers
    upstream.script = Script(b"data: {}", cut_at=0)
    reply = httpx.post(url + "/v1/chat/completions", json={"model": "m", "stream": True})
    assert reply.status_code == 200
    data = events_of(reply.text)
    assert data[-1] == "[DONE]"
    final = json.loads(data[-2])
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["callgate"]["status"] == "fail"
    said = "".join(json.loads(d)["choices"][0]["delta"].get("content") or "" for d in data[:-1])
    assert said.endswith("\n\n" + upstream_notice("broken"))


def test_an_upstream_that_answers_stream_true_with_json_is_streamed(
    servers: tuple[Upstream, str],
) -> None:
    upstream, url = servers
    response = chat_response("m", {"role": "assistant", "content": "hi"})
    upstream.script = Script(json.dumps(response).encode(), content_type="application/json")
    reply = httpx.post(url + "/v1/chat/completions", json={"model": "m", "stream": True})
    data = events_of(reply.text)
    chunks = [json.loads(d) for d in data[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "hi"


def test_a_defect_of_the_engine_ends_the_stream_with_an_error_event(
    servers: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from callgate.proxy.engine import GatedTurn

    def broken(self: GatedTurn, chunk: object) -> str | None:
        raise RuntimeError("a defect")

    upstream, url = servers
    upstream.script = Script(sse_body(CASES[0].chunks))
    monkeypatch.setattr(GatedTurn, "step", broken)
    reply = httpx.post(url + "/v1/chat/completions", json=CASES[0].request, timeout=30)
    assert reply.status_code == 200
    data = events_of(reply.text)
    assert data[-1] == "[DONE]"
    assert json.loads(data[-2])["error"]["code"] == "engine_error"


def test_a_client_that_disconnects_cancels_its_upstream_request() -> None:
    chunks = capture_cases()[0].chunks * 20
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(chunks), delay=0.1))
    with (
        ServerThread(upstream) as up,
        ServerThread(create_app(ProxyConfig(upstream=up.url))) as proxy,
        httpx.stream(
            "POST", proxy.url + "/v1/chat/completions", json={"model": "m", "stream": True}
        ) as reply,
    ):
        next(reply.iter_raw())  # the stream is open
        reply.close()  # the client goes away long before the upstream's end
        deadline = time.monotonic() + 10
        while upstream.aborted == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (upstream.aborted, upstream.completed) == (1, 0)
