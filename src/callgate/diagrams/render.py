"""Render a :class:`~callgate.fsm.table.Table` as DOT text, SVG or PNG.

The ``graphviz`` package (and the Graphviz ``dot`` program) is needed for SVG and PNG
only, so it is imported here, inside :func:`render`, and never on ``import callgate``.
"""

from __future__ import annotations

from callgate.diagrams.dot import to_dot
from callgate.fsm.table import Table

FORMATS = ("dot", "png", "svg")
"""The formats :func:`render` accepts."""


def render(table: Table, fmt: str, *, dot: str | None = None) -> bytes:
    """Draw the table in ``fmt`` (one of :data:`FORMATS`); SVG and PNG run Graphviz ``dot``.

    ``dot`` replaces the table's own DOT text (a trace diagram, for example). Raises
    ValueError for another format and RuntimeError when Graphviz is not installed.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown diagram format {fmt!r}; expected one of: {', '.join(FORMATS)}")
    text = to_dot(table) if dot is None else dot
    if fmt == "dot":
        return text.encode()
    try:
        import graphviz  # type: ignore[import-untyped]
    except ImportError as exc:
        raise RuntimeError(
            f"rendering {fmt} needs the graphviz package: pip install 'callgate[render]'"
        ) from exc
    try:
        image: bytes = graphviz.Source(text).pipe(format=fmt)
    except graphviz.ExecutableNotFound as exc:
        raise RuntimeError(
            f"rendering {fmt} needs the Graphviz 'dot' program on PATH; install Graphviz "
            "(https://graphviz.org/download/, e.g. apt-get install graphviz)"
        ) from exc
    return image
