"""Gemini's streamed call arguments: ``partialArgs`` pieces applied along their JSON paths.

Part of :mod:`callgate.strategies.gemini` (its public names stay there). A streamed
``functionCall`` carries its args as pieces, each one value at a ``jsonPath``
(``$.a.b[0]['c d']``); a string piece continues the string already at its path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_JSON_PATH = ("jsonPath", "json_path")
_VALUE_KEYS = (
    ("stringValue", "string_value"),
    ("numberValue", "number_value"),
    ("boolValue", "bool_value"),
    ("nullValue", "null_value"),
)


_PATH_STEP = re.compile(r"""\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]""")


def _first(shape: Mapping[str, Any], keys: Sequence[str]) -> tuple[str | None, Any]:
    """The first of ``keys`` present in ``shape`` (camelCase or snake_case), and its value."""
    for key in keys:
        if key in shape:
            return key, shape[key]
    return None, None


def _apply_piece(args: dict[str, Any], piece: Mapping[str, Any]) -> str:
    """Set (or, for a continued string, extend) one value of ``args``; why not, or ``""``."""
    _, path = _first(piece, _JSON_PATH)
    steps = _path_steps(path) if isinstance(path, str) else None
    if not steps:
        return f"has no readable jsonPath: {path!r:.60}"
    found = [(k, piece[k]) for keys in _VALUE_KEYS for k in keys if k in piece]
    if len(found) != 1:
        return f"at {path} carries {len(found)} values, not one"
    key, value = found[0]
    if key in ("nullValue", "null_value"):
        value = None
    elif key in ("stringValue", "string_value") and not isinstance(value, str):
        return f"at {path} has a stringValue that is not text"
    elif key in ("numberValue", "number_value") and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        return f"at {path} has a numberValue that is not a number"
    elif key in ("boolValue", "bool_value") and not isinstance(value, bool):
        return f"at {path} has a boolValue that is not true or false"
    container: Any = args
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        last = following is None
        if isinstance(container, list) and isinstance(step, int):
            if step > len(container):
                return f"at {path} skips an array position"
            if step == len(container):
                container.append(None)
        elif isinstance(container, dict) and isinstance(step, str):
            container.setdefault(step, None)
        else:
            return f"at {path} does not fit the args built so far"
        current = container[step]
        if last:
            joined = isinstance(value, str) and isinstance(current, str)
            container[step] = current + value if joined else value
        elif current is None:
            container[step] = [] if isinstance(following, int) else {}
        container = container[step]
    return ""


def _path_steps(path: str) -> list[str | int] | None:
    """``$.a.b[0]['c d']`` as ``["a", "b", 0, "c d"]``; None when it is not such a path."""
    if not path.startswith("$"):
        return None
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        match = _PATH_STEP.match(path, at)
        if match is None:
            return None
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(next(s for s in (name, single, double) if s is not None))
        at = match.end()
    return steps
