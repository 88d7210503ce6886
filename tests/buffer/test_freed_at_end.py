"""A buffer whose turn has ended holds no reference cycle: dropping it frees it at once.

A proxy or an agent loop plays a turn per request; a buffer that waited for the cyclic
collector would keep every turn's chunks, gate and text alive until the collector runs.
The buffer's hooks (the gate's stray and text-limit calls, the text queue's block entry)
are the only way back to it, and they go at ``end()``. Checked with the collector off,
on every wire's bundled streams and the recorded provider streams, through the buffer alone
and through a driver's loop.
"""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import callgate
from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.cli.capture import load_capture

EXAMPLES = Path(callgate.__file__).parent / "examples"
STREAMS = sorted(
    p.name
    for p in EXAMPLES.glob("*.json")
    if p.name.endswith(("single_call.json", "text_only.json"))
)


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("name", STREAMS)
def test_an_ended_buffer_is_freed_as_soon_as_it_is_dropped(name: str, no_collector: None) -> None:
    example = fixture(name)
    buffer = LLMStreamBuffer(tool_schemas=example.get("tool_schemas"))
    for chunk in example.get("chunks", example.get("events")):
        buffer.add(chunk)
    buffer.end()
    assert buffer.as_dict()  # the turn is still readable after its end
    gone = weakref.ref(buffer)
    del buffer
    assert gone() is None


@pytest.mark.parametrize("name", STREAMS)
def test_a_played_turn_s_buffer_is_freed_as_soon_as_it_is_dropped(
    name: str, no_collector: None
) -> None:
    example = fixture(name)
    tools = [Tool(n, s, lambda **_: "ok") for n, s in example.get("tool_schemas", {}).items()]
    driver = Driver(tools, text_formats=["tool_call_tag"])
    buffer = driver.new_stream_buffer()
    turn = run_turn(example.get("chunks", example.get("events")), driver, buffer)
    assert turn.status in ("pass", "not_applicable")
    gone = weakref.ref(buffer)
    del buffer
    assert gone() is None


CAPTURES = Path(__file__).resolve().parents[1] / "captures"
RECORDED = [
    entry
    for entry in json.loads((CAPTURES / "manifest.json").read_text(encoding="utf-8"))
    if "profile" not in entry  # recognised only under a named profile
]


@pytest.mark.parametrize("entry", RECORDED, ids=[e["file"] for e in RECORDED])
def test_a_recorded_stream_s_buffer_is_freed_as_soon_as_it_is_dropped(
    entry: dict[str, Any], no_collector: None
) -> None:
    """Real provider recordings (tests/captures), played through a driver's loop."""
    chunks = load_capture((CAPTURES / entry["file"]).read_bytes())
    names = sorted({call["name"] for call in entry["expect"]["calls"]})
    driver = Driver([Tool(name, {"type": "object"}, lambda **_: "ok") for name in names])
    buffer = driver.new_stream_buffer()
    run_turn(chunks, driver, buffer)
    gone = weakref.ref(buffer)
    del buffer
    assert gone() is None
