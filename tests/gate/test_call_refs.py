"""A call's typed reference: equal, hashed, ordered and written out as one rule holds.

Native references (a provider's slot) and text references (a block and a place in it) are
small frozen values: two are equal exactly when their report forms are, a native one never
equals a text one (nor an int or a string), they order as the turn's calls are ordered, and
their report form survives JSON as reports and findings carry it.
"""

from __future__ import annotations

import itertools
import json
import operator

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate import LLMStreamBuffer, ToolSchemas, TurnGate
from callgate.gate.findings import finding
from callgate.gate.turn import CallRef, NativeRef, TextRef, call_order
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import Chunk, WireCall

PLACES = st.integers(min_value=0, max_value=10**6)
NATIVE = st.builds(NativeRef, PLACES)
TEXT = st.builds(TextRef, PLACES, PLACES)
REFS = st.one_of(NATIVE, TEXT)


def place(ref: CallRef) -> tuple[int, int, int]:
    """Where the call sits, read from its fields: native slots first, then text calls."""
    if isinstance(ref, NativeRef):
        return (0, ref.index, 0)
    return (1, ref.block, ref.n)


@given(REFS, REFS)
def test_two_refs_are_equal_exactly_when_their_report_forms_are_and_hash_alike(
    a: CallRef, b: CallRef
) -> None:
    assert (a == b) == (a.slot == b.slot) == (place(a) == place(b))
    if a == b:
        assert hash(a) == hash(b)
    assert len({a, b}) == (1 if a == b else 2)


@given(PLACES, PLACES, PLACES)
def test_a_native_ref_never_equals_a_text_ref_nor_its_own_report_form(
    index: int, block: int, n: int
) -> None:
    native: object = NativeRef(index)
    text: object = TextRef(block, n)
    assert native != text and text != native
    assert native != index and text != f"text-{block}.{n}"
    assert len({native, text, NativeRef(index), TextRef(block, n)}) == 2


@given(st.lists(REFS, max_size=12))
def test_refs_order_as_the_turn_orders_its_calls(refs: list[CallRef]) -> None:
    expected = sorted(refs, key=place)
    assert sorted(refs) == expected
    assert sorted(refs, key=call_order) == expected
    for a, b in itertools.pairwise(refs):
        assert (a < b) == (place(a) < place(b))
        assert (a <= b) == (place(a) <= place(b))
        assert (a > b) == (place(a) > place(b))
        assert (a >= b) == (place(a) >= place(b))


@given(st.lists(REFS, max_size=8))
def test_no_reference_sorts_after_every_call(refs: list[CallRef]) -> None:
    with_none: list[CallRef | None] = [None, *refs]
    assert sorted(with_none, key=call_order)[-1] is None


@given(REFS)
def test_the_report_form_survives_json_as_reports_and_findings_carry_it(ref: CallRef) -> None:
    found = finding("schema_invalid", "does not match", ref.slot)
    carried = json.loads(json.dumps(found.as_dict()))["slot"]
    assert carried == ref.slot and type(carried) is type(ref.slot)
    assert str(ref) == str(ref.slot)
    assert isinstance(ref.slot, int) == isinstance(ref, NativeRef) == ref.native


def test_a_ref_is_frozen_and_is_no_string() -> None:
    ref = TextRef(1, 2)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        ref.block = 3  # type: ignore[misc]
    assert not isinstance(ref, str) and (ref.slot, str(ref)) == ("text-1.2", "text-1.2")
    assert [ref] == [TextRef(1, 2)] and NativeRef(3).slot == 3


@pytest.mark.parametrize("other", [0, "text-0.0", None])
def test_a_ref_does_not_order_against_anything_but_a_ref(other: object) -> None:
    for ref in (NativeRef(0), TextRef(0, 0)):
        for compare in (operator.lt, operator.le, operator.gt, operator.ge):
            with pytest.raises(TypeError):
                compare(ref, other)


@given(
    st.sets(st.integers(min_value=0, max_value=50), max_size=4),
    st.lists(st.integers(min_value=1, max_value=3), max_size=3),
)
def test_the_gate_gives_each_call_its_ref_in_call_order(
    natives: set[int], blocks: list[int]
) -> None:
    gate = TurnGate(schemas=ToolSchemas({"f": {"type": "object"}}))
    for n, (block, count) in enumerate(enumerate(blocks)):
        for at in range(count):
            gate.text_call(TextRef(block, at), "tool_call_tag", None, "f", {"n": n})
    for index in sorted(natives, reverse=True):
        gate.identity(index, f"call_{index}", "f")
    calls = gate.calls()
    refs = [slot.ref for slot in calls]
    assert refs == sorted(refs)
    assert [slot.key for slot in calls] == [ref.slot for ref in refs]
    assert [r for r in refs if isinstance(r, NativeRef)] == [NativeRef(i) for i in sorted(natives)]
    assert len([r for r in refs if isinstance(r, TextRef)]) == sum(blocks)


TOOL_CALL = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'


@pytest.mark.parametrize(
    ("chunks", "ref"),
    [
        (openai_chunks([WireCall("call_1", "f", ('{"a": 1}',))], [0, 0]), NativeRef(0)),
        (openai_chunks([], [], text=["Sure. ", TOOL_CALL]), TextRef(0, 0)),
    ],
    ids=["native", "text"],
)
def test_a_call_and_its_forming_record_carry_one_ref_and_one_report_form(
    chunks: list[Chunk], ref: CallRef
) -> None:
    buffer = LLMStreamBuffer(tool_schemas={"f": {"type": "object"}}, text_formats=["tool_call_tag"])
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    [call] = buffer.calls
    [record] = buffer.partial_calls()
    assert (call.ref, call.slot) == (ref, ref.slot)
    assert (record.call_ref, record.ref) == (ref, ref.slot)
