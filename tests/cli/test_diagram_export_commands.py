"""`callgate diagram` and `callgate export` draw and write the tables the code runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from callgate.cli.commands import main
from callgate.cli.conformance import vector_files
from callgate.diagrams import to_dot
from callgate.fsm import MACHINES
from callgate.fsm.export import EXPORTS, dumps, loads


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


@pytest.mark.parametrize("fmt", ["xstate", "scxml"])
def test_export_writes_the_runtime_formats(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, table in MACHINES.items():
        assert main(["export", name, "--format", fmt]) == 0
        assert capsys.readouterr().out == EXPORTS[fmt](table)
    target = tmp_path / "turn.out"
    assert main(["export", "turn", "--format", fmt, "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == EXPORTS[fmt](MACHINES["turn"])


def test_export_vectors_writes_one_file_per_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "new" / "vectors"
    assert main(["export", "--vectors", str(folder)]) == 0
    expected = vector_files()
    assert sorted(p.name for p in folder.iterdir()) == sorted(expected)
    for file_name, text in expected.items():
        assert (folder / file_name).read_text(encoding="utf-8") == text
    assert capsys.readouterr().out.count("wrote ") == len(MACHINES)


def test_export_without_a_machine_or_vectors_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["export"]) == 2
    assert "name a machine, or give --vectors DIR" in capsys.readouterr().err
    assert main(["export", "slot", "--vectors", "somewhere"]) == 2
    assert "name a machine, or give --vectors DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "slot", "--format", "yaml"])
    assert exit_info.value.code == 2


def test_export_to_a_path_it_cannot_write_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("kept", encoding="utf-8")
    assert main(["export", "--vectors", str(blocker / "vectors")]) == 2
    assert main(["export", "slot", "--format", "scxml", "-o", str(blocker / "x.scxml")]) == 2
    err = capsys.readouterr().err
    assert err.count("callgate export: ") == 2
    assert str(blocker) in err
    assert blocker.read_text(encoding="utf-8") == "kept"
