"""Hard limits on what one turn may make callgate hold, with safe defaults.

Each limit, when hit, is a ``limit_exceeded`` finding that blocks the turn; nothing past
the limit is stored, so a hostile stream cannot make callgate allocate without bound.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class Limits:
    """Bounds per call and per turn; the defaults admit any realistic tool call."""

    max_argument_bytes: int = 8 * 1024 * 1024
    """UTF-8 bytes of one call's arguments."""
    max_turn_bytes: int = 32 * 1024 * 1024
    """UTF-8 bytes of all arguments of one turn."""
    max_depth: int = 128
    """Nesting depth of one call's arguments."""
    max_slots: int = 128
    """Tool calls in one turn."""
    max_slot_index: int = 4095
    """Largest slot index accepted (an index is never used to size anything)."""
    max_text_bytes: int = 32 * 1024 * 1024
    """UTF-8 bytes of text one turn keeps: content, reasoning and thinking together. Past
    it the turn blocks and the buffer stores nothing more of the stream."""
    max_findings: int = 1000
    """Findings kept for one turn; one more ``limit_exceeded`` says the rest were dropped."""
    max_schema_steps: int = 1_000_000
    """Schema keywords applied while validating one call's arguments (about a second or
    two of work); bounds schemas whose work multiplies, such as nested ``allOf`` of ``$ref`` s."""


DEFAULT_LIMITS = Limits()
"""The default limits, made once: a frozen value, so every buffer and gate built without
limits of its own shares it instead of making its own each turn."""
