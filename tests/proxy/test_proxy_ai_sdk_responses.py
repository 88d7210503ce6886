"""The Vercel AI SDK's default OpenAI provider against ``callgate proxy`` (a real process).

``openai(model)`` from ``@ai-sdk/openai`` speaks the Responses API (``/v1/responses``):
``streamText`` with one zod tool and ``stopWhen`` (tests/node_ai: ``npm ci`` there; CI runs
it), in front of a Responses server and, with ``--upstream-wire chat``, a Chat-only one.
Each model writes a call leaked into its text, then a native call, then the answer: both
calls run and the answer follows; a native call whose arguments break the tool's schema
does not run. The provider stores responses by default and sends its earlier output back
as ``item_reference`` items, which only a Responses server that stored them can resolve:
translated to Chat the gateway refuses them by name (the SDK reports it), and with
``store: false`` (``providerOptions.openai``) the whole history goes up and translates.
Without Node or its ``npm ci`` the test skips, unless
``CALLGATE_REQUIRE_NODE=1`` (CI) fails it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from agent_clients import responses_turn, tool_results
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.testing.builders import openai_chunks
from callgate.testing.wires.base import WireCall
from proxy_cases import proxy_process
from test_proxy_ai_sdk import run_client

LEAKED = (
    "Checking Oslo.<tool_call>"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}})
    + "</tool_call>"
)
ANSWER = "Clear in Oslo and in Bergen."
Model = Callable[[str, Mapping[str, Any]], Script]


def responses_model(bad: bool = False) -> Model:
    """A Responses server: the leaked call, the native one (``bad``: days out of range)."""

    def answer(path: str, body: Mapping[str, Any]) -> Script:
        assert path.endswith("/responses"), path
        done = tool_results(path, body)
        if done == 0 and not bad:
            return responses_turn(LEAKED)
        if done == 1 or bad:
            days = 99 if bad else 2
            call = ("call_b1", "get_weather", {"city": "Bergen", "days": days})
            return responses_turn("And Bergen.", call)
        return responses_turn(ANSWER)

    return answer


def chat_model(path: str, body: Mapping[str, Any]) -> Script:
    """A Chat-only server: the leaked call, the native one, then the answer."""
    assert path.endswith("/chat/completions"), path
    done = tool_results(path, body)
    if done == 0:
        return Script(sse_body(openai_chunks([], [], text=[LEAKED[:20], LEAKED[20:]])))
    if done == 1:
        call = WireCall("call_b1", "get_weather", ('{"city": "Bergen",', ' "days": 2}'))
        return Script(sse_body(openai_chunks([call], [0, 0, 0], text=["And Bergen."])))
    return Script(sse_body(openai_chunks([], [], text=[ANSWER])))


def through(
    model: Model, wire: str | None, api: str = "responses"
) -> tuple[dict[str, Any], ReplayUpstream]:
    """One streamText run of the default provider through a proxy process."""
    upstream = ReplayUpstream(model)
    args = ["--text-formats", "tool_call_tag"]
    if wire is not None:
        args += ["--upstream-wire", wire]
    with (
        ServerThread(upstream) as server,
        proxy_process(["--upstream", server.url + "/v1", *args]) as (_, url, _first),
    ):
        got = run_client(url, "gpt-4.1", api=api)
    return got, upstream


@pytest.mark.parametrize(
    ("wire", "model", "api"),
    [(None, responses_model(), "responses"), ("chat", chat_model, "responses-unstored")],
)
def test_the_default_provider_runs_a_leaked_and_a_native_call_and_continues(
    wire: str | None, model: Model, api: str
) -> None:
    got, upstream = through(model, wire, api)
    assert got["executed"] == [{"city": "Oslo"}, {"city": "Bergen", "days": 2}], got
    assert got["finish_reasons"] == ["tool-calls", "tool-calls", "stop"], got
    assert got["text"].endswith(ANSWER) and "<tool_call>" not in got["text"], got
    assert got["errors"] == [], got
    assert len(upstream.requests) == 3
    suffix = "/chat/completions" if wire == "chat" else "/responses"
    assert all(path.endswith(suffix) for path, _, _ in upstream.requests), upstream.requests
    last = json.dumps(upstream.requests[-1][1])
    assert "Oslo" in last and "Bergen" in last  # both tools' results went back up


def test_the_default_provider_does_not_run_a_call_that_breaks_the_schema() -> None:
    got, upstream = through(responses_model(bad=True), None)
    assert got["executed"] == [], got
    assert got["finish_reasons"] == ["stop"], got
    assert got["text"].startswith("And Bergen."), got
    assert "get_weather was not run" in got["text"], got  # the notice names the withheld call
    # The gateway asked the model again with the finding (its repair): every tool output
    # that went up is its own, none is the SDK's tool running.
    outputs = [
        item["output"]
        for _, body, _ in upstream.requests
        for item in body["input"]
        if item.get("type") == "function_call_output"
    ]
    assert len(upstream.requests) > 1 and outputs, upstream.requests
    assert all("(schema_invalid)" in output for output in outputs), outputs


def test_stored_item_references_translated_to_chat_are_refused_by_name() -> None:
    got, upstream = through(chat_model, "chat")
    assert got["executed"] == [{"city": "Oslo"}], got  # the first turn ran
    assert got["finish_reasons"] == ["tool-calls"], got
    refused = "callgate cannot translate a 'item_reference' item in input[1]"
    assert got["errors"] and all(refused in e for e in got["errors"]), got
    assert len(upstream.requests) == 1  # the refused request never reached the server
