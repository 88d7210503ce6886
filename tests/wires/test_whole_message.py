"""A whole message gets what its stream gets: one verdict, the same runs and answers.

MCS's non-streaming use hands ``process_llm_response`` the provider's stream=false
message (source document 001, "Decision": the driver resolves extraction on "the str |
dict" as on ``buf.as_dict()``). callgate replays the message as its wire's stream
(``ExtractionStrategy.replay``) through the same buffer and decisions. The property:
for any stream of any wire the kit builds, with or without a fault the message itself
carries (broken, non-finite or repeated-key arguments, non-object arguments, a schema
violation, an unknown tool), the stream and its assembled message run the same tools
with the same arguments, answer the same calls with the same words, end in the same
status, and give the same next-request history.

Faults of the stream alone (a reused index, a cut, a repeated terminal, a chunk of
another wire) leave no trace in the message, so they are not part of the property; the
recorded provider streams show the replay rebuilds each message exactly.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from callgate import Driver, LLMStreamBuffer, Tool, finish_turn, stream_turn
from callgate.cli.capture import load_capture
from callgate.testing import WIRES, StreamExample, fault_kinds, streams
from test_captures import HERE, MANIFEST

MESSAGE_FAULTS = (
    "malformed_json",
    "non_finite_number",
    "duplicate_key",
    "non_object_arguments",
    "schema_invalid",
    "unknown_tool",
)
"""Faults the assembled message carries (the kit's names)."""


def recording_driver(tools: dict[str, Any]) -> tuple[Driver, list[tuple[str, Any]]]:
    """A driver owning ``tools`` whose functions record each run, and the record."""
    runs: list[tuple[str, Any]] = []

    def tool(name: str) -> Any:
        def run(**arguments: Any) -> str:
            runs.append((name, arguments))
            return f"{name} ran"

        return run

    driver = Driver([Tool(n, s, tool(n)) for n, s in tools.items()], text_formats=())
    return driver, runs


@st.composite
def message_streams(draw: st.DrawFn) -> StreamExample:
    """A stream of any wire, clean or with one fault its message carries."""
    wire = draw(st.sampled_from(sorted(WIRES)))
    kinds = [k for k in MESSAGE_FAULTS if k in fault_kinds(wire)]
    fault = draw(st.one_of(st.just(False), st.sampled_from(kinds)))
    return draw(streams(wire, faults=fault, quirks=False))


@given(message_streams())
def test_a_whole_message_gets_what_its_stream_gets_on_every_wire(example: StreamExample) -> None:
    streamed, streamed_runs = recording_driver(dict(example.tools))
    buffer = streamed.new_stream_buffer()
    steps = list(stream_turn(example.dicts, streamed, buffer))
    answered = [step.response for step in steps if step.response.results]
    whole_driver, whole_runs = recording_driver(dict(example.tools))
    whole = whole_driver.process_llm_response(buffer.as_dict())
    assert whole_runs == streamed_runs
    said = [(r.call.id, r.call.name, r.content, r.refused) for a in answered for r in a.results]
    assert [(r.call.id, r.call.name, r.content, r.refused) for r in whole.results] == said
    assert whole.status == (answered[-1].status if answered else None)
    if answered:
        assert list(whole.messages) == list(finish_turn(buffer, steps).history)
    else:
        assert whole.messages == ()


def test_every_recorded_stream_replays_into_its_own_message() -> None:
    rebuilt = 0
    for entry in MANIFEST:
        buffer = LLMStreamBuffer(tool_schemas=None)
        try:
            for chunk in load_capture((HERE / entry["file"]).read_bytes()):
                buffer.add(chunk)
        except ValueError:
            continue  # a recording of a wire's reply without a stream envelope
        buffer.end()
        wire = buffer.strategy
        assert wire is not None
        replayed = LLMStreamBuffer(tool_schemas=None, strategy=type(wire)())
        for chunk in wire.replay(buffer.as_dict()):
            replayed.add(chunk)
        replayed.end()
        message = json.dumps(buffer.as_dict(), sort_keys=True, default=repr)
        again = json.dumps(replayed.as_dict(), sort_keys=True, default=repr)
        assert again == message, entry["file"]
        rebuilt += 1
    assert rebuilt >= 100
