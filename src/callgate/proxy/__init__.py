"""The gateway: callgate's gate in front of any OpenAI- or Anthropic-compatible server.

:mod:`callgate.proxy.engine` turns an upstream stream into the gated stream and needs no
web framework (the integrations build on it). :func:`create_app` is the ASGI application
(Starlette, httpx; ``pip install 'callgate[proxy]'``), imported only when asked for, so
``import callgate.proxy.engine`` stays free of them.
"""

from __future__ import annotations

from typing import Any

from callgate.proxy.engine import GatedTurn, Options, RequestError

__all__ = ["GatedTurn", "Options", "ProxyConfig", "RequestError", "create_app"]


def __getattr__(name: str) -> Any:
    """``create_app`` and ``ProxyConfig`` load the web stack on first use."""
    if name in ("create_app", "ProxyConfig"):
        from callgate.proxy import app

        return getattr(app, name)
    raise AttributeError(f"module 'callgate.proxy' has no attribute {name!r}")
