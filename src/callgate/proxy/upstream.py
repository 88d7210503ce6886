"""A replaying upstream: an ASGI server that answers with recorded streams, for the demo.

``callgate proxy --demo`` puts the proxy in front of one; the proxy's tests and its
benchmark use it as the mock upstream. Each request is answered by a :class:`Script`
chosen by ``pick(path, body)``: its chunks as server-sent events (or its body as it is),
written in pieces of the script's sizes, optionally cut off mid-body (a dropped
connection). ``GET /v1/models`` lists the scripts' model names.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

import anyio
from attrs import field, frozen

from callgate.proxy.sse import DONE_EVENT, encode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = [
    "FlakyModel",
    "ReplayUpstream",
    "Script",
    "chat_turn",
    "sse_body",
    "whole_body",
    "whole_response",
]


def sse_body(chunks: Sequence[object], *, done: bool = True, named: bool = False) -> bytes:
    """Chunks as an event stream (``named``: each event named by its ``type``, Anthropic's)."""
    parts = [
        encode(c, str(c.get("type")) if named and isinstance(c, Mapping) else None) for c in chunks
    ]
    return b"".join(parts) + (DONE_EVENT if done else b"")


def whole_body(response: Mapping[str, Any]) -> bytes:
    """A stream=false response body."""
    return json.dumps(response).encode("utf-8")


def whole_response(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The stream=false response of a stream's chunks (assembled by callgate's own buffer)."""
    from callgate.buffer import LLMStreamBuffer

    buffer = LLMStreamBuffer()
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    message = buffer.as_dict()
    finish = next(
        (
            c["choices"][0]["finish_reason"]
            for c in reversed(chunks)
            if c.get("choices") and c["choices"][0].get("finish_reason")
        ),
        None,
    )
    response = {
        "id": chunks[0].get("id", "chatcmpl-demo"),
        "object": "chat.completion",
        "created": chunks[0].get("created", 0),
        "model": chunks[0].get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    return response


@frozen
class Script:
    """One answer of the upstream: status, body, how it is written."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    write_sizes: tuple[int, ...] = ()
    """Sizes of the successive writes, cycled (empty: one event per write)."""
    cut_at: int | None = None
    """Stop after this many bytes and drop the connection (the promised body never ends)."""
    headers: tuple[tuple[str, str], ...] = field(factory=tuple)
    delay: float = 0.0
    """Seconds to wait before each write (a slow model)."""


Pick = Callable[[str, dict[str, Any]], Script]


class ReplayUpstream:
    """The ASGI application: each POST answered by ``pick``; it records what it was sent."""

    def __init__(self, pick: Pick, models: Sequence[str] = ()) -> None:
        self.pick = pick
        self.models = list(models)
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        """(path, body, headers) of every request, in order."""
        self.completed = 0
        """Answers written to their end."""
        self.aborted = 0
        """Answers cut off: a scripted drop, or the client went away (cancelled)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request."""
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        raw = bytearray()
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["method"] == "GET" and scope["path"].rstrip("/").endswith("/models"):
            listing = {
                "object": "list",
                "data": [{"id": m, "object": "model"} for m in self.models],
            }
            await _answer(send, Script(whole_body(listing), content_type="application/json"))
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        self.requests.append((scope["path"], body if isinstance(body, dict) else {}, headers))
        script = self.pick(scope["path"], body if isinstance(body, dict) else {})
        done = False
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:  # the client went away: stop writing
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                await _answer(send, script)
                done = True
                group.cancel_scope.cancel()
        finally:
            if done:
                self.completed += 1
            else:
                self.aborted += 1


async def _answer(send: Send, script: Script) -> None:
    headers = [(b"content-type", script.content_type.encode("latin-1"))]
    headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in script.headers]
    await send({"type": "http.response.start", "status": script.status, "headers": headers})
    body = script.body if script.cut_at is None else script.body[: script.cut_at]
    for piece in _pieces(body, script):
        if script.delay:
            await asyncio.sleep(script.delay)
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    if script.cut_at is not None:
        raise ConnectionAbortedError("the scripted upstream drops the connection")
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _pieces(body: bytes, script: Script) -> list[bytes]:
    if not script.write_sizes:
        events = body.split(b"\n\n")
        return [e + b"\n\n" for e in events[:-1]] + ([events[-1]] if events[-1] else [])
    pieces, start, n = [], 0, 0
    while start < len(body):
        size = max(1, script.write_sizes[n % len(script.write_sizes)])
        pieces.append(body[start : start + size])
        start += size
        n += 1
    return pieces


class FlakyModel:
    """A fake chat model on the OpenAI wire whose calls are sometimes schema-invalid.

    Asked a question, it calls ``get_weather``; the call's arguments are
    ``{"town": ...}`` (invalid: the schema requires ``city``) with probability
    ``invalid_rate``, drawn per conversation (``metadata.conversation``) and per attempt
    (the assistant turns so far), so a run is reproducible. Given the tool's answer (a
    temperature) it answers in text; given an error it tries the call again. Used to
    measure the ``--on-blocked`` modes (``bench/bench_proxy.py --modes``).
    """

    SCHEMA: Mapping[str, Any] = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    ANSWER = "It is 18 °C in Paris."

    def __init__(self, invalid_rate: float) -> None:
        self.invalid_rate = invalid_rate

    def invalid(self, conversation: str, attempt: int) -> bool:
        """Whether the model's ``attempt``-th call in ``conversation`` is invalid."""
        import random

        return random.Random(f"{conversation}:{attempt}").random() < self.invalid_rate

    def pick(self, path: str, body: dict[str, Any]) -> Script:
        """The model's answer to a request (the upstream's ``pick``)."""
        del path
        messages = body.get("messages") or [{}]
        metadata = body.get("metadata") or {}
        conversation = str(metadata.get("conversation", "0"))
        attempt = sum(1 for m in messages if m.get("role") == "assistant")
        last = messages[-1]
        if last.get("role") == "tool" and "°C" in str(last.get("content")):
            chunks = chat_turn(self.ANSWER)
        else:
            key = "town" if self.invalid(conversation, attempt) else "city"
            call = (f"call_{conversation}_{attempt}", "get_weather", json.dumps({key: "Paris"}))
            chunks = chat_turn("Let me check.", call)
        if body.get("stream") is not True:
            return Script(whole_body(whole_response(chunks)), content_type="application/json")
        return Script(sse_body(chunks))


def chat_turn(text: str, call: tuple[str, str, str] | None = None) -> list[dict[str, Any]]:
    """A Chat Completions turn's chunks: the role, ``text``, then ``call`` (id, name, JSON).

    The call's arguments come in one fragment after its opening; the turn finishes with
    ``tool_calls`` (``stop`` without a call). The upstream's own scripts, so that the
    gateway needs nothing of the test kit.
    """
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}, {"content": text}]
    if call is not None:
        call_id, name, arguments = call
        opening = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        deltas.append({"tool_calls": [{"index": 0, **opening}]})
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]})
    finishes = [None] * len(deltas) + ["tool_calls" if call else "stop"]
    return [
        {
            "id": "chatcmpl-flaky",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "flaky",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        for delta, finish in zip([*deltas, {}], finishes, strict=True)
    ]
