"""Call ids across a conversation's histories, for wires that refuse a repeated one.

Anthropic refuses a request whose history holds two ``tool_use`` blocks with one id, in
any two turns ("tool_use ids must be unique"). A server that numbers ids per turn, or a
model that repeats a call, gives a later turn an id an earlier history already carried:
that call goes back under a stand-in id, in its message and in its answer, as a call
without a usable id does. The ledger keeps the ids carried (``Ledger.carried``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from callgate.strategies.base import HistoryCall, stand_in_id


def earlier(carried: Mapping[str, int] | None, turn: int) -> frozenset[str]:
    """The ids histories of turns before ``turn`` carried (none without ``carried``).

    A turn gathered twice finds its own ids under its own turn, not as taken.
    """
    if not carried:
        return frozenset()
    return frozenset(call_id for call_id, first in carried.items() if first != turn)


def free_stand_in(slot: int, taken: Iterable[str | None]) -> str:
    """``callgate_<slot>``, or ``callgate_<slot>_<n>`` with the first ``n`` not ``taken``."""
    used = set(taken)
    candidate, n = stand_in_id(slot), 1
    while candidate in used:
        n += 1
        candidate = stand_in_id(f"{slot}_{n}")
    return candidate


def carry(carried: dict[str, int], placed: Iterable[HistoryCall], turn: int) -> None:
    """Record the ids a turn's history carries (the first turn to carry an id keeps it)."""
    for call in placed:
        if call.id is not None:
            carried.setdefault(call.id, turn)
