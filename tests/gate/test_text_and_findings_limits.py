"""Limits on the text a turn keeps and on its findings: a finding when hit, nothing stored past.

Content, reasoning and thinking text share ``Limits.max_text_bytes``; findings are capped
at ``Limits.max_findings``. Past either limit the turn blocks with ``limit_exceeded``;
the text that came before the limit is kept as it was, and nothing after it is stored.
"""

from __future__ import annotations

from typing import Any

import pytest

import callgate
from callgate import LLMStreamBuffer
from callgate.driver.tools import Tool
from callgate.gate.limits import Limits

Chunk = dict[str, Any]
LIMIT = 1000
DELTA = "abcdefghij" * 5
"""One delta: 50 characters, ASCII (a multi-byte case has its own test)."""


def openai(delta_key: str, deltas: list[str], call: bool = True) -> list[Chunk]:
    def chunk(delta: Chunk, finish: str | None = None) -> Chunk:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    opening = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    calls = [chunk({"tool_calls": [opening]})] if call else []
    return [
        *(chunk({delta_key: d}) for d in deltas),
        *calls,
        chunk({}, "tool_calls" if call else "stop"),
    ]


def openai_parts(kind: str, deltas: list[str]) -> list[Chunk]:
    """Content as typed parts (Mistral's magistral): ``text`` parts, or ``thinking`` ones."""

    def part(d: str) -> Chunk:
        text = {"type": "text", "text": d}
        return text if kind == "text" else {"type": "thinking", "thinking": [text]}

    chunks = openai("content", deltas)
    for chunk, d in zip(chunks, deltas, strict=False):
        chunk["choices"][0]["delta"]["content"] = [part(d)]
    return chunks


def anthropic(kind: str, deltas: list[str]) -> list[Chunk]:
    field = "text" if kind == "text" else "thinking"
    return [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": kind, field: ""}},
        *(
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": f"{field}_delta", field: d}}
            for d in deltas
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]  # fmt: skip


def ollama(key: str, deltas: list[str]) -> list[Chunk]:
    def chunk(message: Chunk, done: bool = False) -> Chunk:
        return {"model": "m", "message": {"role": "assistant", **message}, "done": done}

    call = {"function": {"name": "f", "arguments": {}}}
    return [
        *(chunk({key: d}) for d in deltas),
        chunk({"content": "", "tool_calls": [call]}),
        {**chunk({"content": ""}, done=True), "done_reason": "stop"},
    ]


def stored_text(message: dict[str, Any]) -> str:
    """Every string the assembled message holds, joined (what the turn kept)."""
    if isinstance(message, dict):
        return "".join(stored_text(v) for v in message.values())
    if isinstance(message, list):
        return "".join(stored_text(v) for v in message)
    return message if isinstance(message, str) else ""


STREAMS = {
    "openai content": lambda d: openai("content", d),
    "openai reasoning_content": lambda d: openai("reasoning_content", d),
    "openai text parts": lambda d: openai_parts("text", d),
    "openai thinking parts": lambda d: openai_parts("thinking", d),
    "anthropic text": lambda d: anthropic("text", d),
    "anthropic thinking": lambda d: anthropic("thinking", d),
    "ollama thinking": lambda d: ollama("thinking", d),
}


@pytest.mark.parametrize("shape", sorted(STREAMS))
def test_text_past_the_limit_blocks_the_turn_and_is_not_stored(shape: str) -> None:
    deltas = [DELTA] * 200
    ran: list[dict[str, Any]] = []
    driver = callgate.Driver(
        [Tool("f", {"type": "object"}, lambda **a: ran.append(a) or "ok")],
        limits=Limits(max_text_bytes=LIMIT),
    )
    buffer = driver.new_stream_buffer()
    turn = callgate.run_turn(STREAMS[shape](deltas), driver, buffer)
    assert turn.status == "fail"
    assert ran == []
    limited = [f for f in buffer.findings if f.code == "limit_exceeded"]
    assert len(limited) == 1
    assert f"exceeds {LIMIT} bytes" in limited[0].message
    kept = stored_text(buffer.as_dict())
    assert DELTA * (LIMIT // len(DELTA)) in kept
    assert kept.count(DELTA) <= LIMIT // len(DELTA) + 1
    assert len(buffer.get_content()) <= LIMIT + len(DELTA)
    assert len(turn.text) <= LIMIT + len(DELTA)


@pytest.mark.parametrize("shape", sorted(STREAMS))
def test_text_up_to_the_limit_passes(shape: str) -> None:
    deltas = [DELTA] * (LIMIT // len(DELTA))
    driver = callgate.Driver(
        [Tool("f", {"type": "object"}, lambda **a: "ok")], limits=Limits(max_text_bytes=LIMIT)
    )
    buffer = driver.new_stream_buffer()
    turn = callgate.run_turn(STREAMS[shape](deltas), driver, buffer)
    assert turn.status == "pass"
    assert [f.code for f in buffer.findings] == []
    assert DELTA * len(deltas) in stored_text(buffer.as_dict())


def test_the_text_limit_counts_utf8_bytes() -> None:
    deltas = ["é" * 10] * 60
    buffer = LLMStreamBuffer(limits=Limits(max_text_bytes=LIMIT))
    for chunk in openai("content", deltas, call=False):
        buffer.add(chunk)
    buffer.end()
    assert [f.code for f in buffer.findings] == ["limit_exceeded"]
    assert buffer.get_content() == "é" * (LIMIT // 2)


def test_the_stream_still_ends_after_the_text_limit() -> None:
    buffer = LLMStreamBuffer(limits=Limits(max_text_bytes=LIMIT))
    for chunk in openai("content", [DELTA] * 100):
        buffer.add(chunk)
    assert buffer.is_finished()
    assert buffer.turn_state == "blocked"
    assert buffer.slots == []


def test_default_text_limit() -> None:
    assert Limits().max_text_bytes == 32 * 1024 * 1024
    assert Limits().max_findings == 1000


def malformed(count: int) -> list[Chunk]:
    return [
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": -1 - i}]}}]}
        for i in range(count)
    ]


def test_findings_past_the_limit_are_one_limit_finding() -> None:
    buffer = LLMStreamBuffer(limits=Limits(max_findings=10))
    for chunk in malformed(100):
        buffer.add(chunk)
    buffer.end()
    codes = [f.code for f in buffer.findings]
    assert codes == ["malformed_chunk"] * 10 + ["limit_exceeded"]
    assert "more than 10 findings" in buffer.findings[-1].message
    assert buffer.turn_state == "blocked"


def test_the_findings_limit_blocks_a_turn_of_info_findings() -> None:
    def chunk(delta: Chunk, finish: str | None = None) -> Chunk:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    chunks = [chunk({"tool_calls": [call]}) for _ in range(6)] + [chunk({}, "tool_calls")]
    buffer = LLMStreamBuffer(limits=Limits(max_findings=3))
    for item in chunks:
        buffer.add(item)
    buffer.end()
    codes = [f.code for f in buffer.findings]
    assert codes == ["duplicate_call_ignored"] * 3 + ["limit_exceeded"]
    assert not buffer.executable
    unlimited = LLMStreamBuffer()
    for item in chunks:
        unlimited.add(item)
    unlimited.end()
    assert unlimited.executable
