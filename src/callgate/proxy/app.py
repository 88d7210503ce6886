"""The proxy's ASGI application: the engine between a client and an upstream server.

:func:`create_app` returns a plain ASGI callable (any ASGI server runs it: uvicorn,
gunicorn with uvicorn workers, hypercorn). ``POST /v1/chat/completions`` and
``POST /v1/messages`` go through the engine (:mod:`callgate.proxy.engine`), streaming or
not; ``/healthz``, ``/readyz`` and ``/metrics`` are the proxy's own; every other path is
passed to the upstream unchanged, both ways streamed. One shared ``httpx.AsyncClient``
pools the upstream connections; a plain-http upstream with no proxy in the environment
is asked through the lean HTTP/1.1 client of :mod:`callgate.proxy.http1` instead (the
gated paths). A client that disconnects cancels its upstream request.
Request headers (Authorization included) go to the upstream and are never logged.

Errors: an unreachable upstream is a 502 with the wire's error body; an upstream HTTP
error is relayed as it is; a body that is not JSON is a 400; a body over the size bound
a 413. Nothing the model writes causes a 5xx or a broken event stream: a chunk the
engine cannot read is a finding, and the client's stream still ends cleanly.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import httpx
from attrs import field, frozen
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from callgate.proxy.audit import AuditLog
from callgate.proxy.engine import ENGINES, Engine, Options, RequestError, on_blocked
from callgate.proxy.forwarding import (
    UpstreamClient,
    forwarded,
    header_dict,
    relayed,
    target,
    unreached,
)
from callgate.proxy.http1 import Http1Pool, Reply, direct
from callgate.proxy.metrics import Metrics
from callgate.proxy.normalize import CLIENT_WIRES, Rewrite, client_forms, normalize
from callgate.proxy.outflow import Emit, Outlet, stream_out
from callgate.proxy.requests import RequestBodyError, read_request, request_bytes
from callgate.proxy.sse import encode
from callgate.proxy.wire_errors import error_body, json_or_none, upstream_error_json
from callgate.proxy.wires.translate import upstream_wire

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = ["ProxyConfig", "create_app", "from_env"]

logger = logging.getLogger("callgate.proxy")

Answer = httpx.Response | Reply
"""An upstream's answer, from httpx or from the lean HTTP/1.1 client (alike to read)."""

_GATED = {"/v1/chat/completions": "chat", "/v1/messages": "messages", "/v1/responses": "responses"}
"""The paths callgate reads, and their client wire."""


