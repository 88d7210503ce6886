"""Diagrams of callgate's machines, derived from their tables: DOT text, SVG and PNG.

Importing this package loads neither ``graphviz`` nor ``transitions``.
"""

from callgate.diagrams.dot import to_dot, trace_dot
from callgate.diagrams.render import FORMATS, render

__all__ = ["FORMATS", "render", "to_dot", "trace_dot"]
