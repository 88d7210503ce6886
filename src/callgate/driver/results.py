"""Corrective tool results: what a model gets back instead of an execution.

When a call is blocked (its arguments were not strict JSON, failed the schema, named no
known tool), nothing runs; the model should still get an answer it can retry against,
in the provider's own result shape. :func:`corrective_result` words the finding as that
answer, and the wire strategy's ``result_messages`` shapes it.
"""

from __future__ import annotations

from callgate.gate.findings import Finding, blocked_with_turn
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
    "wrong_terminal_reason": (
        "The server ended the turn with that reason, not with a tool call; the call itself "
        "was not at fault. Do not repeat it unchanged: after 'length' (the output was cut "
        "off) only shorter arguments can help; after any other reason (a content filter, or "
        "'stop' where this client takes only 'tool_calls') answer without the tool."
    ),
    "missing_terminal": (
        "The stream ended before the call was complete (the server or the connection cut "
        "it); the call itself was not at fault."
    ),
    "provider_error": "The provider reported an error; the call itself was not at fault.",
    "text_call_set_aside": "Make every call of a turn a native tool call.",
}
"""How to retry, by the code of the finding that refused the call. Where the server, not
the call, was at fault, the advice says so: a model told its call was wrong retries it."""


def corrective_result(slot: Slot, finding: Finding) -> ToolResult:
    """An error result for a blocked call, stating what was wrong and how to retry."""
    return refusal(ExtractedCall.from_ref(slot.ref, slot.id, slot.name or "(no name)", {}), finding)


def refusal(call: ExtractedCall, finding: Finding, *, sibling: bool = False) -> ToolResult:
    """An error result for ``call``, which was not run because of ``finding``.

    ``sibling``: the call was itself fine, and ``finding`` is why its turn was blocked (a
    turn runs all of its calls or none); the answer says which call was at fault.
    """
    advice = _ADVICE.get(finding.code, "The call was not run.")
    if sibling:
        content = (
            f"The call to {call.name} was not run: {blocked_with_turn(finding)} "
            f"({finding.message}; {finding.code}). A turn runs all of its calls or none. {advice}"
        )
    else:
        content = (
            f"The call to {call.name} was not run: {finding.message} ({finding.code}). {advice}"
        )
    return ToolResult(call, content, is_error=True, refused=True)
