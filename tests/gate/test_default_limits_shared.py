"""Buffers and gates built without limits share one default value, which nobody can change.

The default :class:`~callgate.gate.limits.Limits` is made once instead of once per turn;
that is only safe because it is frozen: a turn that tried to change it would change every
other turn's.
"""

from __future__ import annotations

import attrs
import pytest

from callgate import LLMStreamBuffer
from callgate.gate.limits import DEFAULT_LIMITS, Limits
from callgate.gate.turn import TurnGate


def test_turns_without_limits_share_the_defaults_and_cannot_change_them() -> None:
    first, second = LLMStreamBuffer(), LLMStreamBuffer()
    assert first.limits is second.limits is TurnGate().limits is DEFAULT_LIMITS
    assert Limits() == DEFAULT_LIMITS
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.limits.max_slots = 1  # type: ignore[misc]
    assert second.limits.max_slots == Limits().max_slots


def test_a_turn_given_limits_keeps_its_own() -> None:
    own = Limits(max_slots=2)
    assert LLMStreamBuffer(limits=own).limits is own
    assert LLMStreamBuffer().limits.max_slots == Limits().max_slots
