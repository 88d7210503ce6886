"""callgate: explicit finite-state machines for streamed LLM tool calls.

Feed an :class:`LLMStreamBuffer` a provider's raw chunks; it keeps the provider's own
message, and its slot and turn machines decide whether the calls may run. A
:class:`Driver` owns tools: per chunk it decides what the user may see and runs its calls
when the policy allows; :func:`run_turn` is that loop.
"""

from callgate.buffer import BufferUsageError, LLMStreamBuffer, UnrecognizedStreamError, as_shape
from callgate.chain import ExtractionChain
from callgate.driver import (
    BaseDriver,
    Driver,
    DriverMeta,
    DriverResponse,
    Orchestrator,
    SupportsNativeTools,
    SupportsStreaming,
    Tool,
)
from callgate.driver.loop import (
    Turn,
    TurnError,
    TurnStep,
    arun_turn,
    astream_turn,
    finish_turn,
    run_turn,
    stream_turn,
)
from callgate.gate.findings import Finding
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import TurnGate
from callgate.ledger import Ledger
from callgate.strategies import (
    AnthropicStrategy,
    ExtractedCall,
    ExtractionStrategy,
    MistralStrategy,
    OpenAIStrategy,
    ToolResult,
)

__all__ = [
    "AnthropicStrategy",
    "BaseDriver",
    "BufferUsageError",
    "Driver",
    "DriverMeta",
    "DriverResponse",
    "ExtractedCall",
    "ExtractionChain",
    "ExtractionStrategy",
    "Finding",
    "LLMStreamBuffer",
    "Ledger",
    "Limits",
    "MistralStrategy",
    "OpenAIStrategy",
    "Orchestrator",
    "SupportsNativeTools",
    "SupportsStreaming",
    "Tool",
    "ToolResult",
    "ToolSchemas",
    "Turn",
    "TurnError",
    "TurnGate",
    "TurnStep",
    "UnrecognizedStreamError",
    "arun_turn",
    "as_shape",
    "astream_turn",
    "finish_turn",
    "run_turn",
    "stream_turn",
]
