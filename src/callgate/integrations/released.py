"""Whether the engine released a framework's chunk as it came, so the chunk itself goes on.

Building a framework's chunk object again (LiteLLM's ``ModelResponseStream``, a pydantic
model) costs several times what gating the chunk does; most chunks of a turn (plain text,
argument fragments of a call being streamed) come out of the engine as they went in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["unchanged"]


def _pruned(value: Any) -> Any:
    """``value`` without the ``None`` fields of its objects, at every depth."""
    if type(value) is dict:
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if type(value) is list:
        return [_pruned(v) for v in value]
    return value


def unchanged(released: Mapping[str, Any], dumped: Mapping[str, Any]) -> bool:
    """Whether ``released`` says what ``dumped`` (a model dumped without its ``None`` fields) says.

    Equal once its own ``None`` fields are dropped, and carrying no annotation.
    """
    return "callgate" not in released and _pruned(released) == dumped
