"""The bundled demo scenarios by name, as capture files and as recorded replays.

Shared by the audit tests (tests/audit), the command line's (tests/cli) and the diagrams'
(tests/fsm), which each play a scenario and look at a different view of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from callgate.audit.trace import Recorder
from callgate.cli.demo import scenarios
from callgate.cli.replay import replay

SCENARIOS = {s.name: s for s in scenarios()}


def capture(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A demo scenario written as a capture file and a tools file."""
    scenario = SCENARIOS[name]
    chunks = tmp_path / f"{name}.json"
    chunks.write_text(json.dumps(list(scenario.chunks)), encoding="utf-8")
    tools = tmp_path / "tools.json"
    merged = {k: v for d in scenario.drivers.values() for k, v in d.items()}
    tools.write_text(json.dumps(merged), encoding="utf-8")
    return chunks, tools


def recorded(name: str, formats: list[str] | None = None) -> tuple[dict[str, Any], Recorder]:
    scenario = SCENARIOS[name]
    tools = {k: v for d in scenario.drivers.values() for k, v in d.items()}
    recorder = Recorder()
    return replay(list(scenario.chunks), tools, text_formats=formats, recorder=recorder), recorder
