"""CallgateGuardrail in LiteLLM: its proxy (config.yaml) and its SDK, against a fake upstream.

The proxy is LiteLLM's own (``litellm --config``), started on loopback by the tests with
the guardrail named in ``config.yaml``, in front of the fake upstream of
:mod:`integrations_upstream`, and driven by the openai client; requests that name no
guardrail show what LiteLLM gives without callgate. The SDK tests stream
``litellm.completion`` and ``litellm.acompletion`` from the same upstream through
:meth:`CallgateGuardrail.stream`. Every expectation is what callgate's own buffer and
driver give for the same stream (:meth:`proxy_cases.StreamCase.expected`).

LiteLLM is an optional framework: without it these tests skip, unless
``CALLGATE_REQUIRE_FRAMEWORKS=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from integrations_upstream import (
    OFFLINE,
    READ_FILE,
    WEATHER,
    Upstream,
    chunk,
    cut,
    framework,
    issue_33678,
    running,
    text_turn,
)
from proxy_cases import StreamCase, by_char, capture_cases

litellm = framework("litellm")

from callgate.integrations.litellm import CallgateGuardrail  # noqa: E402
from callgate.proxy.engine import Options  # noqa: E402
from corpus.peer_text import CASES  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MASTER_KEY = "sk-callgate-test-master-key-0123456789"
NOTICED = "callgate-notice"
"""The guardrail of :data:`CONFIG` that ends a refused call's turn with the notice."""
MODEL_OF = {
    "tool_call_tag": "Qwen/Qwen2.5-7B-Instruct",
    "qwen3_coder_xml": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "bracket_tool_calls": "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    "kimi_k2": "moonshotai/Kimi-K2-Instruct",
    "minimax_m2": "MiniMaxAI/MiniMax-M2",
    "deepseek_v32": "deepseek-ai/DeepSeek-V3.2",
    "gemma_special": "google/gemma-4-31b-it",
    "glm45": "zai-org/GLM-4.5",
}
"""A model name whose default formats read each format (callgate's ``formats_for_model``)."""

LEAKS = [
    next(c for c in CASES if c.format == fmt and c.calls and not c.differs and not c.alone)
    for fmt in MODEL_OF
]
"""One call leaked into text per format, from the peer corpus (tests/corpus)."""

CONFIG = """\
model_list:
  - model_name: "*"
    litellm_params:
      model: "openai/*"
      api_base: {base}
      api_key: sk-fake-upstream
guardrails:
  - guardrail_name: callgate
    litellm_params:
      guardrail: callgate.integrations.litellm.CallgateGuardrail
      mode: post_call
  - guardrail_name: callgate-pass
    litellm_params:
      guardrail: callgate.integrations.litellm.CallgateGuardrail
      mode: post_call
      on_blocked: pass
  - guardrail_name: callgate-repair
    litellm_params:
      guardrail: callgate.integrations.litellm.CallgateGuardrail
      mode: post_call
      on_blocked: repair
      repairs: 1
  - guardrail_name: callgate-notice
    litellm_params:
      guardrail: callgate.integrations.litellm.CallgateGuardrail
      mode: post_call
      on_blocked: notice
"""
"""The test proxy's config.yaml (docs/integrations.md shows the same lines, default_on)."""


