"""One module per format; every wire as its record, and the tables read from the records."""

from collections.abc import Mapping

from callgate.strategies.anthropic import ANTHROPIC, AnthropicStrategy
from callgate.strategies.base import (
    ExtractedCall,
    ExtractionStrategy,
    MessageReader,
    Shape,
    StreamReader,
    ToolResult,
)
from callgate.strategies.bedrock import BEDROCK, BedrockStrategy
from callgate.strategies.cohere import COHERE, CohereStrategy
from callgate.strategies.gemini import GEMINI, GeminiStrategy
from callgate.strategies.ollama import OLLAMA, OllamaStrategy
from callgate.strategies.openai import MISTRAL, OPENAI, MistralStrategy, OpenAIStrategy
from callgate.strategies.responses import RESPONSES, ResponsesStrategy
from callgate.strategies.text.strategy import TEXT_STRATEGIES
from callgate.strategies.wire import Framing, SdkForm, Terminal, Wire

WIRE_RECORDS: Mapping[str, Wire] = {
    w.name: w for w in (OPENAI, MISTRAL, RESPONSES, ANTHROPIC, BEDROCK, GEMINI, COHERE, OLLAMA)
}
"""Every wire's record, by profile name: the one list a new wire joins."""

WIRE_STRATEGIES: dict[str, type[ExtractionStrategy]] = {
    name: w.strategy for name, w in WIRE_RECORDS.items()
}
"""Every wire strategy, by the profile name the command line and fixtures use."""

RECOGNITION_ORDER: tuple[Wire, ...] = tuple(
    sorted(
        (w for w in WIRE_RECORDS.values() if w.recognition is not None),
        key=lambda w: w.recognition or 0,
    )
)
"""The wires that take part in automatic recognition, in the order they are tried."""


def wire_record(name: str) -> Wire:
    """The record of the wire whose profile name is ``name``; a clear error otherwise."""
    record = WIRE_RECORDS.get(name)
    if record is None:
        raise ValueError(f"unknown wire {name!r}; known: {', '.join(WIRE_RECORDS)}")
    return record


def default_strategies() -> list[MessageReader]:
    """The default chain: every wire strategy, then a text strategy per text format."""
    return [*default_wire_strategies(), *(cls() for cls in TEXT_STRATEGIES.values())]


def default_wire_strategies() -> list[ExtractionStrategy]:
    """A fresh instance of each wire strategy that takes part in recognition, in order."""
    return [w.strategy() for w in RECOGNITION_ORDER]


__all__ = [
    "RECOGNITION_ORDER",
    "WIRE_RECORDS",
    "WIRE_STRATEGIES",
    "AnthropicStrategy",
    "BedrockStrategy",
    "CohereStrategy",
    "ExtractedCall",
    "ExtractionStrategy",
    "Framing",
    "GeminiStrategy",
    "MessageReader",
    "MistralStrategy",
    "OllamaStrategy",
    "OpenAIStrategy",
    "ResponsesStrategy",
    "SdkForm",
    "Shape",
    "StreamReader",
    "Terminal",
    "ToolResult",
    "Wire",
    "default_strategies",
    "default_wire_strategies",
    "wire_record",
]