@frozen
class ProxyConfig:
    """What the proxy needs: where the upstream is, and how turns are treated."""

    upstream: str
    """The upstream server's base URL (``http://localhost:11434``, ``.../v1`` too)."""
    options: Options = field(factory=Options)
    upstream_wire: str | None = field(default=None, converter=upstream_wire)
    """The upstream's wire (``chat``, ``messages``, ``responses``); None: the client's."""
    audit_dir: Path | None = None
    """Write one audit record per turn here (see :mod:`callgate.proxy.audit`)."""
    audit_max_bytes: int = 64 * 1024 * 1024
    """An audit file rotates past this size."""
    audit_files: int = 8
    """How many rotated audit files are kept."""
    audit_messages: bool = False
    """Store the request's messages in each audit record too."""
    max_request_bytes: int = 32 * 1024 * 1024
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Seconds the upstream may stay silent (between two reads) before the turn ends."""
    max_connections: int = 1000
    """At most this many upstream connections at once (a request past them waits)."""
    http1: bool = True
    """Ask a plain-http upstream through :mod:`callgate.proxy.http1` (False: httpx always)."""
    spans: Any = None
    """A :class:`~callgate.proxy.telemetry.TurnSpans`: one OpenTelemetry span per turn
    (None: no spans)."""


class Proxy:
    """The ASGI application (see the module's docstring); made by :func:`create_app`."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.audit = AuditLog.configured(config)
        self.client: httpx.AsyncClient | None = None
        self.http1: Http1Pool | None = None
        """The lean client for the gated paths, when the upstream is plain http (see start)."""
        self.draining = False
        """Set when the server stops (SIGTERM): ``/readyz`` answers 503, requests still finish."""
        self.active = 0
        self._urls: dict[tuple[str, bytes], httpx.URL | str] = {}

    # -- ASGI -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one ASGI connection."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        path = scope["path"]
        method = scope["method"]
        if path == "/healthz":
            await JSONResponse({"status": "ok"})(scope, receive, send)
        elif path == "/readyz":
            ready = self.client is not None and not self.draining
            body = {"status": "ready" if ready else "draining"}
            await JSONResponse(body, status_code=200 if ready else 503)(scope, receive, send)
        elif path == "/metrics" and method == "GET":
            await self.metrics.response()(scope, receive, send)
        elif method == "POST" and path.rstrip("/") in _GATED:
            self.active += 1
            try:
                exchange = await self._gated(_GATED[path.rstrip("/")], scope, receive, send)
                if exchange is not None:  # awaited here: one coroutine layer fewer per read
                    await exchange
            finally:
                self.active -= 1
        else:
            await self._passthrough(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def start(self) -> None:
        """Open the shared upstream client (the ASGI lifespan's startup calls this)."""
        if self.client is None:
            config = self.config
            self.client = UpstreamClient(
                timeout=httpx.Timeout(config.read_timeout, connect=config.connect_timeout),
                limits=httpx.Limits(
                    max_connections=config.max_connections, max_keepalive_connections=100
                ),
                follow_redirects=False,
            )
            if config.http1 and direct(config.upstream):
                self.http1 = Http1Pool(
                    connect_timeout=config.connect_timeout,
                    read_timeout=config.read_timeout,
                    max_connections=config.max_connections,
                )

    async def stop(self) -> None:
        """Close the upstream client and the audit log (the lifespan's shutdown)."""
        self.draining = True
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        if self.http1 is not None:
            await self.http1.aclose()
            self.http1 = None
        if self.audit is not None:
            self.audit.close()

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:  # an ASGI server without lifespan support
            self.start()
        assert self.client is not None
        return self.client

    # -- the gated paths --------------------------------------------------------------

    async def _gated(
        self, wire: str, scope: Scope, receive: Receive, send: Send
    ) -> Coroutine[Any, Any, None] | None:
        """Read and admit a gated request: the exchange to await, or None once answered."""
        started = time.perf_counter()
        raw = bytearray()
        more = True
        while more:
            piece = await receive()
            if piece["type"] == "http.disconnect":
                raise ClientDisconnect
            raw += piece.get("body", b"")
            more = piece.get("more_body", False)
            if len(raw) > self.config.max_request_bytes:
                message = f"the request body is over {self.config.max_request_bytes} bytes"
                body = error_body(wire, 413, message, "request_too_large")
                await JSONResponse(body, status_code=413)(scope, receive, send)
                return None
        try:
            payload = read_request(bytes(raw))
        except RequestBodyError as exc:
            body = error_body(wire, 400, str(exc), exc.code)
            await JSONResponse(body, status_code=400)(scope, receive, send)
            return None
        forms = client_forms(CLIENT_WIRES[wire], payload)
        payload, rewrites = self._normalized(wire, payload)
        try:
            turn = self._turn(wire, payload, forms)
        except RequestError as exc:
            body = error_body(wire, 400, f"callgate: {exc}", "invalid_request")
            await JSONResponse(body, status_code=400)(scope, receive, send)
            return None
        path = turn.upstream_path if turn.translated else scope["path"]
        url = self._url(path, scope.get("query_string", b""))
        headers = forwarded(scope, gated=True)
        headers.setdefault("content-type", "application/json")
        exchange = _Exchange(self, wire, url, headers, dict(turn.request), started=started)
        exchange.translated, exchange.rewrites = turn.translated, [*rewrites, *turn.rewrites]
        self.metrics.rewrites(turn.rewrites)
        if payload.get("stream") is True:
            return await exchange.stream(turn, scope, receive, send)
        return exchange.whole(turn, scope, receive, send)

    def _url(self, path: str, query: bytes) -> httpx.URL | str:
        """The upstream URL of a gated path, made once per distinct path and query."""
        url = self._urls.get((path, query))
        if url is None:
            if len(self._urls) >= 256:
                self._urls.clear()
            text = target(self.config.upstream, path, query)
            self._client()
            url = self._urls[path, query] = text if self.http1 is not None else httpx.URL(text)
        return url

    def _normalized(
        self, wire: str, payload: dict[str, Any]
    ) -> tuple[dict[str, Any], list[Rewrite]]:
        """The request as gated and forwarded, normalized on the client's wire, and counted."""
        if not self.config.options.normalize:
            return payload, []
        payload, rewrites = normalize(CLIENT_WIRES[wire], payload)
        self.metrics.rewrites(rewrites)
        return payload, rewrites

    def _turn(
        self, wire: str, payload: Mapping[str, Any], forms: Mapping[str, str] | None = None
    ) -> Engine:
        return ENGINES[wire](
            payload,
            self.config.options,
            upstream=self.config.upstream_wire,
            forms=forms,
            prepared=False,
        )

    # -- every other path -------------------------------------------------------------

    async def _passthrough(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        url = target(self.config.upstream, scope["path"], scope.get("query_string", b""))
        headers = forwarded(scope, gated=False)
        client = self._client()
        body = request.stream() if scope["method"] not in ("GET", "HEAD") else None
        try:
            upstream = await client.send(
                client.build_request(scope["method"], url, headers=headers, content=body),
                stream=True,
            )
        except httpx.HTTPError as exc:
            self.metrics.upstream_error(type(exc).__name__)
            status, reply = unreached("chat", exc, self.config.read_timeout)
            await JSONResponse(reply, status_code=status)(scope, receive, send)
            return
        try:
            start = {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": relayed(upstream.headers, decoded=False),
            }
            await stream_out(receive, send, start, lambda emit: _relay(upstream, emit))
        finally:
            await upstream.aclose()


class _Exchange:
    """One gated request: the upstream calls (a repair asks again) and what the client gets."""

    def __init__(
        self,
        proxy: Proxy,
        wire: str,
        url: httpx.URL | str,
        headers: dict[str, str],
        payload: dict[str, Any],
        *,
        started: float,
    ) -> None:
        self.proxy = proxy
        self.wire = wire
        self.url = url
        self.headers = headers
        self.payload = payload
        self.started = started
        self.first_byte: float | None = None
        self.translated = False
        """Whether the upstream speaks another wire (its errors are rewritten in the client's)."""
        self.rewrites: list[Rewrite] = []
        """What the request's normalization changed (for the audit record)."""

    async def _open(self, body: Mapping[str, Any], turn: Engine | None = None) -> Answer:
        """Ask the upstream; ``turn``'s buffer is made while it answers (or before, on httpx)."""
        client = self.proxy._client()
        content = request_bytes(body)
        fast = self.proxy.http1
        if fast is not None:
            sent = turn.prepare if turn is not None else None
            return await fast.send("POST", str(self.url), self.headers, content, sent=sent)
        if turn is not None:
            turn.prepare()
        request = client.build_request("POST", self.url, headers=self.headers, content=content)
        return await client.send(request, stream=True)

    def _unreachable(self, scope: Scope, exc: Exception) -> JSONResponse:
        self.proxy.metrics.upstream_error(type(exc).__name__)
        status, reply = unreached(self.wire, exc, self.proxy.config.read_timeout)
        return JSONResponse(reply, status)

    async def _relay_error(
        self, upstream: Answer, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """An upstream HTTP error, relayed as it is (status, headers, body)."""
        self.proxy.metrics.upstream_error(f"http_{upstream.status_code}")
        try:
            body = await upstream.aread()
        except httpx.HTTPError:
            body = b""
        finally:
            await upstream.aclose()
        headers = relayed(upstream.headers, decoded=True)
        if self.translated:
            body = self._rewritten_error(upstream.status_code, body)
            headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
            headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(body)).encode()))
        await send(
            {"type": "http.response.start", "status": upstream.status_code, "headers": headers}
        )
        await send({"type": "http.response.body", "body": body})

    def _rewritten_error(self, status: int, body: bytes) -> bytes:
        """An upstream error body of another wire in the client wire's error shape."""
        return upstream_error_json(self.wire, status, body)

    # -- streaming --------------------------------------------------------------------

    async def stream(
        self, turn: Engine, scope: Scope, receive: Receive, send: Send
    ) -> Coroutine[Any, Any, None] | None:
        """A stream=true request: the upstream asked; the answer to await (None: answered).

        The answer plays the upstream's events through the engine as they come; it is
        returned, not awaited here: the request's coroutine awaits it, one layer fewer on
        every read. It settles the turns once over.
        """
        try:
            upstream = await self._open(self.payload, turn)
        except httpx.HTTPError as exc:
            await self._unreachable(scope, exc)(scope, receive, send)
            self._settle([turn], "unreachable")
            return None
        if upstream.status_code >= 400:
            await self._relay_error(upstream, scope, receive, send)
            self._settle([turn], "upstream_error")
            return None
        headers = relayed(upstream.headers, decoded=True)
        headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
        headers += [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        start = {"type": "http.response.start", "status": 200, "headers": headers}
        turns = [turn]
        return stream_out(
            receive,
            send,
            start,
            lambda out: self._pump(upstream, turns, out),
            lazy=True,
            then=lambda: self._settle(turns, "streamed"),
        )

    async def _pump(self, upstream: Answer, turns: list[Engine], emit: Outlet) -> bytes | None:
        """The last of ``turns`` played, each read's events sent at once; then its repair's.

        Returns the last piece, which goes out with the body's end: once the upstream's
        whole answer is in (the lean client knows), the rest of the turn is played without
        waiting for anything and returned, not sent, so the turn's end goes out in one write
        with the response's end. ``emit.watch()`` comes before every wait for the upstream
        (see :func:`stream_out`). Should the engine itself fail, what the turn held is sent,
        then an error event (the wire's error shape) and the stream's end instead of an
        aborted connection; nothing withheld is released. A failure to write to the client
        is not the engine's (``emit.writing``): it goes on. This one coroutine reads the
        upstream and writes to the client: a call per turn, or per read, would be one more
        layer resumed on every read.
        """
        watch, send, turn = emit.watch, emit.send, turns[-1]
        held, whole = bytearray(), bytearray()
        try:
            sse = "event-stream" in upstream.headers.get("content-type", "")
            reply = upstream if isinstance(upstream, Reply) else _Pieces(upstream)
            play = turn.play_bytes  # (bound once: the engine's many fields slow its lookup)
            audit = self.proxy.audit is not None
            watched = False
            try:
                while True:
                    data = reply.take()
                    if data is None:  # a read would wait: watch from then
                        if not watched:
                            watch()
                            watched = True
                        await reply.wait()
                        continue
                    if not data:
                        break
                    if self.first_byte is None:
                        self.first_byte = time.perf_counter()
                    if audit:
                        turn.raw.append(data)
                    if not sse:
                        whole += data
                        continue
                    out = play(data)
                    if reply.ended:
                        held += out
                    elif out:
                        emit.writing = True
                        await send({"type": "http.response.body", "body": out, "more_body": True})
                        emit.writing = False
                if sse:
                    held += turn.close_bytes()
            except httpx.HTTPError as exc:
                self._broke(turn, exc)
            finally:
                await upstream.aclose()
            held += _ended(turn, None if sse else bytes(whole))
        except Exception:
            if emit.writing:  # (nothing is held while the turn still writes)
                raise
            if held:
                await emit(bytes(held))
            return self._failed(turn)
        if turn.repair is None:
            return bytes(held) + turn.done
        return await self._repair(turns, emit, bytes(held))

    async def _repair(self, turns: list[Engine], emit: Outlet, last: bytes) -> bytes | None:
        """After a turn whose calls are re-asked: its answer played, or the turn given up.

        ``last`` (what the turn released) goes out first; then the upstream is asked again
        and its answer played by :meth:`_pump`.
        """
        turn = turns[-1]
        try:
            if last:
                await emit(last)
            emit.watch()
            again = await self._again(turn)
            if again is None:
                return b"".join([turn.encode(chunk) for chunk in turn.give_up()]) + turn.done
            turns.append(turn.follow_up())
        except Exception:
            if emit.writing:
                raise
            return self._failed(turns[-1])
        return await self._pump(again, turns, emit)

    def _broke(self, turn: Engine, exc: httpx.HTTPError) -> None:
        """The upstream stopped mid-stream: counted, and the turn ends cleanly, interrupted."""
        self.proxy.metrics.upstream_error(type(exc).__name__)
        turn.interrupted(f"the upstream stream broke: {type(exc).__name__}")

    async def _again(self, turn: Engine) -> Answer | None:
        """The upstream's answer to ``turn``'s repair; None when it could not be asked."""
        assert turn.repair is not None
        again: Answer | None = None
        try:
            again = await self._open(turn.repair)
        except httpx.HTTPError as exc:
            self.proxy.metrics.upstream_error(type(exc).__name__)
        if again is not None and again.status_code >= 400:
            self.proxy.metrics.upstream_error(f"http_{again.status_code}")
            await again.aclose()
            return None
        return again

    def _failed(self, turn: Engine) -> bytes:
        """The stream's end after an engine defect: logged, counted, and the wire's error event."""
        logger.exception("callgate proxy: the engine failed on a stream")
        self.proxy.metrics.upstream_error("engine_error")
        body = error_body(self.wire, 500, "callgate proxy: internal error", "engine_error")
        return encode(body, "error" if self.wire == "messages" else None) + turn.done

    # -- stream=false -----------------------------------------------------------------

    async def whole(self, turn: Engine, scope: Scope, receive: Receive, send: Send) -> None:
        """A stream=false request: the upstream's response through the engine, whole."""
        turns = [turn]
        chunks: list[dict[str, Any]] = []
        body = self.payload
        response: Any = None
        status = 200
        headers: list[tuple[bytes, bytes]] = []
        try:
            while True:
                try:
                    upstream = await self._open(body, turn)
                    data = await upstream.aread()
                    await upstream.aclose()
                except httpx.HTTPError as exc:
                    if response is None:
                        await self._unreachable(scope, exc)(scope, receive, send)
                        self._record(turn, "unreachable")
                        return
                    chunks += turn.give_up()
                    break
                if self.proxy.audit is not None:
                    turn.raw.append(data)
                if upstream.status_code >= 400:
                    if response is None:
                        self.proxy.metrics.upstream_error(f"http_{upstream.status_code}")
                        headers = relayed(upstream.headers, decoded=True)
                        if self.translated:
                            data = self._rewritten_error(upstream.status_code, data)
                            headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
                            headers.append((b"content-type", b"application/json"))
                        await Response(data, upstream.status_code, header_dict(headers))(
                            scope, receive, send
                        )
                        self._record(turn, "upstream_error")
                        return
                    chunks += turn.give_up()
                    break
                parsed = json_or_none(data)
                if response is None:
                    response = parsed if isinstance(parsed, dict) else {}
                    headers = relayed(upstream.headers, decoded=True)
                    status = upstream.status_code
                chunks += turn.whole_chunks(parsed)
                if turn.repair is None:
                    break
                body = turn.repair
                turn = turn.follow_up()
                turns.append(turn)
            final = turn.assemble(response, chunks)
        finally:
            self._settle(turns, "whole")
        headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
        await JSONResponse(final, status, header_dict(headers))(scope, receive, send)

    # -- after a turn -----------------------------------------------------------------

    def _settle(self, turns: list[Engine], how: str) -> None:
        """Record every turn played, then let each go (:meth:`Engine.release`)."""
        for played in turns:
            self._record(played, how)
        for played in turns:
            played.release()

    def _record(self, turn: Engine, how: str) -> None:
        """Count a played turn and audit it.

        A turn the upstream never answered is only an upstream error, counted where it
        happened.
        """
        if not turn.decided:
            return
        self.proxy.metrics.turn(turn, how)
        audit = self.proxy.audit
        if audit is not None:
            audit.write(
                turn,
                raw=b"".join(turn.raw),
                request=turn.request,
                timings={
                    "total_s": time.perf_counter() - self.started,
                    "first_byte_s": (self.first_byte - self.started)
                    if self.first_byte is not None
                    else None,
                },
                how=how,
                rewrites=[r.as_dict() for r in self.rewrites],
            )
        if self.proxy.config.spans is not None:
            self.proxy.config.spans.record_served(turn, self.started, served_by="proxy")


def _ended(turn: Engine, whole: bytes | None) -> bytes:
    """A turn's end as the client's bytes: its stream finished, or its whole body played.

    ``whole``: a server that answered stream=true with one JSON body.
    """
    chunks = turn.finish() if whole is None else turn.whole_chunks(json_or_none(whole))
    return b"".join([turn.encode(chunk) for chunk in chunks])


class _Pieces:
    """An httpx answer's body read as a lean :class:`Reply` is: ``take()``, else ``wait()``.

    One read loop then serves both clients (an httpx answer is never known to be over
    before its last read: ``ended`` stays False).
    """

    ended = False

    def __init__(self, upstream: httpx.Response) -> None:
        decoded = "content-encoding" in upstream.headers
        self._pieces = (upstream.aiter_bytes() if decoded else upstream.aiter_raw()).__aiter__()
        self._next: bytes | None = None

    def take(self) -> bytes | None:
        """The piece the last wait got (``b""``: the body's end); None: wait first."""
        data, self._next = self._next, None
        return data

    async def wait(self) -> None:
        """Until the next piece is in."""
        try:
            self._next = await self._pieces.__anext__()
        except StopAsyncIteration:
            self._next = b""


async def _relay(upstream: httpx.Response, emit: Emit) -> None:
    """The upstream's body bytes as they come."""
    async for piece in upstream.aiter_raw():
        await emit(piece)


def create_app(config: ProxyConfig) -> Proxy:
    """The ASGI application of the proxy for ``config``."""
    return Proxy(config)


def from_env() -> Proxy:
    """The application configured by the environment, for an ASGI server's workers.

    ``uvicorn --factory callgate.proxy.app:from_env --workers 4`` (or gunicorn with
    uvicorn workers) with ``CALLGATE_UPSTREAM`` (required), ``CALLGATE_ON_BLOCKED``
    (``repair 2``), ``CALLGATE_TEXT_FORMATS`` (``a,b``), ``CALLGATE_STREAM_ARGS=1``,
    ``CALLGATE_MOVE_REASONING=1``, ``CALLGATE_NORMALIZE=0``, ``CALLGATE_AUDIT_DIR``,
    ``CALLGATE_TIMEOUT``, ``CALLGATE_UPSTREAM_WIRE`` (``chat``, ``messages`` or ``responses``).
    """
    env = os.environ
    upstream = env.get("CALLGATE_UPSTREAM")
    if not upstream:
        raise ValueError("set CALLGATE_UPSTREAM to the upstream server's URL")
    mode, repairs = on_blocked(env.get("CALLGATE_ON_BLOCKED", "repair 2").split())
    formats = env.get("CALLGATE_TEXT_FORMATS")
    options = Options(
        on_blocked=mode,
        repairs=repairs,
        stream_args=env.get("CALLGATE_STREAM_ARGS") == "1",
        move_reasoning=env.get("CALLGATE_MOVE_REASONING") == "1",
        normalize=env.get("CALLGATE_NORMALIZE") != "0",
        text_formats=tuple(n.strip() for n in formats.split(",") if n.strip())
        if formats is not None
        else None,
    )
    audit = env.get("CALLGATE_AUDIT_DIR")
    return create_app(
        ProxyConfig(
            upstream=upstream,
            options=options,
            upstream_wire=env.get("CALLGATE_UPSTREAM_WIRE") or None,
            audit_dir=Path(audit) if audit else None,
            read_timeout=float(env.get("CALLGATE_TIMEOUT", "600")),
        )
    )
