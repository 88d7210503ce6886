"""Usage at the request's token limit through the gateway: no cut turn sends a call.

Every recorded stream with calls of the gateway's upstream wires (tests/captures), cut at
every chunk boundary and ended with a relabelled tool-use end whose usage reaches the
request's ``max_tokens`` / ``max_output_tokens`` (tests/corpus/relabelled_ends.py), goes
through the engine the gateway runs, on the stream's own client wire, ended cleanly: no
call reaches the client and the finish is not a tool-use finish. A sample of the cuts
goes through a real gateway on loopback; one token below the limit the whole turn's
calls do reach the client (the control).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import ENGINES
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import Script, sse_body
from corpus.relabelled_ends import LIMIT, MANIFEST, Chunk, end_index, relabelled
from proxy_cases import ScriptedUpstream

CLIENTS = {"openai": "chat", "anthropic": "messages", "openai-responses": "responses"}
"""The gateway's wire of each capture wire it reads."""
ENTRIES = [e for e in MANIFEST if e["wire"] in CLIENTS]
IDS = [e["file"] for e in ENTRIES]
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def request(entry: dict[str, Any]) -> dict[str, Any]:
    """The client's request: the capture's tools declared, its output limit at ``LIMIT``."""
    client = CLIENTS[entry["wire"]]
    names = dict.fromkeys(c["name"] for c in entry["expect"]["calls"])
    schema = {"type": "object"}
    turn = [{"role": "user", "content": "go"}]
    if client == "chat":
        tools = [{"type": "function", "function": {"name": n, "parameters": schema}} for n in names]
        return {"model": "m", "messages": turn, "tools": tools, "stream": True, "max_tokens": LIMIT}
    if client == "messages":
        tools = [{"name": n, "input_schema": schema} for n in names]
        return {"model": "m", "messages": turn, "tools": tools, "stream": True, "max_tokens": LIMIT}
    tools = [{"type": "function", "name": n, "parameters": schema} for n in names]
    return {"model": "m", "input": turn, "tools": tools, "stream": True, "max_output_tokens": LIMIT}


def sent_calls(client: str, out: list[Chunk]) -> list[Any]:
    """Every call (or call piece) the client received, and a tool-use finish if any."""
    found: list[Any] = []
    for event in out:
        if client == "chat":
            for choice in event.get("choices") or ():
                found += (choice.get("delta") or {}).get("tool_calls") or ()
                if choice.get("finish_reason") == "tool_calls":
                    found.append("finish tool_calls")
        elif client == "messages":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                found.append(block)
            if (event.get("delta") or {}).get("stop_reason") == "tool_use":
                found.append("stop tool_use")
        else:
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                found.append(item)
            output = (event.get("response") or {}).get("output") or ()
            found += [i for i in output if i.get("type") == "function_call"]
    return found


def played(entry: dict[str, Any], chunks: list[Chunk]) -> tuple[Any, list[Chunk]]:
    """The engine's turn and the client's events for ``chunks``, ended cleanly."""
    turn = ENGINES[CLIENTS[entry["wire"]]](request(entry))
    out: list[Chunk] = []
    for chunk in chunks:
        out += turn.feed(chunk)
    out += turn.finish(clean=True)
    return turn, out


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_the_engine_sends_no_call_from_any_cut_at_the_limit(entry: dict[str, Any]) -> None:
    client = CLIENTS[entry["wire"]]
    for cut in range(end_index(entry) + 1):
        for used in (LIMIT, LIMIT + 7):
            turn, out = played(entry, relabelled(entry, cut, used))
            assert sent_calls(client, out) == [], (cut, used)
            assert turn.calls == [] and turn.repair is None, (cut, used)
            assert "token_limit" in [f.code for f in turn.findings], (cut, used)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_one_token_below_the_limit_the_engine_sends_the_calls(entry: dict[str, Any]) -> None:
    """The control: the relabelled end alone is accepted, so the usage decides."""
    turn, out = played(entry, relabelled(entry, end_index(entry), LIMIT - 1))
    assert [c.name for c in turn.calls] == [c["name"] for c in entry["expect"]["calls"]]
    assert sent_calls(CLIENTS[entry["wire"]], out)


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[ScriptedUpstream, str]]:
    upstream = ScriptedUpstream()
    with (
        ServerThread(upstream.app) as up,
        ServerThread(create_app(ProxyConfig(upstream=up.url))) as proxy,
    ):
        yield upstream, proxy.url


def events(body: bytes) -> list[Chunk]:
    return [
        json.loads(line[5:])
        for line in body.decode("utf-8").splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


SAMPLE = 5
"""Cuts per capture through the real gateway: the first, the end, and three between."""


def sampled_cuts(entry: dict[str, Any]) -> list[int]:
    last = end_index(entry)
    return sorted({round(last * k / (SAMPLE - 1)) for k in range(SAMPLE)})


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_the_gateway_sends_no_call_from_a_cut_at_the_limit(
    gateway: tuple[ScriptedUpstream, str], entry: dict[str, Any]
) -> None:
    upstream, url = gateway
    wire, client = entry["wire"], CLIENTS[entry["wire"]]
    for cut, used in [*((c, LIMIT) for c in sampled_cuts(entry)), (end_index(entry), LIMIT - 1)]:
        chunks = relabelled(entry, cut, used)
        upstream.script = Script(sse_body(chunks, done=wire == "openai", named=wire != "openai"))
        before = len(upstream.app.requests)
        reply = httpx.post(url + PATHS[client], json=request(entry), timeout=30)
        assert reply.status_code == 200
        assert len(upstream.app.requests) == before + 1  # a cut turn is never re-asked
        calls = sent_calls(client, events(reply.content))
        assert bool(calls) is (used < LIMIT), (cut, used, calls)
