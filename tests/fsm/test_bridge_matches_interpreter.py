"""The transitions bridge behaves exactly like the interpreter on every machine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transitions import MachineError

from callgate.fsm import MACHINES, SLOT, Interpreter, TransitionError
from callgate.fsm.bridge import BridgeModel, to_transitions


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_bridge_starts_in_the_initial_state_with_the_tables_states(name: str) -> None:
    table = MACHINES[name]
    machine = to_transitions(table)
    model = machine.models[0]
    assert isinstance(model, BridgeModel)
    assert model.state == table.initial
    assert sorted(machine.states) == sorted(table.state_names)


def test_bridge_uses_a_given_model() -> None:
    model = BridgeModel()
    machine = to_transitions(SLOT, model=model)
    assert machine.models[0] is model
    model.trigger("identity")
    assert model.state == "accumulating"


def test_bridge_rejects_an_event_the_state_does_not_accept_and_stays() -> None:
    model = to_transitions(SLOT).models[0]
    for event in ("identity", "close"):
        model.trigger(event)
    with pytest.raises(MachineError):
        model.trigger("args")
    assert model.state == "terminal"


def test_bridge_has_no_automatic_to_state_triggers() -> None:
    model = to_transitions(SLOT).models[0]
    assert not hasattr(model, "to_validated")


@pytest.mark.parametrize("name", sorted(MACHINES))
@given(data=st.data())
def test_interpreter_and_bridge_agree_on_any_event_sequence(name: str, data: st.DataObject) -> None:
    table = MACHINES[name]
    events = data.draw(st.lists(st.sampled_from(table.event_names), max_size=40), label="events")
    interpreter = Interpreter(table)
    model = to_transitions(table).models[0]
    state = interpreter.initial
    assert model.state == state
    for event in events:
        before = state
        try:
            state = interpreter.step(state, event)
            interpreter_refused = False
        except TransitionError:
            interpreter_refused = True
        try:
            model.trigger(event)
            bridge_refused = False
        except MachineError:
            bridge_refused = True
        assert interpreter_refused == bridge_refused, (before, event)
        if interpreter_refused:
            assert state == before
            assert model.state == before
        assert model.state == state, (before, event)
