"""A real redis-server for the ledger's tests: the CI's, or one started here on loopback.

``CALLGATE_REDIS_URL`` (set by ``.ci/run``, which starts the server) names a running one;
without it, a test that needs Redis starts ``redis-server`` from PATH on a free loopback
port, its files in a temporary directory, and stops it by its pid. With neither the
``redis`` package nor the program, the test is skipped with a reason that says what to
install; with ``CI`` or ``CALLGATE_REQUIRE_REDIS`` set the skip is a failure instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

URL = "CALLGATE_REDIS_URL"
REQUIRE = "CALLGATE_REQUIRE_REDIS"
"""The environment variables: a running server's URL; "a missing Redis is a failure"."""


def _missing(message: str) -> None:
    """Skip the test, or fail it where Redis is required (CI, or ``REQUIRE`` set)."""
    required = [name for name in ("CI", REQUIRE) if os.environ.get(name)]
    if required:
        pytest.fail(f"{message} ({' and '.join(required)} set: Redis is required)", pytrace=False)
    pytest.skip(message)


def need_client() -> None:
    """Skip (or fail) the test when the ``redis`` package is not installed."""
    try:
        import redis  # noqa: F401
    except ImportError:
        _missing("needs the redis package: pip install 'callgate[redis]'")


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One redis-server process on loopback, its files under ``directory``."""

    def __init__(self, directory: Path, *, appendonly: bool = False) -> None:
        program = shutil.which("redis-server")
        if program is None:
            _missing("needs redis-server on PATH: install Redis (apt-get install redis-server)")
        self.program = str(program)
        self.directory = directory
        self.port = free_port()
        self.appendonly = appendonly
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server and wait until it answers."""
        self.directory.mkdir(parents=True, exist_ok=True)
        options = ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        options += ["--save", "", "--protected-mode", "no", "--daemonize", "no"]
        if self.appendonly:
            options += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            options += ["--appendonly", "no"]
        self.process = subprocess.Popen(
            [self.program, *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        pytest.fail(f"redis-server did not answer on port {self.port} within 10 s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server by its pid (``SIGKILL``: as a crash) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(10)
        self.process = None


def shared_url(tmp: Path) -> tuple[str, RedisServer | None]:
    """The URL of the CI's server, else of one started here (returned, to be stopped)."""
    need_client()
    url = os.environ.get(URL)
    if url:
        return url, None
    server = RedisServer(tmp).start()
    return server.url, server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A module's Redis: the CI's, or one started for the module and stopped after it."""
    url, server = shared_url(tmp_path_factory.mktemp("redis"))
    yield url
    if server is not None:
        server.stop()
