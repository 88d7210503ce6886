"""The engine on the Anthropic Messages wire (``POST /v1/messages``).

:class:`GatedMessages` is the :class:`~callgate.proxy.engine.Engine` whose client and
upstream speak Anthropic Messages; its reader and writer are in
:mod:`callgate.proxy.wires.messages`.
"""

from __future__ import annotations

from callgate.proxy.engine import GatedMessages

__all__ = ["GatedMessages"]
