"""Error bodies in each client wire's own shape, shared by the proxy and the Envoy processor.

A client's SDK reads an error only in its wire's shape (OpenAI's ``error`` object,
Anthropic's ``type: error``), so every refusal and every rewritten upstream error goes
through these few functions.
"""

from __future__ import annotations

import json
from typing import Any

from callgate.proxy.fastjson import strict_loads

__all__ = ["error_body", "error_json", "json_or_none", "upstream_error_json"]


def error_body(wire: str, status: int, message: str, code: str) -> dict[str, Any]:
    """An error in the wire's own shape (OpenAI's ``error`` object, Anthropic's ``type``)."""
    if wire == "messages":
        kind = "invalid_request_error" if status < 500 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "invalid_request_error" if status < 500 else "upstream_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error_json(wire: str, status: int, message: str, code: str) -> bytes:
    """:func:`error_body` as the JSON bytes a response carries."""
    return json.dumps(error_body(wire, status, message, code)).encode("utf-8")


def json_or_none(data: bytes) -> Any:
    """An upstream's JSON read strictly (None when it is not JSON callgate accepts)."""
    try:
        return strict_loads(data)
    except ValueError:
        return None


def upstream_error_json(wire: str, status: int, data: bytes) -> bytes:
    """An upstream's error body of another wire, rewritten in the client wire's error shape.

    Its ``error.message`` is kept (else its first 500 characters); the status is the
    caller's to keep. The proxy and the Envoy processor answer a translated turn's error so.
    """
    parsed = json_or_none(data)
    inner = parsed.get("error") if isinstance(parsed, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    if not isinstance(message, str):
        message = data.decode("utf-8", "replace")[:500] or f"upstream HTTP {status}"
    return error_json(wire, status, message, "upstream_error")
