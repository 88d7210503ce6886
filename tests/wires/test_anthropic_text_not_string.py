"""An Anthropic text that is not a string is a ``malformed_chunk``, never a crash.

A ``text_delta`` whose ``text`` is null, a number or a list, or a text block started
with ``"text": null``, blocks the turn with a finding, as the same values in a
``thinking_delta`` do; ``as_dict()``, ``run_turn`` and ``callgate replay`` keep working,
and the text that came before is kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import callgate
from callgate import LLMStreamBuffer, Tool

Chunk = dict[str, Any]
NOT_TEXT = [None, 7, 1.5, True, ["a"], {"text": "a"}]


def stream(start: Chunk, deltas: list[Chunk]) -> list[Chunk]:
    """A text block (``start`` its content_block, then ``deltas``), then one tool call."""
    return [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": start},
        *({"type": "content_block_delta", "index": 0, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]  # fmt: skip


def text_delta(value: object) -> list[Chunk]:
    start = {"type": "text", "text": ""}
    ok = {"type": "text_delta", "text": "Hello "}
    return stream(start, [ok, {"type": "text_delta", "text": value}])


def started_with(field: str, value: object) -> list[Chunk]:
    kind = "text" if field == "text" else "thinking"
    return stream({"type": kind, field: value}, [])


CASES = {
    **{f"text_delta {value!r}": text_delta(value) for value in NOT_TEXT},
    "start text null": started_with("text", None),
    "start text 3": started_with("text", 3),
    "start thinking null": started_with("thinking", None),
    "start signature list": started_with("signature", ["s"]),
}


def played(chunks: list[Chunk]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas={"f": {"type": "object"}})
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


@pytest.mark.parametrize("case", sorted(CASES))
def test_text_that_is_not_a_string_is_a_finding_and_the_message_stays_readable(case: str) -> None:
    buffer = played(CASES[case])
    assert buffer.turn_state == "blocked"
    assert [f.code for f in buffer.findings] == ["malformed_chunk"]
    message = buffer.as_dict()
    json.dumps(message)
    blocks = message["content"]
    assert all(isinstance(b.get("text", ""), str) for b in blocks)
    if case.startswith("text_delta"):
        assert blocks[0]["text"] == "Hello "
        assert buffer.get_content() == "Hello "


@pytest.mark.parametrize("case", sorted(CASES))
def test_run_turn_answers_the_call_with_the_finding(case: str) -> None:
    ran: list[object] = []
    driver = callgate.Driver([Tool("f", {"type": "object"}, lambda: ran.append(1) or "ok")])
    turn = callgate.run_turn(CASES[case], driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    [answer] = turn.results
    assert answer.is_error and "malformed_chunk" in answer.content
    json.dumps(list(turn.history))


@pytest.mark.parametrize("case", ["text_delta None", "text_delta ['a']", "start text null"])
def test_callgate_replay_reports_it_without_a_traceback(case: str, tmp_path: Path) -> None:
    capture = tmp_path / "capture.json"
    capture.write_text(json.dumps(CASES[case]), encoding="utf-8")
    command = [sys.executable, "-m", "callgate", "replay", str(capture), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "fail"
    assert "malformed_chunk" in [f["code"] for f in result["findings"]]
