"""Write a :class:`~callgate.fsm.table.Table` as a W3C SCXML document.

One top-level ``<state>`` per table state, one ``<transition event target>`` per table
transition, the docs (a state's tags and status, a transition's guard and output names)
as XML comments. SCXML evaluates no guard here: the caller classifies its input into
events, as in callgate.

Event names: an SCXML transition's ``event`` matches by dotted prefix, and the engine
raises its own ``done.state.ID`` and ``error.*`` events, so a bare ``done`` or ``error``
would take those too (the turn machine has a ``done`` event). Every event is therefore
sent under its machine's name: table event ``done`` of machine ``turn`` is the SCXML event
``turn.done`` (:func:`scxml_event`).

Final states: a ``<final>`` element may hold no transition, and a top-level one ends the
whole run, while callgate's final states may still accept events (``blocked`` absorbs
every event, ``validated`` can still be blocked). So a final state that accepts no event
is a top-level ``<final>``; one that accepts events is a ``<state>`` holding a single
``<final id="NAME.final">`` child and its transitions. Either way the engine enters a
``<final>`` exactly when callgate reaches a final state, and the callgate state is the
top-level state of the configuration.

An SCXML engine discards an event that no transition takes; callgate never does. A
runtime must treat "no transition taken" as an error (``runtimes/scxml`` checks it).
"""

from __future__ import annotations

import re
from xml.sax.saxutils import quoteattr

from callgate.fsm.table import State, Table, Transition

NAMESPACE = "http://www.w3.org/2005/07/scxml"

FINAL_SUFFIX = ".final"
"""The id suffix of the ``<final>`` child of a final state that still accepts events."""


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
"""Names SCXML takes as state ids and event tokens as they are (no dots, no spaces)."""

RESERVED = frozenset({"done", "error"})
"""First tokens of the events an SCXML engine raises itself."""


def scxml_event(machine: str, event: str) -> str:
    """The SCXML name of a table event: ``MACHINE.EVENT``."""
    return f"{machine}.{event}"


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 allows nowhere, not even in a comment."""


def _comment(text: str) -> str:
    """An XML comment holding ``text``: ``--`` split, characters XML forbids as U+FFFD."""
    safe = _NOT_XML.sub("\ufffd", text).replace("--", "- -").replace("--", "- -")
    if safe.endswith("-"):
        safe += " "
    return f"<!-- {safe} -->"


def _transition(machine: str, t: Transition, indent: str) -> list[str]:
    notes = [t.doc]
    if t.guard:
        notes.append(f"guard: {t.guard}")
    if t.output:
        notes.append(f"output: {t.output}")
    return [
        f"{indent}{_comment('; '.join(notes))}",
        f"{indent}<transition event={quoteattr(scxml_event(machine, t.event))}"
        f" target={quoteattr(t.target)}/>",
    ]


def _state_note(state: State) -> str:
    notes = [f"{state.name}: {state.doc}"]
    if state.tags:
        notes.append(f"tags: {', '.join(sorted(state.tags))}")
    if state.status is not None:
        notes.append(f"status: {state.status}")
    return "; ".join(notes)


def to_scxml(table: Table) -> str:
    """The table as SCXML text, ending in a newline.

    Raises ValueError for a machine, state or event name that is not a plain :data:`NAME`
    (SCXML would read a dot or a space as structure), and for a machine named like an
    event the engine raises itself (``done``, ``error``): its events would be taken for the
    engine's.
    """
    for kind, names in (
        ("machine", (table.name,)),
        ("state", table.state_names),
        ("event", table.event_names),
    ):
        for name in names:
            if not NAME.match(name):
                raise ValueError(f"{kind} name {name!r} is not a plain SCXML name")
    if table.name in RESERVED:
        raise ValueError(f"machine {table.name!r}: SCXML reserves its name for its own events")
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        _comment(f"callgate machine {table.name}: {table.doc}"),
        f'<scxml xmlns="{NAMESPACE}" version="1.0" name={quoteattr(table.name)}'
        f" initial={quoteattr(table.initial)}>",
    ]
    lines.extend(
        f"  {_comment(f'event {scxml_event(table.name, e.name)}: {e.doc}')}" for e in table.events
    )
    for state in table.states:
        outgoing = table.outgoing(state.name)
        ident = quoteattr(state.name)
        lines.append(f"  {_comment(_state_note(state))}")
        if state.final and not outgoing:
            lines.append(f"  <final id={ident}/>")
            continue
        lines.append(f"  <state id={ident}>")
        if state.final:
            lines.append(f"    <final id={quoteattr(state.name + FINAL_SUFFIX)}/>")
        for t in outgoing:
            lines.extend(_transition(table.name, t, "    "))
        lines.append("  </state>")
    lines.append("</scxml>")
    return "\n".join(lines) + "\n"
