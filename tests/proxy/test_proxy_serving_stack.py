"""The proxy is served on the stack measured fastest: uvicorn's httptools parser where it is
installed (the proxy extra brings it), h11 otherwise; the event loop is uvicorn's choice."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import httpx

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.serving import ServerThread

ROOT = Path(__file__).resolve().parents[2]


def test_the_proxy_extra_installs_the_fast_parsers() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {spec.split(">")[0].split(";")[0] for spec in extras["optional-dependencies"]["proxy"]}
    assert {"httptools", "msgspec", "uvicorn", "httpx", "starlette"} <= names


def test_the_proxy_runs_on_httptools_where_installed() -> None:
    assert importlib.util.find_spec("httptools") is not None  # the test extra takes the proxy's
    with ServerThread(create_app(ProxyConfig(upstream="http://127.0.0.1:9"))) as server:
        protocol = server.server.config.http_protocol_class
        assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    assert protocol.__name__ == "HttpToolsProtocol"
