"""Every client wire in front of every upstream wire: the 3 x 3 matrix, with the official SDKs.

For each upstream wire a real uvicorn server on loopback replays every recorded stream of
tests/captures of that wire (and a call leaked into a local model's text), whole and one
character per text delta; the proxy runs with ``upstream_wire`` set to it; the client is
the official SDK's stream helper of its wire (openai ``chat.completions.stream``, openai
``responses.stream(...).get_final_response()``, anthropic
``messages.stream(...).get_final_message()``). What the SDK rebuilds is what callgate's
buffer releases for the same upstream stream (``replay``): the same text (a notice after
it when the gate withheld a call), the same calls; never a 5xx.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest

from callgate.cli.capture import load_capture
from callgate.cli.replay import replay
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.proxy.wires.translate import PATHS
from callgate.testing.builders import WireText, anthropic_events, openai_chunks
from proxy_cases import HERE, MANIFEST, NOT_RUN, QWEN, WEATHER

NOTICE = Options(on_blocked="notice")
STRATEGY = {"chat": "openai", "messages": "anthropic", "responses": "openai-responses"}
WIRES = tuple(STRATEGY)
Stream = list[dict[str, Any]]


def _captures(wire: str) -> list[tuple[str, Stream]]:
    return [
        (e["file"], load_capture((HERE / "captures" / e["file"]).read_bytes()))
        for e in MANIFEST
        if e["wire"] == STRATEGY[wire] and "profile" not in e
    ]


def _qwen(wire: str) -> Stream:
    if wire == "chat":
        return openai_chunks([], [], text=list(QWEN))
    if wire == "messages":
        return anthropic_events([WireText(tuple(QWEN))], [0] * (len(QWEN) + 2))
    from callgate.strategies.responses import ResponsesStrategy

    message = {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed"}
    message["content"] = [{"type": "output_text", "text": QWEN, "annotations": []}]
    whole = {"id": "resp_1", "object": "response", "status": "completed", "output": [message]}
    return ResponsesStrategy().replay(whole)


_TEXT_DELTAS = {
    "chat": lambda e: (e.get("choices") or [{}])[0].get("delta", {}).get("content"),
    "messages": lambda e: (
        (e.get("delta") or {}).get("text") if e.get("type") == "content_block_delta" else None
    ),
    "responses": lambda e: (
        e.get("delta") if e.get("type") == "response.output_text.delta" else None
    ),
}


def by_char(wire: str, stream: Stream) -> Stream:
    """Every text delta of ``stream`` re-sent one character per chunk."""
    out: Stream = []
    for event in stream:
        text = _TEXT_DELTAS[wire](event)
        if not isinstance(text, str) or len(text) < 2:
            out.append(event)
            continue
        for ch in text:
            copy = json.loads(json.dumps(event))
            if wire == "chat":
                copy["choices"][0]["delta"] = {"content": ch}
                copy["choices"][0]["finish_reason"] = None
            elif wire == "messages":
                copy["delta"]["text"] = ch
            else:
                copy["delta"] = ch
            out.append(copy)
        if wire == "chat" and event["choices"][0].get("finish_reason"):
            out.append({**event, "choices": [{**event["choices"][0], "delta": {}}]})
    return out


def body(wire: str, stream: Stream) -> bytes:
    return sse_body(stream, done=wire == "chat", named=wire != "chat")


# -- the clients --------------------------------------------------------------------------


def _tools(wire: str, schemas: dict[str, Any]) -> list[dict[str, Any]]:
    if wire == "chat":
        return [
            {"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in schemas.items()
        ]
    if wire == "messages":
        return [{"name": n, "input_schema": s} for n, s in schemas.items()]
    return [{"type": "function", "name": n, "parameters": s} for n, s in schemas.items()]


def chat_client(url: str, schemas: dict[str, Any]) -> tuple[str, list[Any]]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    kwargs: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    if schemas:
        kwargs["tools"] = _tools("chat", schemas)
    with client.chat.completions.stream(**kwargs) as stream:
        message = stream.get_final_completion().choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or ()]
    return message.content or "", calls


def messages_client(url: str, schemas: dict[str, Any]) -> tuple[str, list[Any]]:
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    kwargs: dict[str, Any] = {
        "model": "m",
        "max_tokens": 8192,  # above every capture's usage: a turn at the limit is cut
        "messages": [{"role": "user", "content": "go"}],
    }
    if schemas:
        kwargs["tools"] = _tools("messages", schemas)
    with client.messages.stream(**kwargs) as stream:
        final = stream.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    return text, [(b.name, b.input) for b in final.content if b.type == "tool_use"]


def responses_client(url: str, schemas: dict[str, Any]) -> tuple[str, list[Any]]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    kwargs: dict[str, Any] = {"model": "m", "input": "go"}
    if schemas:
        kwargs["tools"] = _tools("responses", schemas)
    with client.responses.stream(**kwargs) as stream:
        final = stream.get_final_response()
    calls = [(i.name, json.loads(i.arguments)) for i in final.output if i.type == "function_call"]
    return final.output_text, calls


CLIENTS: dict[str, Callable[[str, dict[str, Any]], tuple[str, list[Any]]]] = {
    "chat": chat_client,
    "messages": messages_client,
    "responses": responses_client,
}
REFUSED = (
    RuntimeError,
    openai.APIError,
    anthropic.APIError,
    openai.LengthFinishReasonError,
    openai.ContentFilterFinishReasonError,
)
"""What an SDK's helper raises on a turn it has no final answer for (an error, a cut)."""


