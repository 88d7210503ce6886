"""One encoder per wire: a turn's text and calls as that provider's own chunks.

Each wire's encoder is a module of this package; :mod:`callgate.testing.wires.base` holds
what they share (:class:`WireCall`, :class:`Piece`, :class:`Encoder`). Here is the
registry: :data:`WIRES`, :data:`QUIRKS` and :func:`encoder`.
"""

from __future__ import annotations

from collections.abc import Callable

from callgate.testing.wires.anthropic import AnthropicEncoder
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall, chunks_of, dumps
from callgate.testing.wires.bedrock import BedrockEncoder
from callgate.testing.wires.cohere import CohereEncoder
from callgate.testing.wires.gemini import GeminiEncoder
from callgate.testing.wires.ollama import OllamaEncoder
from callgate.testing.wires.openai import OpenAIEncoder
from callgate.testing.wires.responses import ResponsesEncoder

ENCODERS: dict[str, Callable[[frozenset[str]], Encoder]] = {
    "openai": lambda quirks: OpenAIEncoder(quirks=quirks),
    "openai-responses": lambda quirks: ResponsesEncoder(quirks=quirks),
    "anthropic": lambda quirks: AnthropicEncoder(quirks=quirks),
    "bedrock": lambda quirks: BedrockEncoder(quirks=quirks),
    "gemini": lambda quirks: GeminiEncoder(quirks=quirks),
    "cohere": lambda quirks: CohereEncoder(quirks=quirks),
    "ollama": lambda quirks: OllamaEncoder(quirks=quirks),
}
"""Every wire the kit generates, by profile name."""

WIRES: tuple[str, ...] = tuple(ENCODERS)

QUIRKS: dict[str, tuple[str, ...]] = {
    "openai": OpenAIEncoder.QUIRKS,
    "openai-responses": ResponsesEncoder.QUIRKS,
    "anthropic": AnthropicEncoder.QUIRKS,
    "bedrock": BedrockEncoder.QUIRKS,
    "gemini": GeminiEncoder.QUIRKS,
    "cohere": CohereEncoder.QUIRKS,
    "ollama": OllamaEncoder.QUIRKS,
}
"""The quirks of real providers each encoder can reproduce (see docs/wire-formats.md)."""


def encoder(wire: str, quirks: frozenset[str] = frozenset()) -> Encoder:
    """A fresh encoder of ``wire`` with ``quirks``; a clear error for an unknown wire."""
    if wire not in ENCODERS:
        raise ValueError(f"unknown wire {wire!r}; choose one of {', '.join(WIRES)}")
    unknown = set(quirks) - set(QUIRKS[wire])
    if unknown:
        raise ValueError(f"{wire} has no quirk {sorted(unknown)}; it has {list(QUIRKS[wire])}")
    return ENCODERS[wire](frozenset(quirks))


__all__ = [
    "ENCODERS",
    "QUIRKS",
    "WIRES",
    "AnthropicEncoder",
    "BedrockEncoder",
    "Chunk",
    "CohereEncoder",
    "Encoder",
    "GeminiEncoder",
    "OllamaEncoder",
    "OpenAIEncoder",
    "Piece",
    "ResponsesEncoder",
    "WireCall",
    "chunks_of",
    "dumps",
    "encoder",
]
