"""``callgate demo``: bundled sample streams played through a buffer and drivers.

Each scenario (``examples/demo/*.json``) is a recorded stream of one provider, the
drivers that listen to it (each owning some tools) and the policy. The demo plays it
chunk by chunk, as a client loop would, and prints what came in, what the user saw, what
was held, every change of a driver's display machine, what ran and why, then checks the
outcome against the scenario's documented ``expect`` block. The tools are deterministic
stand-ins defined here (no network, nothing real is called).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from attrs import frozen

from callgate.audit.describe import chunk_kind
from callgate.audit.describe import quote as _quote
from callgate.audit.trace import Recorder, TraceStep
from callgate.cli.replay import Arrivals
from callgate.driver.drivers import Driver, Orchestrator
from callgate.driver.loop import stream_turn
from callgate.driver.tools import Tool
from callgate.fsm.turn import TurnState
from callgate.fsm.verdict import Verdict
from callgate.strategies.base import ToolResult


def _weather(city: str, unit: str = "C", days: int = 1) -> str:
    degrees = 18 if unit == "C" else 64
    if days > 1:
        return f"{days}-day forecast for {city}: {degrees} °{unit}, showers on day 2"
    return f"{city}: {degrees} °{unit}, light rain"


def _time(tz: str) -> str:
    return f"{tz}: 14:05"


def _search(query: str, limit: int = 5) -> dict[str, Any]:
    return {"query": query, "results": [f"{query} ({n})" for n in range(1, min(limit, 3) + 1)]}


DEMO_TOOLS: dict[str, Callable[..., Any]] = {
    "get_weather": _weather,
    "get_time": _time,
    "search": _search,
}
"""Deterministic stand-ins for the tools the scenarios' drivers own."""


@frozen
class Scenario:
    """One bundled stream with its drivers, policy and documented outcome."""

    name: str
    title: str
    story: str
    profile: str
    policy: str
    drivers: Mapping[str, Mapping[str, Mapping[str, Any]]]
    chunks: tuple[Mapping[str, Any], ...]
    expect: Mapping[str, Any]
    text_formats: tuple[str, ...] | None = None
    """The drivers' text formats; None: the default (chosen from the stream's model)."""


def scenarios() -> list[Scenario]:
    """The bundled scenarios, in order."""
    folder = resources.files("callgate").joinpath("examples").joinpath("demo")
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            data = json.loads(entry.read_text(encoding="utf-8"))
            found.append(
                Scenario(
                    entry.name.removesuffix(".json"),
                    data["title"],
                    data["story"],
                    data["profile"],
                    data["policy"],
                    data["drivers"],
                    tuple(data["chunks"]),
                    data.get("expect", {}),
                    tuple(data["text_formats"]) if "text_formats" in data else None,
                )
            )
    return found


@frozen
class Round:
    """One chunk (or the end) of a played scenario."""

    chunk: int | None
    added: str
    shown: str
    held: int
    """Characters of content received but neither shown nor hidden as a call's markup."""
    moves: tuple[str, ...]
    """Display-machine changes: ``driver: source -> target (event)``."""
    ran: tuple[tuple[str, ToolResult], ...]


@frozen
class Played:
    """A scenario after it was played, with its outcome."""

    scenario: Scenario
    rounds: tuple[Round, ...]
    turn: TurnState
    findings: tuple[str, ...]
    verdict: Verdict
    """The turn's verdict (:func:`~callgate.driver.loop.verdict`): pass, fail or not_applicable."""

    @property
    def shown(self) -> str:
        """Everything the user saw, in order."""
        return "".join(r.shown for r in self.rounds)

    @property
    def ran(self) -> list[str]:
        """The tools that ran (not refused), in order."""
        return [r.call.name for rd in self.rounds for _, r in rd.ran if not r.refused]

    @property
    def outcome(self) -> dict[str, Any]:
        """What the ``expect`` block documents: shown text, tools run, the turn's verdict."""
        return {"shown": self.shown, "ran": self.ran, "turn": self.turn}

    @property
    def as_documented(self) -> bool:
        """Whether the outcome matches the scenario's ``expect`` block."""
        return self.outcome == dict(self.scenario.expect)


def _drivers(scenario: Scenario) -> dict[str, Driver]:
    return {
        name: Driver(
            [Tool(tool, schema, DEMO_TOOLS.get(tool)) for tool, schema in tools.items()],
            policy=scenario.policy,
            name=name,
            text_formats=scenario.text_formats,
        )
        for name, tools in scenario.drivers.items()
    }


