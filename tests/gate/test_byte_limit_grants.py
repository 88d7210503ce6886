"""Byte limits under grants: the common path's appends decide exactly what exact counting would.

A gate lets a plain accumulating slot append without asking, up to a grant reserved from
both limits (see ``TurnGate._grant``). The reference below is the same gate with grants
switched off, so every fragment is counted on the spot, as before grants existed. Both
must agree, fragment by fragment, on the findings, the states and the argument text, for
interleaved calls near either limit, with empty, one-character and multi-byte fragments.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate import Limits, TurnGate
from callgate.audit.trace import Recorder
from callgate.gate.turn import Slot


class ExactGate(TurnGate):
    """The reference: never grants, so every fragment takes the counted path."""

    def _grant(self, slot: Slot) -> None:
        return None


def whole(gate: TurnGate) -> dict[str, Any]:
    return {
        "slots": {k: (s.state, s.raw_arguments, s.rejected) for k, s in sorted(gate.slots.items())},
        "turn": gate.turn,
        "findings": [(f.code, f.slot, f.message) for f in gate.findings],
    }


FRAGMENTS = st.one_of(
    st.just(""),
    st.text(min_size=1, max_size=1),
    st.text(max_size=9),
    st.sampled_from(["é", "€", "😀", "\ud800", "ab"]),
    st.text(alphabet=st.sampled_from(["a", "é", "€", "😀", "\ud800"]), min_size=1, max_size=6),
)
"""Fragments of every UTF-8 width: a grant counts characters, the limits count bytes."""
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("fragment"), st.integers(0, 3), FRAGMENTS),
        st.tuples(st.just("close"), st.integers(0, 3), st.just("")),
        st.tuples(st.just("identity"), st.integers(0, 3), st.just("")),
    ),
    max_size=40,
)


@given(
    STEPS,
    st.integers(min_value=0, max_value=24),
    st.integers(min_value=0, max_value=48),
    st.integers(min_value=1, max_value=4),
    st.booleans(),
)
def test_grants_decide_as_exact_counting(
    steps: list[tuple[str, int, str]],
    max_argument: int,
    max_turn: int,
    max_slots: int,
    per_call: bool,
) -> None:
    limits = Limits(max_argument_bytes=max_argument, max_turn_bytes=max_turn, max_slots=max_slots)
    gates = [g(limits=limits, per_call_done=per_call) for g in (TurnGate, ExactGate)]
    for what, key, text in steps:
        for gate in gates:
            if what == "fragment":
                gate.fragment(key, text)
            elif what == "close":
                gate.close(key)
            else:
                gate.identity(key, f"call_{key}", "f")
        fast, exact = (whole(g) for g in gates)
        assert fast == exact, (what, key, text)
    for gate in gates:
        gate.turn_done(True, "tool_use")
        gate.finish()
    assert whole(gates[0]) == whole(gates[1])


WIDE = st.text(alphabet=st.sampled_from(["a", "é", "€", "😀", "\ud800"]), min_size=1, max_size=8)
"""Fragments of characters one to four UTF-8 bytes wide."""


@given(
    st.lists(st.tuples(st.integers(0, 1), st.one_of(st.just(""), WIDE)), max_size=30),
    st.integers(min_value=0, max_value=60),
    st.integers(min_value=0, max_value=120),
    st.integers(min_value=1, max_value=2),
)
def test_wide_fragments_meet_the_limits_where_exact_counting_does(
    fragments: list[tuple[int, str]], max_argument: int, max_turn: int, max_slots: int
) -> None:
    """One or two calls of multi-byte text (empty fragments and none at all too): a grant of
    characters never lets a byte past."""
    limits = Limits(max_argument_bytes=max_argument, max_turn_bytes=max_turn, max_slots=max_slots)
    gates = [g(limits=limits) for g in (TurnGate, ExactGate)]
    for gate in gates:
        gate.identity(0, "call_0", "f")
        gate.identity(1, "call_1", "f")
    for key, text in fragments:
        for gate in gates:
            gate.fragment(key, text)
        assert whole(gates[0]) == whole(gates[1]), (key, text)
    for gate in gates:
        gate.close(0)
        gate.close(1)
    assert whole(gates[0]) == whole(gates[1])


def test_a_grant_is_given_back_when_another_call_needs_the_turn() -> None:
    """Two calls interleave up to the turn limit exactly: every byte fits, none is lost."""
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=100, max_slots=2))
    gate.identity(0, "a", "f")
    gate.identity(1, "b", "f")
    for _ in range(50):
        gate.fragment(0, "x")
        gate.fragment(1, "y")
    assert [s.raw_arguments for s in gate.ordered_slots()] == ["x" * 50, "y" * 50]
    assert gate.findings == []
    gate.fragment(1, "y")
    assert [f.code for f in gate.findings] == ["limit_exceeded"]
    assert gate.slots[0].raw_arguments == "x" * 50


def test_the_common_path_counts_bytes_not_characters() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=8, max_turn_bytes=100))
    gate.identity(0, "a", "f")
    gate.fragment(0, "{")
    gate.fragment(0, "€€")  # six bytes: seven in all
    gate.fragment(0, "é")  # two more: nine, over
    assert gate.slots[0].raw_arguments == "{€€"
    assert [f.code for f in gate.findings] == ["limit_exceeded"]


def test_a_grant_of_characters_holds_the_widest_to_the_last_byte() -> None:
    """Four-byte characters fill a grant exactly: the one past the limit is refused."""
    gate = TurnGate(limits=Limits(max_argument_bytes=41, max_turn_bytes=10_000, max_slots=1))
    gate.identity(0, "a", "f")
    gate.fragment(0, "a")  # counted; the grant is the forty bytes left: ten characters
    assert (gate.slots[0].room, gate.slots[0].granted) == (10, 40)
    for _ in range(10):
        gate.fragment(0, "\U0001f600")
    assert gate.findings == []
    gate.fragment(0, "\U0001f600")
    assert gate.slots[0].raw_arguments == "a" + "\U0001f600" * 10
    assert [f.code for f in gate.findings] == ["limit_exceeded"]


def test_a_grant_given_back_counts_the_bytes_appended_within_it() -> None:
    """Multi-byte fragments within a grant are counted at their UTF-8 size when it ends."""
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=10_000, max_slots=1))
    gate.identity(0, "a", "f")
    gate.fragment(0, "{")
    gate.fragment(0, "é€")  # five bytes, two characters, within the grant
    gate.close(0)
    assert (gate.slots[0].nbytes, gate.turn_bytes) == (6, 6)


def test_a_call_that_moves_on_is_folded_whole_and_counted_once() -> None:
    """A close after several fragments within a grant joins every part into one string: the
    bytes before the grant are not counted again, those within it are counted at their size."""
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=10_000, max_slots=1))
    gate.identity(0, "a", "f")
    gate.fragment(0, "{é")  # three bytes, counted; a grant opens after it
    slot = gate.slots[0]
    assert (slot.mark, slot.nbytes - slot.granted) == (1, 3)
    for piece in ("€", "é", "a"):
        gate.fragment(0, piece)  # within the grant: six bytes, three characters
    folds = slot.folds
    gate.close(0)
    assert slot.parts == ["{é€éa"]
    assert slot.folds == folds + 1
    assert (slot.nbytes, gate.turn_bytes, slot.granted) == (9, 9, 0)


def test_reading_the_arguments_within_a_grant_keeps_its_count() -> None:
    """A reader folds the parts mid-grant: the bytes appended before and after still count."""
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=10_000, max_slots=1))
    gate.identity(0, "a", "f")
    gate.fragment(0, "{")  # counted; a grant opens after it
    gate.fragment(0, "éé")
    assert gate.slots[0].raw_arguments == "{éé"
    gate.fragment(0, "€")
    gate.fragment(0, "é")
    gate.close(0)
    assert gate.slots[0].raw_arguments == "{éé€é"
    assert (gate.slots[0].nbytes, gate.turn_bytes) == (10, 10)


class PartsReader:
    """A reader of a slot's parts as the partial views read them: a cursor and the folds."""

    def __init__(self) -> None:
        self.folds, self.count, self.text = 0, 0, ""

    def read(self, slot: Slot) -> str:
        if slot.folds != self.folds:  # the parts were joined: read them again from the start
            self.folds, self.count, self.text = slot.folds, 0, ""
        self.text += "".join(slot.parts[self.count :])
        self.count = len(slot.parts)
        return self.text


