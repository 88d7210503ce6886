"""A re-ask pinned to the tool whose call failed (``--on-blocked repair N``).

When exactly one call was withheld, the repair request names that tool in
``tool_choice``, in the upstream wire's own shape, so an upstream that constrains its
output by a grammar must produce a well-formed call to it. Nothing is pinned when
several calls failed (one forced tool would lose the others), when the tool is not one
the request declares (the upstream would refuse the name), or when Anthropic's extended
thinking is on (it refuses a forced tool alongside thinking).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from callgate.strategies.base import ToolResult

_SHAPES: dict[str, Callable[[str], dict[str, Any]]] = {
    "openai": lambda name: {"type": "function", "function": {"name": name}},
    "anthropic": lambda name: {"type": "tool", "name": name},
    "openai-responses": lambda name: {"type": "function", "name": name},
}
"""Per upstream wire: its ``tool_choice`` that forces the named tool."""


def declared(request: Mapping[str, Any], wire: str) -> set[str]:
    """The names of the tools ``request`` declares, read in ``wire``'s shape."""
    tools = request.get("tools")
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        entry = tool.get("function") if wire == "openai" else tool
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if isinstance(name, str):
            names.add(name)
    return names


def pinned_tool(
    request: Mapping[str, Any], wire: str, withheld: Sequence[ToolResult]
) -> str | None:
    """The tool a re-ask is pinned to: the one withheld call's, or None (see the module)."""
    if len(withheld) != 1 or wire not in _SHAPES:
        return None
    name = withheld[0].call.name
    if name not in declared(request, wire):
        return None
    thinking = request.get("thinking")
    if wire == "anthropic" and isinstance(thinking, Mapping) and thinking.get("type") != "disabled":
        return None
    return name


def pin_failed_tool(
    request: dict[str, Any], wire: str, withheld: Sequence[ToolResult]
) -> dict[str, Any]:
    """``request`` (a re-ask to a ``wire`` upstream) forcing the one withheld call's tool.

    Unchanged when :func:`pinned_tool` names none. An Anthropic ``tool_choice``'s other
    keys (``disable_parallel_tool_use``) are kept.
    """
    name = pinned_tool(request, wire, withheld)
    if name is None:
        return request
    choice = _SHAPES[wire](name)
    given = request.get("tool_choice")
    if wire == "anthropic" and isinstance(given, Mapping):
        choice = {**{k: v for k, v in given.items() if k not in ("type", "name")}, **choice}
    return {**request, "tool_choice": choice}
