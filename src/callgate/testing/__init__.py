"""callgate.testing: Hypothesis strategies of adversarial provider streams, and a machine.

Fuzz your own accumulator, gateway or agent loop with the streams callgate is tested
against: :func:`streams` (whole streams of any of seven wires, with their ground truth
and callgate's verdict as an oracle), :func:`faults`, :func:`text_contents` and
:func:`splits`; :class:`AdapterMachine` checks your adapter after every chunk. This
package imports Hypothesis (``pip install 'callgate[testing]'``); ``import callgate``
does not, and this package imports each part on first use, so its pytest plugin
loads where Hypothesis is missing. See docs/testing.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from callgate.testing.cuts import at_points, byte_splits, cycled, fixed, pieces, splits
    from callgate.testing.machine import AdapterMachine
    from callgate.testing.plans import (
        ANY_JSON_VALUES,
        JSON_OBJECTS,
        JSON_VALUES,
        TOOLS,
        CallPlan,
        StreamPlan,
        argument_texts,
        arguments_for,
        interleavings,
        stream_plans,
    )
    from callgate.testing.text import NEAR_MISSES, SAMPLES, TAIL_SAMPLES, TextContent, text_contents
    from callgate.testing.wire_streams import (
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

_WHERE = {
    "ANY_JSON_VALUES": "callgate.testing.plans",
    "JSON_OBJECTS": "callgate.testing.plans",
    "argument_texts": "callgate.testing.plans",
    "AdapterMachine": "callgate.testing.machine",
    "CallPlan": "callgate.testing.plans",
    "FAULT_KINDS": "callgate.testing.wire_streams",
    "Fault": "callgate.testing.wire_streams",
    "IntendedCall": "callgate.testing.wire_streams",
    "JSON_VALUES": "callgate.testing.plans",
    "NEAR_MISSES": "callgate.testing.text",
    "QUIRKS": "callgate.testing.wires",
    "SAMPLES": "callgate.testing.text",
    "StreamExample": "callgate.testing.wire_streams",
    "StreamPlan": "callgate.testing.plans",
    "TAIL_SAMPLES": "callgate.testing.text",
    "TOOLS": "callgate.testing.plans",
    "TextContent": "callgate.testing.text",
    "Verdict": "callgate.testing.wire_streams",
    "WIRES": "callgate.testing.wires",
    "arguments_for": "callgate.testing.plans",
    "at_points": "callgate.testing.cuts",
    "byte_splits": "callgate.testing.cuts",
    "cycled": "callgate.testing.cuts",
    "fault_kinds": "callgate.testing.wire_streams",
    "faults": "callgate.testing.wire_streams",
    "fixed": "callgate.testing.cuts",
    "interleavings": "callgate.testing.plans",
    "pieces": "callgate.testing.cuts",
    "splits": "callgate.testing.cuts",
    "stream_plans": "callgate.testing.plans",
    "streams": "callgate.testing.wire_streams",
    "text_contents": "callgate.testing.text",
}
"""Where each public name is defined."""


def __getattr__(name: str) -> Any:
    """Import the part that defines ``name`` on first use (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'callgate.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


__all__ = [
    "ANY_JSON_VALUES",
    "FAULT_KINDS",
    "JSON_OBJECTS",
    "JSON_VALUES",
    "NEAR_MISSES",
    "QUIRKS",
    "SAMPLES",
    "TAIL_SAMPLES",
    "TOOLS",
    "WIRES",
    "AdapterMachine",
    "CallPlan",
    "Fault",
    "IntendedCall",
    "StreamExample",
    "StreamPlan",
    "TextContent",
    "Verdict",
    "argument_texts",
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
    "text_contents",
]
