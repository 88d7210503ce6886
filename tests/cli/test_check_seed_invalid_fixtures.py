"""``callgate check`` on fixtures the seed validator would call invalid (exit 2).

The conformance procedure (source document 003, "Quick Reference": exit 2 is "Invalid
input or no streamed tool calls"; "Fixture Envelope": ``profile``, ``tool_schemas``,
the stream as ``chunks`` or ``events``) makes an unusable fixture exit 2 with
``status: invalid``. Each finding says what is wrong in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
CHUNK = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
WHOLE = json.dumps({"profile": "openai", "tool_schemas": {}, "chunks": [CHUNK]}, indent=2)


def check(path: Path) -> tuple[int, dict[str, object]]:
    """Run ``python -m callgate check PATH --report json``; its exit code and report."""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-m", "callgate", "check", str(path), "--report", "json"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (WHOLE[: len(WHOLE) // 2], "the fixture is not JSON"),
        (WHOLE.replace("\n", " ")[:-5], "the fixture is not JSON"),
        (json.dumps({"profile": "openai", "tool_schemas": {}}), "under 'chunks' or 'events'"),
        (json.dumps({"tool_schemas": {"f": {"type": "object"}}}), "under 'chunks' or 'events'"),
        (json.dumps({"profile": "gpt5", "chunks": [CHUNK]}), "unknown profile 'gpt5'"),
        (json.dumps({"profile": "gpt5"}), "unknown profile 'gpt5'"),
    ],
    ids=["truncated", "truncated-one-line", "no-stream", "schemas-only", "profile", "profile-only"],
)
def test_an_unusable_fixture_exits_2_invalid_saying_why_in_one_finding(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "fixture.json"
    path.write_text(text, encoding="utf-8")
    code, report = check(path)
    assert (code, report["status"], report["applicable"]) == (2, "invalid", False)
    findings = report["findings"]
    assert isinstance(findings, list) and len(findings) == 1
    [finding] = findings
    assert finding["code"] == "invalid_fixture" and says in finding["message"]
    assert "\n" not in finding["message"] and len(finding["message"]) < 200


def test_a_json_lines_capture_with_a_broken_line_is_still_read_line_by_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "capture.jsonl"
    path.write_text(json.dumps(CHUNK) + "\n{broken\n", encoding="utf-8")
    code, report = check(path)
    assert code == 1 and report["status"] == "fail"
    findings = report["findings"]
    assert isinstance(findings, list)
    assert [f["code"] for f in findings if f["severity"] == "error"] == ["malformed_chunk"]