def test_a_reader_of_the_parts_sees_every_fold() -> None:
    """A fold by a read and one by a transition mid-call each move the count readers compare."""
    gate = TurnGate(limits=Limits(max_argument_bytes=1000, max_turn_bytes=10_000, max_slots=1))
    reader = PartsReader()
    gate.fragment(0, "{")  # opens the call; a grant opens after the fragment
    slot = gate.slots[0]
    steps = [  # (a step, whether the reader reads after it)
        (lambda: gate.fragment(0, '"a"'), True),
        (lambda: gate.fragment(0, ": "), True),
        (lambda: slot.raw_arguments, True),  # folds, keeping the grant's start
        (lambda: gate.fragment(0, "1"), True),
        (lambda: gate.fragment(0, ", "), True),
        (lambda: gate.identity(0, "call_0", "f"), False),  # a transition folds its grant's
        (lambda: gate.fragment(0, '"b"'), False),  # parts; as many parts follow as it joined
        (lambda: gate.fragment(0, ": 2}"), True),
    ]
    seldom = PartsReader()  # reads once before both folds, then at the end
    for n, (step, reads) in enumerate(steps):
        step()
        if reads:
            assert reader.read(slot) == "".join(slot.parts)
        if n == 1:
            assert seldom.read(slot) == '{"a": '
    assert seldom.read(slot) == '{"a": 1, "b": 2}'
    assert reader.read(slot) == slot.raw_arguments == '{"a": 1, "b": 2}'


