"""Recording machine steps: free when off, a valid run of every table when on, unchanged results."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import pairwise
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.audit.trace import Recorder, RecordingDetector, RecordingTurnGate, TraceStep
from callgate.cli.demo import scenarios
from callgate.cli.fixtures import examples
from callgate.cli.replay import replay
from callgate.fsm import MACHINES
from callgate.gate.turn import TurnGate
from callgate.strategies.text.detector import Detector

FIXTURES = {name: json.loads(text) for name, text in examples()}
STREAMS: dict[str, tuple[list[Any], dict[str, Any], list[str] | None]] = {
    name: (data.get("chunks", data.get("events")), data["tool_schemas"], None)
    for name, data in FIXTURES.items()
    if isinstance(data.get("tool_schemas"), dict)
}
STREAMS.update(
    {
        s.name: (
            list(s.chunks),
            {k: v for d in s.drivers.values() for k, v in d.items()},
            ["tool_call_tag", "qwen3_coder_xml"],
        )
        for s in scenarios()
    }
)


def recorded(name: str) -> tuple[dict[str, Any], Recorder]:
    chunks, tools, formats = STREAMS[name]
    recorder = Recorder()
    return replay(chunks, tools, text_formats=formats, recorder=recorder), recorder


def test_without_a_recorder_the_plain_machines_run() -> None:
    buffer = LLMStreamBuffer(text_formats=["tool_call_tag"])
    buffer.add({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]})
    assert type(buffer.gate) is TurnGate
    assert type(buffer.text_queue.detector) is Detector
    assert all(view.recorder is None for view in buffer.text_queue.views.values())
    recording = LLMStreamBuffer(text_formats=["tool_call_tag"], recorder=Recorder())
    recording.add({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]})
    assert type(recording.gate) is RecordingTurnGate
    assert type(recording.text_queue.detector) is RecordingDetector


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_recording_is_a_valid_run_of_every_machine_and_changes_nothing(name: str) -> None:
    chunks, tools, formats = STREAMS[name]
    result, recorder = recorded(name)
    assert result == replay(chunks, tools, text_formats=formats)
    paths: dict[tuple[str, str], list[TraceStep]] = defaultdict(list)
    for step in recorder.steps:
        paths[step.machine, step.instance].append(step)
    assert [s.seq for s in recorder.steps] == list(range(len(recorder.steps)))
    for (machine, instance), path in paths.items():
        table = MACHINES[machine]
        assert path[0].source == table.initial, (instance, path[0])
        for before, after in pairwise(path):
            assert before.target == after.source, (instance, before, after)
        lookup = {(t.source, t.event): t for t in table.transitions}
        for step in path:
            transition = lookup[step.source, step.event]
            assert transition.target == step.target, (instance, step)
            if transition.output == "check_finding":  # the trace names the finding it made
                assert step.output in {f["code"] for f in result["findings"]}, (instance, step)
            else:
                assert transition.output == step.output, (instance, step)
    final = {inst: path[-1].target for (_, inst), path in paths.items()}
    for call in result["calls"]:
        if call["source"] != "native":
            continue  # text calls have no slot machine
        state = final[f"slot {call['slot']}"]
        assert call["state"] == ("blocked" if result["status"] == "fail" else state)
    if ("turn", "turn") in paths:
        expected_turn = {"pass": "executable", "fail": "blocked"}.get(result["status"])
        if expected_turn is not None and not result["text_calls"]:
            assert final["turn"] == expected_turn
    assert final["replay"] == result["timeline"][-1]["state"] == "ended"
    chunk_of = [s.chunk for s in recorder.steps]
    numbered = [c for c in chunk_of if c is not None]
    assert numbered == sorted(numbered), "steps are stamped with the chunk that caused them"
    assert all(c is None for c in chunk_of[len(numbered) :])


def test_a_block_records_its_finding_on_the_step_into_blocked() -> None:
    _, recorder = recorded("openai_identity_collision.json")
    into = [s for s in recorder.of("slot") if s.target == "blocked" and s.source != "blocked"]
    assert [(s.instance, s.output) for s in into] == [("slot 0", "identity_collision")]
