"""What the proxy forwards: the upstream URL of a path, and the headers either way.

Headers that belong to one connection (hop-by-hop) never cross the proxy; a gated
request asks the upstream for no compression (the engine reads its bytes). An upstream
that gave no response is answered with :func:`unreached`'s status and error body. The
one upstream client (:class:`UpstreamClient`) serves every user, so it keeps no cookies.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

import httpx

from callgate.proxy.wire_errors import error_body

__all__ = ["UpstreamClient", "forwarded", "header_dict", "relayed", "target", "unreached"]

_HOP = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-authenticate",
    }
)
"""Headers that belong to one connection, never forwarded."""
_HOP_GATED = _HOP | {"accept-encoding"}
"""Those and the compression a gated request would otherwise ask of the upstream."""
_HOP_DECODED = _HOP | {"content-encoding", "content-length"}
"""Those and the encoding of a body the proxy decoded (its length is another)."""


def target(upstream: str, path: str, query: bytes) -> str:
    """The upstream URL of a request path: ``/v1`` given twice is given once."""
    base = upstream.rstrip("/")
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    url = base + path
    return url + "?" + query.decode("latin-1") if query else url


def forwarded(scope: MutableMapping[str, Any], *, gated: bool) -> dict[str, str]:
    """The client's headers as the upstream gets them (gated: no compression asked)."""
    skip = _HOP_GATED if gated else _HOP
    out: dict[str, str] = {}
    for key, value in scope["headers"]:
        name = key.decode("latin-1")
        if name.lower() not in skip:
            out[name] = value.decode("latin-1")
    return out


class _Headers(Protocol):
    def multi_items(self) -> list[tuple[str, str]]: ...


def relayed(headers: _Headers, *, decoded: bool) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers as the client gets them."""
    skip = _HOP_DECODED if decoded else _HOP
    return [
        (k.encode("latin-1"), v.encode("latin-1"))
        for k, v in headers.multi_items()
        if k.lower() not in skip
    ]


def header_dict(pairs: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header pairs as a header mapping (for a Starlette response)."""
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in pairs}


def unreached(wire: str, exc: Exception, read_timeout: float) -> tuple[int, dict[str, Any]]:
    """The status and error body for an upstream that gave no response.

    One that was reached but answered nothing within the read timeout is a 504 saying so;
    one that could not be reached at all (refused, unresolved, no connection in time) a 502.
    """
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        message = (
            f"The model did not answer in time (nothing within {read_timeout:g} s, "
            f"{type(exc).__name__}); nothing was run."
        )
        return 504, error_body(wire, 504, message, "upstream_timeout")
    message = f"the upstream cannot be reached: {type(exc).__name__}: {exc}".rstrip(": ")
    return 502, error_body(wire, 502, message, "upstream_unreachable")


class _NoCookies(httpx.Cookies):
    """A cookie jar that keeps nothing a response sets."""

    def extract_cookies(self, response: httpx.Response) -> None:
        """Keep none of ``response``'s cookies."""
        del response


class UpstreamClient(httpx.AsyncClient):
    """The proxy's shared upstream client: it keeps no cookies.

    It serves every client of the proxy at once: a cookie one upstream answer sets (a load
    balancer's, a CDN's) must not go with the next user's request. A client's own
    ``Cookie`` header is forwarded as it is. Keeping none also spares reading each
    response's headers for cookies.
    """

    def __init__(self, **options: Any) -> None:
        self._none = _NoCookies()
        super().__init__(**options)

    @property
    def cookies(self) -> httpx.Cookies:
        """An empty jar that stays empty."""
        return self._none

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        del cookies