def test_a_recording_gate_records_every_append_across_grants() -> None:
    """Grants end and open again as fragments come: each append is one recorded self-loop."""
    recorder = Recorder()
    limits = Limits(max_argument_bytes=1000, max_turn_bytes=80, max_slots=1)
    gate = recorder.turn_gate(limits=limits)
    gate.identity(0, "call_0", "f")
    fragments = ["{", '"a"', ": ", '"', *("x" * 12), '"', "}"]
    for text in fragments:
        gate.fragment(0, text)
    appends = [s for s in recorder.of("slot") if s.event == "args" and s.source == s.target]
    assert len(appends) == len(fragments)
    assert gate.slots[0].raw_arguments == "".join(fragments)


def test_a_grant_used_to_its_last_byte_is_counted_in_full() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=4, max_turn_bytes=10_000))
    gate.identity(0, "a", "f")
    gate.fragment(0, "a")  # opens the slot; the grant is the three bytes left
    gate.fragment(0, "bcd")  # fills it
    assert gate.slots[0].room == 0
    gate.fragment(0, "e")
    assert gate.slots[0].raw_arguments == "abcd"
    assert [f.code for f in gate.findings] == ["limit_exceeded"]


def test_the_turn_may_be_filled_to_its_last_byte() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=2))
    gate.identity(0, "a", "f")
    gate.fragment(0, "a")  # half of the one byte left rounds to no grant
    gate.fragment(0, "b")  # counted: the turn is full, not over
    assert gate.findings == []
    gate.fragment(0, "c")
    assert gate.slots[0].raw_arguments == "ab"
    assert [f.code for f in gate.findings] == ["limit_exceeded"]


def test_a_fragment_after_the_terminal_is_never_appended() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=100), per_call_done=True)
    gate.identity(0, "a", "f")
    gate.fragment(0, "{}")
    gate.close(0)
    gate.fragment(0, "x")
    gate.fragment(0, "y")
    assert gate.slots[0].raw_arguments == "{}"
    assert gate.slots[0].room == 0


def test_every_call_a_turn_may_hold_gets_a_grant_at_once() -> None:
    """Grants of the most calls allowed leave more than half of the turn unreserved."""
    limits = Limits()
    gate = TurnGate(limits=limits)
    for key in range(limits.max_slots):
        gate.identity(key, f"call_{key}", "f")
        gate.fragment(key, "{")
    grants = [slot.granted for slot in gate.slots.values()]
    assert min(grants) > 64 * 1024
    assert sum(grants) < limits.max_turn_bytes // 2
    assert [slot.room for slot in gate.slots.values()] == [g // 4 for g in grants]


class CountingGate(TurnGate):
    """Counts the fragments that took the counted path (each ends by granting again)."""

    counted = 0

    def _grant(self, slot: Slot) -> None:
        self.counted += 1
        super()._grant(slot)


def test_interleaved_calls_append_within_their_grants() -> None:
    """The most calls a turn may hold, interleaved: one counted fragment per call."""
    limits = Limits()
    gate = CountingGate(limits=limits)
    keys = range(limits.max_slots)
    for key in keys:
        gate.identity(key, f"call_{key}", "f")
    for _ in range(50):
        for key in keys:
            gate.fragment(key, "ab")
    assert gate.counted == limits.max_slots
    assert gate.findings == []


def test_a_grant_given_back_counts_only_what_was_used() -> None:
    """The turn binds the grant; the room it gave back is not counted against the call."""
    gate = TurnGate(limits=Limits(max_argument_bytes=14, max_turn_bytes=20, max_slots=1))
    gate.identity(0, "a", "f")
    gate.fragment(0, "a")  # a grant of half the turn's nineteen unreserved bytes: nine
    gate.fragment(0, "b")
    gate.fragment(0, "cdefghijklm")  # past the grant: it is given back, then 13 bytes of 14
    gate.fragment(0, "n")
    assert gate.findings == []
    gate.fragment(0, "o")
    assert gate.slots[0].raw_arguments == "abcdefghijklmn"
    assert [f.code for f in gate.findings] == ["limit_exceeded"]


def test_a_turn_filled_exactly_once_the_other_grants_are_back() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=100, max_turn_bytes=40, max_slots=2))
    gate.identity(0, "a", "f")
    gate.identity(1, "b", "f")
    gate.fragment(0, "a")  # call 0 holds a grant of nine bytes
    gate.fragment(1, "b")
    gate.fragment(1, "x" * 38)  # 40 bytes in all once call 0's grant is back: not over
    assert gate.findings == []
    gate.fragment(0, "z")
    assert gate.slots[1].raw_arguments == "b" + "x" * 38
    assert [f.code for f in gate.findings] == ["limit_exceeded"]


@pytest.mark.parametrize("key", [True, 1.0, "1"], ids=repr)
def test_a_key_that_is_not_an_index_never_appends_within_a_slots_grant(key: Any) -> None:
    gate = TurnGate()
    gate.identity(1, "call_1", "f")
    gate.fragment(1, '{"a": ')  # counted: the slot now holds a grant
    assert gate.slots[1].room > 0
    gate.fragment(key, "1}")
    assert gate.slots[1].raw_arguments == '{"a": '
    assert [(f.code, f.slot) for f in gate.findings] == [("malformed_chunk", None)]
    assert f"slot key {key!r} is not a non-negative integer" == gate.findings[0].message
    assert gate.turn == "blocked"
