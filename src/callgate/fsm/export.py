"""Write a :class:`~callgate.fsm.table.Table` as JSON and read it back, exactly.

The format (version 1) is one JSON object, meant to be loaded by other runtimes::

    {"format": "callgate.table", "version": 1,
     "name": str, "doc": str, "initial": str,
     "states": [{"name": str, "doc": str, "final": bool,
                 "tags": [str, ...], "status": str}, ...],
     "events": [{"name": str, "doc": str}, ...],
     "transitions": [{"source": str, "event": str, "target": str, "doc": str,
                      "guard": str | null, "output": str | null}, ...]}

A state's ``tags`` (sorted) and ``status`` are written only when it has them, and read as
none when absent. Order is definition order, so the text is deterministic and
``load(dump(t)) == t``.
A runtime reading it needs only the rule of :mod:`callgate.fsm.interpreter`: look up
``(state, event)``; no entry means the event is an error in that state. The format's JSON
Schema is ``docs/machines/table.schema.json``. :data:`EXPORTS` also names the XState
(:mod:`callgate.fsm.xstate`) and SCXML (:mod:`callgate.fsm.scxml`) exports.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from callgate.errors import ExportFormatError
from callgate.fsm.scxml import to_scxml
from callgate.fsm.table import Event, State, Table, Transition
from callgate.fsm.xstate import dumps_xstate

FORMAT = "callgate.table"
VERSION = 1


def to_dict(table: Table) -> dict[str, Any]:
    """The table as plain JSON-ready data."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": table.name,
        "doc": table.doc,
        "initial": table.initial,
        "states": [_state(s) for s in table.states],
        "events": [{"name": e.name, "doc": e.doc} for e in table.events],
        "transitions": [
            {
                "source": t.source,
                "event": t.event,
                "target": t.target,
                "doc": t.doc,
                "guard": t.guard,
                "output": t.output,
            }
            for t in table.transitions
        ],
    }


def _state(state: State) -> dict[str, Any]:
    data: dict[str, Any] = {"name": state.name, "doc": state.doc, "final": state.final}
    if state.tags:
        data["tags"] = sorted(state.tags)
    if state.status is not None:
        data["status"] = state.status
    return data


def dumps(table: Table) -> str:
    """The table as indented JSON text, ending in a newline."""
    return json.dumps(to_dict(table), indent=2, ensure_ascii=False) + "\n"


def _text(value: Any, what: str, *, optional: bool = False) -> Any:
    if isinstance(value, str) or (optional and value is None):
        return value
    raise ExportFormatError(f"{what} must be a string, not {value!r:.40}")


def from_dict(data: Any) -> Table:
    """Build (and so validate) a table from :func:`to_dict` data; every field is required."""
    if not isinstance(data, dict):
        raise ExportFormatError("a table document must be a JSON object")
    version = data.get("version")
    if data.get("format") != FORMAT or type(version) is not int or version != VERSION:
        raise ExportFormatError(
            f"expected format {FORMAT!r} version {VERSION}, "
            f"got {data.get('format')!r} version {version!r}"
        )
    try:
        states = []
        for s in data["states"]:
            if not isinstance(s["final"], bool):
                raise ExportFormatError(f"state {s['name']!r}: 'final' must be true or false")
            tags = s.get("tags", [])
            if not isinstance(tags, list):
                raise ExportFormatError(f"state {s['name']!r}: 'tags' must be a list")
            states.append(
                State(
                    _text(s["name"], "a state name"),
                    _text(s["doc"], "a doc"),
                    s["final"],
                    tags=[_text(tag, "a tag") for tag in tags],
                    status=_text(s.get("status"), "a status", optional=True),
                )
            )
        return Table(
            name=_text(data["name"], "the machine name"),
            doc=_text(data["doc"], "the machine doc"),
            initial=_text(data["initial"], "the initial state"),
            states=states,
            events=[
                Event(_text(e["name"], "an event name"), _text(e["doc"], "a doc"))
                for e in data["events"]
            ],
            transitions=[
                Transition(
                    _text(t["source"], "a source"),
                    _text(t["event"], "an event"),
                    _text(t["target"], "a target"),
                    _text(t["doc"], "a doc"),
                    _text(t["guard"], "a guard", optional=True),
                    _text(t["output"], "an output", optional=True),
                )
                for t in data["transitions"]
            ],
        )
    except (KeyError, TypeError) as exc:
        raise ExportFormatError(f"table document is missing or mistypes a field: {exc}") from exc


def loads(text: str) -> Table:
    """Parse :func:`dumps` text back into an equal table."""
    return from_dict(json.loads(text))


EXPORTS: dict[str, Callable[[Table], str]] = {
    "json": dumps,
    "xstate": dumps_xstate,
    "scxml": to_scxml,
}
"""Every export format by its command-line name: the table to exact text."""

SUFFIXES: dict[str, str] = {"json": ".json", "xstate": ".xstate.json", "scxml": ".scxml"}
"""The file name ending of each export format under ``docs/machines/``."""
