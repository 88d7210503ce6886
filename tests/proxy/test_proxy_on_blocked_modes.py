"""The ``--on-blocked`` modes in agent loops: the real openai client, a model that errs.

The fake model (:class:`callgate.proxy.upstream.FlakyModel`) writes a schema-invalid call
with a seeded probability per conversation and attempt, so which attempts are invalid is
known; each mode must give exactly the outcome its definition implies for them. The same
loops, larger, are the measurement in ``bench/bench_proxy.py --modes``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from callgate.proxy.engine import Options

ROUNDS = 6
CONVERSATIONS = 16


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/bench_proxy.py as a module (its folder on the path: it imports bench_stack)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_proxy.py"
    monkeypatch.syspath_prepend(str(path.parent))
    spec = importlib.util.spec_from_file_location("bench_proxy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_valid(run: dict[str, object], conversation: int) -> int | None:
    model = run["model"]
    flags = [model.invalid(f"c{conversation}", n) for n in range(ROUNDS)]  # type: ignore[attr-defined]
    return next((n for n, bad in enumerate(flags) if not bad), None)


@pytest.mark.parametrize(("mode", "repairs"), [("notice", 1), ("repair", 2), ("pass", 1)])
def test_each_mode_gives_what_its_definition_implies(
    mode: str, repairs: int, bench: ModuleType
) -> None:
    run = bench.measure_mode(mode, repairs, 0.5, CONVERSATIONS)
    for n, result in enumerate(run["results"]):
        valid = first_valid(run, n)
        if mode == "notice":  # the turn ends at the first invalid call, with a notice
            assert result == {"converged": valid == 0, "invalid": 0}, n
        elif mode == "repair":  # the proxy asks again, up to `repairs` times
            converges = valid is not None and valid <= repairs
            assert result == {"converged": converges, "invalid": 0}, n
        else:  # the client's tool receives every invalid call and answers it with an error
            converges = valid is not None and valid < ROUNDS - 1
            leading = valid if valid is not None else ROUNDS
            assert result == {"converged": converges, "invalid": min(leading, ROUNDS)}, n
    assert 0 < sum(first_valid(run, n) != 0 for n in range(CONVERSATIONS)) < CONVERSATIONS


def test_the_default_mode_is_the_measured_one() -> None:
    assert (Options().on_blocked, Options().repairs) == ("repair", 2)
