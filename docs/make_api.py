"""Write the generated half of docs/api.md: ``callgate.errors`` and ``callgate.testing``.

The page's first half (``callgate.__all__``, written by hand) is kept up to the marker
line; below it, one table row per name of each module's ``__all__``, its text the first
line of the name's docstring (for a constant, the string under its assignment). Run
``python docs/make_api.py``; ``--check`` writes nothing and exits 1 when the page is stale.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import sys
from pathlib import Path

import callgate

PAGE = Path(__file__).resolve().parent / "api.md"
MARKER = "<!-- Below: written by docs/make_api.py from the docstrings. -->"
SECTIONS = {
    "callgate.errors": (
        "Errors",
        "Every exception callgate raises, in one tree under `CallgateError`; each keeps its "
        "built-in base (`except ValueError` still catches what it caught). The ones marked "
        "are also names of `callgate`.",
    ),
    "callgate.testing": (
        "The test kit",
        "Hypothesis strategies of adversarial provider streams and a machine that checks "
        "your adapter (docs/testing.md).",
    ),
}
"""Each generated module: its section's title and the sentence under it."""


def constant_docs(module_name: str) -> dict[str, str]:
    """The docstrings written under the constants of ``module_name``'s package, by name."""
    module = importlib.import_module(module_name)
    root = Path(inspect.getfile(module)).parent
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, after in itertools.pairwise(body):
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            if isinstance(target, ast.Name) and is_doc:
                found.setdefault(target.id, str(after.value.value))  # type: ignore[attr-defined]
    return found


def summary(module_name: str, name: str, constants: dict[str, str]) -> str:
    """The first line of the docstring of ``name`` in ``module_name``, one table cell."""
    value = getattr(importlib.import_module(module_name), name)
    doc = inspect.getdoc(value) if callable(value) else constants.get(name)
    if not doc:
        raise SystemExit(f"{module_name}.{name} has no docstring")
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


def render() -> str:
    """The whole page: the hand-written half, the marker, then a table per module."""
    head = PAGE.read_text(encoding="utf-8").split(MARKER)[0].rstrip("\n")
    parts = [head, "", MARKER]
    for module_name, (title, sentence) in SECTIONS.items():
        module = importlib.import_module(module_name)
        constants = constant_docs(module_name)
        errors = module_name == "callgate.errors"
        parts += ["", f"## {title}: `{module_name}`", "", sentence, ""]
        parts += ["| name | what | also `callgate.` |" if errors else "| name | what |"]
        parts += ["|---|---|---|" if errors else "|---|---|"]
        for name in sorted(module.__all__, key=lambda n: (not n.isupper(), n.lower())):
            row = f"| `{name}` | {summary(module_name, name, constants)} |"
            if errors:
                row += " yes |" if name in callgate.__all__ else "  |"
            parts.append(row)
    return "\n".join(parts) + "\n"


def main() -> int:
    """Write the page, or with ``--check`` say whether it is stale."""
    text = render()
    if "--check" in sys.argv[1:]:
        stale = PAGE.read_text(encoding="utf-8") != text
        if stale:
            print("docs/api.md is stale: run python docs/make_api.py")
        return int(stale)
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
