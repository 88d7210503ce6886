"""Conformance vectors of every machine: recorded runs of the bundled streams, and generated ones.

Each bundled fixture (``examples/*.json``) is replayed through a buffer and a dry-run
driver listening for the default text formats, and each demo scenario is played through
its drivers, with a :class:`~callgate.audit.trace.Recorder`. The recorder's steps are split
per machine instance (``slot 0``, ``turn``, ``detector``, a driver's display) into
:class:`~callgate.fsm.vectors.Run` values; :func:`~callgate.fsm.vectors.generated_runs`
adds the runs that reach every transition and every refusal. :func:`write_vectors` is
``callgate export --vectors DIR``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from callgate.audit.trace import Recorder, TraceStep
from callgate.cli.progress import Progress
from callgate.errors import RecordingError
from callgate.fsm import MACHINES
from callgate.fsm.vectors import Move, Run, dumps, generated_runs


def runs_of(steps: Sequence[TraceStep], name: str, source: str) -> dict[str, list[Run]]:
    """The recorded steps as one run per machine instance, grouped by machine."""
    instances: dict[tuple[str, str], list[TraceStep]] = {}
    for step in steps:
        instances.setdefault((step.machine, step.instance), []).append(step)
    found: dict[str, list[Run]] = {}
    for (machine, instance), taken in instances.items():
        initial = MACHINES[machine].initial
        state = initial
        for step in taken:
            if step.source != state:
                raise RecordingError(
                    f"{name}: {instance} of {machine} was in {state!r} but stepped from "
                    f"{step.source!r} on {step.event!r}"
                )
            state = step.target
        run = Run(
            f"{source} {name}: {instance}",
            source,
            initial,
            tuple(Move(s.event, s.target) for s in taken),
        )
        found.setdefault(machine, []).append(run)
    return found


def _fixture_steps(text: str) -> list[TraceStep]:
    """Replay one fixture's stream with a recorder; an unusable stream records what it got."""
    from callgate.cli.check import load_fixture
    from callgate.cli.replay import replay
    from callgate.errors import FixtureError
    from callgate.strategies.text.formats import DEFAULT_FORMATS

    recorder = Recorder()
    try:
        fixture = load_fixture(text)
        replay(
            fixture["stream"],
            fixture["tool_schemas"],
            text_formats=list(DEFAULT_FORMATS),
            recorder=recorder,
        )
    except (FixtureError, ValueError):
        pass
    return recorder.steps


@cache
def recorded_runs(progress: Progress | None = None) -> Mapping[str, tuple[Run, ...]]:
    """Every machine instance of every bundled fixture and demo scenario, by machine.

    Computed once per process: the bundled streams and the code that plays them are fixed.
    ``progress`` (a terminal's, for the command line) counts the streams played.
    """
    from callgate.cli.demo import play, scenarios

    found: dict[str, list[Run]] = {name: [] for name in MACHINES}
    folder = resources.files("callgate") / "examples"
    entries = sorted(
        (e for e in folder.iterdir() if e.name.endswith(".json")), key=lambda e: e.name
    )
    played = scenarios()
    if progress is not None:
        progress.total = len(entries) + len(played)
    sources: list[tuple[str, str, list[TraceStep]]] = []
    for entry in entries:
        steps = _fixture_steps(entry.read_text(encoding="utf-8"))
        sources.append((entry.name.removesuffix(".json"), "fixture", steps))
        if progress is not None:
            progress.advance()
    for scenario in played:
        recorder = Recorder()
        play(scenario, recorder)
        sources.append((scenario.name, "demo", recorder.steps))
        if progress is not None:
            progress.advance()
    for name, source, steps in sources:
        for machine, runs in runs_of(steps, name, source).items():
            found[machine].extend(runs)
    return MappingProxyType({machine: tuple(runs) for machine, runs in found.items()})


def all_runs(progress: Progress | None = None) -> dict[str, list[Run]]:
    """The conformance vectors of every machine: recorded runs first, then generated ones."""
    recorded = recorded_runs(progress)
    return {name: [*recorded[name], *generated_runs(table)] for name, table in MACHINES.items()}


def vector_files(runs: Mapping[str, Sequence[Run]] | None = None) -> dict[str, str]:
    """Each machine's vector file name and its exact text."""
    runs = all_runs() if runs is None else runs
    return {f"{name}.vectors.json": dumps(name, runs[name]) for name in sorted(runs)}


def write_vectors(folder: Path, progress: Progress | None = None) -> list[Path]:
    """Write every machine's vector file into ``folder`` (created if missing); the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in vector_files(all_runs(progress)).items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
