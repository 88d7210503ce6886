"""Every benchmark script answers ``--help`` without running, and says what it is missing.

docs/performance.md and docs/integrations.md tell people to run ``python bench/NAME.py``;
``--help`` must show its options and exit 0, never start a run of minutes, and a
benchmark whose framework is not installed names it in one line instead of a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(path.name for path in (ROOT / "bench").glob("bench_*.py"))


def bench(script: str, *args: str, hide: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python bench/SCRIPT ARGS`` from this checkout, with the modules ``hide`` not importable."""
    code = "import runpy, sys\n"
    code += "".join(f"sys.modules[{name!r}] = None\n" for name in hide)
    code += f"sys.argv = [{script!r}, *{list(args)!r}]\n"
    code += f"runpy.run_path({str(ROOT / 'bench' / script)!r}, run_name='__main__')\n"
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT / "bench",
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench")])},
    )


def test_every_benchmark_is_listed() -> None:
    assert SCRIPTS == [
        "bench_detector.py",
        "bench_driver.py",
        "bench_extproc.py",
        "bench_gateway.py",
        "bench_growth.py",
        "bench_guardrail.py",
        "bench_integrations.py",
        "bench_ledger.py",
        "bench_partial.py",
        "bench_proxy.py",
        "bench_stack.py",
        "bench_wire.py",
    ]


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_answers_help_and_runs_nothing(script: str) -> None:
    # the frameworks hidden: --help needs none of them, in CI (which has them) as here
    result = bench(script, "--help", hide=("litellm", "pydantic_ai"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {script} [-h]")
    first = (ROOT / "bench" / script).read_text(encoding="utf-8").split('"""')[1].split()
    assert " ".join(first[:4]) in " ".join(result.stdout.split())  # its docstring's summary
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("hidden", "named"),
    [
        (("litellm", "pydantic_ai"), ["litellm", "pydantic_ai"]),
        (("litellm",), ["litellm"]),
    ],
)
def test_the_integrations_benchmark_names_the_framework_it_misses(
    hidden: tuple[str, ...], named: list[str]
) -> None:
    result = bench("bench_integrations.py", "--quick", hide=hidden)
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stderr.startswith("bench_integrations: needs ")
    for module in named:
        assert f"{module} (pip install 'callgate[" in result.stderr