def tools_of(schemas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for name, schema in schemas.items()
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with running() as served:
        yield served


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """LiteLLM's proxy on loopback with the guardrails of :data:`CONFIG`; its base URL."""
    folder = tmp_path_factory.mktemp("litellm")
    config = folder / "config.yaml"
    config.write_text(CONFIG.format(base=upstream.base_url), encoding="utf-8")
    port = free_port()
    env = {
        **os.environ,
        **OFFLINE,
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    program = Path(sys.executable).parent / "litellm"
    log = (folder / "proxy.log").open("wb")
    command = [str(program), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            if process.poll() is not None:
                raise RuntimeError((folder / "proxy.log").read_text(errors="replace")[-3000:])
            try:
                if httpx.get(base + "/health/liveliness", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("LiteLLM's proxy did not start in 240 s")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def client(proxy: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=MASTER_KEY, base_url=proxy + "/v1", max_retries=0)


def through_proxy(
    proxy: str,
    upstream: Upstream,
    turn: list[dict[str, Any]],
    *,
    model: str,
    schemas: dict[str, Any],
    guardrail: str | None = "callgate",
) -> dict[str, Any]:
    """What the openai client rebuilds from the proxy's stream (see :func:`received`).

    A request LiteLLM retries gets the same turn again, as from a real upstream.
    """
    upstream.serve(turn, always=turn)
    extra = {"guardrails": [guardrail]} if guardrail else {}
    stream = client(proxy).chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "go"}],
        tools=tools_of(schemas) or openai.omit,  # type: ignore[arg-type]
        stream=True,
        extra_body=extra,
    )
    return received([c.model_dump(exclude_none=True) for c in stream])


def received(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client adds up by ``index`` (as the openai SDK's helpers do): text, calls, finish.

    ``raw`` keeps each call's arguments as sent; ``calls`` parses them (None if they are
    not JSON, as a merged pair is not).
    """
    content: list[str] = []
    slots: dict[int, dict[str, str]] = {}
    finish = None
    for piece in chunks:
        for choice in piece.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(_text(delta.get("content")))
            for entry in delta.get("tool_calls") or []:
                slot = slots.setdefault(entry["index"], {"id": "", "name": "", "arguments": ""})
                slot["id"] = entry.get("id") or slot["id"]
                function = entry.get("function") or {}
                slot["name"] = function.get("name") or slot["name"]
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    raw = [(s["name"], s["arguments"]) for _, s in sorted(slots.items())]
    return {
        "content": "".join(content),
        "raw": raw,
        "calls": [(name, _parsed(arguments)) for name, arguments in raw],
        "ids": [s["id"] for _, s in sorted(slots.items())],
        "finish_reason": finish,
        "last": chunks[-1] if chunks else {},
        "chunks": chunks,
    }


def _text(content: Any) -> str:
    """A delta's text: a string, or the text items of a list of content parts (Mistral's)."""
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if p.get("type") == "text")
    return content or ""


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return None


CAPTURES = [*capture_cases(), *(by_char(c) for c in capture_cases() if c.schemas)]
"""Every recorded OpenAI-wire stream whole; those with calls also one character per chunk."""


def finish_of(expected: dict[str, Any], plain: dict[str, Any]) -> str:
    """The finish reason callgate's gated stream ends with, given the stream LiteLLM passed."""
    if expected["calls"]:
        return "tool_calls"
    reason = plain["finish_reason"]
    return reason if reason in ("length", "content_filter") else "stop"


# -- the proxy ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CAPTURES, ids=[c.id for c in CAPTURES])
def test_the_proxy_streams_each_recording_as_callgate_gives_it(
    case: StreamCase, proxy: str, upstream: Upstream
) -> None:
    try:
        plain = through_proxy(
            proxy, upstream, case.chunks, model=case.model, schemas=case.schemas, guardrail=None
        )
    except openai.APIError as error:  # LiteLLM itself cannot relay it: nor can it with callgate
        with pytest.raises(type(error)):
            through_proxy(proxy, upstream, case.chunks, model=case.model, schemas=case.schemas)
        return
    got = through_proxy(proxy, upstream, case.chunks, model=case.model, schemas=case.schemas)
    expected = StreamCase(case.id, plain["chunks"], case.schemas, model=case.model).expected()
    assert (got["content"], got["calls"]) == (expected["display"], expected["calls"])
    assert got["finish_reason"] == finish_of(expected, plain)


@pytest.mark.parametrize("case", LEAKS, ids=[c.format for c in LEAKS])
def test_a_call_leaked_into_text_reaches_the_client_as_a_native_call(
    case: Any, proxy: str, upstream: Upstream
) -> None:
    model = MODEL_OF[case.format]
    schemas = dict(case.schemas or {})
    for name, _ in case.calls:
        schemas.setdefault(name, {"type": "object"})
    turn = text_turn(case.content, model=model)
    plain = through_proxy(proxy, upstream, turn, model=model, schemas=schemas, guardrail=None)
    assert plain["calls"] == [] and plain["content"] == case.content  # LiteLLM: only text
    got = through_proxy(proxy, upstream, turn, model=model, schemas=schemas)
    assert got["calls"] == case.calls
    assert got["content"] == case.shown
    assert got["finish_reason"] == "tool_calls"
    assert len(set(got["ids"])) == len(got["ids"]) and all(got["ids"])
    expected = StreamCase(case.id, turn, schemas, model=model).expected()
    assert (got["content"], got["calls"]) == (expected["display"], expected["calls"])


def test_issue_33678_parallel_calls_at_one_index_are_never_merged(
    proxy: str, upstream: Upstream
) -> None:
    turn = issue_33678()
    plain = through_proxy(
        proxy, upstream, turn, model="qwen3-coder:30b", schemas=READ_FILE, guardrail=None
    )
    assert plain["raw"] == [("read_file", '{"path": "a.rs"}{"path": "b.rs"}')]  # LiteLLM: merged
    got = through_proxy(
        proxy,
        upstream,
        turn,
        model="qwen3-coder:30b",
        schemas=READ_FILE,
        guardrail="callgate-notice",
    )
    expected = StreamCase("33678", turn, READ_FILE, model="qwen3-coder:30b").expected()
    assert expected["status"] == "fail" and expected["calls"] == []
    assert got["calls"] == [] and got["finish_reason"] == "stop"
    assert (
        got["content"]
        == "\n\nA call to read_file was not run: the model's stream mixed up two calls."
    )
    assert "identity_collision" in [f["code"] for f in got["last"]["callgate"]["findings"]]
    assert got["last"]["callgate"]["withheld"] == ["read_file"]


def test_a_cut_or_truncated_call_never_reaches_the_client(proxy: str, upstream: Upstream) -> None:
    opening = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    started = [chunk({"role": "assistant", "content": ""}), chunk({"tool_calls": [opening]})]
    length = [*started, chunk({}, "length")]
    got = through_proxy(proxy, upstream, length, model="gpt-4.1", schemas=WEATHER)
    assert got["calls"] == [] and got["finish_reason"] == "length"
    plain = through_proxy(proxy, upstream, length, model="gpt-4.1", schemas=WEATHER, guardrail=None)
    assert plain["calls"] == [("get_weather", {"city": "Paris"})]  # LiteLLM forwards it
    upstream.serve(cut(started))
    pieces: list[Any] = []
    with pytest.raises(openai.APIError):
        for piece in client(proxy).chat.completions.create(
            model="gpt-4.1",
            messages=[{"role": "user", "content": "go"}],
            tools=tools_of(WEATHER),  # type: ignore[arg-type]
            stream=True,
            extra_body={"guardrails": ["callgate"]},
        ):
            pieces.append(piece.model_dump(exclude_none=True))
    assert received(pieces)["calls"] == []


def _invalid_turn() -> list[dict[str, Any]]:
    call = {
        "index": 0,
        "id": "call_7",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"town": "Paris"}'},
    }
    return [
        chunk({"role": "assistant", "content": "Checking."}),
        chunk({"tool_calls": [call]}),
        chunk({}, "tool_calls"),
    ]


