"""One HTTP exchange as Envoy's ext_proc filter plays it to the processor: no I/O here.

Envoy opens one gRPC stream per HTTP request and sends, in order, the request headers,
the request body (``BUFFERED``: whole), the response headers, the response body (pieces as
they come) and the response trailers. :meth:`Exchange.receive` takes each
``ProcessingRequest`` and returns the ``ProcessingResponse`` s to send back:

- request headers: a path callgate does not gate (or not a POST) passes unchanged, and
  Envoy is asked to send nothing more of it; a gated one reads its policy
  (:mod:`callgate.extproc.policy`) and loses ``accept-encoding`` (the engine reads plain
  bytes) and the policy headers;
- request body: the engine's turn is made from it; a body it cannot read is answered at
  once with a 400 in the wire's error shape; with an upstream wire (``--upstream-wire``)
  the body is replaced by the engine's translation and the ``:path`` (rewritten with the
  request headers, the route picked again) names the upstream wire's path;
- response headers: an upstream error is relayed unchanged (on a translated turn its body
  is held whole and rewritten in the client wire's error shape); otherwise ``content-length``
  (which the rewritten body invalidates) is removed and the content type set;
- response body: in ``FULL_DUPLEX_STREAMED`` mode each piece goes through the engine and
  only what it releases is sent (nothing while it holds, the rest at the end: hold and
  release); in ``STREAMED`` mode each piece is replaced by what the engine releases for it;
  a stream=false body is held whole and replaced by the gated response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callgate.extproc import wire
from callgate.extproc.gated import WIRES, GatedExchange, Options, RequestError, error_json
from callgate.extproc.policy import HEADERS, PolicyError, RoutePolicy, read_policy
from callgate.proxy.requests import RequestBodyError, read_request
from callgate.proxy.wires.translate import PATHS

__all__ = ["Exchange"]

_CLOSED = ("request_trailers", "response_trailers")


class Exchange:
    """One gRPC stream of the ext_proc filter: requests in, the answers out (see the module)."""

    def __init__(
        self,
        options: Options,
        stream_metadata: Mapping[str, str] | None = None,
        *,
        keep_raw: bool = False,
        max_request_bytes: int = 32 * 1024 * 1024,
        upstream_wire: str | None = None,
    ) -> None:
        self.options = options
        self.upstream_wire = upstream_wire
        """The upstream's wire (None: the client's own): requests are translated to it."""
        self.stream_metadata = dict(stream_metadata or {})
        self.keep_raw = keep_raw
        self.max_request_bytes = max_request_bytes
        self.mode = wire.STREAMED
        """The response body mode (``FULL_DUPLEX`` or ``STREAMED``)."""
        self.request_mode = wire.STREAMED
        """The request body mode: ``FULL_DUPLEX`` (agentgateway's default) or a buffered one."""
        self.wire: str | None = None
        """The gated wire (``openai``, ``anthropic``), None for a path that passes."""
        self.policy: RoutePolicy | None = None
        self.gated: GatedExchange | None = None
        """The engine's exchange once the request body was read."""
        self.path = ""
        self.status = 0
        self.relay = True
        """The response body passes unchanged (an ungated path, an upstream error)."""
        self.ended = False
        """The response reached its end (its last body piece or its trailers)."""
        self.refused: str | None = None
        """Why the request was answered at once with an error (None: it was not)."""
        self.error_held = False
        """An upstream error of another wire: its body is held, then rewritten."""
        self._body = bytearray()
        self._whole = bytearray()
        self._first = True

    def receive(self, request: Any) -> list[Any]:
        """The answers to one ``ProcessingRequest``."""
        if self._first:
            self.mode = wire.body_mode(request)
            self.request_mode = wire.body_mode(request, response=False)
            self._first = False
        kind = request.WhichOneof("request")
        if kind == "request_headers":
            return [self._request_headers(request)]
        if kind == "request_body":
            return self._request_body(request.request_body)
        if kind == "response_headers":
            return [self._response_headers(request.response_headers)]
        if kind == "response_body":
            return self._response_body(request.response_body)
        if kind in _CLOSED:
            return self._trailers(kind)
        return []

    # -- the request ------------------------------------------------------------------

    def _request_headers(self, request: Any) -> Any:
        headers = wire.header_map(request.request_headers)
        path, mark, query = headers.get(":path", "").partition("?")
        self.path = path.rstrip("/")
        method = headers.get(":method", "")
        self.wire = WIRES.get(self.path) if method == "POST" else None
        if self.wire is None:
            return wire.headers_answer(response=False, remove=HEADERS, skip_rest=True)
        try:
            self.policy = read_policy(
                self.options, _metadata(request), self.stream_metadata, headers
            )
        except PolicyError as exc:
            return self._refuse(str(exc), "invalid_policy")
        if request.request_headers.end_of_stream:
            return self._refuse("the request has no body", "invalid_json")
        remove = (*HEADERS, "accept-encoding")
        target = PATHS[self.upstream_wire] if self.upstream_wire else self.path
        if target == self.path:
            return wire.headers_answer(response=False, remove=remove)
        return wire.headers_answer(
            response=False,
            set_headers=[(":path", target + mark + query)],
            remove=(*remove, "content-length"),
            clear_route_cache=True,
        )

    def _request_body(self, body: Any) -> list[Any]:
        """The request body: read whole (``BUFFERED``, or held whole in full-duplex mode)."""
        duplex = self.request_mode == wire.FULL_DUPLEX
        if self.wire is None or self.policy is None:
            if duplex:
                return [wire.body_piece(body.body, end=body.end_of_stream, response=False)]
            return [wire.request_body_answer()]
        self._body += body.body
        if len(self._body) > self.max_request_bytes:
            message = f"the request body is over {self.max_request_bytes} bytes"
            return [self._refuse(message, "request_too_large", status=413)]
        if not body.end_of_stream:
            return [] if duplex else [wire.request_body_answer()]
        refused = self._read_request()
        if refused is not None:
            return [refused]
        whole, self._body = bytes(self._body), bytearray()
        translated = self.gated.upstream_body if self.gated is not None else None
        if duplex:
            return [wire.body_piece(translated or whole, end=True, response=False)]
        if translated is not None:
            return [wire.request_body_replaced(translated)]
        return [wire.request_body_answer()]

    def _read_request(self) -> Any:
        """Make the engine's exchange from the whole request body (an answer if it cannot)."""
        assert self.wire is not None and self.policy is not None
        try:
            payload = read_request(bytes(self._body))
        except RequestBodyError as exc:  # read as strictly as the proxy reads it
            return self._refuse(str(exc), exc.code)
        try:
            request = self.policy.request(payload)
            self.gated = GatedExchange(
                self.wire,
                request,
                self.policy.options,
                keep_raw=self.keep_raw,
                upstream=self.upstream_wire,
            )
        except RequestError as exc:
            return self._refuse(f"callgate: {exc}", "invalid_request")
        return None

    def _refuse(self, message: str, code: str, *, status: int = 400) -> Any:
        """Envoy answers the client at once with the wire's error (the upstream never sees it)."""
        self.refused = message
        body = error_json(self.wire or "chat", status, message, code)
        return wire.immediate(status, body, "application/json", f"callgate_{code}")

    # -- the response -----------------------------------------------------------------

    def _response_headers(self, message: Any) -> Any:
        headers = wire.header_map(message)
        self.status = int(headers.get(":status", "0") or 0)
        gated = self.gated
        translated = gated is not None and gated.turn.translated
        if translated and self.status >= 400 and not message.end_of_stream:
            self.error_held = True
            return wire.headers_answer(
                response=True,
                set_headers=[("content-type", "application/json")],
                remove=["content-length", "content-encoding"],
            )
        if gated is None or self.status >= 400 or message.end_of_stream:
            self.ended = message.end_of_stream
            return wire.headers_answer(response=True)
        self.relay = False
        content_type = headers.get("content-type", "")
        gated.start(content_type)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):  # not readable here: nothing of it is sent
            gated.broken(f"the upstream's body is encoded ({encoding})")
            gated.start("application/octet-stream")
        remove = ["content-length", "content-encoding"]
        if gated.streaming:
            set_headers = [
                ("content-type", "text/event-stream; charset=utf-8"),
                ("cache-control", "no-cache"),
            ]
        else:
            set_headers = [("content-type", "application/json")]
        return wire.headers_answer(response=True, set_headers=set_headers, remove=remove)

    def _response_body(self, body: Any) -> list[Any]:
        end = bool(body.end_of_stream)
        gated = self.gated
        if self.error_held and gated is not None and not self.ended:
            self._whole += body.body
            out = self._held_error() if end else b""
            if self.mode == wire.FULL_DUPLEX:
                return [wire.body_piece(out, end=True)] if end else []
            return [wire.replaced_chunk(out)]
        if self.relay or gated is None or self.ended:
            self.ended = self.ended or end
            if self.mode == wire.FULL_DUPLEX:
                return [wire.body_piece(body.body, end=end)]
            return [wire.replaced_chunk(None)]
        if gated.streaming:
            out = gated.feed(body.body) if not gated.failed else b""
            if end:
                out += gated.end()
                self.ended = True
        else:
            self._whole += body.body
            out = b""
            if end:
                out = gated.whole(bytes(self._whole))
                self.ended = True
        if self.mode == wire.FULL_DUPLEX:
            return [wire.body_piece(out, end=end)] if out or end else []
        return [wire.replaced_chunk(out)]

    def _trailers(self, kind: str) -> list[Any]:
        """Trailers end the body: in full-duplex mode what is left goes before them."""
        out: list[Any] = []
        gated = self.gated
        response = kind == "response_trailers"
        if response and self.error_held and not self.ended:
            rest = self._held_error()
            if self.mode == wire.FULL_DUPLEX:
                out.append(wire.body_piece(rest, end=False))
        elif response and not self.relay and gated is not None and not self.ended:
            self.ended = True
            rest = gated.end() if gated.streaming else gated.whole(bytes(self._whole))
            if self.mode == wire.FULL_DUPLEX and rest:
                out.append(wire.body_piece(rest, end=False))
        return [*out, wire.trailers_answer(response=response)]

    def _held_error(self) -> bytes:
        """The held upstream error, rewritten in the client wire's shape (the response's end)."""
        assert self.gated is not None
        self.ended = True
        return self.gated.upstream_error(self.status, bytes(self._whole))

    def interrupt(self, reason: str) -> None:
        """The stream ended before the response did (a client or upstream went away)."""
        gated = self.gated
        if gated is not None and not self.ended and not self.relay:
            gated.broken(reason)
            self.ended = True
            gated.end()


def _metadata(request: Any) -> dict[str, Any]:
    """The ``metadata_context`` Envoy forwarded, as plain values by namespace."""
    from google.protobuf.json_format import MessageToDict

    found: dict[str, Any] = {}
    for namespace, struct in request.metadata_context.filter_metadata.items():
        found[namespace] = MessageToDict(struct)
    return found
