"""The turn gate, event by event, with the whole state asserted after each (as h11's tests do).

Each script feeds a :class:`~callgate.gate.turn.TurnGate` the primitives a wire strategy
reports (identity, fragment, close, confirm, turn_done, finish) and states, after every
one, the WHOLE state: each slot's machine state, id, name and argument text, the turn
machine's state, and every finding so far (code and slot), in order. The main paths come
first (a turn-level done, per-call dones, parallel and interleaved calls, text only, the
duplicate-call bug), then the refusals (each kind of bad input and what it blocks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from callgate import Limits, ToolSchemas, TurnGate

WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "get_time": {"type": "object", "properties": {"tz": {"type": "string"}}},
}
ARGS = '{"city": "Paris"}'

Action = Callable[[TurnGate], object]
SlotView = tuple[str, str | None, str | None, str]
State = dict[str, Any]


def whole(gate: TurnGate) -> State:
    """Everything the gate decided so far."""
    return {
        "slots": {
            key: (slot.state, slot.id, slot.name, slot.raw_arguments)
            for key, slot in sorted(gate.slots.items())
        },
        "turn": gate.turn,
        "findings": [(f.code, f.slot) for f in gate.findings],
    }


def state(
    turn: str, slots: dict[int, SlotView] | None = None, findings: list[Any] | None = None
) -> State:
    return {"slots": slots or {}, "turn": turn, "findings": findings or []}


def play(gate: TurnGate, script: list[tuple[str, Action, State]]) -> None:
    assert whole(gate) == state("streaming")
    for what, action, expected in script:
        action(gate)
        assert whole(gate) == expected, what


def gate_for(*, per_call_done: bool = False, **limits: int) -> TurnGate:
    return TurnGate(
        schemas=ToolSchemas(WEATHER), per_call_done=per_call_done, limits=Limits(**limits)
    )


def acc(args: str = "", call: str = "call_0", name: str | None = "get_weather") -> SlotView:
    return ("accumulating", call, name, args)


def valid(args: str = ARGS, call: str = "call_0", name: str = "get_weather") -> SlotView:
    return ("validated", call, name, args)


def blocked(
    args: str = ARGS, call: str | None = "call_0", name: str | None = "get_weather"
) -> SlotView:
    return ("blocked", call, name, args)


# -- the main paths ---------------------------------------------------------------------


def test_one_call_closed_by_the_turns_done() -> None:
    play(
        gate_for(),
        [
            ("opening", lambda g: g.identity(0, "call_0", "get_weather"),
             state("streaming", {0: acc()})),
            ("a fragment", lambda g: g.fragment(0, '{"city": '),
             state("streaming", {0: acc('{"city": ')})),
            ("the JSON closes: no terminal evidence yet", lambda g: g.fragment(0, '"Paris"}'),
             state("streaming", {0: acc(ARGS)})),
            ("continuation with blank id and name", lambda g: g.identity(0, "", ""),
             state("streaming", {0: acc(ARGS)})),
            ("finish_reason tool_calls", lambda g: g.turn_done(True, "tool_calls"),
             state("executable", {0: valid()})),
            ("the stream ends", lambda g: g.finish(), state("executable", {0: valid()})),
        ],
    )  # fmt: skip


def test_calls_closed_by_their_own_done_then_the_turn() -> None:
    play(
        gate_for(per_call_done=True),
        [
            ("first opening", lambda g: g.identity(0, "toolu_0", "get_weather"),
             state("streaming", {0: acc(call="toolu_0")})),
            ("its input", lambda g: g.fragment(0, ARGS),
             state("streaming", {0: acc(ARGS, "toolu_0")})),
            ("its stop", lambda g: g.close(0), state("streaming", {0: valid(call="toolu_0")})),
            ("second opening", lambda g: g.identity(1, "toolu_1", "get_time"),
             state("streaming",
                   {0: valid(call="toolu_0"), 1: acc(call="toolu_1", name="get_time")})),
            ("empty input, then its stop", lambda g: (g.fragment(1, '{}'), g.close(1)),
             state("streaming", {0: valid(call="toolu_0"),
                                 1: valid("{}", "toolu_1", "get_time")})),
            ("message_stop with tool_use", lambda g: g.turn_done(True, "tool_use"),
             state("executable", {0: valid(call="toolu_0"),
                                  1: valid("{}", "toolu_1", "get_time")})),
        ],
    )  # fmt: skip


def test_parallel_calls_interleave_and_a_late_name_joins_its_slot() -> None:
    play(
        gate_for(),
        [
            ("slot 1 opens first, without a name", lambda g: g.identity(1, "call_1", None),
             state("streaming", {1: acc(call="call_1", name=None)})),
            ("slot 0 opens", lambda g: g.identity(0, "call_0", "get_weather"),
             state("streaming", {0: acc(), 1: acc(call="call_1", name=None)})),
            ("slot 1's name arrives late", lambda g: g.identity(1, None, "get_time"),
             state("streaming", {0: acc(), 1: acc(call="call_1", name="get_time")})),
            ("fragments interleave", lambda g: (g.fragment(1, '{"tz"'), g.fragment(0, ARGS)),
             state("streaming", {0: acc(ARGS), 1: acc('{"tz"', "call_1", "get_time")})),
            ("slot 1 completes", lambda g: g.fragment(1, ': "UTC"}'),
             state("streaming", {0: acc(ARGS), 1: acc('{"tz": "UTC"}', "call_1", "get_time")})),
            ("the turn's done", lambda g: g.turn_done(True, "tool_calls"),
             state("executable", {0: valid(), 1: valid('{"tz": "UTC"}', "call_1", "get_time")})),
        ],
    )  # fmt: skip


def test_a_turn_without_calls_is_not_applicable() -> None:
    play(
        gate_for(),
        [
            ("text counted", lambda g: g.text("Paris is sunny."), state("streaming")),
            ("finish_reason stop", lambda g: g.turn_done(False, "stop"),
             state("not_applicable")),
            ("the stream ends", lambda g: g.finish(), state("not_applicable")),
        ],
    )  # fmt: skip


def test_an_identical_repeat_of_a_complete_call_is_dropped() -> None:
    play(
        gate_for(),
        [
            ("opening and whole arguments",
             lambda g: (g.identity(0, "call_0", "get_weather"), g.fragment(0, ARGS)),
             state("streaming", {0: acc(ARGS)})),
            ("the same id and name again", lambda g: g.identity(0, "call_0", "get_weather"),
             state("streaming", {0: ("replaying", "call_0", "get_weather", ARGS)})),
            ("half the repeat", lambda g: g.fragment(0, '{"city": '),
             state("streaming", {0: ("replaying", "call_0", "get_weather", ARGS)})),
            ("the rest of the repeat", lambda g: g.fragment(0, '"Paris"}'),
             state("streaming", {0: acc(ARGS)}, [("duplicate_call_ignored", 0)])),
            ("the turn's done", lambda g: g.turn_done(True, "tool_calls"),
             state("executable", {0: valid()}, [("duplicate_call_ignored", 0)])),
        ],
    )  # fmt: skip


def test_restated_full_arguments_that_match_change_nothing() -> None:
    play(
        gate_for(per_call_done=True),
        [
            ("opening and arguments",
             lambda g: (g.identity(0, "fc_0", "get_weather"), g.fragment(0, ARGS)),
             state("streaming", {0: acc(ARGS, "fc_0")})),
            ("arguments.done restates them", lambda g: g.confirm(0, ARGS),
             state("streaming", {0: acc(ARGS, "fc_0")})),
            ("output_item.done", lambda g: g.close(0), state("streaming", {0: valid(call="fc_0")})),
            ("response.completed restates them", lambda g: g.confirm(0, ARGS),
             state("streaming", {0: valid(call="fc_0")})),
            ("response.completed ends the turn", lambda g: g.turn_done(True, "completed"),
             state("executable", {0: valid(call="fc_0")})),
        ],
    )  # fmt: skip


# -- refusals ---------------------------------------------------------------------------


def opened(gate: TurnGate, args: str = ARGS) -> None:
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, args)


def test_an_identity_collision_blocks_the_slot_and_the_turn_for_good() -> None:
    after = state("blocked", {0: blocked()}, [("identity_collision", 0)])
    play(
        gate_for(),
        [
            ("opening and arguments", opened, state("streaming", {0: acc(ARGS)})),
            ("another id for the slot", lambda g: g.identity(0, "call_9", None), after),
            ("more arguments", lambda g: g.fragment(0, " "), after),
            ("the turn's done", lambda g: g.turn_done(True, "tool_calls"), after),
            ("the stream ends", lambda g: g.finish(), after),
        ],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ('{"city": "Paris"', "malformed_json"),
        ('{"city": "Paris"} {}', "trailing_data"),
        ('{"city": NaN}', "non_finite_number"),
        ('{"city": "Paris", "city": "Rome"}', "duplicate_key"),
        ('["Paris"]', "non_object_arguments"),
        ('{"town": "Paris"}', "schema_invalid"),
    ],
)
def test_arguments_that_fail_a_check_block_the_turn_at_its_done(args: str, code: str) -> None:
    play(
        gate_for(),
        [
            ("opening and arguments", lambda g: opened(g, args),
             state("streaming", {0: acc(args)})),
            ("the turn's done runs the checks", lambda g: g.turn_done(True, "tool_calls"),
             state("blocked", {0: blocked(args)}, [(code, 0)])),
        ],
    )  # fmt: skip


def test_an_unknown_tool_and_a_missing_id_or_name_are_refused_at_the_done() -> None:
    play(
        gate_for(),
        [
            ("a call of a tool nobody declared",
             lambda g: (g.identity(0, "call_0", "rm"), g.fragment(0, "{}")),
             state("streaming", {0: acc("{}", name="rm")})),
            ("a call without a name",
             lambda g: (g.identity(1, "call_1", None), g.fragment(1, "{}")),
             state("streaming", {0: acc("{}", name="rm"), 1: acc("{}", "call_1", None)})),
            ("a call without an id",
             lambda g: (g.identity(2, None, "get_time"), g.fragment(2, "{}")),
             state("streaming", {0: acc("{}", name="rm"), 1: acc("{}", "call_1", None),
                                 2: acc("{}", None, "get_time")})),
            ("the turn's done", lambda g: g.turn_done(True, "tool_calls"),
             state("blocked", {0: blocked("{}", name="rm"), 1: blocked("{}", "call_1", None),
                               2: blocked("{}", None, "get_time")},
                   [("unknown_tool", 0), ("missing_name", 1), ("missing_id", 2)])),
        ],
    )  # fmt: skip


def test_a_fragment_after_a_calls_done_and_a_second_done_are_refused() -> None:
    play(
        gate_for(per_call_done=True),
        [
            ("a whole call", lambda g: (opened(g), g.close(0)), state("streaming", {0: valid()})),
            ("a second whole call", lambda g: (g.identity(1, "call_1", "get_time"),
                                               g.fragment(1, "{}"), g.close(1)),
             state("streaming", {0: valid(), 1: valid("{}", "call_1", "get_time")})),
            ("a fragment for the first", lambda g: g.fragment(0, " "),
             state("blocked", {0: blocked(), 1: valid("{}", "call_1", "get_time")},
                   [("delta_after_terminal", 0)])),
            ("a second done for the second", lambda g: g.close(1),
             state("blocked", {0: blocked(), 1: blocked("{}", "call_1", "get_time")},
                   [("delta_after_terminal", 0), ("duplicate_terminal", 1)])),
        ],
    )  # fmt: skip


def test_a_fragment_after_the_done_is_reported_before_the_check_it_broke() -> None:
    play(
        gate_for(per_call_done=True),
        [
            ("a call cut short", lambda g: opened(g, '{"city": "Par'),
             state("streaming", {0: acc('{"city": "Par')})),
            ("its done: the JSON is broken", lambda g: g.close(0),
             state("blocked", {0: blocked('{"city": "Par')}, [("malformed_json", 0)])),
            ("the rest arrives after the done", lambda g: g.fragment(0, 'is"}'),
             state("blocked", {0: blocked('{"city": "Par')},
                   [("delta_after_terminal", 0), ("malformed_json", 0)])),
        ],
    )  # fmt: skip


def test_a_stream_that_ends_before_the_turns_done_blocks_every_open_call() -> None:
    play(
        gate_for(),
        [
            ("opening and arguments", opened, state("streaming", {0: acc(ARGS)})),
            ("the stream ends", lambda g: g.finish(),
             state("blocked", {0: blocked()}, [("missing_terminal", 0)])),
        ],
    )  # fmt: skip


def test_a_turn_that_ends_for_another_reason_blocks_its_calls() -> None:
    play(
        gate_for(),
        [
            ("opening and arguments", opened, state("streaming", {0: acc(ARGS)})),
            ("finish_reason length", lambda g: g.turn_done(False, "length"),
             state("blocked", {0: blocked()}, [("wrong_terminal_reason", 0)])),
        ],
    )  # fmt: skip


def test_a_call_per_done_format_whose_turn_ends_first_is_missing_its_terminal() -> None:
    play(
        gate_for(per_call_done=True),
        [
            ("opening and arguments", opened, state("streaming", {0: acc(ARGS)})),
            ("message_stop before the block's stop", lambda g: g.turn_done(True, "tool_use"),
             state("blocked", {0: blocked()}, [("missing_terminal", 0)])),
        ],
    )  # fmt: skip


def test_a_call_or_a_done_after_the_turn_ended_blocks_it() -> None:
    done = state("executable", {0: valid()})
    play(
        gate_for(),
        [
            ("a whole turn", lambda g: (opened(g), g.turn_done(True, "tool_calls")), done),
            ("a repeated identical finish chunk", lambda g: g.turn_done(True, "tool_calls"),
             state("blocked", {0: valid()}, [("duplicate_terminal", None)])),
        ],
    )  # fmt: skip
    play(
        gate_for(),
        [
            ("a whole turn", lambda g: (opened(g), g.turn_done(True, "tool_calls")), done),
            ("a call opens after it", lambda g: g.identity(1, "call_1", "get_time"),
             state("blocked", {0: valid(), 1: acc(call="call_1", name="get_time")},
                   [("delta_after_terminal", 1)])),
        ],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("key", "code"),
    [(-1, "malformed_chunk"), ("0", "malformed_chunk"), (True, "malformed_chunk"),
     (10**12, "limit_exceeded")],
)  # fmt: skip
def test_an_unreadable_slot_key_is_refused_once_and_allocates_nothing(
    key: object, code: str
) -> None:
    after = state("blocked", {}, [(code, None)])
    play(
        gate_for(),
        [
            ("a fragment for the key", lambda g: g.fragment(key, "{}"), after),
            ("the same key again", lambda g: g.identity(key, "call_0", "get_weather"), after),
            ("the turn's done", lambda g: g.turn_done(True, "tool_calls"), after),
        ],
    )  # fmt: skip


def test_limits_block_the_call_or_the_turn_that_passes_them() -> None:
    play(
        gate_for(max_argument_bytes=8, max_slots=1),
        [
            ("an opening", lambda g: g.identity(0, "call_0", "get_weather"),
             state("streaming", {0: acc()})),
            ("arguments past 8 bytes", lambda g: g.fragment(0, ARGS),
             state("blocked", {0: blocked("")}, [("limit_exceeded", 0)])),
            ("a second call past max_slots", lambda g: g.identity(1, "call_1", "get_time"),
             state("blocked", {0: blocked("")}, [("limit_exceeded", 0), ("limit_exceeded", None)])),
        ],
    )  # fmt: skip


def test_restated_arguments_that_differ_block_the_call() -> None:
    play(
        gate_for(per_call_done=True),
        [
            ("opening and arguments", opened, state("streaming", {0: acc(ARGS)})),
            ("the done event restates other arguments", lambda g: g.confirm(0, "{}"),
             state("blocked", {0: blocked()}, [("args_mismatch", 0)])),
        ],
    )  # fmt: skip


def test_a_repeat_that_differs_is_an_identity_collision() -> None:
    play(
        gate_for(),
        [
            ("opening and arguments", opened, state("streaming", {0: acc(ARGS)})),
            ("the same id and name again", lambda g: g.identity(0, "call_0", "get_weather"),
             state("streaming", {0: ("replaying", "call_0", "get_weather", ARGS)})),
            ("a repeat with other arguments", lambda g: g.fragment(0, '{"town"'),
             state("blocked", {0: blocked()}, [("identity_collision", 0)])),
        ],
    )  # fmt: skip