def test_a_schema_invalid_call_is_withheld_with_a_notice_or_passed_annotated(
    proxy: str, upstream: Upstream
) -> None:
    got = through_proxy(
        proxy,
        upstream,
        _invalid_turn(),
        model="gpt-4.1",
        schemas=WEATHER,
        guardrail="callgate-notice",
    )
    assert got["calls"] == [] and got["finish_reason"] == "stop"
    assert got["content"] == "Checking." + NOTICE  # one line a person reads
    assert [f["code"] for f in got["last"]["callgate"]["findings"]] == ["schema_invalid"]
    repaired = through_proxy(proxy, upstream, _invalid_turn(), model="gpt-4.1", schemas=WEATHER)
    # the default: repair 2, then notice; a repair's answer that repeats what the client
    # already saw is not shown again
    assert repaired["content"] == "Checking." + NOTICE
    assert len(upstream.requests) == 3
    passed = through_proxy(
        proxy,
        upstream,
        _invalid_turn(),
        model="gpt-4.1",
        schemas=WEATHER,
        guardrail="callgate-pass",
    )
    assert passed["calls"] == [("get_weather", {"town": "Paris"})]
    assert passed["last"]["callgate"]["passed"] is True


NOTICE = "\n\nA call to get_weather was not run: its arguments did not match the tool."