def split_by_char(client_wire: str, upstream_wire: str) -> bool:
    """Whether the pair replays every stream one character per delta as well.

    Each client wire and each upstream wire is in one such pair, all across wires (a
    wire's own pair is played by character in its own test file); the other pairs play
    the streams whole, which keeps the matrix's run time reasonable.
    """
    return WIRES.index(upstream_wire) == (WIRES.index(client_wire) + 1) % len(WIRES)


class Upstream:
    def __init__(self) -> None:
        self.next = Script(b"")
        self.paths: list[str] = []
        self.app = ReplayUpstream(self.pick)

    def pick(self, path: str, request: dict[str, Any]) -> Script:
        self.paths.append(path)
        return self.next


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Upstream, str]]:
    replaying = Upstream()
    with ServerThread(replaying.app) as server:
        yield replaying, server.url


@pytest.mark.parametrize("upstream_wire", WIRES)
@pytest.mark.parametrize("client_wire", WIRES)
def test_every_recorded_stream_reaches_every_client_as_callgate_gives_it(
    upstream: tuple[Upstream, str], client_wire: str, upstream_wire: str
) -> None:
    replaying, url = upstream
    replaying.paths.clear()
    config = ProxyConfig(upstream=url, options=NOTICE, upstream_wire=upstream_wire)
    streams = [("qwen", _qwen(upstream_wire)), *_captures(upstream_wire)]
    with ServerThread(create_app(config)) as proxy:
        for name, whole in streams:
            splits = [whole]
            if split_by_char(client_wire, upstream_wire) or name == "qwen":
                splits.append(by_char(upstream_wire, whole))
            for stream in splits:
                clean = upstream_wire == "chat"  # the body ends with [DONE] (see body())
                found = replay(stream, clean_end=clean)
                schemas = {c["name"]: {"type": "object"} for c in found["calls"]}
                if name == "qwen":
                    schemas = WEATHER
                want = replay(stream, schemas, clean_end=clean)
                calls = (
                    [(c["name"], c["arguments"]) for c in want["calls"]]
                    if want["status"] == "pass"
                    else []
                )
                replaying.next = Script(body(upstream_wire, stream))
                try:
                    text, got = CLIENTS[client_wire](proxy.url, schemas)
                except REFUSED as refused:
                    assert getattr(refused, "status_code", 200) < 500, (name, refused)
                    assert not calls or want["status"] != "pass", name
                    continue
                assert got == calls, name
                assert text.startswith(want["display"]), name
                assert text == want["display"] or NOT_RUN.search(text) is not None, name
    assert set(replaying.paths) == {PATHS[upstream_wire]}
