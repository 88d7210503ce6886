"""One module per format; every wire strategy by its profile name."""

from callgate.strategies.anthropic import AnthropicStrategy
from callgate.strategies.base import (
    ExtractedCall,
    ExtractionStrategy,
    MessageReader,
    Shape,
    StreamReader,
    ToolResult,
)
from callgate.strategies.bedrock import BedrockStrategy
from callgate.strategies.cohere import CohereStrategy
from callgate.strategies.gemini import GeminiStrategy
from callgate.strategies.ollama import OllamaStrategy
from callgate.strategies.openai import MistralStrategy, OpenAIStrategy
from callgate.strategies.responses import ResponsesStrategy
from callgate.strategies.text.strategy import TEXT_STRATEGIES

WIRE_STRATEGIES: dict[str, type[ExtractionStrategy]] = {
    "openai": OpenAIStrategy,
    "mistral": MistralStrategy,
    "openai-responses": ResponsesStrategy,
    "anthropic": AnthropicStrategy,
    "bedrock": BedrockStrategy,
    "gemini": GeminiStrategy,
    "cohere": CohereStrategy,
    "ollama": OllamaStrategy,
}
"""Every wire strategy, by the profile name the command line and fixtures use."""


def default_strategies() -> list[MessageReader]:
    """The default chain: every wire strategy, then a text strategy per text format."""
    return [*default_wire_strategies(), *(cls() for cls in TEXT_STRATEGIES.values())]


def default_wire_strategies() -> list[ExtractionStrategy]:
    """A fresh instance of each wire strategy that takes part in recognition, in order."""
    return [
        OpenAIStrategy(),
        ResponsesStrategy(),
        AnthropicStrategy(),
        BedrockStrategy(),
        GeminiStrategy(),
        CohereStrategy(),
        OllamaStrategy(),
    ]


__all__ = [
    "WIRE_STRATEGIES",
    "AnthropicStrategy",
    "BedrockStrategy",
    "CohereStrategy",
    "ExtractedCall",
    "ExtractionStrategy",
    "GeminiStrategy",
    "MessageReader",
    "MistralStrategy",
    "OllamaStrategy",
    "OpenAIStrategy",
    "ResponsesStrategy",
    "Shape",
    "StreamReader",
    "ToolResult",
    "default_strategies",
    "default_wire_strategies",
]
