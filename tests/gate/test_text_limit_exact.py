"""``max_text_bytes`` is exact in the message too: the delta that crosses it is not kept.

docs/limits.md: "The first delta past it is not kept ... What came before the limit is
kept unchanged, in ``as_dict()`` and in the display." Before, the display dropped the
crossing delta but ``as_dict()`` kept it, on all seven wires.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.gate.limits import Limits
from callgate.testing.wires import WIRES, WireCall, chunks_of, encoder

LIMIT = 1000
DELTA = "abcdefghij" * 5
"""One delta: 50 bytes; the limit holds exactly 20 of them."""
KEPT = LIMIT // len(DELTA)


def turn(wire: str, deltas: list[str]) -> list[dict[str, Any]]:
    """A turn of ``wire``: the text ``deltas``, then one call, then the turn's end."""
    kit = encoder(wire)
    key = kit.first_key(bool(deltas))
    call = WireCall(f"{kit.id_prefix}1", "f", ("{}",), key=key, arguments={})
    chunks = chunks_of(kit.prelude(deltas))
    chunks += kit.open(call)
    if kit.fragmented:
        chunks += kit.fragment(call, "{}")
    chunks += kit.close(call) + kit.finish([call]) + kit.epilogue()
    return kit.finalise(chunks)


def stored(message: Any) -> str:
    """Every string the assembled message holds, joined."""
    if isinstance(message, dict):
        return "".join(stored(v) for v in message.values())
    if isinstance(message, list):
        return "".join(stored(v) for v in message)
    return message if isinstance(message, str) else ""


def played(chunks: list[dict[str, Any]]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(
        tool_schemas={"f": {"type": "object"}}, limits=Limits(max_text_bytes=LIMIT)
    )
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


@pytest.mark.parametrize("wire", WIRES)
def test_the_message_keeps_exactly_the_text_before_the_limit(wire: str) -> None:
    buffer = played(turn(wire, [DELTA] * (KEPT + 5)))
    assert buffer.turn_state == "blocked"
    assert [f.code for f in buffer.findings] == ["limit_exceeded"]
    assert stored(buffer.as_dict()).count(DELTA) == KEPT
    assert buffer.get_content() == DELTA * KEPT
    assert buffer.text_queue.text() == DELTA * KEPT


@pytest.mark.parametrize("wire", WIRES)
def test_text_up_to_the_limit_is_all_kept(wire: str) -> None:
    buffer = played(turn(wire, [DELTA] * KEPT))
    assert buffer.executable
    assert stored(buffer.as_dict()).count(DELTA) == KEPT


def test_a_delta_that_crosses_the_limit_inside_is_dropped_whole() -> None:
    deltas = [DELTA] * (KEPT - 1) + ["x" * 49, "yy", "z"]
    buffer = played(turn("openai", deltas))
    assert buffer.as_dict()["content"] == DELTA * (KEPT - 1) + "x" * 49
    assert buffer.get_content() == DELTA * (KEPT - 1) + "x" * 49


def test_openai_content_parts_past_the_limit_are_not_kept() -> None:
    def chunk(content: Any, finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}

    parts = [{"type": "text", "text": DELTA}] * (KEPT + 2)
    buffer = played([chunk(parts[:KEPT]), chunk(parts[KEPT:]), chunk(None, "stop")])
    assert buffer.as_dict()["content"] == [{"type": "text", "text": DELTA * KEPT}]
    assert buffer.get_content() == DELTA * KEPT
