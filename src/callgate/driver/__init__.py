"""Tools and drivers: the per-step decision, answers and history, the ledger, the loops."""

from callgate.driver.core import (
    BaseDriver,
    Driver,
    DriverMeta,
    DriverResponse,
    Orchestrator,
    SupportsNativeTools,
    SupportsStreaming,
    Tool,
)
from callgate.driver.loop import Turn, TurnError, TurnStep, arun_turn, run_turn, stream_turn

__all__ = [
    "BaseDriver",
    "Driver",
    "DriverMeta",
    "DriverResponse",
    "Orchestrator",
    "SupportsNativeTools",
    "SupportsStreaming",
    "Tool",
    "Turn",
    "TurnError",
    "TurnStep",
    "arun_turn",
    "run_turn",
    "stream_turn",
]
