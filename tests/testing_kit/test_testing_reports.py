"""What callgate.testing says when it fails: a short report that leads with the stream.

A report a person reads first: what the adapter did, the stream's wire and fault, then the
shrunk stream one JSON chunk a line; Hypothesis's own replay of the steps comes after it
and names the stream in one line. An adapter whose ``calls()`` raises gets the same
report; a missing Hypothesis is named with its install line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.stateful import run_state_machine_as_test

from callgate.testing import AdapterMachine, streams
from test_testing_kit import CallgateAdapter

SHRUNK = settings(
    max_examples=60,
    stateful_step_count=12,
    deadline=None,
    database=None,
    report_multiple_bugs=False,
    phases=[Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)
"""A search and its shrinking: the report under test is the shrunk one."""


class Reader(CallgateAdapter):
    """callgate's own buffer as the adapter (correct), on clean OpenAI streams of calls."""

    wire = "openai"
    faults = False
    text = False
    calls_per_turn = (1, 3)


class Forgetful(Reader):
    """Keeps only the first call of a turn: loses the others."""

    calls_per_turn = (2, 3)

    def calls(self) -> Sequence[Any]:
        return list(super().calls())[:1]


class RaisingCalls(Reader):
    """``calls()`` itself raises once the turn has a call to give."""

    def calls(self) -> Sequence[Any]:
        ready = super().calls()
        if ready:
            raise RuntimeError("the adapter's own bug")
        return ready


def failure(machine: type[AdapterMachine]) -> tuple[str, str]:
    """The kit's report (the exception's message) and all Hypothesis adds after it."""
    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(machine, settings=SHRUNK)
    return str(caught.value), "\n".join(getattr(caught.value, "__notes__", []))


def stream_lines(report: str) -> list[dict[str, Any]]:
    """The chunks the report shows, one JSON object a line."""
    return [json.loads(line) for line in report.splitlines() if line.startswith("{")]


def test_the_report_leads_with_the_shrunk_stream_and_what_the_adapter_did() -> None:
    report, notes = failure(Forgetful)
    lines = report.splitlines()
    assert lines[0].startswith("the adapter loses [("), report
    assert lines[1].startswith("openai stream, clean,") and "chunks fed:" in lines[1], report
    chunks = stream_lines(report)
    assert lines[2 : 2 + len(chunks)] == [json.dumps(c, ensure_ascii=False) for c in chunks]
    assert sum(1 for c in chunks if c["choices"][0]["delta"].get("tool_calls")) >= 2, report
    # Hypothesis's replay of the steps names the stream in one line, never its repr again.
    drawn = [line for line in notes.splitlines() if "(stream):" in line]
    assert len(drawn) == 1 and "shown above" in drawn[0], notes
    assert "argument_chars" not in notes and "'choices'" not in notes, notes


def test_an_exception_in_the_adapters_calls_is_reported_with_the_stream() -> None:
    report, _ = failure(RaisingCalls)
    first = report.splitlines()[0]
    assert first.startswith("the adapter's calls() raised RuntimeError(\"the adapter's own bug\")")
    assert "on a stream callgate accepts" in first, report
    assert stream_lines(report), report


def test_a_stream_example_prints_as_its_chunks_one_a_line() -> None:
    from hypothesis.vendor.pretty import pretty

    example = find(streams("anthropic", calls=1, quirks=False, text=False), lambda _: True)
    shown = pretty(example)
    assert shown.splitlines()[0] == "StreamExample(anthropic stream, clean, 1 call,"
    assert [json.loads(line) for line in shown.splitlines()[1:-1]] == list(example.dicts)
    assert "argument_chars" not in shown


BLOCK_HYPOTHESIS = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoHypothesis(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "hypothesis" or name.startswith("hypothesis."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoHypothesis())
    """
)


@pytest.mark.parametrize(
    "statement",
    [
        "from callgate.testing import streams",
        "import callgate.testing.machine",
        "import callgate.testing; callgate.testing.AdapterMachine",
    ],
)
def test_without_hypothesis_the_kit_says_what_to_install(statement: str) -> None:
    code = BLOCK_HYPOTHESIS + textwrap.dedent(
        f"""
        import callgate.testing  # the package itself loads: its pytest plugin must
        try:
            {statement}
        except ModuleNotFoundError as exc:
            print(type(exc).__name__, exc.name, "|", exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ModuleNotFoundError hypothesis |"), done.stdout
    assert "pip install 'callgate[testing]'" in done.stdout, done.stdout
