"""Corrective tool results: what a model gets back instead of an execution.

When a call is blocked (its arguments were not strict JSON, failed the schema, named no
known tool), nothing runs; the model should still get an answer it can retry against,
in the provider's own result shape. :func:`corrective_result` words the finding as that
answer, and the wire strategy's ``result_messages`` shapes it.
"""

from __future__ import annotations

from callgate.gate.findings import Finding
from callgate.gate.turn import Slot
from callgate.strategies.base import ExtractedCall, ToolResult

_ADVICE = {
    "malformed_json": "Send the call again with arguments that are one valid JSON object.",
    "trailing_data": "Send the call again with exactly one JSON object as arguments.",
    "non_finite_number": "Use finite numbers only (no NaN or Infinity).",
    "duplicate_key": "Give each key once.",
    "lone_surrogate": "Use valid Unicode text in the arguments.",
    "non_object_arguments": "Arguments must be a JSON object of named parameters.",
    "schema_invalid": "Send the call again with arguments that match the tool's schema.",
    "unknown_tool": "Call only the tools you were given.",
    "missing_name": "Every call needs the name of a tool.",
    "limit_exceeded": "Send smaller arguments.",
    "text_call_set_aside": "Make every call of a turn a native tool call.",
}


def corrective_result(slot: Slot, finding: Finding) -> ToolResult:
    """An error result for a blocked call, stating what was wrong and how to retry."""
    return refusal(ExtractedCall(slot.id, slot.name or "(no name)", {}, slot.key), finding)


def refusal(call: ExtractedCall, finding: Finding, *, cause: str = "") -> ToolResult:
    """An error result for ``call``, which was not run because of ``finding``.

    ``cause`` says why a call that was itself fine was not run (another call of its
    turn was refused, and a turn runs all of its calls or none).
    """
    advice = _ADVICE.get(finding.code, "The call was not run.")
    content = (
        f"The call to {call.name} was not run: {cause}{finding.message} ({finding.code}). {advice}"
    )
    return ToolResult(call, content, is_error=True, refused=True)
