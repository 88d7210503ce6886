"""No stream, however malformed, makes callgate crash: every input gets a verdict."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import LLMStreamBuffer
from callgate.cli.capture import CaptureError, load_capture
from callgate.cli.check import check_stream
from callgate.cli.fixtures import examples
from callgate.strategies import WIRE_STRATEGIES
from callgate.strategies.text.detector import Detector

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**13),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
KEYS = st.sampled_from(
    [
        "type",
        "index",
        "delta",
        "choices",
        "tool_calls",
        "function",
        "arguments",
        "name",
        "id",
        "content",
        "content_block",
        "partial_json",
        "finish_reason",
        "message",
        "done",
        "candidates",
        "parts",
        "functionCall",
        "args",
        "contentBlockIndex",
        "contentBlockDelta",
        "toolUse",
        "input",
        "output_index",
        "item",
        "call_id",
        "stop_reason",
        "text",
    ]
)
JSONISH: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
FIXTURE_CHUNKS = [
    chunk
    for _, text in examples()
    for chunk in json.loads(text).get("chunks", json.loads(text).get("events", []))
]


def mutate(chunk: Any, data: st.DataObject) -> Any:
    """Replace one nested value of a real chunk with generated junk."""
    if isinstance(chunk, dict) and chunk and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(chunk)))
        return {**chunk, key: mutate(chunk[key], data)}
    if isinstance(chunk, list) and chunk and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(chunk) - 1))
        return [*chunk[:i], mutate(chunk[i], data), *chunk[i + 1 :]]
    return data.draw(JSONISH)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(WIRE_STRATEGIES)), st.data())
def test_mutated_real_streams_always_get_a_verdict(profile: str, data: st.DataObject) -> None:
    stream = [
        mutate(c, data) if data.draw(st.integers(0, 3)) == 0 else c
        for c in data.draw(st.lists(st.sampled_from(FIXTURE_CHUNKS), max_size=8))
    ]
    stream = [c for c in stream if isinstance(c, dict)]
    result = check_stream(stream, {"get_weather": {"type": "object"}}, profile)
    assert result["status"] in {"pass", "fail", "not_applicable", "invalid"}
    json.dumps(result)


def test_a_chunk_with_mistyped_fields_blocks_the_turn_with_a_clear_finding() -> None:
    good = json.loads(dict(examples())["openai_single_call.json"])
    stream = [*good["chunks"][:-1], {"choices": [True]}, good["chunks"][-1]]
    result = check_stream(stream, good["tool_schemas"], "openai")
    assert result["status"] == "fail"
    [junk] = [f for f in result["findings"] if f["code"] == "malformed_chunk"]
    assert "openai cannot read this chunk" in junk["message"]
    assert result["calls"][0]["arguments"] == {"city": "Paris", "unit": "C"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=10))
def test_the_detector_never_raises_and_loses_nothing_on_any_text(deltas: list[str]) -> None:
    detector = Detector()
    steps = [detector.feed(d) for d in deltas]
    steps.append(detector.finish())
    shown = "".join(step.shown for step in steps)
    markup = "".join(block.markup for step in steps for block in step.blocks if not block.shown)
    assert len(shown) + len(markup) == len("".join(deltas))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_any_capture_bytes_load_or_give_a_capture_error(raw: bytes) -> None:
    try:
        chunks = load_capture(raw)
    except CaptureError as exc:
        assert str(exc)
    else:
        assert all(isinstance(chunk, dict) for chunk in chunks)


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        (
            [
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                {"type": "message_stop"},
            ],
            "wrong_terminal_reason",
        ),
        (
            [
                {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
                {"type": "message_stop"},
            ],
            "missing_terminal",
        ),
        ([{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}], "missing_terminal"),
        ([], "missing_terminal"),
    ],
)
def test_a_call_whose_opening_was_unreadable_is_blocked_however_the_turn_ends(
    ending: list[dict[str, Any]], code: str
) -> None:
    """Found by the mutation property: a slot left unseen by a malformed opening must still
    take the turn's end (it used to raise TransitionError on ``stream_end``)."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    opening = {"type": "tool_use", "id": [], "name": "get_weather", "input": {}}
    buffer = LLMStreamBuffer()
    buffer.add({"type": "message_start", "message": message})
    buffer.add({"type": "content_block_start", "index": 0, "content_block": opening})
    for event in ending:
        buffer.add(event)
    buffer.end()
    assert buffer.turn_state == "blocked"
    assert [f.code for f in buffer.findings] == ["malformed_chunk", code]
    assert [s.state for s in buffer.slots] == ["blocked"]
