"""One encoder per wire: a turn's text and calls as that provider's own chunks.

Each wire's encoder is a module of this package; :mod:`callgate.testing.wires.base` holds
what they share (:class:`WireCall`, :class:`Piece`, :class:`Encoder`). Here is the
registry, read from the encoder classes and their wires' records (:mod:`callgate.strategies`):
:data:`WIRES`, :data:`QUIRKS` and :func:`encoder`.
"""

from __future__ import annotations

from collections.abc import Callable

from callgate.strategies import WIRE_RECORDS
from callgate.testing.wires.anthropic import AnthropicEncoder
from callgate.testing.wires.base import Chunk, Encoder, Piece, WireCall, chunks_of, dumps
from callgate.testing.wires.bedrock import BedrockEncoder
from callgate.testing.wires.cohere import CohereEncoder
from callgate.testing.wires.gemini import GeminiEncoder
from callgate.testing.wires.ollama import OllamaEncoder
from callgate.testing.wires.openai import OpenAIEncoder
from callgate.testing.wires.responses import ResponsesEncoder

ENCODER_CLASSES: tuple[type[Encoder], ...] = (
    OpenAIEncoder,
    ResponsesEncoder,
    AnthropicEncoder,
    BedrockEncoder,
    GeminiEncoder,
    CohereEncoder,
    OllamaEncoder,
)
"""Every encoder class; each names its wire's record (``WIRE``), which the tables read."""

_BY_WIRE: dict[str, type[Encoder]] = {cls.WIRE.name: cls for cls in ENCODER_CLASSES}


def _maker(cls: type[Encoder]) -> Callable[[frozenset[str]], Encoder]:
    return lambda quirks: cls(quirks=quirks)


ENCODERS: dict[str, Callable[[frozenset[str]], Encoder]] = {
    name: _maker(_BY_WIRE[name]) for name in WIRE_RECORDS if name in _BY_WIRE
}
"""Every wire the kit generates, by profile name, in the records' order."""

WIRES: tuple[str, ...] = tuple(ENCODERS)
"""The wires the kit writes streams of, by their profile names."""

QUIRKS: dict[str, tuple[str, ...]] = {name: WIRE_RECORDS[name].quirks for name in WIRES}
"""The quirks of real providers each encoder can reproduce (see docs/wire-formats.md),
as each wire's record lists them."""


def encoder_class(wire: str) -> type[Encoder]:
    """The encoder class of ``wire``; a clear error for a wire the kit does not generate."""
    if wire not in _BY_WIRE:
        raise ValueError(f"unknown wire {wire!r}; choose one of {', '.join(WIRES)}")
    return _BY_WIRE[wire]


def encoder(wire: str, quirks: frozenset[str] = frozenset()) -> Encoder:
    """A fresh encoder of ``wire`` with ``quirks``; a clear error for an unknown wire."""
    encoder_class(wire)
    unknown = set(quirks) - set(QUIRKS[wire])
    if unknown:
        raise ValueError(f"{wire} has no quirk {sorted(unknown)}; it has {list(QUIRKS[wire])}")
    return ENCODERS[wire](frozenset(quirks))


__all__ = [
    "ENCODERS",
    "ENCODER_CLASSES",
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
    "encoder_class",
]
