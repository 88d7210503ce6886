"""Every transition of the release machine, reached through a buffer under each policy.

Real Anthropic streams (calls with their own done) and OpenAI streams (only the turn's
done) are fed one event at a time; after each event (and after the end) the test reads
which calls the buffer releases. A policy that waits elsewhere, evidence sent to another
state, or a release turned into a block changes when a call is released.
"""

from __future__ import annotations

import pytest

from callgate import LLMStreamBuffer
from callgate.audit.trace import Recorder
from callgate.fsm.release import POLICIES, RELEASE, policy
from callgate.testing.builders import anthropic_events, openai_chunks
from callgate.testing.wires import WireCall

TOOLS = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}
A = WireCall("toolu_a", "get_weather", ('{"city": ', '"Paris"}'))
B = WireCall("toolu_b", "get_weather", ('{"city": ', '"Rome"}'))
BROKEN = WireCall("toolu_c", "get_weather", ('{"city": ', '"Rome"'))
# Anthropic pieces per call: start, two deltas, stop. A finishes, then B starts.
SEQUENTIAL = [0, 0, 0, 0, 1, 1, 1, 1]


def released(policy_name: str, chunks: list[dict[str, object]]) -> list[tuple[str, ...]]:
    """The ids of the calls the buffer releases after each chunk, then after the end."""
    buffer = LLMStreamBuffer(tool_schemas=TOOLS, policy=policy_name)
    rounds = []
    for chunk in chunks:
        buffer.add(chunk)
        rounds.append(tuple(str(s.id) for s in buffer.releasable()))
    buffer.end()
    rounds.append(tuple(str(s.id) for s in buffer.releasable()))
    return rounds


ANTHROPIC = anthropic_events([A, B], SEQUENTIAL)
# message_start, A: start, delta, delta (closes), stop, B: the same, message_delta, stop, end
NONE, ONLY_A, BOTH = (), ("toolu_a",), ("toolu_a", "toolu_b")


def test_turn_releases_every_call_at_the_turns_end_and_not_at_a_calls_own_done() -> None:
    assert released("turn", ANTHROPIC) == [NONE] * 10 + [BOTH] * 2


def test_call_releases_a_call_at_its_own_done_and_not_when_its_arguments_parse() -> None:
    assert released("call", ANTHROPIC) == [
        *[NONE] * 4,  # message_start, A's start and deltas: its JSON closed, no done yet
        *[ONLY_A] * 4,  # A's stop; B's start and deltas
        *[BOTH] * 4,  # B's stop, message_delta, message_stop, the end
    ]


def test_parseable_releases_a_call_once_its_arguments_parse_and_keeps_it_after_its_done() -> None:
    assert released("parseable", ANTHROPIC) == [
        *[NONE] * 3,  # message_start, A's start and first delta
        *[ONLY_A] * 4,  # A's arguments parse; A's stop; B's start and first delta
        *[BOTH] * 5,
    ]


def test_without_a_per_call_done_call_waits_for_the_turn_and_parseable_does_not() -> None:
    chunks = openai_chunks([A], [0, 0, 0])
    # the role chunk, A's opening and two fragments, the finish chunk, then the end
    assert released("turn", chunks) == released("call", chunks) == [NONE] * 4 + [ONLY_A] * 2
    assert released("parseable", chunks) == [NONE] * 3 + [ONLY_A] * 3


def test_a_blocked_turn_releases_nothing_more_under_any_policy() -> None:
    chunks = anthropic_events([A, BROKEN], SEQUENTIAL)
    assert released("turn", chunks) == [NONE] * 12
    assert released("call", chunks)[-5:] == [ONLY_A, NONE, NONE, NONE, NONE]


def test_policies_are_the_release_tables_first_events() -> None:
    assert list(POLICIES) == [t.event for t in RELEASE.outgoing(RELEASE.initial)]
    assert [(p.per_call, p.early) for p in POLICIES.values()] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert policy("call") is POLICIES["call"]


@pytest.mark.parametrize("name", ["", "Turn", "always", None])
def test_an_unknown_policy_is_a_clear_error_everywhere(name: object) -> None:
    message = "unknown policy .*; choose one of turn, call, parseable"
    with pytest.raises(ValueError, match=message):
        policy(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        LLMStreamBuffer(policy=name)  # type: ignore[arg-type]


def test_the_recorder_traces_each_calls_release_machine() -> None:
    recorder = Recorder()
    buffer = LLMStreamBuffer(tool_schemas=TOOLS, policy="call", recorder=recorder)
    for chunk in ANTHROPIC:
        buffer.add(chunk)
        buffer.releasable()
    buffer.end()
    buffer.releasable()
    steps = [(s.instance, s.source, s.event, s.target) for s in recorder.of("release")]
    assert steps == [
        ("call 0", "choosing", "call", "at_call_done"),
        ("call 0", "at_call_done", "call_valid", "released"),
        ("call 1", "choosing", "call", "at_call_done"),
        ("call 1", "at_call_done", "call_valid", "released"),
    ]
