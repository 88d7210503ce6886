"""Chunks a resolved stream's strategy cannot place: checked on its unknown-event path only.

The buffer reads a resolved stream's chunks without asking, per chunk, whether another
wire's strategy claims them; each wire strategy hands a chunk it cannot place to
``gate.stray()`` before reading it. These tests hold that path to the per-chunk check it
replaced: the same strategy with ``reports_stray_chunks`` off gets every check on every
chunk, and both must give the same findings, message, text and end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.gate.limits import Limits
from callgate.strategies import WIRE_STRATEGIES, ExtractionStrategy
from wire_common import played

EXAMPLES = Path(__file__).parents[2] / "src/callgate/examples"
WIRES = sorted(name for name, cls in WIRE_STRATEGIES.items() if cls.reports_stray_chunks)


def stream(name: str) -> list[dict[str, Any]]:
    data = json.loads((EXAMPLES / f"{name}.json").read_text())
    chunks: list[dict[str, Any]] = data.get("chunks", data.get("events"))
    return chunks


FIXTURE = {
    "anthropic": "anthropic_single_call",
    "bedrock": "bedrock_single_call",
    "cohere": "cohere_parallel_calls",
    "gemini": "gemini_parallel_calls",
    "ollama": "ollama_parallel_calls",
    "openai": "openai_single_call",
    "openai-responses": "responses_single_call",
}
"""A stream of each wire whose calls pass (the bundled fixtures)."""
SINGLE = {wire: stream(FIXTURE[wire]) for wire in WIRES}
ODD: list[dict[str, Any]] = [
    {"type": "chunk", "chunk": {"type": "ping"}},
    {"type": "chunk", "chunk": "not a chunk"},
    {"type": "content.delta", "delta": "x", "snapshot": "x"},
    {"type": "chunk", "chunk": {"type": "content.delta"}},
    {"error": {"message": "overloaded", "type": "server_error"}},
    {"error": {"message": "overloaded"}, "extra": 1},
    {"type": "error", "error": {"type": "overloaded_error"}},
    {"type": "error", "sequence_number": 3, "message": "try again"},
    {"type": "ping"},
    {"type": "text", "text": "hi"},
    {},
    {"unknown": 1},
    {"type": ["a", "list"]},
    {"done": True, "choices": []},
    {"messageStop": {"stopReason": "end_turn"}, "choices": []},
    {"role": "assistant", "content": '<tool_call>{"name": "f", "arguments": {}}</tool_call>'},
]
"""SDK helper events, error frames of each wire, unknown and ambiguous shapes."""


def _delta(delta: object = None, **fields: Any) -> dict[str, Any]:
    """A content_block_delta event; ``delta=None`` leaves the field out."""
    event: dict[str, Any] = {"type": "content_block_delta", **fields}
    if delta is not None:
        event["delta"] = delta
    return event


JSON = {"type": "input_json_delta", "partial_json": "{"}
DELTAS: list[dict[str, Any]] = [
    _delta({"type": "input_json_delta"}, index=0),
    _delta({"type": "input_json_delta", "partial_json": None}, index=0),
    _delta({"type": "input_json_delta", "partial_json": 5}, index=0),
    _delta({"type": "input_json_delta", "partial_json": ""}, index=0),
    _delta({"partial_json": "{"}, index=0),
    _delta("input_json_delta", index=0),
    _delta(["input_json_delta"], index=0),
    _delta(index=1),
    _delta(JSON, index=[0]),
    _delta(JSON, index=True),
    _delta(JSON),
    _delta(JSON, index=7),
    _delta(JSON, index=1),
    _delta({"type": "text_delta", "text": "x"}, index=0),
]
"""Argument deltas as written and not: missing, null, non-text and non-object fields."""
POOL = [chunk for wire in WIRES for chunk in SINGLE[wire]] + ODD + DELTAS


def checked(wire: str) -> ExtractionStrategy:
    """The wire's strategy with the buffer's per-chunk check on every chunk."""
    cls = WIRE_STRATEGIES[wire]
    variant: type[ExtractionStrategy] = type(
        f"Checked{cls.__name__}", (cls,), {"reports_stray_chunks": False}
    )
    return variant()


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("other", WIRES)
def test_a_chunk_of_another_wire_inside_a_resolved_stream_is_refused_and_not_read(
    wire: str, other: str
) -> None:
    if WIRE_STRATEGIES[wire].name == WIRE_STRATEGIES[other].name:
        return
    chunks = SINGLE[wire]
    foreign = SINGLE[other][len(SINGLE[other]) // 2]
    alone = played(WIRE_STRATEGIES[wire](), chunks)
    mixed = played(WIRE_STRATEGIES[wire](), [chunks[0], foreign, *chunks[1:]])
    assert alone["turn"] == "executable"
    assert mixed["turn"] == "blocked"
    assert [code for code, _, _ in mixed["findings"]] == ["malformed_chunk"]
    assert f"a chunk of another wire inside this {wire} stream" in mixed["findings"][0][1]
    assert mixed["message"] == alone["message"]
    assert mixed == played(checked(wire), [chunks[0], foreign, *chunks[1:]])


def test_an_sdk_helper_event_mid_stream_is_read_through_or_skipped() -> None:
    chunks = SINGLE["openai"]
    helpers = [chunks[0]]
    for chunk in chunks[1:]:
        helpers += [{"type": "chunk", "chunk": chunk, "snapshot": {}}, {"type": "content.done"}]
    read, plain = (
        played(WIRE_STRATEGIES["openai"](), helpers),
        played(WIRE_STRATEGIES["openai"](), chunks),
    )
    assert "".join(read.pop("shown")) == "".join(plain.pop("shown"))
    assert read == plain
    assert read["turn"] == "executable"


@given(
    wire=st.sampled_from(WIRES),
    inserts=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(POOL)), max_size=6),
    limit=st.none() | st.integers(0, 40),
)
def test_the_unknown_event_path_gives_what_the_per_chunk_check_gave(
    wire: str, inserts: list[tuple[int, dict[str, Any]]], limit: int | None
) -> None:
    chunks = list(SINGLE[wire])
    for at, chunk in inserts:
        chunks.insert(min(at, len(chunks)), chunk)
    options = {} if limit is None else {"limits": Limits(max_text_bytes=limit)}
    assert played(WIRE_STRATEGIES[wire](), chunks, **options) == played(
        checked(wire), chunks, **options
    )


@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(DELTAS)), min_size=1, max_size=4))
def test_an_argument_delta_not_as_written_reads_as_the_whole_path_reads_it(
    inserts: list[tuple[int, dict[str, Any]]],
) -> None:
    chunks = list(SINGLE["anthropic"])
    for at, chunk in inserts:
        chunks.insert(min(at, len(chunks)), chunk)
    assert played(WIRE_STRATEGIES["anthropic"](), chunks) == played(checked("anthropic"), chunks)