def play(scenario: Scenario, recorder: Recorder | None = None) -> Played:
    """Play ``scenario`` through one buffer and its drivers, recording every round.

    Every machine step goes to ``recorder`` (a new one unless given).
    """
    drivers = _drivers(scenario)
    recorder = Recorder() if recorder is None else recorder
    orchestrator = Orchestrator(list(drivers.values()), policy=scenario.policy)
    buffer = orchestrator.new_stream_buffer(recorder=recorder)
    owner = {tool: name for name, driver in drivers.items() for tool in driver.tools}
    rounds: list[Round] = []
    arrivals = Arrivals()
    seen = 0
    for step in stream_turn(scenario.chunks, list(drivers.values()), buffer):
        content, fragments = arrivals.since_last(buffer)
        added = _added(content, fragments, buffer)
        if not added and step.chunk is not None:
            added = chunk_kind(scenario.chunks[step.chunk])
        ran = tuple((owner[r.call.name], r) for r in step.response.results)
        moves = _moves(recorder.steps[seen:], list(drivers))
        seen = len(recorder.steps)
        rounds.append(Round(step.chunk, added, step.text, buffer.text_queue.held, moves, ran))
    findings = tuple(f"{f.code}: {f.message}" for f in buffer.findings if f.severity == "error")
    status = buffer.verdict_of(recorder.stepper("verdict", "verdict"))
    return Played(scenario, tuple(rounds), buffer.turn_state, findings, status)


def _moves(steps: list[TraceStep], names: list[str]) -> tuple[str, ...]:
    """The slot and turn machines' changes in one round, then each driver's display machine's.

    For example ``slot 0 terminal→validated; weather pending→executed``.
    """
    slots = dict.fromkeys(s.instance for s in steps if s.machine in ("slot", "turn"))
    drivers = [name for name in names if any(s.instance == name for s in steps)]
    moves = []
    for instance in [*slots, *drivers]:
        changed = [s for s in steps if s.instance == instance and s.source != s.target]
        if changed:
            path = "→".join([changed[0].source, *(s.target for s in changed)])
            moves.append(f"{instance} {path}")
    return tuple(moves)


def _added(content: str, fragments: Mapping[int, str | None], buffer: Any) -> str:
    """What one chunk added: its content delta and the call fragments, in words."""
    names = {slot.key: slot.name or "?" for slot in buffer.slots}
    parts = [f"text {_quote(content)}"] if content else []
    for key, text in fragments.items():
        what = f"+{_quote(text)}" if text else "opens"
        parts.append(f"call {key} {names.get(key, '?')} {what}")
    return ", ".join(parts)


def format_played(played: Played, number: int, *, verbose: bool = False) -> str:
    """The scenario for the terminal: the timeline, what ran and why, the verdict."""
    scenario = played.scenario
    lines = [
        f"━━ {number}. {scenario.title}",
        f"   {scenario.profile} stream, {len(scenario.chunks)} chunks, policy {scenario.policy}",
        f"   {scenario.story}",
        "   drivers: "
        + " · ".join(f"{n} owns {', '.join(t)}" for n, t in scenario.drivers.items()),
        "",
        f"   {'chunk':<6} {'what came in':<44} {'user sees':<28} decisions",
    ]
    quiet: list[Round] = []

    def flush() -> None:
        if quiet:
            first, last = quiet[0].chunk, quiet[-1].chunk
            span = f"#{first}" if first == last else f"#{first}-{last}"
            held = f" (holding {quiet[-1].held} chars)" if quiet[-1].held else ""
            count = f"{len(quiet)} chunk{'s' if len(quiet) > 1 else ''}"
            lines.append(f"   {span:<6} … {count}, nothing new shown or decided{held}")
            quiet.clear()

    for rd in played.rounds:
        if not verbose and not (rd.shown or rd.moves or rd.ran or rd.chunk is None):
            quiet.append(rd)
            continue
        flush()
        where = "end" if rd.chunk is None else f"#{rd.chunk}"
        held = f" [holding {rd.held}]" if rd.held else ""
        shown = _quote(rd.shown, 28) if rd.shown else ""
        added = rd.added if len(rd.added) <= 44 else rd.added[:41] + "..."
        lines.append(f"   {where:<6} {added:<44} {shown:<28} {'; '.join(rd.moves)}{held}")
        for driver, result in rd.ran:
            verb = "refused" if result.refused else "ran"
            call = f"{result.call.name}({json.dumps(result.call.arguments, ensure_ascii=False)})"
            lines.append(f"   {'':<6} ↳ {driver} {verb} {call}")
            lines.append(f"   {'':<6}   → {_quote(result.content, 100)}")
    flush()
    lines.append("")
    lines.append(f"   the user saw: {json.dumps(played.shown, ensure_ascii=False)}")
    ran = ", ".join(played.ran) or "nothing"
    lines.append(f"   ran: {ran}; native-call turn: {played.turn}; verdict: {played.verdict}")
    for item in played.findings:
        lines.append(f"   why: {item}")
    verdict = "as documented" if played.as_documented else "NOT as documented"
    lines.append(f"   → {verdict}")
    if not played.as_documented:
        lines.append(f"     expected {json.dumps(dict(scenario.expect), ensure_ascii=False)}")
        lines.append(f"     got      {json.dumps(played.outcome, ensure_ascii=False)}")
    return "\n".join(lines)


def run_demo(*, verbose: bool = False) -> tuple[str, bool]:
    """Play every scenario; return the text to print and whether all were as documented."""
    out, ok = [], True
    for number, scenario in enumerate(scenarios(), 1):
        played = play(scenario)
        ok = ok and played.as_documented
        out.append(format_played(played, number, verbose=verbose))
    return "\n\n".join(out), ok
