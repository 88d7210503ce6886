"""Tools and drivers: the per-step decision, answers and history, the ledger, the loops."""

from callgate.driver.drivers import (
    BaseDriver,
    Driver,
    DriverMeta,
    Orchestrator,
    SupportsNativeTools,
    SupportsStreaming,
)
from callgate.driver.loop import Turn, TurnStep, arun_turn, run_turn, stream_turn
from callgate.driver.responses import DriverResponse
from callgate.driver.tools import Tool
from callgate.errors import TurnError

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
