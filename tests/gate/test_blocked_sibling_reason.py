"""A valid call blocked by its turn says why, wherever it is reported.

One unknown tool blocks its valid siblings (a turn runs all of its calls or none, by
design): the check report, the replay (text and JSON) and the driver's answer to the
model each say "blocked with its turn: the call in slot 1 names an unknown tool".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import callgate
from callgate import Tool
from callgate.cli.check import check_stream, format_text
from callgate.cli.replay import format_replay, replay
from callgate.gate.findings import blocked_with_turn, finding

SCHEMAS = {"get_weather": {"type": "object"}}
WHY = "blocked with its turn: the call in slot 1 names an unknown tool"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def call(index: int, name: str, arguments: str = "{}") -> dict[str, Any]:
    entry = {"index": index, "id": f"c{index}", "function": {"name": name, "arguments": arguments}}
    return chunk({"tool_calls": [entry]})


STREAM = [call(0, "get_weather"), call(1, "send_mail"), chunk({}, "tool_calls")]


def test_the_check_report_says_why_the_valid_call_is_blocked() -> None:
    result = check_stream(STREAM, SCHEMAS, "openai")
    assert result["status"] == "fail"
    first, second = result["calls"]
    assert (first["state"], first["blocked_by"]) == ("blocked", WHY)
    assert "blocked_by" not in second
    assert f"get_weather (id c0) {{}} -> {WHY}" in format_text(result)


def test_a_passing_turn_has_no_blocked_by() -> None:
    result = check_stream([call(0, "get_weather"), chunk({}, "tool_calls")], SCHEMAS, "openai")
    assert result["status"] == "pass"
    assert ["blocked_by" in c for c in result["calls"]] == [False]


def test_replay_text_and_json_say_why() -> None:
    result = replay(STREAM, SCHEMAS)
    assert result["calls"][0]["blocked_by"] == WHY
    assert f"-> {WHY}, never released" in format_replay(result)


def test_the_command_line_replay_says_why(tmp_path: Path) -> None:
    capture, tools = tmp_path / "capture.json", tmp_path / "tools.json"
    capture.write_text(json.dumps(STREAM), encoding="utf-8")
    tools.write_text(json.dumps(SCHEMAS), encoding="utf-8")
    base = [sys.executable, "-m", "callgate", "replay", str(capture), "--tools", str(tools)]
    text = subprocess.run(base, capture_output=True, text=True, check=False)
    assert WHY in text.stdout, text.stderr
    data = json.loads(
        subprocess.run([*base, "--json"], capture_output=True, text=True, check=False).stdout
    )
    assert data["calls"][0]["blocked_by"] == WHY


def test_a_blocked_text_call_says_why_too() -> None:
    schemas = {"get_weather": {"type": "object", "required": ["city"]}}
    content = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
        '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'
    )
    stream = [chunk({"content": content}), chunk({}, "stop")]
    result = replay(stream, schemas, text_formats=["tool_call_tag"])
    first, second = result["text_calls"]
    assert result["status"] == "fail"
    assert first["finding"] is None
    assert first["blocked_by"] == (
        "blocked with its turn: the call in slot text-1.0 does not match its tool's schema"
    )
    assert "blocked_by" not in second
    assert first["blocked_by"] in format_replay(result)


def test_the_driver_answers_the_valid_call_with_the_reason() -> None:
    ran: list[Any] = []
    driver = callgate.Driver([Tool("get_weather", {"type": "object"}, lambda: ran.append(1))])
    turn = callgate.run_turn(STREAM, driver, driver.new_stream_buffer())
    assert ran == []
    weather, mail = turn.results
    assert WHY in weather.content and "send_mail" in weather.content
    assert "A turn runs all of its calls or none" in weather.content
    assert "send_mail is not available here" in mail.content


@pytest.mark.parametrize(
    ("code", "what"),
    [
        ("unknown_tool", "names an unknown tool"),
        ("schema_invalid", "does not match its tool's schema"),
        ("malformed_json", "has arguments that are not valid JSON"),
        ("limit_exceeded", "was refused (limit_exceeded)"),
    ],
)
def test_the_reason_names_the_call_and_its_fault(code: str, what: str) -> None:
    assert (
        blocked_with_turn(finding(code, "m", 2))
        == f"blocked with its turn: the call in slot 2 {what}"
    )


def test_a_turn_level_fault_is_quoted() -> None:
    cause = finding("missing_terminal", "the stream ended without the turn's terminal event")
    assert blocked_with_turn(cause) == (
        "blocked with its turn: the stream ended without the turn's terminal event "
        "(missing_terminal)"
    )
