"""LLMStreamBuffer on OpenAI and Anthropic streams written by the kit's encoders: examples.

The generated streams with injected faults run in tests/wires/test_every_wire_stateful.py;
these are the cases one writes out: nothing executable before the terminal, limits, bad
arguments.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.cli.check import report
from callgate.gate.strictjson import parse_arguments
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from callgate.testing.wires import Chunk, Encoder, WireCall, chunks_of, encoder
from wire_common import KEEPALIVE

ENCODERS = [encoder("openai"), encoder("anthropic")]


def feed(chunks: list[Chunk]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


def prelude(encoder: Encoder) -> list[Chunk]:
    return chunks_of(encoder.prelude([]))


def call(encoder: Encoder, key: int, suffix: str, raw: str = "") -> WireCall:
    """A get_weather call on slot ``key`` whose arguments are ``raw``."""
    return WireCall(f"{encoder.id_prefix}{suffix}", "get_weather", (raw,), key=key, arguments={})


def single_call(encoder: Encoder, key: int, fragments: list[str]) -> list[Chunk]:
    """One get_weather call on slot ``key``, ended as the format ends a tool-call turn."""
    one = call(encoder, key, "a1")
    chunks = prelude(encoder) + encoder.open(one)
    for text in fragments:
        chunks += encoder.fragment(one, text)
    return chunks + encoder.close(one) + encoder.finish([one])


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.wire)
def test_parseable_arguments_are_not_executable_before_the_terminal_event(
    encoder: Encoder,
) -> None:
    one, keepalive = call(encoder, 0, "a1"), [KEEPALIVE[encoder.wire]]
    before = (
        prelude(encoder)
        + encoder.open(one)
        + encoder.fragment(one, '{"city": ')
        + encoder.fragment(one, '"Paris"}')
        + keepalive
        + encoder.fragment(one, "  ")
        + keepalive
        + encoder.close(one)
        + keepalive
    )
    terminal = encoder.finish([one])
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    executable, parseable = [], 0
    for chunk in before:
        buffer.add(chunk)
        executable.append(buffer.executable)
        slots = buffer.slots
        if slots and parse_arguments(slots[0].raw_arguments)[0] is not None:
            parseable += 1
    assert parseable >= 5, "the arguments should parse several chunks before the terminal"
    assert executable == [False] * len(before)
    for chunk in terminal[:-1]:
        buffer.add(chunk)
        assert not buffer.executable, "executable before the turn's last terminal event"
    buffer.add(terminal[-1])
    assert buffer.executable
    buffer.end()
    result = report(buffer)
    assert result["status"] == "pass"
    assert result["calls"][0]["arguments"] == {"city": "Paris"}


def measured(chunks: list[Chunk]) -> tuple[dict[str, Any], float, int]:
    """The report for ``chunks``, the seconds it took, and the peak bytes allocated."""
    started = time.perf_counter()
    result = report(feed(chunks))
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    try:
        report(feed(chunks))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, elapsed, peak


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.wire)
def test_huge_slot_index_is_refused_quickly_with_little_memory(encoder: Encoder) -> None:
    result, elapsed, peak = measured(single_call(encoder, 10**12, ['{"city": "Paris"}']))
    assert result["status"] == "fail"
    assert "limit_exceeded" in [f["code"] for f in result["findings"]]
    assert result["calls"] == []
    assert elapsed < 1.0
    assert peak < 16 * 1024 * 1024


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.wire)
def test_deeply_nested_fragment_is_refused_quickly_with_little_memory(encoder: Encoder) -> None:
    brackets = "[" * 200_000
    result, elapsed, peak = measured(single_call(encoder, 0, [brackets]))
    assert result["status"] == "fail"
    assert ("limit_exceeded", 0) in [(f["code"], f["slot"]) for f in result["findings"]]
    assert result["calls"][0]["arguments"] == brackets
    assert elapsed < 1.0
    assert peak < 16 * 1024 * 1024


BAD_ARGUMENTS = [
    ('{"city": "Paris",}', "malformed_json"),
    ('{"city": "Par', "malformed_json"),
    ('{"city": "Paris"} {}', "trailing_data"),
    ('["Paris"]', "non_object_arguments"),
    ('{"city": "Paris", "city": "Rome"}', "duplicate_key"),
    ('{"city": "Paris", "t": NaN}', "non_finite_number"),
    ('{"city": "\\ud800"}', "lone_surrogate"),
]


@pytest.mark.parametrize(("bad", "code"), BAD_ARGUMENTS, ids=[c for _, c in BAD_ARGUMENTS])
@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.wire)
def test_bad_arguments_are_reported_with_their_raw_text(
    encoder: Encoder, bad: str, code: str
) -> None:
    good, bad_key = '{"city": "Rome"}', 1
    first, second = call(encoder, 0, "good", good), call(encoder, bad_key, "bad", bad)
    chunks = prelude(encoder) + encoder.open(first) + encoder.open(second)
    for n in range(0, max(len(good), len(bad)), 3):
        if good[n : n + 3]:
            chunks += encoder.fragment(first, good[n : n + 3])
        if bad[n : n + 3]:
            chunks += encoder.fragment(second, bad[n : n + 3])
    chunks += encoder.close(first) + encoder.close(second) + encoder.finish([first, second])
    buffer = feed(chunks)
    result = report(buffer)
    assert result["status"] == "fail"
    assert not buffer.executable
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [(code, bad_key)]
    good_call, bad_call = result["calls"]
    assert (good_call["arguments"], good_call["state"]) == ({"city": "Rome"}, "blocked")
    assert (bad_call["arguments"], bad_call["state"]) == (bad, "blocked")
    if encoder.wire == "openai":
        arguments = [c["function"]["arguments"] for c in buffer.as_dict()["tool_calls"]]
        assert arguments == [good, bad]
