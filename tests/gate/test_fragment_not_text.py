"""An arguments fragment that is not text is refused where it arrives, on every wire.

Bytes pass for text as far as ``len`` and ``isascii`` go, so a ``b"{}"`` fragment used to
be kept, and the turn then broke at its end with an internal transition error instead of
a finding. The gate refuses any fragment that is not a ``str``: the turn fails closed with
``malformed_chunk``, and a call beside it in the same turn keeps its arguments.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.gate.turn import TurnGate

NOT_TEXT = [b"{}", bytearray(b"{}"), 7, ["{"], {"a": 1}]


@pytest.mark.parametrize("value", NOT_TEXT, ids=repr)
def test_the_gate_refuses_a_fragment_that_is_not_text(value: Any) -> None:
    gate = TurnGate()
    gate.identity(0, "call_1", "lookup")
    gate.fragment(0, '{"q": ')
    gate.fragment(0, value)
    gate.fragment(0, '"a"}')
    gate.turn_done(True, "tool_calls")
    gate.finish()
    assert [(f.code, f.slot, f.message) for f in gate.findings] == [
        ("malformed_chunk", 0, "slot 0: an arguments fragment is not text")
    ]
    assert gate.slots[0].raw_arguments == '{"q": "a"}'  # the text fragments are all kept
    assert not gate.executable


@pytest.mark.parametrize("value", NOT_TEXT, ids=repr)
def test_a_first_fragment_that_is_not_text_opens_no_slot(value: Any) -> None:
    gate = TurnGate()
    gate.fragment(3, value)
    assert [(f.code, f.slot, f.message) for f in gate.findings] == [
        ("malformed_chunk", 3, "slot 3: an arguments fragment is not text")
    ]
    assert gate.slots == {}
    assert gate.turn == "blocked"


def anthropic(value: Any) -> list[dict[str, Any]]:
    def block(index: int, call_id: str) -> dict[str, Any]:
        start = {"type": "tool_use", "id": call_id, "name": "lookup", "input": {}}
        return {"type": "content_block_start", "index": index, "content_block": start}

    def part(index: int, text: Any) -> dict[str, Any]:
        delta = {"type": "input_json_delta", "partial_json": text}
        return {"type": "content_block_delta", "index": index, "delta": delta}

    return [
        {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}},
        block(0, "toolu_1"),
        part(0, '{"q": "a"}'),
        {"type": "content_block_stop", "index": 0},
        block(1, "toolu_2"),
        part(1, value),
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def cohere(value: Any) -> list[dict[str, Any]]:
    def start(index: int, call_id: str, arguments: Any) -> dict[str, Any]:
        function = {"name": "lookup", "arguments": arguments}
        message = {"tool_calls": {"id": call_id, "type": "function", "function": function}}
        return {"type": "tool-call-start", "index": index, "delta": {"message": message}}

    return [
        {"type": "message-start", "id": "c1", "delta": {"message": {"role": "assistant"}}},
        start(0, "lookup_1", '{"q": "a"}'),
        {"type": "tool-call-end", "index": 0},
        start(1, "lookup_2", value),
        {"type": "tool-call-end", "index": 1},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ]


@pytest.mark.parametrize("wire", [anthropic, cohere], ids=lambda w: w.__name__)
@pytest.mark.parametrize("value", NOT_TEXT[:3], ids=repr)
def test_a_wire_whose_fragment_is_not_text_fails_closed_and_keeps_the_other_call(
    wire: Any, value: Any
) -> None:
    buffer = LLMStreamBuffer()
    for chunk in wire(value):
        buffer.add(chunk)
    buffer.end()
    assert "malformed_chunk" in [f.code for f in buffer.findings]
    assert buffer.verdict == "fail"
    assert buffer.calls == []
    kept = [s.raw_arguments for s in buffer.gate.slots.values()] if buffer.gate else []
    assert kept[0] == '{"q": "a"}'
