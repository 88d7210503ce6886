"""Recording stays off the main path: the recorder builds its own variants of the machines."""

from __future__ import annotations

import subprocess
import sys

from callgate import Driver, LLMStreamBuffer, Tool
from callgate.audit.trace import (
    Recorder,
    RecordingDetector,
    RecordingTextQueue,
    RecordingTurnGate,
    RecordingView,
)
from callgate.gate.turn import TurnGate
from callgate.strategies.text.detector import Detector
from callgate.textqueue import TextQueue
from callgate.view import View

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
CHUNK = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}


def test_the_buffer_text_queue_driver_and_loop_run_without_the_recorder_loaded() -> None:
    code = (
        "import sys, callgate, callgate.buffer, callgate.textqueue, callgate.view, "
        "callgate.driver, "
        "callgate.driver.loop; print('callgate.audit.trace' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


def test_a_recorder_builds_every_machine_a_buffer_and_its_drivers_run() -> None:
    driver = Driver([Tool("lookup", SCHEMA, lambda q: "ok")], text_formats=["tool_call_tag"])
    plain, recording = driver.new_stream_buffer(), driver.new_stream_buffer(recorder=Recorder())
    for buffer in (plain, recording):
        buffer.add(dict(CHUNK))
        driver.process_llm_response(buffer)
    assert (type(plain.gate), type(plain.text_queue), type(plain.text_queue.detector)) == (
        TurnGate,
        TextQueue,
        Detector,
    )
    assert [type(v) for v in plain.text_queue.views.values()] == [View]
    assert (
        type(recording.gate),
        type(recording.text_queue),
        type(recording.text_queue.detector),
    ) == (RecordingTurnGate, RecordingTextQueue, RecordingDetector)
    recorder = recording.recorder
    assert isinstance(recorder, Recorder)
    [view] = recording.text_queue.views.values()
    assert type(view) is RecordingView
    assert [s.machine for s in recorder.steps] == ["detector", "display"]
    assert recorder.of("display")[0].instance == view.name


def test_a_buffer_without_text_formats_records_its_gate_only() -> None:
    recorder = Recorder()
    buffer = LLMStreamBuffer(recorder=recorder)
    buffer.add(dict(CHUNK))
    buffer.end()
    assert buffer.text_queue.detector is None
    assert {s.machine for s in recorder.steps} == {"turn"}
