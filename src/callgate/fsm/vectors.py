"""Conformance vectors: runs of a machine that another runtime must reproduce exactly.

A vector file (format ``callgate.vectors`` version 1) holds the runs of one machine::

    {"format": "callgate.vectors", "version": 1, "machine": str,
     "runs": [{"name": str, "source": "fixture" | "demo" | "transition" | "refusal",
               "initial": str,
               "steps": [{"event": str, "state": str, "refused": bool}, ...]}, ...]}

A run starts in ``initial`` (the table's initial state) and feeds ``steps`` in order.
``state`` is the state after the step. A refused step names an event that the state
before it does not accept: the runtime must refuse it (raise, report) and its state must
not change, so ``state`` repeats the state before. Recorded runs (``fixture``, ``demo``)
come from :mod:`callgate.cli.conformance`; the generated runs here reach every transition
(``transition``) and refuse every ``(state, event)`` pair the table does not accept
(``refusal``), each along a shortest path from the initial state.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from attrs import frozen

from callgate.errors import VectorError
from callgate.fsm.interpreter import Interpreter
from callgate.fsm.table import Table

FORMAT = "callgate.vectors"
VERSION = 1


@frozen
class Move:
    """One event fed to a machine and the state after it (unchanged when refused)."""

    event: str
    state: str
    refused: bool = False


@frozen
class Run:
    """One machine instance's life: where it started and every step it took."""

    name: str
    source: str
    initial: str
    steps: tuple[Move, ...]

    def as_dict(self) -> dict[str, Any]:
        """The run as plain JSON-ready data."""
        return {
            "name": self.name,
            "source": self.source,
            "initial": self.initial,
            "steps": [
                {"event": s.event, "state": s.state, "refused": s.refused} for s in self.steps
            ],
        }


def _paths(table: Table) -> dict[str, tuple[str, ...]]:
    """A shortest event path from the initial state to every state (first found wins)."""
    paths: dict[str, tuple[str, ...]] = {table.initial: ()}
    todo = deque([table.initial])
    while todo:
        state = todo.popleft()
        for t in table.outgoing(state):
            if t.target not in paths:
                paths[t.target] = (*paths[state], t.event)
                todo.append(t.target)
    return paths


def _walk(interpreter: Interpreter[str], events: Iterable[str]) -> list[Move]:
    steps, state = [], interpreter.initial
    for event in events:
        state = interpreter.step(state, event)
        steps.append(Move(event, state))
    return steps


def generated_runs(table: Table) -> list[Run]:
    """Runs that take every transition once and refuse every pair the table lacks."""
    interpreter = Interpreter[str](table)
    paths = _paths(table)
    runs = []
    for t in table.transitions:
        steps = _walk(interpreter, (*paths[t.source], t.event))
        runs.append(
            Run(f"{t.source} --{t.event}--> {t.target}", "transition", table.initial, tuple(steps))
        )
    for state in table.state_names:
        for event in table.event_names:
            if not interpreter.accepts(state, event):
                steps = _walk(interpreter, paths[state])
                steps.append(Move(event, state, refused=True))
                runs.append(Run(f"{state} refuses {event}", "refusal", table.initial, tuple(steps)))
    return runs


def mismatches(table: Table, runs: Sequence[Run]) -> list[str]:
    """Every place where ``table`` does not reproduce a run, as readable lines."""
    interpreter = Interpreter[str](table)
    found = []
    for run in runs:
        if run.initial != table.initial:
            found.append(f"{run.name}: starts in {run.initial!r}, the table in {table.initial!r}")
            continue
        state = run.initial
        for number, step in enumerate(run.steps):
            accepted = interpreter.accepts(state, step.event)
            after = interpreter.step(state, step.event) if accepted else state
            if accepted == step.refused or after != step.state:
                expected = "refused" if step.refused else f"-> {step.state}"
                got = f"-> {after}" if accepted else "refused"
                found.append(
                    f"{run.name}: step {number} {step.event!r} in {state!r}: "
                    f"expected {expected}, the table gives {got}"
                )
                break
            state = after
    return found


def dumps(machine: str, runs: Sequence[Run]) -> str:
    """A vector document as JSON text: one run per line, so diffs stay readable."""
    head = json.dumps({"format": FORMAT, "version": VERSION, "machine": machine})
    body = ",\n".join("  " + json.dumps(run.as_dict(), ensure_ascii=False) for run in runs)
    return f'{head[:-1]}, "runs": [\n{body}\n]}}\n'


def loads(text: str) -> tuple[str, list[Run]]:
    """Parse a vector document into its machine name and runs."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise VectorError(f"expected format {FORMAT!r} version {VERSION}")
    try:
        runs = [
            Run(
                run["name"],
                run["source"],
                run["initial"],
                tuple(Move(s["event"], s["state"], s["refused"]) for s in run["steps"]),
            )
            for run in data["runs"]
        ]
        return data["machine"], runs
    except (KeyError, TypeError) as exc:
        raise VectorError(f"vector document is missing or mistypes a field: {exc}") from exc
