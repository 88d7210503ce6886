"""What the gate records for the wires' notes, disagreements and chunks it cannot place.

A note is a finding that does not block (a warning or an info), kept with its slot when
the slot is a native call's index; two accounts of one call that disagree block it with
the wire's own message; a chunk the wire cannot place goes to the buffer's hook, and a
gate without one lets it pass. Read through the findings, the slots and the turn, and the
same through an Anthropic stream in a buffer.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import AnthropicStrategy, LLMStreamBuffer, OpenAIStrategy, TurnGate
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall


def found(findings: Any) -> list[tuple[str, object, str]]:
    return [(f.code, f.slot, f.message) for f in findings]


@pytest.mark.parametrize(
    ("slot", "kept"), [(3, 3), (0, 0), (None, None), ("text-0.0", None), (True, None)]
)
def test_a_note_keeps_only_a_native_calls_index_as_its_slot(slot: object, kept: object) -> None:
    gate = TurnGate()
    gate.note("duplicate_call_ignored", "block 3 restated; dropped", slot)
    assert found(gate.findings) == [("duplicate_call_ignored", kept, "block 3 restated; dropped")]
    assert gate.findings[0].severity == "info"
    assert gate.turn == "streaming"  # a note never blocks


def test_a_note_without_a_slot_is_the_turns() -> None:
    gate = TurnGate()
    gate.note("repeated_terminal", "finish_reason 'stop' again")
    assert found(gate.findings) == [("repeated_terminal", None, "finish_reason 'stop' again")]


@pytest.mark.parametrize(
    ("what", "code"),
    [
        ("identity", "identity_collision"),
        ("arguments", "args_mismatch"),
        ("input", "args_mismatch"),
    ],
)
def test_a_disagreement_blocks_the_call_with_the_wires_message(what: str, code: str) -> None:
    gate = TurnGate()
    gate.identity(2, "call_2", "lookup")
    gate.disagree(2, what, "two accounts of block 2 differ")
    assert found(gate.findings) == [(code, 2, "two accounts of block 2 differ")]
    assert gate.slots[2].state == "blocked" and gate.turn == "blocked"


def test_a_gate_alone_lets_a_chunk_it_cannot_place_pass() -> None:
    gate = TurnGate()
    gate.stray({"type": "ping"})
    assert gate.findings == [] and gate.turn == "streaming"


def test_a_chunk_the_wire_cannot_place_goes_to_the_hook() -> None:
    gate = TurnGate()
    seen: list[Any] = []
    gate.on_stray = seen.append
    gate.stray({"type": "ping"})
    assert seen == [{"type": "ping"}]


START = {
    "type": "message_start",
    "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
}


def tool_start(call_id: str, name: str, **more: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, **more}
    return {"type": "content_block_start", "index": 0, "content_block": block}


def feed(*events: dict[str, Any]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(strategy=AnthropicStrategy())
    for event in events:
        buffer.add(event)
    return buffer


def test_an_anthropic_block_started_again_otherwise_is_blocked_with_both_accounts() -> None:
    buffer = feed(START, tool_start("toolu_a", "f", input={}), tool_start("toolu_b", "f", input={}))
    assert found(buffer.findings) == [
        (
            "identity_collision",
            0,
            "content block 0 started again with other content: 'toolu_b' 'f' {}",
        )
    ]


def test_an_anthropic_block_restated_with_its_input_is_noted_at_its_index() -> None:
    start = tool_start("toolu_a", "f", input={"q": 1})
    buffer = feed(START, start, start)
    assert found(buffer.findings) == [
        ("duplicate_call_ignored", 0, "content block 0 restated; dropped")
    ]


def stopped_openai_turn(gate: TurnGate) -> TurnGate:
    """One complete OpenAI call whose turn ends with finish_reason ``stop``."""
    chunks = openai_chunks([WireCall("call_1", "lookup", ('{"q": 1}',))], [0, 0])
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    strategy = OpenAIStrategy()
    acc = strategy.new_accumulator(gate)
    for chunk in chunks:
        strategy.accumulate(acc, chunk)
    gate.finish()
    return gate


def test_a_gate_by_default_takes_an_openai_stop_as_the_end_of_complete_calls() -> None:
    gate = stopped_openai_turn(TurnGate())
    assert gate.turn == "executable"
    assert [(f.code, f.severity) for f in gate.findings] == [("stop_finish_reason", "warning")]


def test_a_strict_finish_gate_refuses_calls_ended_by_an_openai_stop() -> None:
    gate = stopped_openai_turn(TurnGate(strict_finish=True))
    assert gate.turn == "blocked"
    assert [f.code for f in gate.findings] == ["wrong_terminal_reason"]
