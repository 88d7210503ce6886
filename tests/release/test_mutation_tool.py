"""The mutation tool's run and rerun on a tiny scratch project, with mutmut stood in for.

The stand-in does what mutmut 3.8 does to the scratch project's records: it reads the test
list from the scratch ``pyproject.toml``, resets every verdict when that list differs from
the one of its last run, and records a verdict for each mutant it is asked to run. No
mutant is made and no test runs, so these tests neither need mutmut nor take time.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from test_mutation_map import _tool

PATH = "src/tiny/mod.py"
ONE, TWO, THREE = (f"tiny.mod.x_f__mutmut_{n}" for n in (1, 2, 3))


def _project(root: Path) -> None:
    (root / "src" / "tiny").mkdir(parents=True)
    (root / "src" / "tiny" / "mod.py").write_text("def f(x):\n    return x + 1\n")
    (root / "tests").mkdir()
    for name in ("test_old.py", "test_new.py"):
        (root / "tests" / name).write_text("def test_f() -> None:\n    pass\n")
    (root / "tools").mkdir()
    _list_equivalents(root)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "tiny"\n\n[tool.mutmut]\nonly_mutate = ["elsewhere.py"]\n'
    )


def _list_equivalents(root: Path, *names: str) -> None:
    listed = "".join(f"    {name!r}: 'no input tells it apart',\n" for name in names)
    (root / "tools" / "mutation_equivalents.py").write_text(f"EQUIVALENT = {{\n{listed}}}\n")


def _meta(workdir: Path) -> Path:
    return workdir / "mutants" / (PATH + ".meta")


def _test_list(workdir: Path) -> list[str]:
    config = tomllib.loads((workdir / "pyproject.toml").read_text())["tool"]["mutmut"]
    selection: list[str] = config["pytest_add_cli_args_test_selection"]
    return selection


class _Mutmut:
    """Stands in for `mutmut run` in the scratch project, recording what each run saw."""

    def __init__(self) -> None:
        self.verdicts: dict[str, int] = {}
        self.during: Callable[[], None] = lambda: None
        self.runs: list[tuple[list[str], list[str]]] = []
        self.real: Callable[[Path, list[str], bool, int], None] = self
        """The tool's own ``mutmut()``, which runs the program, for a test that wants it."""

    def __call__(self, workdir: Path, names: list[str], quiet: bool, children: int = 1) -> None:
        tests = _test_list(workdir)
        self.runs.append((list(names), tests))
        meta = _meta(workdir)
        if meta.exists():
            data = json.loads(meta.read_text())
            if data["tests"] != tests:
                data["exit_code_by_key"] = dict.fromkeys(data["exit_code_by_key"])
        else:
            meta.parent.mkdir(parents=True)
            data = {"exit_code_by_key": dict.fromkeys((ONE, TWO, THREE))}
        data["tests"] = tests
        for name in names or list(data["exit_code_by_key"]):
            data["exit_code_by_key"][name] = self.verdicts[name]
        meta.write_text(json.dumps(data))
        self.during()


def _statuses(workdir: Path, module: object) -> dict[str, str]:
    codes = json.loads(_meta(workdir).read_text())["exit_code_by_key"]
    names = {None: "not checked", 0: "survived", 1: "killed"}
    return {name: names[code] for name, code in codes.items()}


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, _Mutmut, Path]:
    """The tool pointed at a scratch project whose map has one module, "tiny"."""
    tool = _tool()
    root = tmp_path / "project"
    _project(root)
    fake = _Mutmut()
    fake.real = tool.mutmut
    monkeypatch.setattr(tool, "ROOT", root)
    monkeypatch.setattr(tool, "BUILD", root / "build" / "mutation")
    monkeypatch.setattr(tool, "mutmut", fake)
    monkeypatch.setattr(tool, "statuses", _statuses)
    monkeypatch.setattr(tool, "mutant_prefix", lambda module: "tiny.mod.")
    monkeypatch.setitem(tool.MODULES, "tiny", tool.Module(PATH, ("tests/test_old.py",)))
    return tool, fake, root


def _survivors(root: Path) -> list[str]:
    return (root / "build" / "mutation" / "tiny" / "survivors.txt").read_text().split()


def test_rerun_runs_the_test_files_the_map_lists_now(
    tool: tuple[ModuleType, _Mutmut, Path],
) -> None:
    mutation, fake, root = tool
    fake.verdicts = {ONE: 1, TWO: 0, THREE: 0}
    mutation.run(["tiny"], quiet=True)
    assert fake.runs == [([], ["tests/test_old.py"])]

    mutation.MODULES["tiny"] = mutation.Module(PATH, ("tests/test_old.py", "tests/test_new.py"))
    fake.verdicts = {TWO: 1, THREE: 0}
    mutation.rerun("tiny", quiet=True)

    assert fake.runs[1] == ([TWO, THREE], ["tests/test_old.py", "tests/test_new.py"])
    assert _survivors(root) == [THREE]


