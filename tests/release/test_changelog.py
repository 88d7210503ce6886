"""Changelog fragments: each file of changelog.d/ is named ``<id>.<type>.md`` with a known type.

towncrier, which builds the fragments into CHANGELOG.md, skips a file whose type it does
not know without a word; this test is where such a file fails (see changelog.d/README.md).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAGMENTS = ROOT / "changelog.d"
TYPES = ("feature", "change", "fix", "doc")


def towncrier_config() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        config: dict[str, object] = tomllib.load(file)["tool"]["towncrier"]
    return config


def fragment_problem(name: str, types: tuple[str, ...] = TYPES) -> str | None:
    """Why ``name`` is not a valid fragment file name, or None when it is."""
    pattern = rf"(\+[\w.-]+|[0-9][\w-]*)\.({'|'.join(types)})(\.[0-9]+)?\.md"
    if re.fullmatch(pattern, name):
        return None
    parts = name.split(".")
    if len(parts) >= 3 and parts[-1] == "md" and parts[1] not in types:
        return f"{name}: type {parts[1]!r} is not one of {', '.join(types)}"
    return f"{name}: name it <issue>.<type>.md or +<slug>.<type>.md ({', '.join(types)})"


def test_the_configured_types_are_the_documented_four() -> None:
    config = towncrier_config()
    kinds = config["type"]
    assert isinstance(kinds, list)
    assert tuple(kind["directory"] for kind in kinds) == TYPES
    assert config["directory"] == "changelog.d" and config["filename"] == "CHANGELOG.md"
    readme = (FRAGMENTS / "README.md").read_text(encoding="utf-8")
    assert all(f"`{kind}`" in readme for kind in TYPES)


def test_every_fragment_is_named_with_a_known_type() -> None:
    names = [p.name for p in FRAGMENTS.iterdir() if p.name != "README.md"]
    assert names, "changelog.d/ holds at least this change's fragment"
    problems = [problem for name in names if (problem := fragment_problem(name))]
    assert not problems, "\n".join(problems)
    assert all((FRAGMENTS / name).read_text(encoding="utf-8").strip() for name in names)


def test_the_changelog_has_the_mark_the_fragments_build_in_at() -> None:
    start = towncrier_config()["start_string"]
    assert isinstance(start, str)
    assert start in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name", ["16.feature.md", "16-layers.change.md", "+faster.fix.md", "7.doc.2.md"]
)
def test_good_fragment_names_pass(name: str) -> None:
    assert fragment_problem(name) is None


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("16.bugfix.md", "type 'bugfix' is not one of feature, change, fix, doc"),
        ("16.removal.md", "type 'removal' is not one of"),
        ("16.md", "name it <issue>.<type>.md"),
        ("16.fix.txt", "name it <issue>.<type>.md"),
        ("notes.md", "name it <issue>.<type>.md"),
        ("layers.change.md", "name it <issue>.<type>.md"),
        ("", "name it <issue>.<type>.md"),
    ],
)
def test_bad_fragment_names_fail_with_the_reason(name: str, why: str) -> None:
    problem = fragment_problem(name)
    assert problem is not None and why in problem
