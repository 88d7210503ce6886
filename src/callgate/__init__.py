"""callgate: explicit finite-state machines for streamed LLM tool calls.

Feed an :class:`LLMStreamBuffer` a provider's raw chunks; it keeps the provider's own
message, and its slot and turn machines decide whether the calls may run. A
:class:`Driver` owns tools: per chunk it decides what the user may see and runs its calls
when the policy allows; :func:`run_turn` is that loop. ``__all__`` is the public surface
(docs/api.md lists it, with :mod:`callgate.errors` and :mod:`callgate.testing`); every
exception callgate raises is a :class:`CallgateError`, defined in :mod:`callgate.errors`.
"""

from typing import TYPE_CHECKING

from callgate.buffer import Choice, LLMStreamBuffer
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
    TurnStep,
    arun_turn,
    astream_turn,
    finish_turn,
    run_turn,
    stream_turn,
)
from callgate.errors import (
    BufferUsageError,
    CallgateError,
    LedgerUnavailable,
    TransitionError,
    TurnError,
    UnrecognizedStreamError,
)
from callgate.gate.findings import Finding
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import NativeRef, TextRef, TurnGate
from callgate.ledger import Ledger
from callgate.partial import PartialCall
from callgate.strategies import (
    WIRE_RECORDS,
    WIRE_STRATEGIES,
    AnthropicStrategy,
    BedrockStrategy,
    CohereStrategy,
    ExtractedCall,
    ExtractionStrategy,
    GeminiStrategy,
    MistralStrategy,
    OllamaStrategy,
    OpenAIStrategy,
    ResponsesStrategy,
    ToolResult,
    Wire,
)
from callgate.strategies.text.detector import Detector

if TYPE_CHECKING:
    __version__: str
    """The installed distribution's version (pyproject.toml is the one place it is written)."""
else:

    def __getattr__(name: str) -> str:
        """``__version__``, read from the installed metadata on first use (PEP 562).

        Lazily, so that ``import callgate`` does not import ``importlib.metadata``. (Hidden
        from type checkers, which would otherwise accept any name of this module.)
        """
        if name == "__version__":
            from importlib.metadata import PackageNotFoundError, version

            try:
                return version("callgate")
            except PackageNotFoundError:
                return "0+unknown"  # a source tree on sys.path that was never installed
        raise AttributeError(f"module 'callgate' has no attribute {name!r}")


__all__ = [
    "WIRE_RECORDS",
    "WIRE_STRATEGIES",
    "AnthropicStrategy",
    "BaseDriver",
    "BedrockStrategy",
    "BufferUsageError",
    "CallgateError",
    "Choice",
    "CohereStrategy",
    "Detector",
    "Driver",
    "DriverMeta",
    "DriverResponse",
    "ExtractedCall",
    "ExtractionChain",
    "ExtractionStrategy",
    "Finding",
    "GeminiStrategy",
    "LLMStreamBuffer",
    "Ledger",
    "LedgerUnavailable",
    "Limits",
    "MistralStrategy",
    "NativeRef",
    "OllamaStrategy",
    "OpenAIStrategy",
    "Orchestrator",
    "PartialCall",
    "ResponsesStrategy",
    "SupportsNativeTools",
    "SupportsStreaming",
    "TextRef",
    "Tool",
    "ToolResult",
    "ToolSchemas",
    "TransitionError",
    "Turn",
    "TurnError",
    "TurnGate",
    "TurnStep",
    "UnrecognizedStreamError",
    "Wire",
    "__version__",
    "arun_turn",
    "astream_turn",
    "finish_turn",
    "run_turn",
    "stream_turn",
]