def test_the_guardrails_default_is_the_proxys() -> None:
    given = CallgateGuardrail(guardrail_name="callgate").options
    assert (given.on_blocked, given.repairs) == (Options().on_blocked, Options().repairs)


def _good_turn() -> list[dict[str, Any]]:
    call = {
        "index": 0,
        "id": "call_8",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    return [chunk({"role": "assistant"}), chunk({"tool_calls": [call]}), chunk({}, "tool_calls")]


def _asked_again(upstream: Upstream) -> None:
    """The second upstream request carries the refused call and a corrective tool result."""
    added = upstream.requests[1]["messages"][-2:]
    assert added[0]["role"] == "assistant" and added[0]["tool_calls"][0]["id"] == "call_7"
    assert added[1]["role"] == "tool" and "schema_invalid" in added[1]["content"]


def test_repair_asks_the_upstream_again_and_streams_the_repaired_turn(
    proxy: str, upstream: Upstream
) -> None:
    upstream.serve(_invalid_turn(), _good_turn())
    stream = client(proxy).chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "user", "content": "go"}],
        tools=tools_of(WEATHER),  # type: ignore[arg-type]
        stream=True,
        extra_body={"guardrails": ["callgate-repair"]},
    )
    got = received([c.model_dump(exclude_none=True) for c in stream])
    assert got["calls"] == [("get_weather", {"city": "Paris"})]
    assert got["content"] == "Checking." and got["finish_reason"] == "tool_calls"
    _asked_again(upstream)


def test_a_whole_response_is_gated_too(proxy: str, upstream: Upstream) -> None:
    case = LEAKS[0]
    model = MODEL_OF[case.format]
    schemas = {name: {"type": "object"} for name, _ in case.calls}
    upstream.serve(text_turn(case.content, model=model, by_char=False))
    response = client(proxy).chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "go"}],
        tools=tools_of(schemas),  # type: ignore[arg-type]
        extra_body={"guardrails": ["callgate"]},
    )
    message = response.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]  # type: ignore[union-attr]
    assert calls == case.calls
    assert (message.content or "") == case.shown
    assert response.choices[0].finish_reason == "tool_calls"


TGI = [c for c in CAPTURES if c.id.startswith("openai/tgi__") and not c.id.endswith("/1")]


