"""Behaviour of the turn gate that the mutation run found unobserved.

The gate is driven through its public methods (what every wire strategy calls) and read
through its public state: the turn's state, each slot's state and arguments, the findings
with their codes, slots and messages, and what each release policy hands out.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Limits, ToolSchemas, TurnGate

WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}


def found(gate: TurnGate) -> list[tuple[str, int | str | None, str]]:
    return [(f.code, f.slot, f.message) for f in gate.findings]


def codes(gate: TurnGate) -> list[str]:
    return [f.code for f in gate.findings]


def one_call(gate: TurnGate, arguments: str = '{"city": "Paris"}', key: int = 0) -> None:
    gate.identity(key, f"call_{key}", "get_weather")
    gate.fragment(key, arguments)


def states(gate: TurnGate) -> dict[int, str]:
    return {slot.key: slot.state for slot in gate.ordered_slots()}


# A complete, valid turn and its verdict.


def test_a_valid_call_passes_with_its_parsed_arguments() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    one_call(gate)
    gate.turn_done(True, "tool_calls")
    assert gate.turn == "executable" and gate.executable
    assert states(gate) == {0: "validated"}
    assert gate.ordered_slots()[0].arguments == {"city": "Paris"}
    assert gate.findings == []
    gate.finish()
    assert gate.turn == "executable"
    assert gate.findings == []


def test_every_call_of_a_turn_must_validate() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    one_call(gate, key=0)
    one_call(gate, '{"town": "Paris"}', key=1)
    gate.turn_done(True, "tool_calls")
    assert gate.turn == "blocked"
    assert states(gate) == {0: "validated", 1: "blocked"}
    assert codes(gate) == ["schema_invalid"]
    assert gate.findings[0].slot == 1


def test_a_turn_without_calls_is_not_applicable() -> None:
    gate = TurnGate()
    gate.turn_done(False, "stop")
    assert gate.turn == "not_applicable"
    assert gate.findings == []


def test_a_stream_ending_without_calls_or_done_is_not_applicable() -> None:
    gate = TurnGate()
    gate.finish()
    assert gate.turn == "not_applicable"
    assert gate.findings == []


def test_slots_are_ordered_by_their_key_not_their_arrival() -> None:
    gate = TurnGate()
    one_call(gate, key=2)
    one_call(gate, key=0)
    one_call(gate, key=1)
    assert [slot.key for slot in gate.ordered_slots()] == [0, 1, 2]


# Slot keys.


@pytest.mark.parametrize(
    ("key", "code", "message"),
    [
        (-1, "malformed_chunk", "slot index -1 is negative"),
        ("0", "malformed_chunk", "slot key '0' is not a non-negative integer"),
        (True, "malformed_chunk", "slot key True is not a non-negative integer"),
        (None, "malformed_chunk", "slot key None is not a non-negative integer"),
        (4096, "limit_exceeded", "slot index 4096 exceeds 4095"),
    ],
)
def test_an_unusable_slot_key_blocks_the_turn_once(key: Any, code: str, message: str) -> None:
    gate = TurnGate()
    gate.identity(key, "call_1", "get_weather")
    gate.fragment(key, "{}")
    gate.close(key)
    assert found(gate) == [(code, None, message)]
    assert gate.turn == "blocked"
    assert gate.slots == {}


def test_the_largest_slot_index_is_a_slot() -> None:
    gate = TurnGate()
    one_call(gate, key=4095)
    gate.turn_done(True, "tool_calls")
    assert gate.executable


def test_the_slot_count_limit_admits_exactly_its_number() -> None:
    gate = TurnGate(limits=Limits(max_slots=2))
    one_call(gate, key=0)
    one_call(gate, key=1)
    assert gate.findings == []
    one_call(gate, key=2)
    assert found(gate) == [("limit_exceeded", None, "more than 2 tool calls in one turn")]
    assert gate.turn == "blocked"


# Identities.


@pytest.mark.parametrize(("call_id", "name", "what"), [(7, "f", "id"), ("c", ["f"], "name")])
def test_an_identity_that_is_not_text_is_malformed(call_id: Any, name: Any, what: str) -> None:
    gate = TurnGate()
    gate.identity(0, call_id, name)
    assert found(gate) == [("malformed_chunk", 0, f"slot 0: the call {what} is not text")]
    assert gate.turn == "blocked"


def test_a_second_id_in_one_slot_is_a_collision_naming_both() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.identity(0, "call_x", None)
    assert found(gate) == [("identity_collision", 0, "slot 0 has id 'call_0', then 'call_x'")]
    assert states(gate) == {0: "blocked"}


def test_a_second_name_in_one_slot_is_a_collision_naming_both() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.identity(0, None, "delete_file")
    assert found(gate) == [
        ("identity_collision", 0, "slot 0 has name 'get_weather', then 'delete_file'")
    ]


def test_an_id_already_owned_by_another_slot_is_a_collision() -> None:
    gate = TurnGate()
    one_call(gate, key=0)
    gate.identity(1, "call_0", "get_weather")
    assert found(gate) == [("identity_collision", 1, "id 'call_0' of slot 1 is already slot 0's")]
    assert states(gate) == {0: "accumulating", 1: "blocked"}


def test_the_same_id_restated_in_its_own_slot_is_no_collision() -> None:
    gate = TurnGate()
    gate.identity(0, "call_0", None)
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, "{}")
    gate.identity(0, None, "get_weather")
    gate.turn_done(True, "tool_calls")
    assert gate.executable
    slot = gate.ordered_slots()[0]
    assert (slot.id, slot.name) == ("call_0", "get_weather")


def test_a_late_identity_fills_what_was_missing() -> None:
    gate = TurnGate()
    gate.fragment(0, "{}")
    gate.identity(0, None, "get_weather")
    gate.identity(0, "call_late", None)
    gate.turn_done(True, "tool_calls")
    assert gate.executable
    slot = gate.ordered_slots()[0]
    assert (slot.id, slot.name, slot.arguments) == ("call_late", "get_weather", {})


# A restart of a complete call: dropped when identical, a collision when not.


def test_an_identical_repeat_of_a_complete_call_is_dropped() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city": ')
    gate.fragment(0, '"Paris"}')
    gate.turn_done(True, "tool_calls")
    assert found(gate) == [
        ("duplicate_call_ignored", 0, "slot 0 repeated its call; dropped"),
    ]
    assert gate.executable
    assert gate.ordered_slots()[0].raw_arguments == '{"city": "Paris"}'


def test_a_repeat_with_other_arguments_is_a_collision() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city": "Rome"}')
    assert found(gate) == [("identity_collision", 0, "slot 0 restarted with other arguments")]
    assert gate.turn == "blocked"


def test_a_repeat_still_incomplete_at_done_is_a_collision() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city": ')
    gate.turn_done(True, "tool_calls")
    assert codes(gate) == ["identity_collision"]
    assert gate.turn == "blocked"


@pytest.mark.parametrize("arguments", ['{"city": "Par', "{} x}", "[1]", '{"a": "}"'])
def test_the_same_identity_over_incomplete_arguments_is_no_restart(arguments: str) -> None:
    gate = TurnGate()
    one_call(gate, arguments)
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, "!")
    assert states(gate) == {0: "accumulating"}
    assert gate.ordered_slots()[0].raw_arguments == arguments + "!"


def test_a_complete_object_followed_by_blank_fragments_is_a_restart_point() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.fragment(0, "  ")
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city": "Paris"}  ')
    assert codes(gate) == ["duplicate_call_ignored"]


def test_a_repeat_needs_both_the_id_and_the_name() -> None:
    gate = TurnGate()
    one_call(gate, "{}")
    gate.identity(0, "call_0", None)
    gate.fragment(0, "x")
    gate.identity(0, None, "get_weather")
    gate.fragment(0, "y")
    assert states(gate) == {0: "accumulating"}
    assert gate.ordered_slots()[0].raw_arguments == "{}xy"


# Size and depth limits: the limit itself is allowed, one byte more is not.


def test_arguments_of_exactly_the_byte_limit_are_accepted() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=12))
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": ')
    gate.fragment(0, '"xé"}')  # 6 + 6 bytes: é is two bytes in UTF-8
    gate.turn_done(True, "tool_calls")
    assert gate.executable


def test_arguments_one_byte_over_the_limit_are_refused() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=11))
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": ')
    gate.fragment(0, '"xé"}')
    assert found(gate) == [("limit_exceeded", 0, "arguments exceed 11 bytes")]
    assert gate.turn == "blocked"


def test_a_first_fragment_over_the_limit_is_refused() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=4))
    gate.fragment(0, '{"a": 1}')
    assert found(gate) == [("limit_exceeded", 0, "arguments exceed 4 bytes")]


def test_the_turn_byte_limit_counts_every_call() -> None:
    gate = TurnGate(limits=Limits(max_turn_bytes=20))
    one_call(gate, '{"city": "Rome"}', key=0)  # 16 bytes
    gate.identity(1, "call_1", "get_weather")
    gate.fragment(1, "{}  ")  # 20 in all: allowed
    assert gate.findings == []
    gate.fragment(1, " ")
    assert found(gate) == [("limit_exceeded", 1, "the turn exceeds 20 bytes")]


def test_the_turn_byte_limit_counts_bytes_not_characters() -> None:
    gate = TurnGate(limits=Limits(max_turn_bytes=5))
    gate.identity(0, "c", "f")
    gate.fragment(0, "{")
    gate.fragment(0, "éé")
    assert gate.findings == []
    gate.fragment(0, "é")
    assert codes(gate) == ["limit_exceeded"]


def test_a_surrogate_in_a_fragment_is_counted_not_raised() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=4))
    gate.identity(0, "c", "f")
    gate.fragment(0, "\ud800\ud800")
    assert found(gate) == [("limit_exceeded", 0, "arguments exceed 4 bytes")]


def test_an_empty_fragment_opens_a_slot_and_adds_nothing() -> None:
    gate = TurnGate()
    gate.fragment(0, "")
    assert states(gate) == {0: "accumulating"}
    gate.identity(0, "c", "f")
    gate.fragment(0, "")
    gate.fragment(0, "{}")
    gate.fragment(0, "")
    gate.turn_done(True, "tool_calls")
    assert gate.executable
    assert gate.ordered_slots()[0].raw_arguments == "{}"


def test_an_empty_fragment_after_terminal_changes_nothing() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.turn_done(True, "tool_calls")
    gate.fragment(0, "")
    assert gate.executable
    assert gate.findings == []


def test_a_fragment_after_terminal_blocks_and_is_quoted_cut() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.turn_done(True, "tool_calls")
    late = "x" * 50
    gate.fragment(0, late)
    assert found(gate) == [("delta_after_terminal", 0, f"fragment {'x' * 40!r} after terminal")]
    assert gate.turn == "blocked"


# Terminal evidence.


def test_a_second_turn_done_blocks_an_executable_turn() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.turn_done(True, "tool_calls")
    gate.turn_done(True, "stop")
    assert found(gate) == [
        ("duplicate_terminal", None, "a second turn-level terminal event ('stop')")
    ]
    assert gate.turn == "blocked"
    assert states(gate) == {0: "validated"}


def test_a_non_tool_reason_blocks_every_open_call() -> None:
    gate = TurnGate()
    one_call(gate, key=0)
    one_call(gate, key=1)
    gate.turn_done(False, "length")
    message = "the turn ended with reason 'length', not a tool-call reason"
    assert found(gate) == [
        ("wrong_terminal_reason", 0, message),
        ("wrong_terminal_reason", 1, message),
    ]
    assert gate.turn == "blocked"


def test_with_per_call_done_the_turn_end_blocks_calls_not_closed() -> None:
    gate = TurnGate(per_call_done=True)
    one_call(gate, key=0)
    one_call(gate, key=1)
    gate.close(0)
    gate.turn_done(True, "tool_use")
    assert found(gate) == [("missing_terminal", 1, "the turn ended before this call's done")]
    assert states(gate) == {0: "validated", 1: "blocked"}


def test_with_per_call_done_closed_calls_pass_at_the_turn_end() -> None:
    gate = TurnGate(per_call_done=True)
    one_call(gate, key=0)
    gate.close(0)
    assert gate.turn == "streaming"
    gate.turn_done(True, "tool_use")
    assert gate.executable


def test_a_second_close_of_a_call_is_a_duplicate_terminal() -> None:
    gate = TurnGate(per_call_done=True)
    one_call(gate)
    gate.close(0)
    gate.close(0)
    assert found(gate) == [
        ("duplicate_terminal", 0, "slot 0: a second terminal for this call"),
    ]


def test_a_close_for_a_call_never_opened_is_an_orphan() -> None:
    gate = TurnGate(per_call_done=True)
    gate.close(3)
    assert found(gate) == [("orphan_event", 3, "slot 3: an event for a call that never opened")]
    assert gate.turn == "blocked"


def test_the_stream_ending_before_terminal_blocks_each_call_and_the_turn() -> None:
    gate = TurnGate()
    one_call(gate, key=0)
    one_call(gate, key=1)
    gate.finish()
    message = "the stream ended before this call's terminal"
    assert found(gate) == [
        ("missing_terminal", 0, message),
        ("missing_terminal", 1, message),
    ]
    assert gate.turn == "blocked"


def test_the_stream_ending_after_a_bare_opening_blocks_that_call() -> None:
    gate = TurnGate()
    gate.fragment(0, "")
    gate.finish()
    assert found(gate) == [
        ("missing_terminal", 0, "the stream ended before this call's terminal"),
    ]


def test_closed_calls_without_the_turn_done_are_a_missing_turn_terminal() -> None:
    gate = TurnGate(per_call_done=True)
    one_call(gate)
    gate.close(0)
    gate.finish()
    assert found(gate) == [
        ("missing_terminal", None, "the stream ended without the turn's terminal event"),
    ]
    assert gate.turn == "blocked"


def test_the_stream_ending_after_a_passing_turn_keeps_it() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.turn_done(True, "tool_calls")
    gate.finish()
    assert gate.executable
    assert gate.findings == []


# The checks at terminal.


def test_a_call_without_a_name_is_refused_at_terminal() -> None:
    gate = TurnGate()
    gate.identity(0, "call_0", None)
    gate.fragment(0, "{}")
    gate.turn_done(True, "tool_calls")
    assert found(gate) == [("missing_name", 0, "slot 0 has no tool name")]
    assert gate.turn == "blocked"


def test_a_call_without_an_id_is_refused_where_ids_are_required() -> None:
    gate = TurnGate()
    gate.identity(0, None, "get_weather")
    gate.fragment(0, "{}")
    gate.turn_done(True, "tool_calls")
    assert found(gate) == [("missing_id", 0, "slot 0 has no call id")]


def test_a_call_without_an_id_passes_where_ids_are_optional() -> None:
    gate = TurnGate(requires_id=False)
    gate.identity(0, None, "get_weather")
    gate.fragment(0, "{}")
    gate.turn_done(True, "tool_calls")
    assert gate.executable


def test_empty_arguments_are_an_empty_object_only_where_the_format_says_so() -> None:
    lenient = TurnGate(empty_arguments_object=True)
    lenient.identity(0, "c", "f")
    lenient.turn_done(True, "tool_calls")
    assert lenient.executable
    assert lenient.ordered_slots()[0].arguments == {}

    strict = TurnGate()
    strict.identity(0, "c", "f")
    strict.turn_done(True, "tool_calls")
    assert codes(strict) == ["malformed_json"]
    assert strict.findings[0].slot == 0


def test_blank_arguments_are_not_empty_arguments() -> None:
    gate = TurnGate(empty_arguments_object=True)
    gate.identity(0, "c", "f")
    gate.fragment(0, " ")
    gate.turn_done(True, "tool_calls")
    assert codes(gate) == ["malformed_json"]


def test_an_unknown_tool_is_refused_with_its_slot() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    gate.identity(0, "c", "delete_file")
    gate.fragment(0, "{}")
    gate.turn_done(True, "tool_calls")
    assert codes(gate) == ["unknown_tool"]
    assert gate.findings[0].slot == 0
    assert gate.ordered_slots()[0].arguments is None


def test_arguments_deeper_than_the_limit_are_refused_at_terminal() -> None:
    gate = TurnGate(limits=Limits(max_depth=2))
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": {"b": {}}}')
    gate.turn_done(True, "tool_calls")
    assert codes(gate) == ["limit_exceeded"]
    assert gate.findings[0].slot == 0


# Restated full arguments.


def test_restated_arguments_that_match_change_nothing() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.confirm(0, '{"city": "Paris"}')
    gate.turn_done(True, "tool_calls")
    gate.confirm(0, '{"city": "Paris"}')
    assert gate.executable
    assert gate.findings == []


def test_restated_arguments_that_differ_block_with_both_sizes() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.confirm(0, '{"city": "Rome"}')
    assert found(gate) == [
        (
            "args_mismatch",
            0,
            "slot 0: the full arguments (16 characters) differ from the 17 characters "
            "the fragments built",
        )
    ]


def test_restated_arguments_during_a_repeat_are_compared_with_the_original() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}')
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city"')
    gate.confirm(0, '{"city": "Paris"}')
    assert gate.findings == []
    gate.fragment(0, ': "Paris"}')
    gate.turn_done(True, "tool_calls")
    assert codes(gate) == ["duplicate_call_ignored"]
    assert gate.executable


def test_restated_arguments_for_a_call_never_opened_are_an_orphan() -> None:
    gate = TurnGate()
    gate.confirm(5, "")
    assert found(gate) == [("orphan_event", 5, "full arguments for slot 5, never opened")]
    gate = TurnGate()
    gate.confirm(5, "{}")
    assert codes(gate) == ["orphan_event"]


# Refusals and release policies.


def test_refuse_records_the_finding_on_an_integer_slot_only() -> None:
    gate = TurnGate()
    gate.refuse("malformed_chunk", "one", 2)
    gate.refuse("malformed_chunk", "two", "item_2")
    gate.refuse("malformed_chunk", "three", True)
    assert found(gate) == [
        ("malformed_chunk", 2, "one"),
        ("malformed_chunk", None, "two"),
        ("malformed_chunk", None, "three"),
    ]
    assert gate.turn == "blocked"


def test_an_unknown_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown policy 'soon'; choose one of turn, call, "):
        TurnGate().releasable("soon")


def test_the_turn_policy_releases_everything_only_when_executable() -> None:
    gate = TurnGate()
    one_call(gate, key=1)
    one_call(gate, key=0)
    assert gate.releasable() == []
    gate.turn_done(True, "tool_calls")
    assert [slot.key for slot in gate.releasable()] == [0, 1]
    assert [slot.key for slot in gate.releasable("call")] == [0, 1]


def test_the_call_policy_releases_closed_calls_in_formats_with_a_call_done() -> None:
    gate = TurnGate(per_call_done=True)
    one_call(gate, key=0)
    one_call(gate, key=1)
    gate.close(1)
    assert [slot.key for slot in gate.releasable("call")] == [1]
    assert gate.releasable("turn") == []


def test_the_call_policy_is_the_turn_policy_without_a_call_done() -> None:
    gate = TurnGate(preview=True)
    one_call(gate)
    assert gate.releasable("call") == []
    assert [slot.key for slot in gate.releasable("parseable")] == [0]


def test_without_a_call_done_a_call_closed_early_runs_only_when_its_arguments_may() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.close(0)  # validated before the turn's terminal, in a format without a call done
    assert states(gate) == {0: "validated"} and gate.turn == "streaming"
    assert gate.releasable("call") == [] and gate.releasable("turn") == []
    assert [slot.key for slot in gate.releasable("parseable")] == [0]


def test_a_blocked_turn_releases_nothing_under_any_policy() -> None:
    gate = TurnGate(per_call_done=True, preview=True)
    one_call(gate, key=0)
    gate.close(0)
    gate.refuse("malformed_chunk", "bad chunk")
    for policy in ("turn", "call", "parseable"):
        assert gate.releasable(policy) == []


def test_the_parseable_policy_releases_closed_valid_arguments_early() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER), preview=True)
    one_call(gate, '{"city": "Paris"', key=0)
    one_call(gate, '{"town": "Paris"}', key=1)
    one_call(gate, '{"city": "Rome"} ', key=2)
    assert [slot.key for slot in gate.releasable("parseable")] == [2]
    gate.fragment(0, "}")
    assert [slot.key for slot in gate.releasable("parseable")] == [0, 2]
    assert gate.findings == []


def test_the_parseable_policy_needs_preview() -> None:
    gate = TurnGate()
    one_call(gate)
    assert gate.releasable("parseable") == []


def test_the_parseable_policy_keeps_a_validated_call() -> None:
    gate = TurnGate(per_call_done=True, preview=True)
    one_call(gate, key=0)
    gate.close(0)
    one_call(gate, '{"city"', key=1)
    assert [slot.key for slot in gate.releasable("parseable")] == [0]


def test_preview_refuses_arguments_nesting_past_the_limit_as_they_stream() -> None:
    gate = TurnGate(limits=Limits(max_depth=2), preview=True)
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": [')
    assert gate.findings == []
    gate.fragment(0, "[")
    assert found(gate) == [("limit_exceeded", 0, "arguments nest deeper than 2")]


def test_preview_keeps_the_fragments_it_scans() -> None:
    gate = TurnGate(preview=True)
    gate.identity(0, "c", "f")
    for part in ['{"a"', ": ", "1}"]:
        gate.fragment(0, part)
    gate.turn_done(True, "tool_calls")
    assert gate.ordered_slots()[0].arguments == {"a": 1}


# The version counter tells a reader whether anything but fragments changed.


def test_the_version_moves_on_every_decision_and_not_on_plain_fragments() -> None:
    gate = TurnGate()
    seen = [gate.version]
    gate.identity(0, "c", "f")
    seen.append(gate.version)
    gate.fragment(0, "{")
    gate.fragment(0, "}")
    seen.append(gate.version)
    gate.turn_done(True, "tool_calls")
    seen.append(gate.version)
    assert seen[0] < seen[1] == seen[2] < seen[3]


def test_raw_arguments_join_the_fragments_in_order() -> None:
    gate = TurnGate()
    gate.identity(0, "c", "f")
    assert gate.ordered_slots()[0].raw_arguments == ""
    for part in ['{"a"', ": ", "[1, ", "2]}"]:
        gate.fragment(0, part)
    slot = gate.ordered_slots()[0]
    assert slot.raw_arguments == '{"a": [1, 2]}'
    assert slot.raw_arguments == '{"a": [1, 2]}'


# The same limits hold on every path a fragment can take: the first fragment of a slot,
# and every fragment when the arguments are scanned as they stream (preview).


@pytest.mark.parametrize("preview", [False, True])
def test_a_first_fragment_of_exactly_the_byte_limit_is_accepted(preview: bool) -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=8, max_turn_bytes=8), preview=preview)
    gate.fragment(0, '{"a": 1}')
    gate.identity(0, "c", "f")
    gate.turn_done(True, "tool_calls")
    assert gate.executable


def test_preview_counts_every_fragment_against_the_argument_limit() -> None:
    gate = TurnGate(limits=Limits(max_argument_bytes=10), preview=True)
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": ')
    gate.fragment(0, '"bc"')
    assert gate.findings == []
    gate.fragment(0, "}")
    assert found(gate) == [("limit_exceeded", 0, "arguments exceed 10 bytes")]


def test_preview_counts_every_fragment_against_the_turn_limit() -> None:
    gate = TurnGate(limits=Limits(max_turn_bytes=10), preview=True)
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": ')
    gate.fragment(0, '"bc"')
    assert gate.findings == []
    gate.fragment(0, "}")
    assert found(gate) == [("limit_exceeded", 0, "the turn exceeds 10 bytes")]


def test_preview_does_not_move_the_version_on_plain_fragments() -> None:
    gate = TurnGate(preview=True)
    gate.identity(0, "c", "f")
    before = gate.version
    gate.fragment(0, "{")
    gate.fragment(0, "}")
    assert gate.version == before


def test_the_parseable_policy_uses_the_configured_depth_limit() -> None:
    gate = TurnGate(limits=Limits(max_depth=200), preview=True)
    gate.identity(0, "c", "f")
    gate.fragment(0, '{"a": ' + "[" * 150 + "]" * 150 + "}")
    assert [slot.key for slot in gate.releasable("parseable")] == [0]


def test_the_same_identity_twice_before_any_argument_is_no_restart() -> None:
    gate = TurnGate()
    gate.identity(0, "c", "f")
    gate.identity(0, "c", "f")
    gate.fragment(0, "  ")
    gate.identity(0, "c", "f")
    gate.fragment(0, "{}")
    gate.turn_done(True, "tool_calls")
    assert gate.executable
    assert gate.findings == []


def test_a_complete_object_with_trailing_blanks_in_its_last_fragment_can_restart() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": "Paris"}  ')
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city": "Paris"}  ')
    assert codes(gate) == ["duplicate_call_ignored"]


def test_a_parse_finding_keeps_its_message_and_gains_the_slot() -> None:
    gate = TurnGate()
    gate.identity(3, "c", "f")
    gate.fragment(3, '{"a": NaN}')
    gate.turn_done(True, "tool_calls")
    assert found(gate) == [
        ("non_finite_number", 3, "NaN is not a JSON number; JSON allows only finite numbers")
    ]


def test_a_call_opening_after_the_turn_passed_is_named_by_its_slot() -> None:
    gate = TurnGate()
    one_call(gate)
    gate.turn_done(True, "tool_calls")
    gate.identity(1, "call_1", "get_weather")
    assert found(gate) == [("delta_after_terminal", 1, "a tool call opened after the turn ended")]
    assert gate.turn == "blocked"


# A turn found to carry no call stays open to nothing: a late call or fault blocks it.


def test_a_call_after_a_turn_without_calls_blocks_it() -> None:
    gate = TurnGate()
    gate.turn_done(False, "stop")
    gate.identity(0, "c", "f")
    assert found(gate) == [("delta_after_terminal", 0, "a tool call opened after the turn ended")]
    assert gate.turn == "blocked"


def test_a_second_done_after_a_turn_without_calls_blocks_it() -> None:
    gate = TurnGate()
    gate.turn_done(False, "stop")
    gate.turn_done(False, "stop")
    assert found(gate) == [
        ("duplicate_terminal", None, "a second turn-level terminal event ('stop')")
    ]
    assert gate.turn == "blocked"


def test_a_fault_after_a_turn_without_calls_blocks_it() -> None:
    gate = TurnGate()
    gate.turn_done(False, "stop")
    gate.refuse("malformed_chunk", "late")
    assert gate.turn == "blocked"


# The restart check asked before the arguments close, then again after.


def test_arguments_that_close_after_an_early_restatement_can_still_restart() -> None:
    gate = TurnGate()
    one_call(gate, '{"city": ')
    gate.identity(0, "call_0", "get_weather")
    assert states(gate) == {0: "accumulating"}
    gate.fragment(0, '"Paris"}')
    gate.identity(0, "call_0", "get_weather")
    assert states(gate) == {0: "replaying"}
    gate.fragment(0, '{"city": "Paris"}')
    assert codes(gate) == ["duplicate_call_ignored"]
    assert gate.ordered_slots()[0].raw_arguments == '{"city": "Paris"}'


# The turn's text budget.


def test_text_is_counted_up_to_the_limit_inclusive_then_refused_once() -> None:
    gate = TurnGate(limits=Limits(max_text_bytes=5))
    assert gate.text_bytes == 0
    assert gate.text("abc") is True
    assert gate.text("de") is True
    assert gate.text_bytes == 5
    assert gate.findings == []
    assert gate.text_over is False
    assert gate.turn == "streaming"
    assert gate.text("f") is False
    assert gate.text_over is True
    assert found(gate) == [("limit_exceeded", None, "the turn's text exceeds 5 bytes")]
    assert gate.turn == "blocked"
    assert gate.text("g") is False
    assert gate.text("") is False
    assert len(gate.findings) == 1


def test_text_is_counted_in_utf8_bytes() -> None:
    gate = TurnGate(limits=Limits(max_text_bytes=4))
    assert gate.text("é") is True
    assert gate.text_bytes == 2
    assert gate.text("é") is True
    assert gate.text_bytes == 4
    assert gate.text("\U0001f600") is False
    assert gate.text_bytes == 8
    assert codes(gate) == ["limit_exceeded"]


def test_an_empty_text_is_within_any_limit() -> None:
    gate = TurnGate(limits=Limits(max_text_bytes=0))
    assert gate.text("") is True
    assert gate.text(" ") is False
    assert codes(gate) == ["limit_exceeded"]


# The findings cap.


def test_findings_past_the_cap_are_replaced_by_one_limit_finding_that_blocks() -> None:
    gate = TurnGate(limits=Limits(max_findings=2))
    gate.note("call_in_reasoning", "first", 0)
    gate.note("call_in_reasoning", "second", 1)
    assert gate.turn == "streaming"
    assert [f.message for f in gate.findings] == ["first", "second"]
    gate.note("call_in_reasoning", "third")
    assert found(gate)[2] == (
        "limit_exceeded",
        None,
        "more than 2 findings; later ones are not kept",
    )
    assert len(gate.findings) == 3
    assert gate.turn == "blocked"
    gate.note("call_in_reasoning", "fourth")
    gate.refuse("malformed_chunk", "fifth")
    assert [f.message for f in gate.findings][2:] == [
        "more than 2 findings; later ones are not kept"
    ]
