"""Turns and tools the ledger's tests share: one call on OpenAI or Gemini, a counting tool."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
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


WIRES = ("openai", "openai-responses", "anthropic", "bedrock", "gemini", "cohere", "ollama")


def wire_turn(wire: str, cities: Sequence[str]) -> list[Chunk]:
    """A turn of ``wire`` (the kit's encoder) with a get_weather call per city, in order.

    Calls carry ids where the wire has them (Gemini and Ollama calls have none).
    """
    enc = encoder(wire)
    calls = []
    for n, city in enumerate(cities):
        text = json.dumps({"city": city})
        call_id = None if wire in ("gemini", "ollama") else f"{enc.id_prefix}{n}"
        key = n + enc.first_key(True)
        calls.append(
            WireCall(call_id, "get_weather", split(text, [6]), key=key, arguments={"city": city})
        )
    chunks = [piece.chunk for piece in enc.prelude(["Let me check. "])]
    for call in calls:
        chunks += enc.open(call)
        for fragment in call.fragments if enc.fragmented else ():
            chunks += enc.fragment(call, fragment)
        chunks += enc.close(call)
    enc.state["reason"] = "tool_calls"
    return enc.finalise(chunks + enc.finish(calls) + enc.epilogue())


def text_turn(cities: Sequence[str]) -> list[Chunk]:
    """An OpenAI turn whose content carries a Hermes ``<tool_call>`` block per city."""
    calls = [json.dumps({"name": "get_weather", "arguments": {"city": c}}) for c in cities]
    blocks = "".join(f"<tool_call>{call}</tool_call>" for call in calls)
    return openai_chunks([], [], text=split(f"Sure. {blocks} Done.", [9]))
