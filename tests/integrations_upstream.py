"""A fake OpenAI-compatible upstream on loopback, shared by the integration tests.

A real uvicorn server (a plain ASGI app, on 127.0.0.1 and a port the system picks, in a
daemon thread) answers ``POST /v1/chat/completions`` with scripted turns: each request
takes the next turn of the script (or the fixed :attr:`Upstream.always` turn), streamed
as server-sent events, one event per chunk, each written and flushed on its own, then
``data: [DONE]``; a turn built with :func:`cut` stops short and closes the connection.
A ``stream: false`` request gets the turn assembled by callgate's buffer (the provider's
own non-streaming message). Every request body is kept in :attr:`Upstream.requests`.
``GET /v1/models`` lists one model, so clients that probe the server find it.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from callgate import LLMStreamBuffer
from callgate.testing.builders import openai_chunks

OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
"""No network from the frameworks: LiteLLM's bundled cost map, no tokenizer downloads (LiteLLM
asks Hugging Face for a model's tokenizer to count tokens, and retries for half a minute)."""
for _name, _value in OFFLINE.items():
    os.environ.setdefault(_name, _value)

Chunk = dict[str, Any]
Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Cut(list[Chunk]):
    """A turn whose connection closes after its chunks, with no ``[DONE]``: a broken stream."""


def cut(chunks: list[Chunk]) -> Cut:
    """``chunks`` sent, then the connection closed before the stream's end."""
    return Cut(chunks)


class Upstream:
    """The fake server's script and what it received (see the module's docstring)."""

    def __init__(self) -> None:
        self.script: list[list[Chunk]] = []
        """Turns the next requests are answered with, one each, in order."""
        self.always: list[Chunk] | None = None
        """The turn every request gets once the script is spent (None: HTTP 500)."""
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def serve(self, *turns: list[Chunk], always: list[Chunk] | None = None) -> None:
        """Answer the next requests with ``turns``, in order, then with ``always``.

        The old script and the requests seen are dropped.
        """
        with self._lock:
            self.script = list(turns)
            self.always = always
            self.requests.clear()

    def _next(self, body: dict[str, Any]) -> list[Chunk] | None:
        with self._lock:
            self.requests.append(body)
            return self.script.pop(0) if self.script else self.always

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = (await receive())["type"]
                if event == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        if scope["method"] == "GET" and path.endswith("/models"):
            listing = {"object": "list", "data": [{"id": "fake", "object": "model"}]}
            await _json(send, 200, listing)
            return
        if not path.endswith("/chat/completions"):
            await _json(send, 404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        body = json.loads(raw or b"{}")
        turn = self._next(body)
        if turn is None:
            await _json(send, 500, {"error": {"message": "the script is spent", "type": "fake"}})
            return
        if not body.get("stream"):
            await _json(send, 200, assembled(turn))
            return
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in turn:
            event = b"data: " + json.dumps(chunk).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": True})
            await asyncio.sleep(0)
        if isinstance(turn, Cut):
            raise ConnectionAbortedError("the fake upstream cuts this stream")
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def _json(send: Send, status: int, body: Any) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def assembled(turn: list[Chunk]) -> dict[str, Any]:
    """The ``stream: false`` response of ``turn``: its message as callgate's buffer builds it."""
    buffer = LLMStreamBuffer()
    for piece in turn:
        buffer.add(piece)
    buffer.end()
    first = turn[0] if turn else {}
    finish = next(
        (c["choices"][0]["finish_reason"] for c in reversed(turn) if c.get("choices")), None
    )
    return {
        **{k: first[k] for k in ("id", "created", "model") if k in first},
        "object": "chat.completion",
        "choices": [{"index": 0, "message": buffer.as_dict(), "finish_reason": finish}],
    }


def listening_socket() -> socket.socket:
    """A loopback socket whose accepted connections write without Nagle's delay.

    asyncio sets ``TCP_NODELAY`` only on sockets whose protocol is TCP; a socket made with
    protocol 0 leaves every answer's last small write waiting for the client's delayed ACK
    (about 40 ms a request), so the protocol is named and the listener's option set too.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


@contextmanager
def running() -> Iterator[Upstream]:
    """A fake upstream served by uvicorn on loopback for the duration of the block."""
    import uvicorn

    upstream = Upstream()
    sock = listening_socket()
    sock.bind(("127.0.0.1", 0))
    upstream.port = sock.getsockname()[1]
    config = uvicorn.Config(upstream, log_level="critical", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the fake upstream did not start")
        threading.Event().wait(0.01)
    try:
        yield upstream
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def framework(name: str) -> Any:
    """The framework module ``name``, or a skip of the calling test module when it is missing.

    With ``CALLGATE_REQUIRE_FRAMEWORKS=1`` (CI, which installs the extras) a missing
    framework is an import error instead: the tests must run.
    """
    import pytest

    if os.environ.get("CALLGATE_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module(name)
    return pytest.importorskip(name, reason=f"{name} is an optional framework (callgate's extras)")


READ_FILE = {
    "read_file": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
}
"""The tool of LiteLLM issue #33678's stream."""
WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
}
"""A tool whose schema a call can break (``{"town": ...}``)."""


# -- turns ---------------------------------------------------------------------------------


def chunk(delta: Chunk, finish: str | None = None, model: str = "gpt-4.1") -> Chunk:
    """One ``chat.completion.chunk`` of a turn."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def text_turn(text: str, *, model: str, by_char: bool = True, finish: str = "stop") -> list[Chunk]:
    """A turn whose content is ``text`` (one character per chunk unless told), then ``finish``."""
    pieces = list(text) if by_char else [text]
    chunks = [chunk({"role": "assistant", "content": ""}, model=model)]
    chunks += [chunk({"content": piece}, model=model) for piece in pieces]
    chunks.append(chunk({}, finish, model=model))
    return chunks


def issue_33678(model: str = "qwen3-coder:30b") -> list[Chunk]:
    """LiteLLM issue #33678 as a client of LiteLLM receives it (ollama_chat, streamed).

    Two parallel calls, each its own id, both at ``index`` 0: a client that adds
    arguments up by index makes one call of ``{"path": "a.rs"}{"path": "b.rs"}``.
    """
    calls = [("call_a", '{"path": "a.rs"}'), ("call_b", '{"path": "b.rs"}')]
    chunks = [chunk({"role": "assistant", "content": ""}, model=model)]
    for call_id, arguments in calls:
        entry = {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": "read_file", "arguments": arguments},
        }
        chunks.append(chunk({"tool_calls": [entry]}, model=model))
    chunks.append(chunk({}, "tool_calls", model=model))
    return chunks


__all__ = [
    "READ_FILE",
    "WEATHER",
    "Cut",
    "Upstream",
    "assembled",
    "chunk",
    "cut",
    "framework",
    "issue_33678",
    "openai_chunks",
    "running",
    "text_turn",
]
