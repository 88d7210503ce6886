"""What a person reads when a call was not run: one short line, per reason, in plain words.

The model-facing detail (the finding, its JSON path, what to send instead) stays in the
``callgate`` field of the final chunk and in the corrective tool result of a repair; the
text the user reads gets one line of at most :data:`LIMIT` characters that names the tools
and the reason, and no internal names (no finding codes, no slot references):

    A call to get_weather was not run: its arguments did not match the tool.

The proxy's writers, the Envoy processor and both integrations word their notices here, so
every surface says the same. :func:`turn_notice` reads a finished gated turn through the
few attributes of :class:`NoticeTurn`; :func:`upstream_notice` words a turn the upstream
ended (a timeout, a broken connection, an error it reported).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from callgate.gate.findings import Finding
from callgate.strategies.base import ToolResult
from callgate.strategies.text.cut import CutCall

__all__ = [
    "LIMIT",
    "NoticeTurn",
    "Reason",
    "call_notice",
    "reason_of",
    "turn_notice",
    "upstream_notice",
]

LIMIT = 200
"""The longest notice line, in characters."""

Reason = Literal[
    "arguments",
    "malformed",
    "too_large",
    "unchecked",
    "unknown_tool",
    "cut",
    "broken",
    "upstream_error",
    "identity",
    "with_others",
    "set_aside",
]
"""Why a call was not run, as a person would put it (one per group of finding codes)."""

WORDS: dict[Reason, str] = {
    "arguments": "its arguments did not match the tool",
    "malformed": "its arguments were not well-formed JSON",
    "too_large": "its arguments were too large to check",
    "unchecked": "the tool's schema uses a rule that cannot be checked",
    "unknown_tool": "no tool of that name is available",
    "cut": "the answer was cut off before the call was complete",
    "broken": "the model's answer broke off before the call was complete",
    "upstream_error": "the model's server reported an error",
    "identity": "the model's stream mixed up two calls",
    "with_others": "another call in the same answer failed",
    "set_aside": "it was written in the text beside native tool calls, which take its place",
}
"""The reason clause of each :data:`Reason`."""

_BY_CODE: dict[str, Reason] = {
    "schema_invalid": "arguments",
    "malformed_json": "malformed",
    "trailing_data": "malformed",
    "non_finite_number": "malformed",
    "duplicate_key": "malformed",
    "lone_surrogate": "malformed",
    "non_object_arguments": "malformed",
    "limit_exceeded": "too_large",
    "unsupported_schema_keyword": "unchecked",
    "unknown_tool": "unknown_tool",
    "wrong_terminal_reason": "cut",
    "missing_terminal": "broken",
    "malformed_chunk": "broken",
    "provider_error": "upstream_error",
    "identity_collision": "identity",
    "missing_name": "identity",
    "missing_id": "identity",
    "orphan_event": "identity",
    "delta_after_terminal": "identity",
    "duplicate_terminal": "identity",
    "args_mismatch": "identity",
    "text_call_set_aside": "set_aside",
}
"""Each error finding code's :data:`Reason` (a code not listed reads as ``broken``)."""

UPSTREAM: dict[str, str] = {
    "timeout": "The model did not answer in time: the answer is incomplete and nothing was run.",
    "broken": "The connection to the model broke: the answer is incomplete and nothing was run.",
    "error": "The model's server reported an error: the answer is incomplete and nothing was run.",
}
"""The line for a turn the upstream ended, by how it ended."""


def reason_of(code: str | None) -> Reason:
    """The :data:`Reason` of a finding code (None: the call was refused with others)."""
    if code is None:
        return "with_others"
    return _BY_CODE.get(code, "broken")


def _names(names: Sequence[str | None], room: int) -> str:
    """``a``, ``a and b``, ``a, b and c``, or ``a, b and 3 more`` within ``room`` characters."""
    shown = [n or "a tool" for n in dict.fromkeys(names)]
    for keep in range(len(shown), 0, -1):
        head, more = shown[:keep], len(shown) - keep
        tail = [f"{more} more"] if more else []
        parts = head + tail
        text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        if len(text) <= room or keep == 1:
            return text if len(text) <= room else text[: max(room - 3, 1)] + "..."
    return ""


def call_notice(names: Sequence[str | None], reason: Reason) -> str:
    """One line: the calls to ``names`` were not run, and why (at most :data:`LIMIT`)."""
    clause = WORDS[reason]
    many = len(dict.fromkeys(names)) > 1
    frame = "Calls to {} were not run: {}." if many else "A call to {} was not run: {}."
    room = LIMIT - len(frame.format("", clause))
    return frame.format(_names(names, room), clause)


class _Cut(Protocol):
    """A turn's text queue: the call its cut end withheld from the display, if any."""

    @property
    def cut(self) -> CutCall | None: ...


class _Display(Protocol):
    """A turn's buffer, read only for its text queue."""

    @property
    def text_queue(self) -> _Cut: ...


class NoticeTurn(Protocol):
    """What :func:`turn_notice` reads of a finished gated turn (the engine's ``GatedCore``)."""

    @property
    def buffer(self) -> _Display: ...

    @property
    def withheld(self) -> list[ToolResult]: ...

    @property
    def findings(self) -> list[Finding]: ...

    @property
    def truncated(self) -> bool: ...


def turn_notice(turn: NoticeTurn) -> str:
    """The line for a finished turn whose calls were withheld ('' when none was).

    The calls that failed on their own are named with their reason; the calls withheld only
    because a sibling failed are named after them (an answer runs all its calls or none); a
    call written in the text beside native calls is named as set aside for them. A
    turn the upstream cut (``length``, a filter, no end) names every call as cut or broken,
    with the call the cut left half-written in the text (the display withheld its markup).
    """
    leaked = turn.buffer.text_queue.cut
    if not turn.withheld:
        return call_notice([leaked.name], "cut") if leaked is not None else ""
    errors = [f for f in turn.findings if f.severity == "error"]
    aside = [f for f in turn.findings if f.code == "text_call_set_aside"]
    own: dict[str, list[str | None]] = {}
    others: list[str | None] = []
    for result in turn.withheld:
        slot = result.call.slot
        found = next((f for f in [*errors, *aside] if f.slot == slot), None)
        if found is None and turn.truncated and errors:
            found = errors[0]
        if found is None:
            others.append(result.call.name)
        else:
            own.setdefault(found.code, []).append(result.call.name)
    if leaked is not None:
        cut = [leaked.name, *own.pop("wrong_terminal_reason", [])]
        own = {"wrong_terminal_reason": cut, **own}
    if not own:
        code = errors[0].code if errors else None
        return call_notice(others, reason_of(code) if code else "with_others")
    code, names = next(iter(own.items()))
    line = call_notice(names, reason_of(code))
    rest = len(turn.withheld) + (leaked is not None) - len(names)
    if rest:
        more = (
            " The other call of the answer was not run either."
            if rest == 1
            else f" The {rest} other calls of the answer were not run either."
        )
        if len(line) + len(more) <= LIMIT:
            line += more
    return line


def upstream_notice(how: Literal["timeout", "broken", "error"]) -> str:
    """The line for a turn the upstream ended: ``timeout``, ``broken`` or ``error``."""
    return UPSTREAM[how]
