"""Every transition of the text detector's machine, taken by a real stream.

Each case feeds deltas to a detector that records its steps (the trace that
``callgate trace`` shows) and states the text shown, the calls found, and every step the
machine took with its output: a transition sent to another state, or its output dropped,
changes the trace.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.audit.trace import Recorder, RecordingDetector

TC = '{"name": "f", "arguments": {}}'
F = [("f", {})]
Trace = list[tuple[str, str, str, str | None]]
END = ("printing", "end", "ended", None)
OPEN = ("printing", "open", "in_block", "drop_markup")
EXTRACT = ("in_block", "close_call", "printing", "extract")

CASES: list[tuple[str, list[str], dict[str, Any], str, list[Any], Trace]] = [
    # (what, deltas, detector options, shown, calls found, the machine's steps)
    ("a call behind a held prefix", ["Hi ", "<tool", "_call>", TC, "</tool_call>", " ok"], {},
     "Hi  ok", F,
     [("printing", "text", "printing", None),
      ("printing", "prefix", "matching_prefix", None),
      ("matching_prefix", "open", "in_block", "drop_markup"),
      ("in_block", "payload", "in_block", None),
      EXTRACT,
      ("printing", "text", "printing", None),
      END]),
    ("a whole call in one delta", [f"<tool_call>{TC}</tool_call>"], {}, "", F,
     [OPEN, EXTRACT, END]),
    ("a held prefix that opens nothing", ["Hi <to", "y"], {}, "Hi <toy", [],
     [("printing", "text", "printing", None),
      ("printing", "prefix", "matching_prefix", None),
      ("matching_prefix", "text", "printing", "release_held"),
      END]),
    ("a held prefix at the end", ["Hi <to"], {}, "Hi <to", [],
     [("printing", "text", "printing", None),
      ("printing", "prefix", "matching_prefix", None),
      ("matching_prefix", "end", "ended", "release_held")]),
    ("a closed block that is no call", ['<tool_call>{"a": 1}</tool_call>'], {},
     '<tool_call>{"a": 1}</tool_call>', [],
     [OPEN, ("in_block", "close_text", "printing", "release_block"), END]),
    ("a block broken by a new marker", ["<tool_call>", f"<tool_call>{TC}</tool_call>"], {},
     "<tool_call>", F,
     [OPEN, ("in_block", "break", "printing", "release_block"), OPEN, EXTRACT, END]),
    ("an unclosed format that parses at the end", [f"<|tool_call|>[{TC}]"], {}, "", F,
     [OPEN, ("in_block", "payload", "in_block", None), ("in_block", "payload", "in_block", None),
      ("in_block", "finish_call", "ended", "extract")]),
    ("an unclosed block that is no call", ['<tool_call>{"name"'], {}, '<tool_call>{"name"', [],
     [OPEN, ("in_block", "payload", "in_block", None), ("in_block", "payload", "in_block", None),
      ("in_block", "finish_text", "ended", "release_block")]),
    ("reasoning, then text", ["<think>r", "</think>after"], {}, "<think>r</think>after", [],
     [("printing", "think", "reasoning", None),
      ("reasoning", "text", "reasoning", None),
      ("reasoning", "unthink", "printing", None),
      ("printing", "text", "printing", None),
      END]),
    ("reasoning behind a held prefix", ["<thi", "nk>r</think>"], {}, "<think>r</think>", [],
     [("printing", "prefix", "matching_prefix", None),
      ("matching_prefix", "think", "reasoning", None),
      ("reasoning", "unthink", "printing", None),
      END]),
    ("reasoning cut off by the end", ["<think>r"], {}, "<think>r", [],
     [("printing", "think", "reasoning", None),
      ("reasoning", "text", "reasoning", None),
      ("reasoning", "end", "ended", None)]),
    ("a call inside reasoning is reported", [f"<think>r <tool_call>{TC}</tool_call></think>"],
     {}, f"<think>r <tool_call>{TC}</tool_call></think>", [],
     [("printing", "think", "reasoning", None),
      ("reasoning", "reasoning_marker", "reasoning", "call_in_reasoning"),
      ("reasoning", "unthink", "printing", None),
      END]),
    ("a call inside reasoning, opted in", [f"<think>r <tool_call>{TC}</tool_call>"],
     {"reasoning_calls": True}, "<think>r ", F,
     [("printing", "think", "reasoning", None),
      ("reasoning", "reasoning_open", "in_block", "call_in_reasoning"),
      EXTRACT,
      END]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("deltas", "options", "shown", "calls", "trace"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_transition_is_taken_with_its_output(
    deltas: list[str], options: dict[str, Any], shown: str, calls: list[Any], trace: Trace
) -> None:
    recorder = Recorder()
    detector = RecordingDetector(recorder, **options)
    steps = []
    for delta in deltas:
        steps.append(detector.feed(delta))
        assert detector.state == recorder.steps[-1].target
    steps.append(detector.finish())
    assert "".join(step.shown for step in steps) == shown
    found = [(c.name, c.arguments) for step in steps for b in step.blocks for c in b.calls]
    assert found == calls
    assert [(s.source, s.event, s.target, s.output) for s in recorder.steps] == trace
    assert detector.state == "ended"
