"""A lean HTTP/1.1 client for plain-http upstreams: an asyncio protocol on httptools' parser.

The proxy's requests to a model server on plain http (a local one, a sidecar, a cluster
service) go through :class:`Http1Pool` instead of httpx: one request write, one parser
per connection, each read's body handed over as it arrives, kept-alive connections pooled
per host. Measured side by side on a one-chunk streamed request, the proxy on it spends
about half the server CPU it spends on httpx's client (docs/proxy.md, Speed). Everything it
does not cover (https, a proxy from the environment) stays with httpx (see
:mod:`callgate.proxy.app`); its failures are httpx's exception types, so callers map both
alike.
"""

from __future__ import annotations

import asyncio
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any, cast
from urllib.parse import urlsplit
from urllib.request import getproxies

import httptools
import httpx

__all__ = ["Headers", "Http1Pool", "Reply", "direct"]

_HIGH = 1 << 20
"""Body bytes received and not yet read past which a connection stops reading."""


def direct(upstream: str) -> bool:
    """Whether this client serves ``upstream``: plain http, and no proxy in the environment.

    httpx honours ``HTTP_PROXY`` and ``ALL_PROXY`` (with ``NO_PROXY``); where either is set
    the upstream stays with httpx, which applies them as before.
    """
    if urlsplit(upstream).scheme != "http":
        return False
    proxies = getproxies()
    return not (proxies.get("http") or proxies.get("all"))