@pytest.mark.parametrize("case", TGI, ids=[c.id for c in TGI])
def test_a_whole_response_with_a_null_finish_is_gated_as_the_provider_sent_it(
    proxy: str, upstream: Upstream, case: StreamCase
) -> None:
    """LiteLLM rewrites TGI's null finish to tool_calls; the guardrail reads the provider's
    own copy and gates a clean end without a finish reason, as the gateway does."""
    assert case.ended and not any(c["choices"][0]["finish_reason"] for c in case.chunks)
    upstream.serve(case.chunks)
    reply = httpx.post(
        proxy + "/v1/chat/completions",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={**case.create_kwargs, "guardrails": ["callgate"]},
        timeout=60,
    )
    body = reply.json()
    message = body["choices"][0]["message"]
    calls = [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in message["tool_calls"]
    ]
    assert calls == case.expected()["calls"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert [f["code"] for f in body["callgate"]["findings"]] == ["no_finish_reason"]


def test_without_the_providers_copy_the_rewritten_finish_is_all_there_is() -> None:
    from callgate.integrations.litellm import provider_finish_was_null

    class Logged:
        def __init__(self, original: object) -> None:
            self.model_call_details = {"original_response": original}

    null = {"choices": [{"index": 0, "finish_reason": None}]}
    assert provider_finish_was_null({"litellm_logging_obj": Logged(json.dumps(null))})
    assert provider_finish_was_null({"litellm_logging_obj": Logged(null)})
    stop = {"choices": [{"index": 0, "finish_reason": "stop"}]}
    for original in (json.dumps(stop), "{not json", {"choices": []}, {"choices": [{}]}, None):
        assert not provider_finish_was_null({"litellm_logging_obj": Logged(original)})
    assert not provider_finish_was_null({})


# -- the SDK ------------------------------------------------------------------------------


def sdk_request(upstream: Upstream, model: str, schemas: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "openai/" + model,
        "messages": [{"role": "user", "content": "go"}],
        "api_base": upstream.base_url,
        "api_key": "sk-fake-upstream",
    }
    if schemas:
        request["tools"] = tools_of(schemas)
    return request


def sdk_rebuilt(chunks: list[Any]) -> dict[str, Any]:
    return received([c.model_dump(exclude_none=True) for c in chunks])


CALL_CAPTURES = [c for c in CAPTURES if c.schemas]
"""The recordings with calls, whole and one character per chunk (the proxy reads them all)."""


@pytest.mark.parametrize("case", CALL_CAPTURES, ids=[c.id for c in CALL_CAPTURES])
def test_the_sdk_stream_through_the_guardrail_is_what_callgate_gives(
    case: StreamCase, upstream: Upstream
) -> None:
    upstream.serve(case.chunks, case.chunks)
    request = sdk_request(upstream, case.model, case.schemas)
    plain = [c.model_dump(exclude_none=True) for c in litellm.completion(**request, stream=True)]
    guard = CallgateGuardrail(guardrail_name="callgate")
    got = sdk_rebuilt(list(guard.stream(litellm.completion(**request, stream=True), request)))
    expected = StreamCase(case.id, plain, case.schemas, model=case.model).expected()
    assert (got["content"], got["calls"]) == (expected["display"], expected["calls"])


SAMPLE = list({c.format: c for c in CASES if c.format not in ("bare_json", "pythonic")}.values())
"""The last peer case of each stream-detected format (test_peer_corpus runs them all)."""


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_the_peer_corpus_through_the_sdk_gives_callgates_calls_and_display(
    case: Any, upstream: Upstream
) -> None:
    schemas = dict(case.schemas or {})
    for name, _ in case.calls:
        schemas.setdefault(name, {"type": "object"})
    request = sdk_request(upstream, "gpt-4.1", schemas)
    guard = CallgateGuardrail(text_formats=[case.format])
    for one_by_one in (False, True):
        turn = text_turn(case.content, model="gpt-4.1", by_char=one_by_one)
        upstream.serve(turn)
        got = sdk_rebuilt(list(guard.stream(litellm.completion(**request, stream=True), request)))
        expected = StreamCase(case.id, turn, schemas, formats=(case.format,)).expected()
        assert (got["content"], got["calls"]) == (expected["display"], expected["calls"])
        if not one_by_one:  # whole, callgate's loop gives the case's own calls and display
            assert (got["content"], got["calls"]) == (case.shown, case.calls)


def test_the_async_sdk_keeps_issue_33678_from_merging(upstream: Upstream) -> None:
    turn = issue_33678()
    request = sdk_request(upstream, "qwen3-coder:30b", READ_FILE)

    async def both() -> tuple[list[Any], list[Any]]:
        upstream.serve(turn, turn)
        plain = [c async for c in await litellm.acompletion(**request, stream=True)]
        guard = CallgateGuardrail()
        stream = await litellm.acompletion(**request, stream=True)
        return plain, [c async for c in guard.astream(stream, request)]

    plain, gated = asyncio.run(both())
    merged = litellm.stream_chunk_builder(plain).choices[0].message.tool_calls
    assert [c.function.arguments for c in merged] == ['{"path": "a.rs"}{"path": "b.rs"}']
    assert sdk_rebuilt(gated)["calls"] == []
    assert gated[-1].callgate["findings"][0]["code"] == "identity_collision"


def test_gate_response_gates_a_whole_sdk_response(upstream: Upstream) -> None:
    case = LEAKS[0]
    model = MODEL_OF[case.format]
    schemas = {name: {"type": "object"} for name, _ in case.calls}
    upstream.serve(text_turn(case.content, model=model, by_char=False))
    request = sdk_request(upstream, model, schemas)
    response = litellm.completion(**request)
    assert not response.choices[0].message.tool_calls  # LiteLLM alone: the markup as text
    gated = CallgateGuardrail().gate_response(response, request)
    message = gated.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
    assert calls == case.calls
    assert (message.content or "") == case.shown
    assert gated.choices[0].finish_reason == "tool_calls"
    assert gated.callgate["status"] == "pass"


def test_repair_through_the_sdk_asks_litellm_again(upstream: Upstream) -> None:
    upstream.serve(_invalid_turn(), _good_turn())
    request = sdk_request(upstream, "gpt-4.1", WEATHER)
    guard = CallgateGuardrail(on_blocked="repair")
    got = sdk_rebuilt(list(guard.stream(litellm.completion(**request, stream=True), request)))
    assert got["calls"] == [("get_weather", {"city": "Paris"})]
    assert got["content"] == "Checking."
    _asked_again(upstream)
    assert guard.last_turn is not None and guard.last_turn.attempt == 1


# -- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"on_blocked": "ignore"}, "on_blocked must be one of notice, repair, pass, not 'ignore'"),
        ({"repairs": -1}, "repairs must be a whole number of 0 or more, not -1"),
        ({"text_formats": "tool_call_tag,hermes"}, "unknown text format(s) hermes"),
        ({"event_hook": "during_call"}, "during_call"),
    ],
)
def test_a_bad_configuration_is_refused_with_a_clear_error(
    given: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CallgateGuardrail(guardrail_name="callgate", **given)


QUOTED_PROSE = (
    "The model emits `<tool_call>"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    + "</tool_call>` in its output."
)
"""A Qwen model's prose that quotes its own call format in inline code."""
QWEN_MODEL = MODEL_OF["tool_call_tag"]


def test_markup_quoted_in_inline_code_is_shown_whole_and_runs_nothing(
    proxy: str, upstream: Upstream
) -> None:
    turn = text_turn(QUOTED_PROSE, model=QWEN_MODEL)
    got = through_proxy(proxy, upstream, turn, model=QWEN_MODEL, schemas=WEATHER)
    assert got["calls"] == [] and got["finish_reason"] == "stop"
    assert got["content"] == QUOTED_PROSE


def test_a_leaked_call_cut_by_length_shows_a_notice_not_its_markup(
    proxy: str, upstream: Upstream
) -> None:
    partial = '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa'
    turn = text_turn("Checking. " + partial, model=QWEN_MODEL, finish="length")
    plain = through_proxy(proxy, upstream, turn, model=QWEN_MODEL, schemas=WEATHER, guardrail=None)
    assert plain["content"] == "Checking. " + partial  # LiteLLM alone: the partial markup
    got = through_proxy(proxy, upstream, turn, model=QWEN_MODEL, schemas=WEATHER)
    assert got["calls"] == [] and got["finish_reason"] == "length"
    assert got["content"] == (
        "Checking. \n\nA call to get_weather was not run: "
        "the answer was cut off before the call was complete."
    )
