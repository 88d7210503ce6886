"""Work per chunk does not depend on the stream's history, shown by counting, not timing.

Each stream shape here once made callgate redo work proportional to everything before on
every chunk (quadratic in the stream): a restated id and name re-parsed the whole
arguments, Anthropic's message visited every text fragment list once per block, a
signature was copied whole on every delta, usage was copied whole on every
``message_delta``, Responses copied the annotations list on every annotation. The
tests count the work (characters parsed or copied, entries visited, objects rebuilt);
``bench/bench_growth.py`` shows the times per doubling side by side.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import callgate.gate.turn
from callgate import LLMStreamBuffer
from callgate.gate.jsonscan import StructureScanner
from growth_shapes import (
    Chunk,
    anthropic_signature,
    anthropic_text_blocks,
    anthropic_usage,
    arguments,
    bedrock_restarting,
    openai_restating,
    responses_annotations,
)

N = 400


class Counter:
    """Characters handed to a wrapped function, and how many calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.chars = 0


def counting(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, Counter]:
    """Count what the gate parses whole and what the structure scanner reads."""
    parsed, scanned = Counter(), Counter()
    parse, feed = callgate.gate.turn.is_complete_object, StructureScanner.feed

    def counted_parse(text: str) -> bool:
        parsed.calls += 1
        parsed.chars += len(text)
        return parse(text)

    def counted_feed(self: StructureScanner, text: str) -> None:
        scanned.calls += 1
        scanned.chars += len(text)
        feed(self, text)

    monkeypatch.setattr(callgate.gate.turn, "is_complete_object", counted_parse)
    monkeypatch.setattr(StructureScanner, "feed", counted_feed)
    return parsed, scanned


def played(chunks: list[Chunk]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas={"f": {"type": "object"}})
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


@pytest.mark.parametrize("shape", [openai_restating, bedrock_restarting])
def test_a_restated_identity_never_reparses_the_arguments(
    monkeypatch: pytest.MonkeyPatch, shape: Any
) -> None:
    parsed, scanned = counting(monkeypatch)
    buffer = played(shape(N))
    assert buffer.executable
    assert [s.arguments for s in buffer.slots] == [json.loads(arguments(N))]
    total = len(arguments(N))
    assert parsed.chars <= total
    assert scanned.chars <= total


def test_a_real_repeat_is_still_recognised_after_the_object_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed, _ = counting(monkeypatch)
    buffer = played(openai_restating(N, repeat=True))
    assert buffer.executable
    assert [f.code for f in buffer.findings] == ["duplicate_call_ignored"]
    assert [s.arguments for s in buffer.slots] == [json.loads(arguments(N))]
    assert parsed.calls == 1


@pytest.mark.parametrize(
    ("tail", "executable"),
    [("  ", True), (" x", False), ("}", False)],
    ids=["whitespace", "text", "brace"],
)
def test_text_after_the_closed_object_decides_a_restart(tail: str, executable: bool) -> None:
    def chunk(text: str, restated: bool = True) -> Chunk:
        call: Chunk = {"index": 0, "function": {"arguments": text}}
        if restated:
            call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": text}}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    stream = [chunk('{"a": 1}'), chunk(tail, restated=False), chunk('{"a": 1}' + tail), finish]
    buffer = played(stream)
    assert buffer.executable is executable
    codes = [f.code for f in buffer.findings]
    assert ("duplicate_call_ignored" in codes) is executable


class CountingDict(dict[Any, Any]):
    """A dict that counts the entries read through it."""

    visited = 0

    def items(self) -> Any:
        for item in super().items():
            CountingDict.visited += 1
            yield item

    def get(self, key: Any, default: Any = None) -> Any:
        CountingDict.visited += 1
        return super().get(key, default)


def test_anthropic_message_visits_each_block_a_bounded_number_of_times() -> None:
    buffer = played(anthropic_text_blocks(N))
    acc = buffer._acc
    acc.parts = CountingDict(acc.parts)
    CountingDict.visited = 0
    message = buffer.as_dict()
    assert [b["text"] for b in message["content"]] == [f"w{i} " for i in range(N)]
    assert CountingDict.visited <= 4 * N


class CountingStr(str):
    """A string that counts the characters copied when something is added to it."""

    copied = 0

    def __add__(self, other: str) -> CountingStr:  # type: ignore[override]
        CountingStr.copied += len(self) + len(other)
        return CountingStr(str(self) + other)


def test_a_signature_is_not_copied_on_every_delta() -> None:
    CountingStr.copied = 0
    buffer = played(anthropic_signature(N, initial=CountingStr()))
    assert buffer.as_dict()["content"][0]["signature"] == "s" * 64 * N
    assert CountingStr.copied <= 2 * 64 * N


def test_a_signature_that_is_not_text_is_a_malformed_chunk() -> None:
    bad = {"type": "content_block_delta", "index": 0,
           "delta": {"type": "signature_delta", "signature": 7}}  # fmt: skip
    stop = {"type": "content_block_stop", "index": 0}
    buffer = played([*anthropic_signature(0)[:2], bad, stop, *anthropic_signature(0)[-2:]])
    assert [f.code for f in buffer.findings] == ["malformed_chunk"]
    assert buffer.as_dict()["content"][0]["thinking"] == ""


def test_usage_keys_are_merged_in_place_and_snapshots_stay_put() -> None:
    chunks = anthropic_usage(N)
    buffer = LLMStreamBuffer()
    owned: set[int] = set()
    snapshot: dict[str, Any] = {}
    for position, chunk in enumerate(chunks):
        buffer.add(chunk)
        if buffer._acc.usage is not None:
            owned.add(id(buffer._acc.usage))
        if position == 10:
            snapshot = buffer.as_dict()
    buffer.end()
    assert len(owned) == 1
    assert buffer.as_dict()["usage"] == {"input_tokens": 1, **{f"k{i}": i for i in range(N)}}
    assert len(snapshot["usage"]) == 1 + 10
    assert chunks[0]["message"]["usage"] == {"input_tokens": 1}


def test_responses_annotations_are_appended_in_place_and_snapshots_stay_put() -> None:
    chunks = responses_annotations(N)
    buffer = LLMStreamBuffer()
    lists: set[int] = set()
    snapshot: dict[str, Any] = {}
    for position, chunk in enumerate(chunks):
        buffer.add(chunk)
        for parts in buffer._acc.parts.values():
            lists.update(id(p.annotations) for p in parts.values() if p.annotations is not None)
        if position == 10:
            snapshot = buffer.as_dict()
    buffer.end()
    assert len(lists) == 1
    notes = buffer.as_dict()["output"][0]["content"][0]["annotations"]
    assert [n["url"] for n in notes] == [f"https://example.org/{i}" for i in range(N)]
    assert len(snapshot["output"][0]["content"][0]["annotations"]) == 7
    assert chunks[2]["part"]["annotations"] == []
