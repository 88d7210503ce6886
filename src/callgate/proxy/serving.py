"""Running the proxy (and the demo's upstream) under uvicorn: in the foreground, or a thread.

:func:`run` is ``callgate proxy``'s server: on SIGTERM or SIGINT it first marks the
proxy draining (``/readyz`` answers 503 so a load balancer stops sending), then uvicorn
stops accepting connections and waits for the open requests to finish (up to
``drain_seconds``). :class:`ServerThread` runs an ASGI app on a loopback port in a
background thread (the demo's upstream, the tests' servers, the benchmark's).
"""

from __future__ import annotations

import socket
import threading
import time
from types import FrameType, TracebackType
from typing import Any

import uvicorn

from callgate.proxy.app import Proxy

__all__ = ["ServerThread", "bound_socket", "run"]


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0: a free one), so the port is known before serving.

    Every connection it accepts writes without Nagle's delay: a streamed answer goes out in
    many small writes, and the last one would otherwise wait for the client's delayed ACK
    (about 40 ms). asyncio sets ``TCP_NODELAY`` only on sockets whose protocol is TCP, so
    the protocol is named; the listener's own option covers a loop that sets neither
    (accepted sockets inherit it on Linux).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Draining(uvicorn.Server):
    """A uvicorn server that marks the proxy draining before it stops."""

    def __init__(self, config: uvicorn.Config, proxy: Proxy | None) -> None:
        super().__init__(config)
        self.proxy = proxy

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The signal: ``/readyz`` goes 503 at once; uvicorn then drains and stops."""
        if self.proxy is not None:
            self.proxy.draining = True
        super().handle_exit(sig, frame)


def _config(
    app: Any, *, drain_seconds: float, log_level: str, http: str = "auto", loop: str = "auto"
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        loop=loop,
        http=http,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=int(drain_seconds),
        access_log=False,
        ws="none",
    )


def run(
    app: Any,
    sock: socket.socket,
    *,
    drain_seconds: float = 30.0,
    log_level: str = "warning",
    http: str = "auto",
    loop: str = "auto",
) -> None:
    """Serve ``app`` (the proxy) on ``sock`` until SIGTERM or SIGINT, then drain.

    See the module. ``http`` and ``loop`` are uvicorn's: ``auto`` takes httptools and uvloop
    where installed (the proxy extra installs httptools), else h11 and asyncio.
    """
    config = _config(app, drain_seconds=drain_seconds, log_level=log_level, http=http, loop=loop)
    server = _Draining(config, app if isinstance(app, Proxy) else None)
    server.run(sockets=[sock])


class ServerThread:
    """An ASGI app served by uvicorn on 127.0.0.1 (a free port) in a daemon thread.

    A context manager: entering starts it and waits until it accepts connections,
    leaving stops it.
    """

    def __init__(
        self, app: Any, *, host: str = "127.0.0.1", port: int = 0, loop: str = "auto"
    ) -> None:
        self.sock = bound_socket(host, port)
        self.port: int = self.sock.getsockname()[1]
        self.host = host
        proxy = app if isinstance(app, Proxy) else None
        config = _config(app, drain_seconds=5, log_level="error", loop=loop)
        self.server = _Draining(config, proxy)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://{self.host}:{self.port}"

    def _serve(self) -> None:
        self.server.run(sockets=[self.sock])

    def __enter__(self) -> ServerThread:
        """Start serving; wait (up to 20 s) until the server has started."""
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """Stop the server and wait for its thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
