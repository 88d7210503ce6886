"""The gate's verdict: the turn machine's decision, and the events the verdict machine reads.

Part of :class:`~callgate.gate.turn.TurnGate`: the turn machine decides native calls once
the turn is complete (``empty``, ``pass``, ``fail``); :meth:`TurnVerdict.verdict_events` is
the one place the verdict machine's (:mod:`callgate.fsm.verdict`) events are written.
"""

from __future__ import annotations

from collections.abc import Iterable

from callgate.gate._slots import (
    _DECIDING,
    _RUNS,
    _TURN_BLOCKS,
    _VALID,
    GateParts,
)


def turn_events(turn: str, text_ran: Iterable[bool]) -> list[str]:
    """The verdict machine's events for a turn in state ``turn`` whose text calls ran or not.

    The one place they are written: the gate's :meth:`TurnVerdict.verdict_events` and a
    turn described by hand (:func:`callgate.driver.loop.verdict`) both read it.
    """
    if turn in _RUNS:
        return ["turn_runs", "end"]
    if turn in _TURN_BLOCKS:
        return ["turn_blocked", "end"]
    return ["turn_open", *("ran" if ran else "refused" for ran in text_ran), "end"]


class TurnVerdict(GateParts):
    """The turn's verdict: the turn machine's decision and the verdict machine's events."""

    def verdict_events(self) -> list[str]:
        """The turn's events for the verdict machine (:mod:`callgate.fsm.verdict`).

        The turn machine first; then, when it decided nothing, each text call (``ran``
        or ``refused``); then ``end`` (:func:`turn_events`).
        """
        return turn_events(self.turn, (s.state in _VALID for s in self.text_slots.values()))

    def _verdict(self) -> None:
        if self.turn not in _DECIDING:
            return
        if not self.slots:
            self._fire_turn("empty")
        else:
            for slot in self.slots.values():
                if slot.state not in _VALID:
                    self._fire_turn("fail")
                    return
            self._fire_turn("pass")
