"""What a text-format payload parser takes and returns.

A text format is data: its delimiters and a payload parser (see
:mod:`callgate.strategies.text.formats`). A parser receives the text between a block's
opening and closing delimiters and either returns the calls it holds or ``None``: what
does not parse strictly is not a call, and the detector then releases the block as text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import field, frozen

Schemas = Mapping[str, Mapping[str, Any]]
"""Tool name -> JSON Schema; parsers of untyped formats use it to type raw values."""


@frozen
class TextCall:
    """One call read from text: its name, its arguments object, and an id if the text had one."""

    name: str
    arguments: dict[str, Any] = field(factory=dict)
    id: str | None = None


Parser = Callable[[str, "Schemas | None"], "list[TextCall] | None"]
"""``parse(payload, schemas)``: the calls in ``payload``, or None when it is not a call."""