def test_a_rerun_with_a_new_test_list_keeps_the_verdicts_of_the_mutants_it_does_not_run(
    tool: tuple[ModuleType, _Mutmut, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutation, fake, root = tool
    fake.verdicts = {ONE: 1, TWO: 0, THREE: 0}
    mutation.run(["tiny"], quiet=True)
    mutation.MODULES["tiny"] = mutation.Module(PATH, ("tests/test_old.py", "tests/test_new.py"))
    fake.verdicts = {TWO: 0, THREE: 1}
    capsys.readouterr()

    assert mutation.rerun("tiny", quiet=True) == 1

    # mutmut forgot ONE's kill when the list changed; the rerun puts it back.
    assert _statuses(root / "build" / "mutation" / "tiny", None) == {
        ONE: "killed",
        TWO: "survived",
        THREE: "killed",
    }
    assert _survivors(root) == [TWO]
    out = capsys.readouterr().out
    assert "| tiny | 3 | 0 | 2 | 1 | 66.7% |" in out
    assert "kept the last run's verdict of 1 mutant(s) not run again" in out


def test_the_survivors_file_leaves_out_an_equivalent_listed_during_the_run(
    tool: tuple[ModuleType, _Mutmut, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutation, fake, root = tool
    fake.verdicts = {ONE: 1, TWO: 0, THREE: 0}
    fake.during = lambda: _list_equivalents(root, TWO)

    mutation.run(["tiny"], quiet=True)

    assert _survivors(root) == [THREE]
    assert "| tiny | 3 | 1 | 1 | 1 | 50.0% |" in capsys.readouterr().out


def test_rerun_rewrites_the_survivors_file_against_the_list_as_it_stands(
    tool: tuple[ModuleType, _Mutmut, Path],
) -> None:
    mutation, fake, root = tool
    four = "tiny.mod.x_f__mutmut_4"
    fake.verdicts = {ONE: 0, TWO: 0, THREE: 0}
    mutation.run(["tiny"], quiet=True)
    assert _survivors(root) == [ONE, TWO, THREE]

    _list_equivalents(root, ONE)  # between the runs: not run again
    fake.during = lambda: _list_equivalents(root, ONE, TWO, four)  # while it runs
    mutation.rerun("tiny", quiet=True)

    assert fake.runs[1][0] == [TWO, THREE]
    assert _survivors(root) == [THREE]


def test_an_equivalents_file_that_does_not_load_leaves_the_list_of_the_start(
    tool: tuple[ModuleType, _Mutmut, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutation, fake, root = tool
    _list_equivalents(root, ONE)
    fake.verdicts = {ONE: 0, TWO: 0, THREE: 0}
    equivalents = root / "tools" / "mutation_equivalents.py"
    fake.during = lambda: equivalents.write_text("EQUIVALENT = {\n")  # an edit half made

    mutation.run(["tiny"], quiet=True)

    assert _survivors(root) == [TWO, THREE]
    assert "mutation_equivalents.py does not load" in capsys.readouterr().err


def test_rerun_without_a_run_of_the_mapped_file_says_so(
    tool: tuple[ModuleType, _Mutmut, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutation, fake, _ = tool
    fake.verdicts = {ONE: 1, TWO: 0, THREE: 0}
    mutation.run(["tiny"], quiet=True)
    mutation.MODULES["tiny"] = mutation.Module("src/tiny/moved.py", ("tests/test_old.py",))

    assert mutation.rerun("tiny", quiet=True) == 2

    assert "no full run of src/tiny/moved.py" in capsys.readouterr().err
    assert len(fake.runs) == 1


def _run_program(
    tool: tuple[ModuleType, _Mutmut, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    body: str,
) -> None:
    """Make the tool run a stand-in mutmut program that does ``body`` and fails to start."""
    mutation, fake, _ = tool
    program = tmp_path / "mutmut"
    program.write_text(f"#!/bin/sh\n{body}\nexit 1\n")
    program.chmod(0o755)
    monkeypatch.setattr(mutation, "_MUTMUT", str(program))
    monkeypatch.setattr(mutation, "mutmut", fake.real)
    monkeypatch.setattr(mutation, "missing", list)


def test_a_mutmut_that_cannot_start_gives_no_score_and_exit_2(
    tool: tuple[ModuleType, _Mutmut, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mutation, _, root = tool
    _run_program(tool, tmp_path, monkeypatch, "echo 'Failed to run clean test'")

    assert mutation.main(["-q", "run", "tiny"]) == 2

    err = capsys.readouterr().err
    assert "mutmut stopped before testing the mutants (exit 1)" in err
    assert "no score is given" in err
    assert not (root / "build" / "mutation" / "tiny" / "survivors.txt").exists()


def test_the_sample_tests_as_many_mutants_at_once_as_it_is_told(
    tool: tuple[ModuleType, _Mutmut, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mutation, _, _ = tool
    seen = tmp_path / "argv"
    _run_program(tool, tmp_path, monkeypatch, f'echo "$@" > {seen}')
    monkeypatch.setattr(mutation, "mutant_names", lambda module: [ONE, TWO, THREE])
    monkeypatch.setattr(mutation, "MODULES", {"tiny": mutation.MODULES["tiny"]})

    assert mutation.main(["-q", "sample", "--children", "2", "--per-module", "1"]) == 2

    argv = seen.read_text().split()
    assert argv[:3] == ["run", "--max-children", "2"]
    assert len(argv) == 4 and argv[3] in (ONE, TWO, THREE)


def test_a_sample_on_no_worker_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        _tool().main(["sample", "--children", "0"])

    assert stopped.value.code == 2
    assert "--children must be at least 1" in capsys.readouterr().err
