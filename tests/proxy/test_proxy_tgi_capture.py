"""Text Generation Inference's recorded tool-call streams, through ``callgate check`` and
the gateway.

TGI writes no finish reason on a tool call's chunks and ends the stream with ``[DONE]``
(tests/captures/manifest.json names the recording and the router code). A clean end
without a finish reason runs the call with a ``no_finish_reason`` warning; the same
stream without its ``[DONE]`` may have been cut off and runs nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from callgate.cli.capture import Capture, load_capture
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import Script, sse_body
from proxy_cases import MANIFEST, ScriptedUpstream

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
TGI = [e for e in MANIFEST if e["source"]["repository"] == "huggingface/text-generation-inference"]
WEATHER = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "format": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location", "format"],
    "additionalProperties": False,
}
"""The schema of TGI's test tool get_current_weather (its test_tools_llama.py)."""
TOOLS = [{"type": "function", "function": {"name": "get_current_weather", "parameters": WEATHER}}]
IDS = [e["file"] for e in TGI]


def capture(entry: dict[str, Any]) -> Capture:
    return load_capture((CAPTURES / entry["file"]).read_bytes())


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ScriptedUpstream, str]]:
    upstream = ScriptedUpstream()
    with (
        ServerThread(upstream.app) as up,
        ServerThread(create_app(ProxyConfig(upstream=up.url))) as proxy,
    ):
        yield upstream, proxy.url


def test_the_corpus_holds_tgi_streams_that_end_without_a_finish_reason() -> None:
    assert len(TGI) >= 2
    for entry in TGI:
        chunks = capture(entry)
        assert chunks.ended  # the router's [DONE]
        assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
        assert entry["expect"]["status"] == "pass" and entry["expect"]["calls"]


def check(path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "callgate", "check", "--report", "json", *flags, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("entry", TGI, ids=IDS)
def test_check_runs_the_tgi_call_with_the_warning(entry: dict[str, Any], tmp_path: Path) -> None:
    code, report = check(CAPTURES / entry["file"])
    assert code == 0 and report["status"] == "pass" and report["executable"]
    assert [{"name": c["name"], "arguments": c["arguments"]} for c in report["calls"]] == (
        entry["expect"]["calls"]
    )
    assert [(f["code"], f["severity"]) for f in report["findings"]] == [
        ("no_finish_reason", "warning")
    ]
    code, strict = check(CAPTURES / entry["file"], "--strict-finish")
    assert code == 1 and not strict["executable"]
    cut = tmp_path / "cut.jsonl"  # the same recording without the router's [DONE]
    cut.write_text("".join(json.dumps(c) + "\n" for c in capture(entry)), encoding="utf-8")
    code, unfinished = check(cut)
    assert code == 1 and not unfinished["executable"]


def sse_events(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in body.decode("utf-8").splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


@pytest.mark.parametrize("entry", TGI, ids=IDS)
def test_the_gateway_runs_the_tgi_call_with_the_warning(
    servers: tuple[ScriptedUpstream, str], entry: dict[str, Any]
) -> None:
    upstream, url = servers
    upstream.script = Script(sse_body(list(capture(entry)), done=True))
    request = {
        "model": "tgi",
        "messages": [{"role": "user", "content": "What is the weather like in Brooklyn?"}],
        "stream": True,
        "tools": TOOLS,
    }
    reply = httpx.post(url + "/v1/chat/completions", json=request, timeout=30)
    events = sse_events(reply.content)
    notes = [e["callgate"] for e in events if "callgate" in e]
    assert any("no_finish_reason" in json.dumps(n) for n in notes)
    finishes = [c["finish_reason"] for e in events for c in e.get("choices", ())]
    assert "tool_calls" in finishes
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    kwargs = {k: v for k, v in request.items() if k != "stream"}
    with client.chat.completions.stream(**kwargs) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    got = [{"name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in calls]
    assert got == entry["expect"]["calls"]


@pytest.mark.parametrize("entry", TGI, ids=IDS)
def test_without_its_done_the_tgi_stream_runs_nothing_through_the_gateway(
    servers: tuple[ScriptedUpstream, str], entry: dict[str, Any]
) -> None:
    upstream, url = servers
    upstream.script = Script(sse_body(list(capture(entry)), done=False))
    request = {"model": "tgi", "messages": [], "stream": True, "tools": TOOLS}
    reply = httpx.post(url + "/v1/chat/completions", json=request, timeout=30)
    events = sse_events(reply.content)
    assert not [c for e in events for c in e.get("choices", ()) if c["delta"].get("tool_calls")]
