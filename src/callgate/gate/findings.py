"""Findings: the stable, machine-readable problem reports callgate emits for tool calls.

Every code in CODES is a public contract; tools and fixtures match on these names.
"""

from __future__ import annotations

from typing import Literal

from attrs import define, field, validators

from callgate.errors import UnknownCodeError

Severity = Literal["error", "warning", "info"]

CODES: dict[str, tuple[Severity, str]] = {
    "identity_collision": ("error", "two different calls claimed the same call id or index"),
    "missing_terminal": ("error", "the stream ended without the call's terminal event"),
    "duplicate_terminal": ("error", "a call received more than one terminal event"),
    "delta_after_terminal": ("error", "an argument delta arrived after the call had finished"),
    "wrong_terminal_reason": (
        "error",
        "the turn finished with a reason that contradicts its calls",
    ),
    "malformed_json": ("error", "the arguments text is not valid JSON"),
    "trailing_data": ("error", "a complete JSON value is followed by more non-whitespace text"),
    "non_finite_number": ("error", "the arguments contain NaN or an infinite number"),
    "duplicate_key": ("error", "a JSON object in the arguments repeats a key"),
    "lone_surrogate": ("error", "the arguments contain an unpaired UTF-16 surrogate"),
    "non_object_arguments": ("error", "the arguments are valid JSON but not a JSON object"),
    "unknown_tool": ("error", "the call names a tool that was not declared"),
    "unsupported_schema_keyword": (
        "error",
        "the tool's schema uses something the validator would not enforce",
    ),
    "schema_invalid": ("error", "the arguments do not satisfy the tool's JSON Schema"),
    "missing_name": ("error", "the call has no tool name"),
    "missing_id": ("error", "the call has no call id"),
    "args_mismatch": ("error", "two accounts of the same call disagree on its arguments"),
    "limit_exceeded": ("error", "a size, depth or count limit was exceeded"),
    "duplicate_call_ignored": ("info", "a repeated identical call was recognised and ignored"),
    "call_in_reasoning": ("warning", "a tool call appeared inside reasoning output"),
    "invalid_fixture": ("error", "a recorded fixture does not have the expected shape"),
    "no_tool_calls": ("info", "the turn contained no tool calls"),
    "malformed_chunk": ("error", "a stream chunk does not have the expected shape"),
    "orphan_event": ("error", "an event refers to a call that was never started"),
    "provider_error": ("error", "the provider reported an error inside the stream"),
    "repeated_terminal": (
        "warning",
        "the same turn-level terminal came again on a chunk that carries nothing else",
    ),
    "stop_finish_reason": (
        "warning",
        "an OpenAI turn ended its complete calls with finish_reason stop, not tool_calls",
    ),
    "trailing_terminal": (
        "warning",
        "a stop came after the turn's terminal on a chunk of whitespace text only",
    ),
    "token_limit": (
        "error",
        "the turn's reported output tokens reached the request's limit: it was cut short",
    ),
    "no_finish_reason": (
        "warning",
        "the stream ended cleanly without a finish reason; its complete calls were checked",
    ),
    "repaired_arguments": (
        "warning",
        "broken argument JSON was repaired without changing a value (opt-in); each edit named",
    ),
    "text_call_set_aside": (
        "warning",
        "a call written in the text of a turn with native calls was not run (they win)",
    ),
}


@define(frozen=True)
class Finding:
    """One problem found in a tool call, identified by a stable code from CODES."""

    code: str
    severity: Severity = field(validator=validators.in_(("error", "warning", "info")))
    message: str
    slot: int | str | None = None

    def as_dict(self) -> dict[str, object]:
        """Return the finding as a plain JSON-ready dict."""
        return {
            "code": self.code,
            "severity": self.severity,
            "slot": self.slot,
            "message": self.message,
        }


def finding(code: str, message: str, slot: int | str | None = None) -> Finding:
    """Build a Finding for a known code, using that code's default severity."""
    try:
        severity, _ = CODES[code]
    except KeyError:
        raise UnknownCodeError(f"unknown finding code {code!r}") from None
    return Finding(code=code, severity=severity, message=message, slot=slot)


_WHAT_FAILED = {
    "unknown_tool": "names an unknown tool",
    "missing_name": "names no tool",
    "missing_id": "carries no call id",
    "schema_invalid": "does not match its tool's schema",
    "malformed_json": "has arguments that are not valid JSON",
    "trailing_data": "has more than one JSON value as arguments",
    "non_object_arguments": "has arguments that are not a JSON object",
    "unsupported_schema_keyword": "uses a tool whose schema cannot be enforced",
    "identity_collision": "collides with another call's id or slot",
}
"""What the call a finding names did wrong, as the reason its siblings give."""


def blocked_with_turn(cause: Finding) -> str:
    """Why a call that was itself fine did not run: ``cause``, the first error of its turn.

    A turn runs all of its calls or none, so a valid call is blocked by a sibling's fault
    (or by the turn's own): "blocked with its turn: the call in slot 1 names an unknown tool".
    """
    if cause.slot is None:
        return f"blocked with its turn: {cause.message} ({cause.code})"
    what = _WHAT_FAILED.get(cause.code, f"was refused ({cause.code})")
    return f"blocked with its turn: the call in slot {cause.slot} {what}"