class _Connection(asyncio.Protocol):
    """One upstream connection: the parser fed by the loop, its body read by one reply."""

    def __init__(self, pool: Http1Pool, key: tuple[str, int]) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.headers: list[tuple[bytes, bytes]] = []
        self.pieces: deque[bytes] = deque()
        self.buffered = 0
        """Bytes in ``pieces``: past ``_HIGH`` the connection stops reading until they are read."""
        self.paused = False
        self.headed = False
        self.complete = False
        self.keep = False
        """Whether the answer, read whole, leaves the connection open for another."""
        self.lost = False
        self.error: BaseException | None = None
        self.received = False
        self.waiter: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        """The read timeout of an :meth:`arm` ed waiter (cancelled by the news that wakes it)."""
        self.reused = False

    # -- the loop's side ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport."""
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.pool.opened += 1

    def data_received(self, data: bytes) -> None:
        """Feed the parser; a malformed answer ends the connection with a protocol error."""
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("the upstream switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"the upstream's answer is not HTTP: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection closed: a reply still reading gets the end or an error."""
        self.lost = True
        self.pool.closed()
        if not self.complete and self.error is None:
            if self.headed and not self.parser.should_keep_alive():
                with suppress(httptools.HttpParserError):  # a body ended by the close
                    self.parser.feed_data(b"")
            if not self.complete:
                reason = "the upstream closed the connection before the answer's end"
                reason = reason if exc is None else f"{reason}: {exc}"
                self.error = httpx.RemoteProtocolError(reason)
        self._wake()

    def eof_received(self) -> bool | None:
        """The upstream stopped writing: close our side too."""
        return None

    # -- httptools' callbacks -------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        """One response header."""
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        """The status line and headers are in."""
        self.headed = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        """A piece of the body (chunked framing already removed)."""
        self.pieces.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH and not self.paused and self.transport is not None:
            self.paused = True  # a slow client: let the upstream wait, not the memory grow
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        """The answer is whole."""
        self.complete = True
        self.keep = self.parser.should_keep_alive()
        self._wake()

    # -- the reply's side -----------------------------------------------------------------

    def _fail(self, error: BaseException) -> None:
        self.error = error
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None

    def arm(self, timeout: float) -> asyncio.Future[None]:
        """A future the parser's next news completes (a read timeout after ``timeout`` seconds).

        Its waiter, rather than a :meth:`wait` coroutine, for a read loop that awaits it
        itself: if it stops waiting, closing the reply closes the connection.
        """
        loop = asyncio.get_running_loop()
        waiter = self.waiter = loop.create_future()
        self.timer = loop.call_later(timeout, _expire, waiter)
        return waiter

    async def wait(self, timeout: float) -> None:
        """Until the parser has news (or ``timeout`` seconds of silence: a read timeout)."""
        loop = asyncio.get_running_loop()
        waiter = self.waiter = loop.create_future()
        timer = loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        except BaseException:
            self._close()
            raise
        finally:
            timer.cancel()
            self.waiter = None

    def send(self, head: bytes, body: bytes) -> None:
        """Write one request (head and body in one write: no Nagle wait between them)."""
        self.parser = httptools.HttpResponseParser(self)
        self.headers = []
        self.headed = self.complete = self.received = self.keep = False
        assert self.transport is not None
        self.transport.write(head + body)

    def resume(self) -> None:
        """Read from the upstream again (its buffered body was taken)."""
        self.paused = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def usable(self) -> bool:
        """Whether a kept-alive connection can take another request."""
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.lost = True


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(httpx.ReadTimeout("the upstream sent nothing in time"))


class Headers:
    """An answer's headers, as read: ``get`` and ``in`` by any case, ``multi_items`` in order.

    The part of :class:`httpx.Headers` the proxy reads, in about a third of its time (7
    against 18 µs for seven headers read as the proxy reads them).
    """

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._items = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw]
        self._lower: dict[str, str] | None = None

    def _index(self) -> dict[str, str]:
        lower = self._lower
        if lower is None:
            lower = self._lower = {}
            for name, value in self._items:
                lower[name] = f"{lower[name]}, {value}" if name in lower else value
        return lower

    def get(self, name: str, default: str = "") -> str:
        """The header's value (repeated ones joined with ``, ``), or ``default``."""
        return self._index().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._index()[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._index()

    def multi_items(self) -> list[tuple[str, str]]:
        """Every header in order, its name in lower case (a repeated one once per line)."""
        return list(self._items)


class Reply:
    """An upstream answer being read: status and headers, then its body as it arrives.

    ``read()`` returns the next piece (every piece received so far, joined), ``b""`` at
    the end; ``aclose()`` gives the connection back to the pool when the answer was read
    whole, else closes it. The httpx-like names (``status_code``, ``headers``,
    ``aiter_raw``, ``aread``) let callers take either client's answer.
    """

    def __init__(self, connection: _Connection, status: int, timeout: float) -> None:
        self._connection = connection
        self._timeout = timeout
        self.status_code = status
        self.headers = Headers(connection.headers)
        encoding = self.headers.get("content-encoding", "").lower()
        self._decoder = (
            zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding in ("gzip", "deflate") else None
        )
        self._closed = False
        self.ended = False
        """Whether the whole body is in and taken (:meth:`take`): a later read waits for
        nothing (kept as :meth:`take` goes: read per read without a call)."""

    async def read(self) -> bytes:
        """The body received since the last read (waiting for some), ``b""`` at its end."""
        while (data := self.take()) is None:
            await self._connection.wait(self._timeout)
        return data

    def take(self) -> bytes | None:
        """:meth:`read` without waiting: None when nothing came yet (then await :meth:`wait`).

        The proxy's own read loop reads so: one coroutine fewer per read than :meth:`read`.
        """
        connection = self._connection
        pieces = connection.pieces
        while pieces:
            data = pieces.popleft() if len(pieces) == 1 else b"".join(_drain(pieces))
            connection.buffered = 0
            if connection.paused:
                connection.resume()
            if connection.complete:  # (every piece is taken)
                self.ended = True
            if self._decoder is None:
                return data
            data = self._decoder.decompress(data)
            if data:
                return data
        if connection.complete:
            self.ended = True
            if self._decoder is not None:
                tail, self._decoder = self._decoder.flush(), None
                return tail or b""
            return b""
        if connection.error is not None:
            raise connection.error
        return None

    def wait(self) -> asyncio.Future[None]:
        """Until :meth:`take` has news (:class:`httpx.ReadTimeout` after the read timeout).

        A future, not a coroutine (one fewer made and resumed per read); a caller that stops
        awaiting it closes the reply (:meth:`aclose`), which closes the connection.
        """
        return self._connection.arm(self._timeout)

    @property
    def ready(self) -> bool:
        """Whether :meth:`read` returns without waiting (body received, its end, or an error)."""
        connection = self._connection
        return (
            (bool(connection.pieces) and self._decoder is None)
            or connection.complete
            or connection.error is not None
        )

    async def aiter_raw(self) -> Any:
        """The body's pieces as they arrive (an async iterator)."""
        while data := await self.read():
            yield data

    aiter_bytes = aiter_raw

    async def aread(self) -> bytes:
        """The whole body."""
        parts = []
        while data := await self.read():
            parts.append(data)
        return b"".join(parts)

    async def aclose(self) -> None:
        """Done with the answer: its connection is pooled again if it was read whole."""
        if self._closed:
            return
        self._closed = True
        connection = self._connection
        if connection.complete and connection.keep and connection.usable():
            connection.pool.release(connection)
        else:
            connection._close()


def _drain(pieces: deque[bytes]) -> Iterator[bytes]:
    while pieces:
        yield pieces.popleft()


class Http1Pool:
    """Kept-alive HTTP/1.1 connections to plain-http upstreams, and requests over them.

    ``connect_timeout`` bounds opening a connection (a :class:`httpx.ConnectTimeout`),
    ``read_timeout`` each wait for the upstream (a :class:`httpx.ReadTimeout`); a refused
    or unresolved host is a :class:`httpx.ConnectError`. Up to ``keep`` idle connections
    are kept per host, and at most ``max_connections`` are open at once: a request past
    them waits for one (up to ``read_timeout``, then a :class:`httpx.PoolTimeout`), as in
    httpx's pool. It keeps no cookies and follows no redirects.
    """

    def __init__(
        self,
        *,
        connect_timeout: float,
        read_timeout: float,
        keep: int = 100,
        max_connections: int = 1000,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.keep = keep
        self.max_connections = max_connections
        self.opened = 0
        """Connections open now (made and not yet lost)."""
        self._opening = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._heads: dict[str, tuple[tuple[str, int], bytes]] = {}

    def closed(self) -> None:
        """A connection ended: a request waiting for room may open one."""
        self.opened -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def release(self, connection: _Connection) -> None:
        """Keep ``connection`` for the next request to its host."""
        idle = self._idle.setdefault(connection.key, [])
        if len(idle) < self.keep:
            connection.reused = True
            idle.append(connection)
            self._wake()
        else:
            connection._close()

    async def send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes = b"",
        *,
        sent: Callable[[], None] | None = None,
    ) -> Reply:
        """Send one request; return once its status and headers are in.

        ``sent`` is called once the request is written, before the wait for the answer
        (work that can be done while the upstream answers).
        """
        key, start = self._start(method, url)
        lines = [start]
        asked = False
        for name, value in headers.items():
            lines.append(f"{name}: {value}\r\n".encode("latin-1"))
            asked = asked or name.lower() == "accept-encoding"
        if not asked:
            lines.append(b"accept-encoding: identity\r\n")
        if body or method not in ("GET", "HEAD"):
            lines.append(b"content-length: %d\r\n" % len(body))
        lines.append(b"\r\n")
        head = b"".join(lines)
        for _ in range(2):
            connection = await self._connection(key)
            connection.send(head, body)
            if sent is not None:
                sent()
            try:
                while not connection.headed:
                    if connection.error is not None:
                        raise connection.error
                    await connection.wait(self.read_timeout)
            except httpx.RemoteProtocolError:
                if connection.reused and not connection.received:
                    continue  # a kept-alive connection the upstream had closed: once more, fresh
                raise
            return Reply(connection, connection.parser.get_status_code(), self.read_timeout)
        raise httpx.RemoteProtocolError("the upstream closed the connection before answering")

    def _start(self, method: str, url: str) -> tuple[tuple[str, int], bytes]:
        """The host and the request's first lines, parsed once per distinct URL."""
        known = self._heads.get(url)
        if known is None:
            parts = urlsplit(url)
            host = parts.hostname or "localhost"
            port = parts.port or 80
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            authority = host if port == 80 else f"{host}:{port}"
            if ":" in host:
                authority = f"[{host}]" if port == 80 else f"[{host}]:{port}"
            line = f" {target} HTTP/1.1\r\nhost: {authority}\r\n"
            if len(self._heads) >= 256:
                self._heads.clear()
            known = self._heads[url] = ((host, port), line.encode("latin-1"))
        key, rest = known
        return key, method.encode("ascii") + rest

    async def _connection(self, key: tuple[str, int]) -> _Connection:
        """An idle connection to ``key``, else a new one, waiting while the pool is full."""
        loop = asyncio.get_running_loop()
        while True:
            idle = self._idle.get(key)
            while idle:
                connection = idle.pop()
                if connection.usable():
                    return connection
            if self.opened + self._opening < self.max_connections:
                break
            await self._room(loop)
        self._opening += 1
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, protocol = await loop.create_connection(
                    lambda: _Connection(self, key), key[0], key[1]
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection to {key[0]}:{key[1]} in time") from exc
        except OSError as exc:
            raise httpx.ConnectError(f"{key[0]}:{key[1]}: {exc}") from exc
        finally:
            self._opening -= 1
        return protocol

    async def _room(self, loop: asyncio.AbstractEventLoop) -> None:
        """Until a connection is idle again or ends (a full pool's wait)."""
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(self.read_timeout):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._wake()  # woken, then stopped: the room goes to the next in line
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("every upstream connection stayed busy") from exc
            raise

    async def aclose(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for connection in idle:
                connection._close()
        self._idle.clear()
