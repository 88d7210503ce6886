"""Per-route and per-tenant policy: what Envoy passes with a request, over the command's flags.

Three sources, each naming the same three settings:

- ``callgate`` metadata (the ``metadata_context`` Envoy forwards: a route's or an earlier
  filter's dynamic metadata in the namespace ``callgate``): keys ``on_blocked``,
  ``text_formats``, ``allowed_tools`` (a comma list or a list of strings);
- the processor stream's gRPC metadata (a route's ``grpc_initial_metadata``) and then the
  request's headers: ``x-callgate-on-blocked``, ``x-callgate-text-formats``,
  ``x-callgate-allowed-tools`` (comma lists).

The first source that sets ``on_blocked`` or ``text_formats`` wins (the operator's metadata
before the client's headers); every ``allowed_tools`` given applies (their intersection),
so a client can narrow what a route allows, never widen it. ``on_blocked`` is ``notice`` or
``pass``: the processor cannot ask the upstream again, so ``repair`` is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, frozen

from callgate.errors import PolicyError
from callgate.extproc.gated import BlockedMode, Options
from callgate.strategies.text.formats import FORMATS

__all__ = ["HEADERS", "PolicyError", "RoutePolicy", "read_policy"]

NAMESPACE = "callgate"
HEADERS = ("x-callgate-on-blocked", "x-callgate-text-formats", "x-callgate-allowed-tools")
"""The request headers (and gRPC metadata keys) the policy reads; never sent upstream."""
_KEYS = ("on_blocked", "text_formats", "allowed_tools")
_MODES: dict[str, BlockedMode] = {"notice": "notice", "pass": "pass"}
"""The ``--on-blocked`` modes a processor can follow (``repair`` needs a second request)."""


@frozen
class RoutePolicy:
    """The options of one request's turn and the tools the gate may accept in it."""

    options: Options
    allowed_tools: frozenset[str] | None = None
    """Tool names the gate may accept (None: every tool of the request)."""

    def request(self, payload: Mapping[str, Any]) -> Mapping[str, Any]:
        """The request as the gate sees it: tools outside :attr:`allowed_tools` left out."""
        tools = payload.get("tools")
        if self.allowed_tools is None or not isinstance(tools, list):
            return payload
        kept = [t for t in tools if _tool_name(t) is None or _tool_name(t) in self.allowed_tools]
        return {**payload, "tools": kept}


def _tool_name(entry: object) -> str | None:
    if not isinstance(entry, Mapping):
        return None
    spec = entry.get("function") if entry.get("type") == "function" else entry
    name = spec.get("name") if isinstance(spec, Mapping) else None
    return name if isinstance(name, str) else None


def _words(value: object, key: str) -> tuple[str, ...]:
    """A comma list (or a list of strings) as its non-empty names."""
    if isinstance(value, str):
        items: Iterable[object] = value.split(",")
    elif isinstance(value, Sequence):
        items = value
    else:
        raise PolicyError(f"callgate policy {key}: a comma list or a list of names, not {value!r}")
    names = []
    for item in items:
        if not isinstance(item, str):
            raise PolicyError(f"callgate policy {key}: names must be strings, not {item!r}")
        if item.strip():
            names.append(item.strip())
    return tuple(names)


def _settings(
    metadata: Mapping[str, Any], sources: Sequence[Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Every source's settings, the operator's first."""
    found: list[dict[str, Any]] = []
    namespace = metadata.get(NAMESPACE)
    if isinstance(namespace, Mapping):
        found.append({k: namespace[k] for k in _KEYS if k in namespace})
    for source in sources:
        lowered = {k.lower(): v for k, v in source.items()}
        found.append({k: lowered[h] for k, h in zip(_KEYS, HEADERS, strict=True) if h in lowered})
    return found


def read_policy(
    base: Options,
    metadata: Mapping[str, Any],
    *sources: Mapping[str, str],
) -> RoutePolicy:
    """The policy of one request: ``metadata`` (by namespace), then ``sources`` in order.

    ``base`` is the command's options. PolicyError names a setting that cannot be used.
    """
    options = base
    mode_set = formats_set = False
    allowed: frozenset[str] | None = None
    for found in _settings(metadata, sources):
        if "on_blocked" in found and not mode_set:
            mode = found["on_blocked"]
            chosen = _MODES.get(mode.strip()) if isinstance(mode, str) else None
            if chosen is None:
                raise PolicyError(
                    f"callgate policy on_blocked must be notice or pass, not {mode!r} "
                    "(an external processor cannot ask the upstream again)"
                )
            options = evolve(options, on_blocked=chosen)
            mode_set = True
        if "text_formats" in found and not formats_set:
            names = _words(found["text_formats"], "text_formats")
            unknown = [n for n in names if n not in FORMATS]
            if unknown:
                raise PolicyError(
                    f"callgate policy text_formats: unknown format {unknown[0]!r}; "
                    f"one of: {', '.join(FORMATS)}"
                )
            options = evolve(options, text_formats=names)
            formats_set = True
        if "allowed_tools" in found:
            tools = frozenset(_words(found["allowed_tools"], "allowed_tools"))
            allowed = tools if allowed is None else allowed & tools
    return RoutePolicy(options, allowed)
