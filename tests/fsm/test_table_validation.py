"""Table validation: each inconsistency is rejected with a message naming machine and problem."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from callgate.fsm import MACHINES, Event, State, Table, TableError, Transition

STATES = (State("idle", "waiting"), State("busy", "working"), State("done", "over", final=True))
EVENTS = (Event("go", "start"), Event("stop", "finish"))
TRANSITIONS = (
    Transition("idle", "go", "busy", "start working"),
    Transition("busy", "stop", "done", "finish"),
    Transition("done", "stop", "done", "stay finished"),
)


def toy(**changes: Any) -> Table:
    fields: dict[str, Any] = {
        "name": "toy",
        "doc": "a three-state example",
        "states": STATES,
        "events": EVENTS,
        "transitions": TRANSITIONS,
        "initial": "idle",
    }
    fields.update(changes)
    return Table(**fields)


def rejected(**changes: Any) -> TableError:
    with pytest.raises(TableError) as info:
        toy(**changes)
    error = info.value
    assert error.machine == "toy"
    assert str(error).startswith("machine 'toy': ")
    assert str(error) == f"machine 'toy': {error.problem}"
    return error


def test_small_valid_table_is_accepted_and_stores_tuples() -> None:
    table = toy(states=list(STATES), transitions=iter(TRANSITIONS))
    assert table.states == STATES
    assert table.transitions == TRANSITIONS
    assert table.state_names == ("idle", "busy", "done")
    assert table.event_names == ("go", "stop")
    assert table.final_states == frozenset({"done"})
    assert table.outgoing("busy") == (TRANSITIONS[1],)
    assert table.state("busy") == STATES[1]


def test_state_lookup_of_unknown_name_raises_key_error_naming_machine() -> None:
    with pytest.raises(KeyError, match="machine 'toy' has no state 'nowhere'"):
        toy().state("nowhere")


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_shipped_machines_pass_validation(name: str) -> None:
    table = MACHINES[name]
    table.validate()
    assert table.name == name


def test_duplicate_state_is_rejected() -> None:
    error = rejected(states=(*STATES, State("busy", "again")))
    assert error.problem == "state names are not unique: busy"


def test_duplicate_event_is_rejected() -> None:
    error = rejected(events=(*EVENTS, Event("go", "again")))
    assert error.problem == "event names are not unique: go"


def test_unknown_target_state_in_transition_is_rejected() -> None:
    bad = Transition("busy", "stop", "nowhere", "lost")
    error = rejected(transitions=(*TRANSITIONS, bad))
    assert "unknown state 'nowhere'" in error.problem
    assert "busy--stop-->nowhere" in error.problem


def test_unknown_source_state_in_transition_is_rejected() -> None:
    bad = Transition("limbo", "go", "busy", "from nowhere")
    error = rejected(transitions=(*TRANSITIONS, bad))
    assert "unknown state 'limbo'" in error.problem


def test_unknown_event_in_transition_is_rejected() -> None:
    bad = Transition("idle", "jump", "done", "skip ahead")
    error = rejected(transitions=(*TRANSITIONS, bad))
    assert "unknown event 'jump'" in error.problem
    assert "idle--jump-->done" in error.problem


def test_two_transitions_for_one_state_and_event_are_rejected() -> None:
    twin = Transition("idle", "go", "done", "or straight to done")
    error = rejected(transitions=(*TRANSITIONS, twin))
    assert error.problem == "not deterministic: two transitions for event 'go' in 'idle'"


def test_unreachable_state_is_rejected() -> None:
    error = rejected(
        states=(*STATES, State("island", "never entered")),
        transitions=(*TRANSITIONS, Transition("island", "stop", "done", "leaves only")),
    )
    assert error.problem == "states unreachable from 'idle': island"


def test_state_that_cannot_reach_a_final_state_is_rejected() -> None:
    error = rejected(
        states=(*STATES, State("trap", "no way out")),
        transitions=(
            *TRANSITIONS,
            Transition("idle", "stop", "trap", "fall in"),
            Transition("trap", "go", "trap", "spin"),
        ),
    )
    assert error.problem == "states that can never reach a final state: trap"


def test_transition_leaving_the_final_states_is_rejected() -> None:
    error = rejected(transitions=(*TRANSITIONS, Transition("done", "go", "busy", "revive")))
    assert error.problem == "final state 'done' is left by 'go' to 'busy'"


def test_table_without_final_state_is_rejected() -> None:
    error = rejected(states=tuple(attrs.evolve(s, final=False) for s in STATES))
    assert error.problem == "no final state"


def test_unused_event_is_rejected() -> None:
    error = rejected(events=(*EVENTS, Event("idle_ping", "never sent")))
    assert error.problem == "events never used: idle_ping"


def test_initial_state_that_is_not_a_state_is_rejected() -> None:
    error = rejected(initial="start")
    assert error.problem == "initial state 'start' is not a state"


def test_table_error_is_a_value_error() -> None:
    assert issubclass(TableError, ValueError)


@pytest.mark.parametrize(
    ("obj", "attribute", "value"),
    [
        (toy(), "initial", "busy"),
        (toy(), "states", ()),
        (STATES[0], "final", True),
        (EVENTS[0], "name", "other"),
        (TRANSITIONS[0], "target", "done"),
    ],
)
def test_tables_and_their_parts_are_frozen(obj: object, attribute: str, value: object) -> None:
    before = getattr(obj, attribute)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(obj, attribute, value)
    assert getattr(obj, attribute) == before
