"""How a timeline names a chunk: what it added, or its event type or finish reason."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def chunk_kind(chunk: Mapping[str, Any]) -> str:
    """A chunk that added no text or fragment, named by its event type or finish reason."""
    kind = chunk.get("type")
    if isinstance(kind, str):
        return kind
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        reason = choices[0].get("finish_reason")
        delta = choices[0].get("delta") or {}
        calls = delta.get("tool_calls") if isinstance(delta, Mapping) else None
        if isinstance(calls, list) and calls:
            return ", ".join(_repeat(call) for call in calls if isinstance(call, Mapping))
        return f"finish_reason {reason}" if reason else "(empty delta)"
    return next(iter(chunk), "(empty)")


def _repeat(call: Mapping[str, Any]) -> str:
    """A call fragment the slot did not append (it repeats a finished call, to compare)."""
    function = call.get("function")
    if not isinstance(function, Mapping):
        function = {}
    if call.get("id") is not None:
        return f"call {call.get('index')} {function.get('name', '?')} opens again"
    return f"call {call.get('index')} repeats {quote(str(function.get('arguments', '')))}"


def quote(text: str, width: int = 30) -> str:
    """``text`` as a JSON string, cut to ``width`` characters for one timeline cell."""
    shown = json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= width else shown[: width - 4] + '..."'
