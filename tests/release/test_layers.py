"""The package's layers: every import points down or sideways, never up, and never in a circle.

Each module of ``src/callgate`` belongs to one layer of :data:`LAYERS` (lowest first). Its
imports are read with :mod:`ast`, every one of them: at the top, inside functions, under
``TYPE_CHECKING``. A module may import its own layer or a lower one; the modules' import
graph has no cycle; and ``docs/architecture.md`` opens with a picture of the same layers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("errors", ("callgate.errors",)),
    ("fsm", ("callgate.fsm",)),
    ("gate", ("callgate.gate",)),
    ("strategies", ("callgate.strategies",)),
    (
        "parts",
        (
            "callgate.chain",
            "callgate.ledger",
            "callgate.view",
            "callgate.textqueue",
            "callgate.partial",
        ),
    ),
    ("buffer", ("callgate.buffer", "callgate._reader", "callgate._text", "callgate._results")),
    ("driver", ("callgate.driver",)),
    ("audit", ("callgate.audit", "callgate.diagrams")),
    ("api", ("callgate",)),
    ("testing", ("callgate.testing",)),
    ("proxy", ("callgate.proxy",)),
    ("integrations", ("callgate.integrations",)),
    ("extproc", ("callgate.extproc",)),
    ("cli", ("callgate.cli", "callgate.__main__")),
]
"""The layers, lowest first: a layer's name and the modules or packages it holds."""


def module_name(path: Path) -> str:
    """``src/callgate/gate/turn.py`` -> ``callgate.gate.turn`` (a package: its own name)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted((SRC / "callgate").rglob("*.py"))}


def holds(member: str, module: str) -> bool:
    """Whether a layer's ``member`` holds ``module``: itself, or inside it if a subpackage.

    The top package ``callgate`` holds only itself (its ``__init__``, the public names):
    a new top-level module must be given a layer of its own.
    """
    return module == member or (member != "callgate" and module.startswith(member + "."))


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the layer whose longest member holds ``module``."""
    best, length = -1, -1
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if holds(member, module) and len(member) > length:
                best, length = index, len(member)
    if best < 0:
        raise AssertionError(f"{module} belongs to no layer of tests/release/test_layers.py")
    return best


def imports(module: str) -> Iterator[tuple[str, int]]:
    """Each callgate module that ``module`` imports, anywhere in it, with the line."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> Iterator[tuple[str, int]]:
    """Each callgate module imported by ``source`` (of a module in ``package``), with the line."""
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        for name in dict.fromkeys(names):
            target = _known(name)
            if target is not None:
                yield target, node.lineno


def _known(name: str) -> str | None:
    """The module of ours that ``name`` names, or the closest package above it."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


GRAPH = {module: sorted({target for target, _ in imports(module)} - {module}) for module in MODULES}


def test_every_module_belongs_to_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{module}:{line} imports {target} "
        f"({LAYERS[layer_of(module)][0]} -> {LAYERS[layer_of(target)][0]})"
        for module in MODULES
        for target, line in imports(module)
        if layer_of(target) > layer_of(module)
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)


KIT_ONLY = ("callgate.testing",)
"""Packages only tests and the kit itself import: product code never leans on the test kit."""


def kit_users(modules: dict[str, list[str]]) -> list[str]:
    """Each ``module -> target`` of ``modules`` where a module outside the kit imports it."""
    return [
        f"{module} -> {target}"
        for module, targets in modules.items()
        for target in targets
        if any(holds(kit, target) for kit in KIT_ONLY)
        and not any(holds(kit, module) for kit in KIT_ONLY)
    ]


def test_no_product_module_imports_the_test_kit() -> None:
    """The gateway, the processor, the integrations and the command line write their own
    streams (the demo upstream's scripts live with it), never with ``callgate.testing``."""
    assert kit_users(GRAPH) == []


def test_an_import_of_the_kit_from_outside_it_is_named() -> None:
    graph = {
        "callgate.proxy.upstream": ["callgate.testing.builders", "callgate.proxy.sse"],
        "callgate.testing.machine": ["callgate.testing.wires"],
    }
    assert kit_users(graph) == ["callgate.proxy.upstream -> callgate.testing.builders"]


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the path around it, or None when it has none."""
    colour = dict.fromkeys(graph, 0)
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if colour.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if colour.get(nxt) == 0:
                found = visit(nxt)
                if found is not None:
                    return found
        path.pop()
        colour[node] = 2
        return None

    for start in graph:
        if colour[start] == 0:
            found = visit(start)
            if found is not None:
                return found
    return None


def test_the_modules_import_each_other_without_a_cycle() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_cycle_finder_finds_cycles_and_passes_trees() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
    assert find_cycle({"a": ["b", "c"], "b": ["c"], "c": []}) is None
    assert find_cycle({}) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import callgate.gate.turn", ["callgate.gate.turn"]),
        ("from callgate.fsm import MACHINES", ["callgate.fsm"]),
        ("from callgate.audit import trace", ["callgate.audit.trace"]),
        ("def f():\n    from callgate.buffer import LLMStreamBuffer", ["callgate.buffer"]),
        ("if TYPE_CHECKING:\n    from callgate.gate.turn import TurnGate", ["callgate.gate.turn"]),
        ("from . import table", ["callgate.fsm.table"]),
        ("import json\nfrom attrs import frozen", []),
    ],
)
def test_every_kind_of_import_is_read(source: str, expected: list[str]) -> None:
    """Top-level, inside functions, under TYPE_CHECKING, relative: each import counts."""
    assert [target for target, _ in imports_in(source, "callgate.fsm")] == expected


def test_a_module_outside_every_layer_is_named() -> None:
    with pytest.raises(AssertionError, match=r"callgate\.newcomer belongs to no layer"):
        layer_of("callgate.newcomer")
    assert holds("callgate.gate", "callgate.gate.turn")
    assert not holds("callgate.gate", "callgate.gateway")


def test_an_upward_import_is_named_with_its_layers() -> None:
    assert layer_of("callgate.buffer") > layer_of("callgate.gate.turn")
    assert layer_of("callgate.audit.trace") > layer_of("callgate.buffer")
    assert layer_of("callgate.cli.commands") == len(LAYERS) - 1
    assert layer_of("callgate") > layer_of("callgate.driver.loop")


PICTURE_LINE = re.compile(r"^\s*(\w+)\s{2,}(callgate[\w.]*(?:,\s*callgate[\w.]*)*)")


def pictured_layers() -> list[tuple[str, tuple[str, ...]]]:
    """The layers drawn in the first code block of docs/architecture.md, lowest first."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    drawn = []
    for line in block.splitlines():
        match = PICTURE_LINE.match(line)
        if match:
            members = tuple(m.strip() for m in match.group(2).split(","))
            drawn.append((match.group(1), members))
    return drawn[::-1]


def test_the_architecture_document_opens_with_these_layers() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    before = text.split("```", 1)[0]
    assert "##" not in before, "the layer picture comes before the first section"
    assert pictured_layers() == LAYERS
