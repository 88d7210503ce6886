"""Generated documentation stays in step with the code that it describes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_finding_catalogue_matches_the_code_and_fixtures() -> None:
    make = load("make_findings")
    assert (DOCS / "findings.md").read_text(encoding="utf-8") == make.render(), (
        "docs/findings.md is stale: run python docs/make_findings.py"
    )


def test_every_finding_code_is_in_the_catalogue() -> None:
    from callgate.gate.findings import CODES

    text = (DOCS / "findings.md").read_text(encoding="utf-8")
    assert all(f"| `{code}` |" in text for code in CODES)
