"""More real clients against the proxy over loopback: the openai npm package and LangChain.

The official ``openai`` npm package (tests/node_openai: ``npm ci`` there; CI runs it) is
driven from Node with ``create({stream: true})`` and the ``.stream()`` helper, and
LangChain's ``ChatOpenAI`` streams and invokes with the request's tools bound; each ends
with the message callgate's buffer and driver give for the same stream. Without Node or
its ``npm ci`` the Node test skips, unless ``CALLGATE_REQUIRE_NODE=1`` (CI) fails it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_openai import ChatOpenAI

from callgate.proxy.upstream import Script, whole_body, whole_response
from proxy_cases import (
    QWEN,
    WEATHER,
    Harness,
    StreamCase,
    by_char,
    capture_cases,
    node_for,
    text_turn,
)

NODE_CLIENT = Path(__file__).resolve().parents[1] / "node_openai"
CASES = [
    *capture_cases(),
    StreamCase("qwen-leak", text_turn([QWEN]), WEATHER, model="Qwen/Qwen2.5-7B-Instruct"),
]


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    made = Harness()
    made.start()
    yield made
    made.stop()


def parsed(calls: list[Any]) -> list[tuple[str, Any]]:
    return [(name, json.loads(arguments)) for name, arguments in calls]


def test_the_openai_npm_package_rebuilds_what_callgate_gives(harness: Harness) -> None:
    program = node_for("node_openai", "openai")
    played = [c for case in CASES for c in (case, by_char(case))]
    requests = [{**harness.add(case)} for case in played]
    base = harness.url + "/v1"
    done = subprocess.run(
        [program, str(NODE_CLIENT / "client.mjs"), base],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(played)
    for case, line in zip(played, lines, strict=True):
        got = json.loads(line)
        want = case.expected()
        for how in ("streamed", "helper"):
            result = got[how]
            if "error" in result:  # the helper refuses a turn cut by length, as documented
                assert how == "helper" and want["status"] != "pass", (case.id, result)
                continue
            assert parsed(result["calls"]) == want["calls"], (case.id, how)
            assert result["content"].startswith(want["display"]), (case.id, how)
            assert (result["finish_reason"] == "tool_calls") is bool(want["calls"])


def _chat(harness: Harness, case: StreamCase) -> Any:
    kwargs = harness.add(case)
    model = ChatOpenAI(
        model=kwargs["model"],
        base_url=harness.url + "/v1",
        api_key="sk-langchain",  # type: ignore[arg-type]
        max_retries=0,
        extra_body={"metadata": kwargs["metadata"]},
    )
    return model.bind_tools(kwargs["tools"]) if "tools" in kwargs else model


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_langchain_chat_openai_ends_with_what_callgate_gives(
    harness: Harness, case: StreamCase
) -> None:
    want = case.expected()
    for played in (case, by_char(case)):
        chat = _chat(harness, played)
        total: AIMessageChunk | None = None
        for chunk in chat.stream(played.request["messages"]):
            total = chunk if total is None else total + chunk
        assert total is not None
        calls = [(c["name"], c["args"]) for c in total.tool_calls]
        assert calls == want["calls"], played.id
        assert str(total.content).startswith(want["display"]), played.id
        assert not total.invalid_tool_calls
    chat = _chat(harness, case)
    body = whole_body(whole_response(case.chunks))
    harness.scripts[case.id] = Script(body, content_type="application/json")
    whole = chat.invoke(case.request["messages"])
    assert [(c["name"], c["args"]) for c in whole.tool_calls] == want["calls"]
