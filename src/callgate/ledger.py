"""The conversation's ledger of answered calls: a call id is executed at most once.

Some models repeat a call they already made (the same id, in a later chunk or a later
turn). The ledger outlives the turns of one conversation: the buffer keeps it across
``reset()``, and a driver that meets an id already in it answers with the recorded
result instead of running the tool again.
"""

from __future__ import annotations

from callgate.strategies.base import ToolResult


class Ledger:
    """Results of the calls answered in one conversation, by call id."""

    __slots__ = ("_results",)

    def __init__(self) -> None:
        self._results: dict[str, ToolResult] = {}

    def get(self, call_id: str | None) -> ToolResult | None:
        """The recorded result of ``call_id``, or None if it was never answered."""
        return self._results.get(call_id) if call_id is not None else None

    def record(self, result: ToolResult) -> None:
        """Remember ``result`` under its call's id (calls without an id are not recorded)."""
        if result.call.id is not None:
            self._results.setdefault(result.call.id, result)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._results

    def __len__(self) -> int:
        return len(self._results)
