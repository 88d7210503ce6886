"""The byte pass-through proxy that the gateway's cost is measured against.

Raw ASGI, one upstream client, the upstream's bytes unchanged: the least a proxy on the
gateway's stack can do, on httpx (:class:`BytePassThrough`) or on the proxy's lean
HTTP/1.1 client (:class:`LeanPassThrough`, the stack of a plain-http upstream).
tests/proxy/test_proxy_no_stall.py compares one chunk's cost through the first and
through the proxy; bench/bench_stack.py serves both, bench/bench_proxy.py the second.
"""

from __future__ import annotations

from typing import Any


async def _body(receive: Any) -> bytes:
    """The request's whole body."""
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return bytes(body)


class BytePassThrough:
    """Forward each POST to ``upstream`` and stream its answer back as it comes."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.client: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Forward one request; its status, content type and bytes come back unchanged."""
        import httpx

        if scope["type"] != "http":
            return
        if self.client is None:
            self.client = httpx.AsyncClient(timeout=600)
        body = await _body(receive)
        headers = {"content-type": "application/json"}
        request = self.client.build_request(
            "POST", self.upstream + scope["path"], content=body, headers=headers
        )
        reply = await self.client.send(request, stream=True)
        kind = reply.headers.get("content-type", "application/octet-stream").encode()
        start = {"type": "http.response.start", "status": reply.status_code}
        await send({**start, "headers": [(b"content-type", kind)]})
        async for piece in reply.aiter_raw():
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        await reply.aclose()


class LeanPassThrough(BytePassThrough):
    """The same pass-through on the proxy's lean HTTP/1.1 client (its plain-http stack)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Forward one request through :class:`~callgate.proxy.http1.Http1Pool`."""
        from callgate.proxy.http1 import Http1Pool

        if scope["type"] != "http":
            return
        if self.client is None:
            self.client = Http1Pool(connect_timeout=10, read_timeout=600)
        body = await _body(receive)
        headers = {"content-type": "application/json"}
        reply = await self.client.send("POST", self.upstream + scope["path"], headers, body)
        kind = reply.headers.get("content-type", "application/octet-stream").encode()
        start = {"type": "http.response.start", "status": reply.status_code}
        await send({**start, "headers": [(b"content-type", kind)]})
        while piece := await reply.read():
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        await reply.aclose()
