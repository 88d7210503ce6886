"""The turn's gate: slot and turn runtime, strict JSON, schemas, limits and findings.

Nothing here knows a wire format: strategies translate chunks into the gate's primitives.
"""

from callgate.gate.findings import Finding
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import POLICIES, Slot, TurnGate

__all__ = ["POLICIES", "Finding", "Limits", "Slot", "ToolSchemas", "TurnGate"]
