"""Write a :class:`~callgate.fsm.table.Table` as an XState v5 machine config.

The config is plain JSON for ``createMachine``: one flat state node per table state (so
``snapshot.value`` is always the callgate state name), one ``on`` entry per transition,
each state's and transition's doc as ``description``, a transition's guard and output
names in its ``meta`` (XState never evaluates them: the caller classifies its input into
events, as in callgate), and every table event with its doc in the root ``meta.events``.

Final states: callgate's final states may still accept events (``blocked`` absorbs every
event, ``validated`` can still be blocked), while an XState ``type: "final"`` state at
the root stops the actor. So every final state carries the tag ``final`` (test it with
``snapshot.hasTag("final")``) and only a final state that accepts no event at all is
also ``type: "final"``. A state's table tags are XState tags too (``holds``, ``blocks``,
...), and its status, if any, is its ``meta.status``.

XState ignores an event that a state does not accept; callgate never does. A runtime
embedding the config must check ``snapshot.can(event)`` first and treat ``false`` as an
error (``runtimes/js/stepOrThrow.mjs`` does exactly that).
"""

from __future__ import annotations

import json
from typing import Any

from callgate.fsm.table import Table, Transition

FORMAT = "callgate.xstate"
VERSION = 1

FINAL_TAG = "final"
"""The tag every callgate final state carries in the XState config."""


def _transition(t: Transition) -> dict[str, Any]:
    node: dict[str, Any] = {"target": t.target, "description": t.doc}
    meta = {key: value for key, value in (("guard", t.guard), ("output", t.output)) if value}
    if meta:
        node["meta"] = meta
    return node


def to_xstate(table: Table) -> dict[str, Any]:
    """The table as an XState v5 machine config (JSON-ready data)."""
    states: dict[str, Any] = {}
    for state in table.states:
        outgoing = table.outgoing(state.name)
        node: dict[str, Any] = {"description": state.doc}
        tags = sorted({FINAL_TAG, *state.tags} if state.final else state.tags)
        if tags:
            node["tags"] = tags
        if state.final and not outgoing:
            node["type"] = "final"
        if state.status is not None:
            node["meta"] = {"status": state.status}
        if outgoing:
            node["on"] = {t.event: _transition(t) for t in outgoing}
        states[state.name] = node
    return {
        "id": table.name,
        "description": table.doc,
        "initial": table.initial,
        "meta": {
            "format": FORMAT,
            "version": VERSION,
            "events": {event.name: event.doc for event in table.events},
            "final": sorted(table.final_states),
        },
        "states": states,
    }


def dumps_xstate(table: Table) -> str:
    """The XState config as indented JSON text, ending in a newline."""
    return json.dumps(to_xstate(table), indent=2, ensure_ascii=False) + "\n"
