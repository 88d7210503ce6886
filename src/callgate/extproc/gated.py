"""The one place the processor meets callgate's gateway engine: bytes of a turn in, bytes out.

Everything the processor needs of the engine goes through :class:`GatedExchange`, so a
new engine is re-pointed here alone. It plays the engine exactly as ``callgate proxy``
does (:mod:`callgate.proxy.app`): each piece of the upstream's event stream through
``play_bytes`` (an event the client receives unchanged goes on as the upstream's own
bytes), then ``close_bytes`` and :meth:`finish`; ``[DONE]`` after an OpenAI stream; a stream=true
request answered with one JSON body through ``whole_chunks``; a stream=false response
through ``whole_chunks`` and ``assemble``; an engine failure ends the stream with the
wire's error event. The processor cannot ask the upstream again, so a turn that would be
repaired ends as ``notice`` ends it (``give_up``). The engine's ``Options`` are re-exported
from here for the rest of the package.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from callgate.proxy.engine import ENGINES, BlockedMode, GatedCore, Options, RequestError
from callgate.proxy.sse import DONE_EVENT, encode
from callgate.proxy.wire_errors import error_body, error_json, json_or_none, upstream_error_json

__all__ = ["WIRES", "BlockedMode", "GatedExchange", "Options", "RequestError", "error_json"]

logger = logging.getLogger("callgate.extproc")

WIRES: Mapping[str, str] = {
    "/v1/chat/completions": "chat",
    "/v1/messages": "messages",
    "/v1/responses": "responses",
}
"""The paths the engine gates, and each one's wire (the gateway's names); every other path
passes unchanged."""


class GatedExchange:
    """One gated request and its response, as bytes: the engine driven as the proxy drives it.

    ``GatedExchange(wire, request, options)`` raises :class:`RequestError` for a request
    the engine cannot gate; with ``upstream`` (a wire's name) the engine translates the
    request to that wire (:attr:`upstream_body`) and reads its answer, writing the
    client's wire all the same. Then :meth:`start` with the response's content type,
    :meth:`feed` for each piece of a streamed body and :meth:`end` at its end, or
    :meth:`whole` for a stream=false body; :attr:`turn` is the played turn (verdict,
    findings, calls) for metrics, audit and spans.
    """

    def __init__(
        self,
        wire: str,
        request: Mapping[str, Any],
        options: Options,
        *,
        keep_raw: bool = False,
        upstream: str | None = None,
    ) -> None:
        self.wire = wire
        self.request = request
        self.turn: GatedCore = ENGINES[wire](request, options, upstream=upstream)
        self.streaming = request.get("stream") is True
        self.keep_raw = keep_raw
        self.started = time.perf_counter()
        self._sse = True
        self._whole = bytearray()
        self._failed = False

    def start(self, content_type: str) -> None:
        """The upstream's response starts: an event stream is read as it comes, else whole."""
        self._sse = "event-stream" in content_type

    def feed(self, data: bytes) -> bytes:
        """A piece of the upstream's streamed body: the bytes to send the client now."""
        if self.keep_raw:
            self.turn.raw.append(data)
        if not self._sse:
            self._whole += data
            return b""
        return self._guarded(lambda: self.turn.play_bytes(data))

    def end(self) -> bytes:
        """The upstream's body ended: what is left to send (held text, calls, the end)."""

        def closing() -> bytes:
            if self._sse:
                out = self.turn.close_bytes()
                chunks = self.turn.finish()
            else:  # a server that answered stream=true with one JSON body
                out = b""
                chunks = self.turn.whole_chunks(json_or_none(bytes(self._whole)))
            out += b"".join(self.turn.encode(c) for c in [*chunks, *self._give_up()])
            return out + (DONE_EVENT if self.wire == "chat" else b"")

        return self._guarded(closing)

    def broken(self, reason: str) -> None:
        """The upstream's body broke off: a finding; nothing held is ever released."""
        self.turn.interrupted(reason)

    def whole(self, data: bytes) -> bytes:
        """A stream=false response body: the gated response body (JSON)."""
        if self.keep_raw:
            self.turn.raw.append(data)
        parsed = json_or_none(data)
        response = parsed if isinstance(parsed, dict) else {}
        try:
            chunks = [*self.turn.whole_chunks(parsed), *self._give_up()]
            final = self.turn.assemble(response, chunks)
        except Exception:
            logger.exception("callgate ext-proc: the engine failed on a response")
            self._failed = True
            message = "callgate ext-proc: internal error"
            return error_json(self.wire, 500, message, "engine_error")
        return json.dumps(final, ensure_ascii=False).encode("utf-8")

    @property
    def upstream_body(self) -> bytes | None:
        """The request translated to the upstream's wire (None: it goes as the client sent it)."""
        if not self.turn.translated:
            return None
        return json.dumps(self.turn.request, ensure_ascii=False).encode("utf-8")

    def upstream_error(self, status: int, data: bytes) -> bytes:
        """An upstream error body of another wire in the client wire's error shape."""
        return upstream_error_json(self.wire, status, data)

    @property
    def failed(self) -> bool:
        """Whether the engine itself failed (the client got the wire's error instead)."""
        return self._failed

    def _give_up(self) -> list[dict[str, Any]]:
        """A turn that would re-ask the upstream ends with its notice instead."""
        return self.turn.give_up() if self.turn.repair is not None else []

    def _guarded(self, step: Callable[[], bytes]) -> bytes:
        """Run an engine step; should the engine fail, the stream ends with an error event."""
        if self._failed:
            return b""
        try:
            out = step()
        except Exception:
            logger.exception("callgate ext-proc: the engine failed on a stream")
            self._failed = True
            body = error_body(self.wire, 500, "callgate ext-proc: internal error", "engine_error")
            out = encode(body, "error" if self.wire != "chat" else None)
            return out + (DONE_EVENT if self.wire == "chat" else b"")
        return out
