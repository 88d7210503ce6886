"""callgate.testing: Hypothesis strategies of adversarial provider streams, and a machine.

Fuzz your own accumulator, gateway or agent loop with the streams callgate is tested
against: :func:`streams` (whole streams of any of seven wires, with their ground truth
and callgate's verdict as an oracle), :func:`faults`, :func:`text_contents` and
:func:`splits`; :class:`AdapterMachine` checks your adapter after every chunk. This
package imports Hypothesis (``pip install 'callgate[testing]'``); ``import callgate``
does not. See docs/testing.md.
"""

from callgate.testing.plans import (
    JSON_VALUES,
    TOOLS,
    CallPlan,
    StreamPlan,
    arguments_for,
    interleavings,
    stream_plans,
)
from callgate.testing.splits import at_points, byte_splits, cycled, fixed, pieces, splits
from callgate.testing.streams import (
    FAULT_KINDS,
    Fault,
    IntendedCall,
    StreamExample,
    Verdict,
    fault_kinds,
    faults,
    streams,
)
from callgate.testing.wires import QUIRKS, WIRES

__all__ = [
    "FAULT_KINDS",
    "JSON_VALUES",
    "QUIRKS",
    "TOOLS",
    "WIRES",
    "CallPlan",
    "Fault",
    "IntendedCall",
    "StreamExample",
    "StreamPlan",
    "Verdict",
    "arguments_for",
    "at_points",
    "byte_splits",
    "cycled",
    "fault_kinds",
    "faults",
    "fixed",
    "interleavings",
    "pieces",
    "splits",
    "stream_plans",
    "streams",
]
