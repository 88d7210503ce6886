"""One module per format; every wire strategy by its profile name."""

from callgate.strategies.anthropic import AnthropicStrategy
from callgate.strategies.base import (
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    Shape,
    ToolResult,
)
from callgate.strategies.openai import MistralStrategy, OpenAIStrategy

WIRE_STRATEGIES: dict[str, type[ExtractionStrategy]] = {
    "openai": OpenAIStrategy,
    "mistral": MistralStrategy,
    "anthropic": AnthropicStrategy,
}
"""Every wire strategy, by the profile name the command line and fixtures use."""


def default_wire_strategies() -> list[ExtractionStrategy]:
    """A fresh instance of each wire strategy that takes part in recognition, in order."""
    return [OpenAIStrategy(), AnthropicStrategy()]


__all__ = [
    "WIRE_STRATEGIES",
    "AnthropicStrategy",
    "ExtractedCall",
    "ExtractionStrategy",
    "Forming",
    "MistralStrategy",
    "OpenAIStrategy",
    "Shape",
    "ToolResult",
    "default_wire_strategies",
]
