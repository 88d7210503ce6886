"""Every recorded stream with calls (tests/captures), cut at a chunk boundary and ended
with its wire's tool-use end relabelled onto it and usage reporting a given count.

vLLM reports ``finish_reason: "tool_calls"`` on turns that ``max_tokens`` cut; these are
the streams the library's and the gateway's tests of that rule share.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from callgate.cli.capture import load_capture

Chunk = dict[str, Any]
HERE = Path(__file__).resolve().parents[1] / "captures"
MANIFEST = [
    e
    for e in json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    if e["expect"]["calls"] and "difference" not in e
]
LIMIT = 65_536
"""Above every usage the recordings report, so only the relabelled end reaches it."""


def _openai(end: Chunk, used: int) -> list[Chunk]:
    relabelled = copy.deepcopy(end)
    for choice in relabelled["choices"]:
        choice["finish_reason"] = "tool_calls"
    if relabelled.get("usage"):  # the server reports it on its finish chunk
        relabelled["usage"] = {"completion_tokens": used}
        return [relabelled]
    return [relabelled, {"choices": [], "usage": {"completion_tokens": used}}]


def _responses(end: Chunk, used: int) -> list[Chunk]:
    relabelled = copy.deepcopy(end)
    relabelled["type"] = "response.completed"
    relabelled["response"]["status"] = "completed"
    relabelled["response"]["usage"] = {"output_tokens": used}
    return [relabelled]


def _anthropic(end: Chunk, used: int) -> list[Chunk]:
    relabelled = copy.deepcopy(end)
    relabelled["delta"]["stop_reason"] = "tool_use"
    relabelled["usage"] = {"output_tokens": used}
    return [relabelled, {"type": "message_stop"}]


def _bedrock(end: Chunk, used: int) -> list[Chunk]:
    return [
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"outputTokens": used}}},
    ]


def _gemini(end: Chunk, used: int) -> list[Chunk]:
    relabelled = copy.deepcopy(end)
    relabelled["candidates"][0]["finishReason"] = "STOP"
    relabelled["usageMetadata"] = {"candidatesTokenCount": used}
    return [relabelled]


def _cohere(end: Chunk, used: int) -> list[Chunk]:
    usage = {"tokens": {"output_tokens": used}}
    return [{"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": usage}}]


def _ollama(end: Chunk, used: int) -> list[Chunk]:
    return [{**end, "done_reason": "stop", "eval_count": used}]


ENDS: dict[str, tuple[Callable[[Chunk], bool], Callable[[Chunk, int], list[Chunk]]]] = {
    "openai": (lambda c: any(ch.get("finish_reason") for ch in c.get("choices") or []), _openai),
    "openai-responses": (
        lambda c: c.get("type") in ("response.completed", "response.incomplete"),
        _responses,
    ),
    "anthropic": (lambda c: c.get("type") == "message_delta", _anthropic),
    "bedrock": (lambda c: "messageStop" in c, _bedrock),
    "gemini": (lambda c: any("finishReason" in x for x in c.get("candidates") or []), _gemini),
    "cohere": (lambda c: c.get("type") == "message-end", _cohere),
    "ollama": (lambda c: c.get("done") is True, _ollama),
}
"""Per wire: which recorded chunk carries the turn's end, and that end relabelled as a
tool-use end with the wire's own usage field reporting ``used`` output tokens."""


def _end(entry: dict[str, Any]) -> tuple[list[Chunk], int, Chunk]:
    """The capture's chunks, the index of the chunk that carries its end, and that chunk.

    A stream that ends without a finish reason (TGI's: no chunk carries one, the
    ``[DONE]`` ends it) ends after its last chunk: the end relabelled onto it is a chunk
    of its last chunk's envelope with an empty delta.
    """
    chunks = load_capture((HERE / entry["file"]).read_bytes())
    is_end = ENDS[entry["wire"]][0]
    at = next((n for n, c in enumerate(chunks) if is_end(c)), len(chunks))
    if at < len(chunks):
        return chunks, at, chunks[at]
    if entry["wire"] != "openai":
        raise ValueError(f"{entry['file']}: no chunk carries the turn's end")
    last = chunks[-1]
    choices = [
        {"index": c.get("index", 0), "delta": {}, "finish_reason": None} for c in last["choices"]
    ]
    return chunks, at, {**last, "choices": choices}


def relabelled(entry: dict[str, Any], cut: int, used: int) -> list[Chunk]:
    """The capture's first ``cut`` chunks (before its end), then its end relabelled."""
    chunks, at, end = _end(entry)
    return [*chunks[: min(cut, at)], *ENDS[entry["wire"]][1](end, used)]


def end_index(entry: dict[str, Any]) -> int:
    """The index of the chunk that carries the capture's end (its length if none does)."""
    return _end(entry)[1]
