"""The gate's release: which calls may run now, under a release policy, and why.

Part of :class:`~callgate.gate.turn.TurnGate`: each call's evidence is an event of the
release table (:mod:`callgate.fsm.release`); the policy's run of the table decides.
"""

from __future__ import annotations

from callgate.fsm.release import Policy, ReleaseState
from callgate.fsm.release import policy as release_policy
from callgate.gate._slots import (
    _APPENDS,
    _LET_RUN,
    _RUNS,
    _TURN_BLOCKS,
    _VALID,
    BaseSlot,
    GateParts,
    Slot,
)
from callgate.gate.strictjson import parse_arguments


class ReleaseRules(GateParts):
    """What the release table decides for each call of the turn, now."""

    @property
    def executable(self) -> bool:
        """Whether the turn's calls may run now (the turn policy)."""
        return self.turn in _RUNS

    def releasable(self, policy: str = "turn") -> list[BaseSlot]:
        """The slots a caller may execute now under ``policy`` (see :data:`POLICIES`).

        Each slot's evidence is an event of the release table (:mod:`callgate.fsm.release`):
        the turn's verdict (``turn_pass``, ``turn_block``), a validated slot's own done
        (``call_valid``, in formats that have one; elsewhere ``args_valid``), arguments
        that closed, parse and validate early (``args_valid``). ``call`` releases a call
        at its own done; atomicity then covers only calls not yet released. ``parseable``
        needs ``preview=True`` and releases a call once its arguments parse, before any
        terminal evidence: it is unsafe and opt-in.
        """
        return [
            slot for slot, outcome in self.releases(release_policy(policy)) if outcome in _LET_RUN
        ]

    def release_evidence(self, rule: Policy) -> list[tuple[BaseSlot, str]]:
        """Each call with release evidence now, and its release-table event, in call order.

        Only what ``rule`` reads is gathered (the events its waiting state accepts): under
        ``turn`` nothing but the turn's verdict; arguments are parsed early only where
        ``rule`` reads them. A validated slot's evidence is its own done where the format
        has one, otherwise that its arguments validated. A text call's own done is its
        block's close; under ``turn`` it waits for the turn's text to settle; beside
        native calls it is ``set_aside`` once the turn is decided.
        """
        turn = self.turn
        found: list[tuple[BaseSlot, str]]
        if turn in _RUNS:
            found = [(slot, "turn_pass") for slot in self.ordered_slots()]
        elif turn in _TURN_BLOCKS:
            found = [(slot, "turn_block") for slot in self.ordered_slots()]
        elif not (rule.per_call or rule.early):
            found = []
        else:
            own = "call_valid" if self.per_call_done else "args_valid"
            read = rule.reads(own)
            found = []
            for slot in self.ordered_slots():
                if slot.state in _VALID:
                    if read:
                        found.append((slot, own))
                elif rule.early and self._early(slot):
                    found.append((slot, "args_valid"))
        if self.text_slots:
            found += self._text_evidence(rule)
        return found

    def releases(self, rule: Policy) -> list[tuple[BaseSlot, ReleaseState]]:
        """Each call decided now, with the release state its evidence leads to under ``rule``."""
        decided: list[tuple[BaseSlot, ReleaseState]] = []
        for slot, event in self.release_evidence(rule):
            outcome = rule.outcome(event)
            if outcome is not None:
                decided.append((slot, outcome))
        return decided

    def _early(self, slot: BaseSlot) -> bool:
        scan = slot.scan
        if scan is None or not scan.closed or slot.state not in _APPENDS:
            return False
        if slot.early is None:
            arguments, problem = parse_arguments(
                slot.raw_arguments, max_depth=self.limits.max_depth
            )
            if problem is None and arguments is not None:
                problem = self.schemas.check(slot.name, arguments, slot.key)
            slot.early = problem if problem is not None else arguments
        return isinstance(slot.early, dict)

    def ordered_slots(self) -> list[Slot]:
        """The native slots by their provider key (sorted once per new slot)."""
        ordered = self._ordered
        if ordered is None:
            ordered = self._ordered = [self.slots[k] for k in sorted(self.slots)]
        return ordered

    def calls(self) -> list[BaseSlot]:
        """Every call of the turn: the native slots by key, then the text calls in order."""
        return [*self.ordered_slots(), *self.text_slots.values()]
