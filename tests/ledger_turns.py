"""Turns and tools the ledger's tests share: one call on OpenAI or Gemini, a counting tool."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from callgate import Driver, Tool
from callgate.testing.builders import openai_chunks, split
from callgate.testing.wires import Chunk, WireCall, encoder

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def one_call(
    call_id: str | None, arguments: dict[str, Any], stream: str | None = "chatcmpl-1"
) -> list[Chunk]:
    """An OpenAI turn with one get_weather call; ``stream`` is the response id (None: none)."""
    fragments = split(json.dumps(arguments), [4])
    chunks = openai_chunks(
        [WireCall(call_id, "get_weather", fragments)], [0] * (1 + len(fragments))
    )
    if stream is None:
        return [{k: v for k, v in chunk.items() if k != "id"} for chunk in chunks]
    return [{**chunk, "id": stream} for chunk in chunks]


def gemini_call(city: str, response_id: str | None = None) -> list[Chunk]:
    """A Gemini turn with one id-less get_weather call; without ``response_id``, none."""
    enc = encoder("gemini")
    call = WireCall(None, "get_weather", arguments={"city": city})
    chunks = [*enc.open(call), *enc.finish([call])]
    for chunk in chunks:
        del chunk["responseId"]
        if response_id is not None:
            chunk["responseId"] = response_id
    return chunks


def counted(**options: Any) -> tuple[Driver, list[str]]:
    """A driver whose get_weather tool records each run's city (``options``: the Tool's)."""
    runs: list[str] = []

    def weather(city: str) -> str:
        runs.append(city)
        return f"18 C in {city}"

    return Driver([Tool("get_weather", CITY, weather, **options)]), runs


async def aiter(chunks: Iterable[Chunk]) -> AsyncIterator[Chunk]:
    """The chunks as an async stream (an SDK's async iterator)."""
    for chunk in chunks:
        yield chunk
