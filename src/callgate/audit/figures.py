"""The replay page's diagrams: every machine's table with the stream's path drawn over it.

All seven machines are drawn, the four of the stream and the three decisions above them
(release, vote, verdict), so a reader sees the whole house even where a stream never
entered a machine. SVG comes from :func:`~callgate.diagrams.render` (Graphviz's ``dot``,
or its pip-installed build); without either, each figure holds its DOT text instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from callgate.audit.trace import TraceStep
from callgate.diagrams import render, trace_dot
from callgate.errors import DiagramError
from callgate.fsm import MACHINES

TRACED = tuple(MACHINES)
"""The machines a replay page draws, in order: slot, turn, detector, display, then the
release policy, the drivers' vote on a text block and the played turn's verdict."""


def trace_figures(steps: Sequence[TraceStep]) -> tuple[dict[str, str], str | None]:
    """Each traced machine's diagram with the recorded path as inline SVG, or why there is none.

    Without a renderer each figure holds the DOT text, and the reason is returned.
    """
    figures, missing = {}, None
    for machine in TRACED:
        taken = [step for step in steps if step.machine == machine]
        dot = trace_dot(MACHINES[machine], taken, title="this stream")
        try:
            svg = _fitted(machine, dot)
        except DiagramError as exc:
            missing = str(exc)
            figures[machine] = (
                f"<details><summary>DOT text</summary><pre>{escape(dot)}</pre></details>"
            )
        else:
            figures[machine] = svg[svg.index("<svg") :]
    return figures, missing


PAGE_WIDTH_PT = 990
"""The width (in points) a diagram may take on the page at 1400 px (the figure's width)."""


def _width(svg: str) -> float:
    """The drawn width of Graphviz's SVG, in points."""
    found = re.search(r'<svg width="([\d.]+)pt"', svg)
    return float(found[1]) if found else 0.0


def _fitted(machine: str, dot: str) -> str:
    """The diagram left to right, or top to bottom when that is too wide for the page.

    A wide diagram is scaled down to the page's width, and its labels with it; drawn top
    to bottom it is narrower (and taller), so its labels stay readable when it fits.
    """
    svg = render(MACHINES[machine], "svg", dot=dot).decode()
    if _width(svg) <= PAGE_WIDTH_PT or "rankdir=LR" not in dot:
        return svg
    tall = render(MACHINES[machine], "svg", dot=dot.replace("rankdir=LR", "rankdir=TB", 1))
    upright = tall.decode()
    return upright if _width(upright) < _width(svg) else svg
