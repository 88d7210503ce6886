"""A driver's quiet step answers what its full step would have answered.

While the buffer's stamp equals the one after a driver's last full step (no new slot,
identity, verdict or text block, none opened or closed, no tool named by an open block,
the stream not ended), the driver repeats that step's observation instead of deciding
again. The reference is a driver whose every step is a full one: both must play a turn
alike, step by step and display state by display state, on every wire (faults included),
on text calls cut anywhere, under every policy, and on the recorded provider streams of
tests/captures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate import Driver, DriverResponse, LLMStreamBuffer, Tool
from callgate.cli.capture import load_capture
from callgate.driver.loop import stream_turn
from callgate.fsm.release import POLICIES as RELEASE_POLICIES
from callgate.testing import splits, streams, text_contents
from callgate.testing.builders import openai_chunks
from callgate.testing.plans import TOOLS
from callgate.testing.wires import WIRES


class Stepping(Driver):
    """A driver whose every step is a full one: it never repeats a step, whatever the stamp."""

    def process_llm_response(self, response: Any, *, ledger: Any = None) -> DriverResponse:
        if isinstance(response, LLMStreamBuffer):
            return self._stream_step(response)
        return super().process_llm_response(response, ledger=ledger)

    def _quiet(self, buffer: LLMStreamBuffer) -> DriverResponse | None:
        return None


def answer(**arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True)


def played(driver: Driver, chunks: list[Any], quiet: bool) -> list[Any]:
    """Each step of the turn, with the driver's display state after it."""
    if not quiet:
        driver.__class__ = Stepping
    buffer = driver.new_stream_buffer()
    steps = stream_turn(chunks, driver, buffer)
    return [(step, buffer.text_queue.view(driver).state) for step in steps]


def driver(policy: str, formats: tuple[str, ...] | None = None) -> Driver:
    tools = [Tool(name, schema, answer) for name, schema in TOOLS.items()]
    return Driver(tools, policy=policy, text_formats=formats)


POLICIES = st.sampled_from(list(RELEASE_POLICIES))


EXAMPLES = st.tuples(st.sampled_from(WIRES), st.booleans()).flatmap(
    lambda pair: streams(pair[0], faults=pair[1])
)


@given(EXAMPLES, POLICIES)
def test_a_quiet_step_answers_as_the_full_step_on_every_wire(example: Any, policy: str) -> None:
    chunks = list(example.chunks)
    steps = played(driver(policy), chunks, quiet=True)
    assert steps == played(driver(policy), chunks, quiet=False)


@given(text_contents().flatmap(lambda c: st.tuples(st.just(c), splits(c.content))), POLICIES)
def test_a_quiet_step_answers_as_the_full_step_on_text_calls(pair: Any, policy: str) -> None:
    content, deltas = pair
    chunks = openai_chunks([], [], text=deltas)
    formats = content.formats or None
    steps = played(driver(policy, formats), chunks, quiet=True)
    assert steps == played(driver(policy, formats), chunks, quiet=False)


CAPTURES = Path(__file__).resolve().parents[1] / "captures"
RECORDED = [
    entry
    for entry in json.loads((CAPTURES / "manifest.json").read_text(encoding="utf-8"))
    if "profile" not in entry  # recognised only under a named profile
]


@pytest.mark.parametrize("entry", RECORDED, ids=[e["file"] for e in RECORDED])
def test_a_quiet_step_answers_as_the_full_step_on_recorded_streams(entry: Any) -> None:
    """Real provider recordings (tests/captures): the drivers own every tool they call."""
    chunks = load_capture((CAPTURES / entry["file"]).read_bytes())
    names = {call["name"] for call in entry["expect"]["calls"]}
    recorded = Driver([Tool(name, {"type": "object"}, answer) for name in sorted(names)])
    steps = played(recorded, chunks, quiet=True)
    assert steps == played(recorded, chunks, quiet=False)
