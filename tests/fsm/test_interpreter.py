"""The interpreter follows its table exactly and rejects what the table does not allow."""

from __future__ import annotations

import pytest

from callgate.fsm import MACHINES, SLOT, TURN, Interpreter, Table, TransitionError

PAIRS = [
    (name, state, event)
    for name, table in sorted(MACHINES.items())
    for state in table.state_names
    for event in table.event_names
]


def lookup(table: Table, state: str, event: str) -> list[str]:
    return [t.target for t in table.transitions if t.source == state and t.event == event]


def test_slot_runs_a_clean_call_to_validated() -> None:
    slot = Interpreter(SLOT)
    assert slot.initial == "unseen"
    assert slot.run(["identity", "args", "args", "close"]) == "terminal"
    assert slot.run(["identity", "args", "close", "accept", "turn_end", "stream_end"]) == (
        "validated"
    )


def test_slot_drops_an_identical_duplicate_call_and_reports_it() -> None:
    slot = Interpreter(SLOT)
    state = slot.run(["identity", "args", "restart", "replay_args"])
    assert state == "replaying"
    step = slot.transition(state, "replay_done")
    assert (step.target, step.output) == ("accumulating", "duplicate_call_ignored")
    assert slot.run(["close", "accept"], state=step.target) == "validated"


def test_slot_blocks_a_fragment_after_terminal_with_its_finding() -> None:
    slot = Interpreter(SLOT)
    validated = slot.run(["args", "close", "accept"])
    step = slot.transition(validated, "args")
    expected = ("validated", "blocked", "delta_after_terminal")
    assert (step.source, step.target, step.output) == expected
    assert slot.step(validated, "args") == "blocked"


def test_slot_blocked_absorbs_every_event() -> None:
    slot = Interpreter(SLOT)
    blocked = slot.step("unseen", "overflow")
    assert blocked == "blocked"
    assert slot.run(list(SLOT.event_names), state=blocked) == "blocked"


def test_turn_runs_to_each_verdict() -> None:
    turn = Interpreter(TURN)
    assert turn.run(["call", "call", "end", "pass"]) == "executable"
    assert turn.run(["call", "end", "fail"]) == "blocked"
    assert turn.run(["end", "empty", "end"]) == "not_applicable"
    assert turn.run(["call", "end", "pass", "call"]) == "blocked"


def test_turn_reports_a_call_after_the_end() -> None:
    step = Interpreter(TURN).transition("executable", "call")
    assert (step.target, step.output) == ("blocked", "delta_after_terminal")


def test_run_from_a_given_state_and_with_no_events() -> None:
    turn = Interpreter(TURN)
    assert turn.run([]) == "streaming"
    assert turn.run((), state="complete") == "complete"
    assert turn.run(("pass",), state="complete") == "executable"


def test_unaccepted_event_raises_transition_error_naming_machine_state_and_event() -> None:
    slot = Interpreter(SLOT)
    with pytest.raises(TransitionError) as info:
        slot.step("terminal", "args")
    error = info.value
    assert (error.machine, error.state, error.event) == ("slot", "terminal", "args")
    assert str(error) == "machine 'slot' cannot handle event 'args' in state 'terminal'"
    with pytest.raises(TransitionError, match=r"'slot'.*'args'.*'terminal'"):
        slot.transition("terminal", "args")


def test_run_stops_at_the_first_unaccepted_event() -> None:
    with pytest.raises(TransitionError) as info:
        Interpreter(SLOT).run(["identity", "close", "args", "accept"])
    assert (info.value.state, info.value.event) == ("terminal", "args")


def test_transition_error_is_a_runtime_error() -> None:
    assert issubclass(TransitionError, RuntimeError)


@pytest.mark.parametrize(("name", "state", "event"), PAIRS)
def test_every_state_and_event_follows_the_table(name: str, state: str, event: str) -> None:
    table = MACHINES[name]
    interpreter = Interpreter(table)
    targets = lookup(table, state, event)
    assert len(targets) <= 1
    assert interpreter.accepts(state, event) == bool(targets)
    if targets:
        assert interpreter.step(state, event) == targets[0]
        assert interpreter.step(state, event) in table.state_names
        transition = interpreter.transition(state, event)
        assert (transition.source, transition.event) == (state, event)
        assert transition in table.transitions
    else:
        with pytest.raises(TransitionError) as info:
            interpreter.step(state, event)
        assert (info.value.machine, info.value.state, info.value.event) == (name, state, event)
        with pytest.raises(TransitionError):
            interpreter.transition(state, event)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_is_final_matches_the_final_states(name: str) -> None:
    table = MACHINES[name]
    interpreter = Interpreter(table)
    assert {s for s in table.state_names if interpreter.is_final(s)} == table.final_states
    assert table.final_states
