"""What both integrations share: options checked once, chunks read as dicts, findings logged.

The rules themselves live in :mod:`callgate.proxy.engine`; this module only adapts a
framework's objects to the engine's plain OpenAI-shaped dicts and reports what it found.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from callgate.proxy.engine import BLOCKED_MODES, GatedTurn, Options
from callgate.strategies.text.formats import FORMATS

LOG = logging.getLogger("callgate.integrations")
"""Where both integrations log each turn's findings (warning when a call was withheld)."""

ON_BLOCKED: str = Options().on_blocked
"""The default ``on_blocked`` mode, the proxy's (chosen by ``bench/bench_proxy.py --modes``)."""
REPAIRS: int = Options().repairs
"""The default number of repairs, the proxy's."""


def options(
    *,
    on_blocked: str = ON_BLOCKED,
    repairs: int = REPAIRS,
    text_formats: str | Sequence[str] | None = None,
    move_reasoning: bool = False,
) -> Options:
    """The engine's options from a framework's configuration, each value checked.

    ``text_formats`` may be a comma-separated string (as a YAML config writes it) or a
    list; an unknown name, an unknown ``on_blocked`` mode or a negative ``repairs`` is a
    ``ValueError`` that names the value and what is allowed.
    """
    if on_blocked not in BLOCKED_MODES:
        raise ValueError(
            f"on_blocked must be one of {', '.join(BLOCKED_MODES)}, not {on_blocked!r}"
        )
    if isinstance(repairs, bool) or not isinstance(repairs, int) or repairs < 0:
        raise ValueError(f"repairs must be a whole number of 0 or more, not {repairs!r}")
    formats: tuple[str, ...] | None = None
    if text_formats is not None:
        names = text_formats.split(",") if isinstance(text_formats, str) else list(text_formats)
        formats = tuple(n.strip() for n in names if n.strip())
        unknown = [n for n in formats if n not in FORMATS]
        if unknown:
            raise ValueError(
                f"unknown text format(s) {', '.join(unknown)}; known: {', '.join(sorted(FORMATS))}"
            )
    return Options(
        on_blocked=on_blocked,
        repairs=repairs,
        text_formats=formats,
        move_reasoning=move_reasoning,
    )


def as_dict(value: Any) -> Any:
    """A framework's chunk or response as the plain dict the engine reads (dicts as they are).

    Pydantic models (LiteLLM's and the openai SDK's) are dumped without their unset
    ``None`` fields; anything else is handed on unchanged, for the engine to refuse.
    """
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    return value


def report(turn: GatedTurn, where: str) -> dict[str, Any]:
    """Log a finished turn's findings and return its annotation (status, findings, withheld).

    A turn whose calls were withheld logs a warning; one with findings but every call
    sent logs at info; a clean turn logs nothing.
    """
    note = turn.annotation()
    if turn.withheld:
        LOG.warning("%s: withheld %s: %s", where, note.get("withheld"), note["findings"])
    elif note["findings"]:
        LOG.info("%s: %s: %s", where, note["status"], note["findings"])
    return note
