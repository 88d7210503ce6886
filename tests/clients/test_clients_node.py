"""The openai npm package through ``callgate proxy`` (a real process): quoted markup, timeouts.

The official openai npm package (tests/node_openai: ``create({stream: true})`` and the
``.stream()`` helper) asks a fake upstream that answers with prose quoting a call in inline
code, or too late for the proxy's ``--timeout``. The prose reaches it whole and nothing
runs; the timeout makes it throw the notice's words. (The Vercel AI SDK's are in
tests/proxy/test_proxy_ai_sdk.py.) Without Node or the ``npm ci`` of tests/node_openai the
tests skip, unless ``CALLGATE_REQUIRE_NODE=1`` (CI) fails them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.proxy.wires import notices
from callgate.testing.builders import openai_chunks
from proxy_cases import QWEN_MODEL, WEATHER, node_for, proxy_process

TESTS = Path(__file__).resolve().parents[1]
QUOTED = (
    "The model emits `<tool_call>"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    + "</tool_call>` in its output."
)
"""A Qwen model's prose that quotes its own call format in inline code."""
TIMED_OUT = notices.broken_line("ReadTimeout")
SLOW = "slow"


def pick(path: str, body: dict[str, Any]) -> Script:
    """The quoted prose one character per chunk; too late for a prompt marked slow."""
    del path
    delay = 3.0 if SLOW in json.dumps(body.get("messages")) else 0.0
    return Script(sse_body(openai_chunks([], [], text=list(QUOTED))), delay=delay)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    args = ["--timeout", "1", "--text-formats", "tool_call_tag"]
    with (
        ServerThread(ReplayUpstream(pick)) as upstream,
        proxy_process(["--upstream", upstream.url + "/v1", *args]) as (_, base, _first),
    ):
        yield base


def test_the_openai_npm_package_shows_quoted_prose_whole_and_throws_on_a_timeout(
    url: str,
) -> None:
    program = node_for("node_openai", "openai")
    tool = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": WEATHER["get_weather"]},
    }
    requests = [
        {"model": QWEN_MODEL, "messages": [{"role": "user", "content": p}], "tools": [tool]}
        for p in ("The format?", f"A {SLOW} one?")
    ]
    done = subprocess.run(
        [program, str(TESTS / "node_openai" / "client.mjs"), url + "/v1"],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    quoted, late = (json.loads(line) for line in done.stdout.splitlines())
    for way in ("streamed", "helper"):
        assert quoted[way] == {"content": QUOTED, "calls": [], "finish_reason": "stop"}
        assert TIMED_OUT in late[way]["error"]
