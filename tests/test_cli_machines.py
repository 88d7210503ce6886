"""`callgate diagram` and `callgate export` draw and write the tables the code runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from callgate.cli import main
from callgate.diagrams import to_dot
from callgate.fsm import MACHINES
from callgate.fsm.export import dumps, loads


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_diagram_prints_the_tables_dot(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagram", name]) == 0
    assert capsys.readouterr().out == to_dot(MACHINES[name])


@pytest.mark.parametrize("fmt", ["svg", pytest.param("png", marks=pytest.mark.needs("dot"))])
def test_diagram_renders_to_a_file(fmt: str, tmp_path: Path) -> None:
    target = tmp_path / f"slot.{fmt}"
    assert main(["diagram", "slot", "--format", fmt, "-o", str(target)]) == 0
    data = target.read_bytes()
    assert data.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in data


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_export_writes_json_that_loads_back_equal(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", name, "--format", "json"]) == 0
    assert loads(capsys.readouterr().out) == MACHINES[name]
    target = tmp_path / f"{name}.json"
    assert main(["export", name, "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == dumps(MACHINES[name])


def test_an_unknown_machine_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["diagram", "nope"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
