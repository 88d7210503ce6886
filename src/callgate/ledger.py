"""The conversation's ledger of answered calls: a call runs at most once.

Some models repeat a call they already made (the same id, in a later chunk or a later
turn). The ledger outlives the turns of one conversation: the buffer keeps it across
``reset()``, and a driver that meets a call already in it answers with the recorded
result instead of running the tool again.

A call is the same call only when its id, its tool and its arguments (canonical JSON)
all match: servers that number ids per turn (``call_0`` again for another city) get a
new run, never a stale answer. A call without an id (``None`` or ``""``: Gemini, text
calls) is known only within its turn, by its slot, so drivers sharing a buffer run it
once; in a later turn nothing says it is a repeat, and it runs again.

A call is recorded as started before its tool runs. If the run never reports back (an
interrupt between the tool returning and its result being recorded), a retry finds the
start and answers with an error instead of running the tool a second time.
"""

from __future__ import annotations

import json
from typing import Any

from callgate.strategies.base import ExtractedCall, ToolResult

Key = tuple[Any, ...]


def call_key(call: ExtractedCall, turn: int) -> Key:
    """What makes ``call`` the same call: id (or turn and slot), tool, canonical arguments."""
    arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=repr)
    where: Key = ("id", call.id) if call.id else ("turn", turn, call.slot)
    return (*where, call.name, arguments)


def interrupted(call: ExtractedCall) -> ToolResult:
    """The answer to a call that started earlier and never reported its result."""
    content = (
        f"The call to {call.name} started earlier but its result was lost; "
        "it was not run again, and whether it took effect is unknown."
    )
    return ToolResult(call, content, is_error=True)


class Ledger:
    """Calls started and answered in one conversation, by :func:`call_key`."""

    __slots__ = ("_ids", "_results", "carried", "turn")

    def __init__(self) -> None:
        self._results: dict[Key, ToolResult | None] = {}
        self._ids: set[str] = set()
        self.turn = 0
        """Counts the conversation's turns: id-less calls are known within theirs only."""
        self.carried: dict[str, int] = {}
        """The call ids the conversation's histories carried, each with the turn that first
        carried it (a wire whose ids must be unique gives a later repeat a stand-in)."""

    def next_turn(self) -> None:
        """A new turn starts (the buffer calls it on ``reset()``)."""
        self.turn += 1

    def get(self, call: ExtractedCall) -> ToolResult | None:
        """The recorded answer to ``call``, an error if it started and never finished, or None."""
        key = call_key(call, self.turn)
        if key not in self._results:
            return None
        known = self._results[key]
        return known if known is not None else interrupted(call)

    def start(self, call: ExtractedCall) -> None:
        """Record that ``call`` is about to run (before its tool is called)."""
        self._results.setdefault(call_key(call, self.turn), None)
        if call.id:
            self._ids.add(call.id)

    def record(self, result: ToolResult) -> None:
        """Record ``result`` as the answer to its call."""
        self._results[call_key(result.call, self.turn)] = result
        if result.call.id:
            self._ids.add(result.call.id)

    def __contains__(self, call_id: object) -> bool:
        """Whether a call with this id started in this conversation."""
        return call_id in self._ids

    def __len__(self) -> int:
        return len(self._results)
