"""The mutation tool's maps name files that exist: a moved test must not shrink the sample."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "tools" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_module_and_test_file_the_maps_name_exists() -> None:
    tool = _tool()
    assert tool.missing() == []
    named = {m.path for m in tool.MODULES.values()} | {
        t for m in tool.MODULES.values() for t in m.tests
    }
    assert len(named) > 20  # the maps are read, not empty


def test_a_map_naming_a_moved_file_stops_the_tool_with_the_file_named() -> None:
    tool = _tool()
    moved = tool.Module("src/callgate/buffer.py", ("tests/test_buffer.py",))
    tool.MODULES["moved"] = moved
    try:
        assert tool.missing() == ["tests/test_buffer.py"]
        assert tool.main(["equivalents"]) == 2
    finally:
        del tool.MODULES["moved"]


def test_the_tool_starts_on_the_maps_as_committed() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "mutation.py"), "equivalents"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("| mutant |")
