"""callgate: explicit finite-state machines for streamed LLM tool calls.

Feed an :class:`LLMStreamBuffer` a provider's raw chunks; it keeps the provider's own
message, and its slot and turn machines decide whether the calls may run.
"""

from callgate.buffer import BufferUsageError, LLMStreamBuffer, UnrecognizedStreamError, as_shape
from callgate.chain import ExtractionChain
from callgate.findings import Finding
from callgate.gate import TurnGate
from callgate.limits import Limits
from callgate.schema import ToolSchemas
from callgate.strategies import (
    AnthropicStrategy,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    MistralStrategy,
    OpenAIStrategy,
    ToolResult,
)

__all__ = [
    "AnthropicStrategy",
    "BufferUsageError",
    "ExtractedCall",
    "ExtractionChain",
    "ExtractionStrategy",
    "Finding",
    "Forming",
    "LLMStreamBuffer",
    "Limits",
    "MistralStrategy",
    "OpenAIStrategy",
    "ToolResult",
    "ToolSchemas",
    "TurnGate",
    "UnrecognizedStreamError",
    "as_shape",
]
