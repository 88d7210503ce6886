"""Every transition of the slot machine, reached through the gate's public methods.

Each case brings one slot into a state with real wire calls (identity, fragments, a
per-call done, a restart of a complete call), sends one more call, and states where the
slot goes, which findings it records and what becomes of the turn. A transition sent to
another state, or its finding dropped, changes at least one of the three.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from callgate import Limits, ToolSchemas, TurnGate

WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}
ARGS = '{"city": "Paris"}'

Step = Callable[[TurnGate], None]


def gate_for(*, per_call_done: bool = True, limit: int | None = None) -> TurnGate:
    limits = Limits() if limit is None else Limits(max_argument_bytes=limit)
    return TurnGate(schemas=ToolSchemas(WEATHER), per_call_done=per_call_done, limits=limits)


def to_unseen(gate: TurnGate) -> None:
    """Another slot holds call_0, so slot 0 is unseen when the case begins."""
    gate.identity(1, "call_1", "get_weather")


def to_accumulating(gate: TurnGate) -> None:
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, ARGS)


def to_replaying(gate: TurnGate) -> None:
    to_accumulating(gate)
    gate.identity(0, "call_0", "get_weather")


def to_validated(gate: TurnGate) -> None:
    to_accumulating(gate)
    gate.close(0)


SETUPS: dict[str, Step] = {
    "unseen": to_unseen,
    "accumulating": to_accumulating,
    "replaying": to_replaying,
    "validated": to_validated,
}


def over_the_limit(gate: TurnGate) -> None:
    gate.fragment(0, "x" * 64)


CASES: list[tuple[str, str, Step, str, list[str], str]] = [
    # (state, what arrives, the call, slot state after, finding codes, turn after)
    ("unseen", "identity", lambda g: g.identity(0, "call_0", "get_weather"),
     "accumulating", [], "streaming"),
    ("unseen", "fragment", lambda g: g.fragment(0, "{"), "accumulating", [], "streaming"),
    ("unseen", "blank fragment", lambda g: g.fragment(0, ""), "accumulating", [], "streaming"),
    ("unseen", "another slot's id", lambda g: g.identity(0, "call_1", None),
     "blocked", ["identity_collision"], "blocked"),
    ("unseen", "matching full arguments", lambda g: g.confirm(0, ""),
     "blocked", ["orphan_event"], "blocked"),
    ("unseen", "differing full arguments", lambda g: g.confirm(0, ARGS),
     "blocked", ["orphan_event"], "blocked"),
    ("unseen", "a done", lambda g: g.close(0), "blocked", ["orphan_event"], "blocked"),
    ("unseen", "too many bytes", over_the_limit, "blocked", ["limit_exceeded"], "blocked"),
    ("accumulating", "its identity again", lambda g: g.identity(0, None, "get_weather"),
     "accumulating", [], "streaming"),
    ("accumulating", "a fragment", lambda g: g.fragment(0, " "),
     "accumulating", [], "streaming"),
    ("accumulating", "another id", lambda g: g.identity(0, "call_9", None),
     "blocked", ["identity_collision"], "blocked"),
    ("accumulating", "its identity over complete arguments",
     lambda g: g.identity(0, "call_0", "get_weather"), "replaying", [], "streaming"),
    ("accumulating", "matching full arguments", lambda g: g.confirm(0, ARGS),
     "accumulating", [], "streaming"),
    ("accumulating", "differing full arguments", lambda g: g.confirm(0, "{}"),
     "blocked", ["args_mismatch"], "blocked"),
    ("accumulating", "a done", lambda g: g.close(0), "validated", [], "streaming"),
    ("accumulating", "too many bytes", over_the_limit, "blocked", ["limit_exceeded"], "blocked"),
    ("replaying", "its name again", lambda g: g.identity(0, None, "get_weather"),
     "replaying", [], "streaming"),
    ("replaying", "another id", lambda g: g.identity(0, "call_9", None),
     "blocked", ["identity_collision"], "blocked"),
    ("replaying", "the repeat so far", lambda g: g.fragment(0, '{"city"'),
     "replaying", [], "streaming"),
    ("replaying", "the whole repeat", lambda g: g.fragment(0, ARGS),
     "accumulating", ["duplicate_call_ignored"], "streaming"),
    ("replaying", "a differing repeat", lambda g: g.fragment(0, '{"town"'),
     "blocked", ["identity_collision"], "blocked"),
    ("replaying", "matching full arguments", lambda g: g.confirm(0, ARGS),
     "replaying", [], "streaming"),
    ("replaying", "differing full arguments", lambda g: g.confirm(0, "{}"),
     "blocked", ["args_mismatch"], "blocked"),
    ("replaying", "a done", lambda g: g.close(0), "blocked", ["identity_collision"], "blocked"),
    ("validated", "its identity again", lambda g: g.identity(0, "call_0", "get_weather"),
     "validated", [], "streaming"),
    ("validated", "a fragment", lambda g: g.fragment(0, " "),
     "blocked", ["delta_after_terminal"], "blocked"),
    ("validated", "another name", lambda g: g.identity(0, None, "get_time"),
     "blocked", ["identity_collision"], "blocked"),
    ("validated", "matching full arguments", lambda g: g.confirm(0, ARGS),
     "validated", [], "streaming"),
    ("validated", "differing full arguments", lambda g: g.confirm(0, "{}"),
     "blocked", ["args_mismatch"], "blocked"),
    ("validated", "a second done", lambda g: g.close(0),
     "blocked", ["duplicate_terminal"], "blocked"),
    ("validated", "too many bytes", over_the_limit, "blocked", ["limit_exceeded"], "blocked"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("state", "call", "slot_after", "codes", "turn"),
    [(c[0], c[2], c[3], c[4], c[5]) for c in CASES],
    ids=[f"{c[0]}: {c[1]}" for c in CASES],
)
def test_one_call_moves_a_slot_from_each_state(
    state: str, call: Step, slot_after: str, codes: list[str], turn: str
) -> None:
    gate = gate_for(limit=len(ARGS) + 8)
    SETUPS[state](gate)
    assert gate.slots.get(0) is None if state == "unseen" else gate.slots[0].state == state
    assert gate.findings == []
    call(gate)
    assert gate.slots[0].state == slot_after
    assert [(f.code, f.slot) for f in gate.findings] == [(code, 0) for code in codes]
    assert gate.turn == turn


TURN_ENDS: list[tuple[str, bool, bool, str, list[str]]] = [
    # (state, per-call done, tool reason, slot state after, finding codes); the turn is
    # executable exactly when no finding was recorded.
    ("accumulating", True, True, "blocked", ["missing_terminal"]),
    ("accumulating", True, False, "blocked", ["wrong_terminal_reason"]),
    ("accumulating", False, True, "validated", []),
    ("replaying", True, True, "blocked", ["identity_collision"]),
    ("replaying", True, False, "blocked", ["wrong_terminal_reason"]),
    ("replaying", False, True, "blocked", ["identity_collision"]),
    ("validated", True, True, "validated", []),
    ("validated", True, False, "blocked", ["wrong_terminal_reason"]),
]


@pytest.mark.parametrize(("state", "per_call", "tool_reason", "slot_after", "codes"), TURN_ENDS)
def test_the_turn_done_moves_a_slot_from_each_state(
    state: str, per_call: bool, tool_reason: bool, slot_after: str, codes: list[str]
) -> None:
    gate = gate_for(per_call_done=per_call)
    SETUPS[state](gate)
    gate.turn_done(tool_reason, "tool_calls" if tool_reason else "stop")
    assert gate.slots[0].state == slot_after
    assert [(f.code, f.slot) for f in gate.findings] == [(code, 0) for code in codes]
    assert gate.turn == ("blocked" if codes else "executable")


STREAM_ENDS: list[tuple[str, str, list[str]]] = [
    # (state, slot state after, finding codes: the slot's, then the turn's missing done)
    ("accumulating", "blocked", ["missing_terminal"]),
    ("replaying", "blocked", ["missing_terminal"]),
    ("validated", "validated", ["missing_terminal"]),
]


@pytest.mark.parametrize(("state", "slot_after", "codes"), STREAM_ENDS)
def test_the_stream_end_moves_a_slot_from_each_state(
    state: str, slot_after: str, codes: list[str]
) -> None:
    gate = gate_for()
    SETUPS[state](gate)
    gate.finish()
    assert gate.slots[0].state == slot_after
    assert [f.code for f in gate.findings] == codes
    assert gate.turn == "blocked"


def test_a_validated_call_stays_validated_when_the_stream_ends_after_the_turn() -> None:
    gate = gate_for()
    to_validated(gate)
    gate.turn_done(True, "tool_calls")
    gate.finish()
    assert gate.slots[0].state == "validated"
    assert gate.findings == []
    assert gate.turn == "executable"


def test_a_call_whose_checks_fail_is_blocked_with_the_check_finding() -> None:
    gate = gate_for()
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"town": "Paris"}')
    gate.close(0)
    assert gate.slots[0].state == "blocked"
    assert [(f.code, f.slot) for f in gate.findings] == [("schema_invalid", 0)]
    assert gate.turn == "blocked"


@pytest.mark.parametrize(
    "call",
    [
        lambda g: g.identity(0, "call_0", "get_weather"),
        lambda g: g.identity(0, "call_9", None),
        lambda g: g.fragment(0, "{}"),
        lambda g: g.confirm(0, "{}"),
        lambda g: g.close(0),
        over_the_limit,
        lambda g: g.turn_done(True, "tool_calls"),
        lambda g: g.finish(),
    ],
    ids=["identity", "conflict", "fragment", "mismatch", "close", "overflow", "done", "end"],
)
def test_a_blocked_slot_stays_blocked_and_keeps_its_first_finding(call: Step) -> None:
    gate = gate_for(limit=len(ARGS) + 8)
    to_accumulating(gate)
    gate.confirm(0, "[]")
    assert [f.code for f in gate.findings] == ["args_mismatch"]
    call(gate)
    assert gate.slots[0].state == "blocked"
    assert [f.code for f in gate.findings if f.slot == 0] == ["args_mismatch"]
    assert gate.turn == "blocked"


def an_unseen_slot(gate: TurnGate) -> None:
    """An identity that is not text names slot 0 and is refused: the slot stays unseen."""
    gate.identity(0, 7, "get_weather")  # type: ignore[arg-type]
    assert gate.slots[0].state == "unseen"
    assert [f.code for f in gate.findings] == ["malformed_chunk"]


@pytest.mark.parametrize(
    ("per_call", "tool_reason", "code"),
    [
        (True, True, "missing_terminal"),
        (True, False, "wrong_terminal_reason"),
        (False, False, "wrong_terminal_reason"),
        (False, True, "orphan_event"),
    ],
)
def test_the_turn_done_blocks_a_slot_whose_opening_was_unreadable(
    per_call: bool, tool_reason: bool, code: str
) -> None:
    gate = gate_for(per_call_done=per_call)
    an_unseen_slot(gate)
    gate.turn_done(tool_reason, "tool_calls" if tool_reason else "stop")
    assert gate.slots[0].state == "blocked"
    assert [(f.code, f.slot) for f in gate.findings] == [("malformed_chunk", 0), (code, 0)]
    assert gate.turn == "blocked"


def test_the_stream_end_blocks_a_slot_whose_opening_was_unreadable() -> None:
    gate = gate_for()
    an_unseen_slot(gate)
    gate.finish()
    assert gate.slots[0].state == "blocked"
    assert [(f.code, f.slot) for f in gate.findings] == [
        ("malformed_chunk", 0),
        ("missing_terminal", 0),
    ]
