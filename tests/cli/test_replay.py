"""Replaying captures: the display, the calls, and when each policy releases them."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.capture import CaptureError, load_capture
from callgate.cli.commands import main
from callgate.cli.fixtures import examples
from callgate.cli.replay import format_replay, replay

FIXTURES = {name: json.loads(text) for name, text in examples()}


def fixture(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = FIXTURES[name]
    return data.get("chunks", data.get("events")), data["tool_schemas"]


def demo_scenario(name: str) -> dict[str, Any]:
    path = resources.files("callgate") / "examples" / "demo" / f"{name}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_replay_json_has_the_contract_keys() -> None:
    chunks, tools = fixture("openai_single_call.json")
    result = replay(chunks, tools)
    assert {"wire", "message", "display", "calls", "status"} <= set(result)
    assert result["wire"] == "openai"
    assert result["display"] == "Let me check. "
    assert result["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert result["status"] == "pass"


def test_turn_policy_releases_every_call_at_the_turn_end() -> None:
    chunks, tools = fixture("anthropic_interleaved_two_calls.json")
    result = replay(chunks, tools)
    stop = next(i for i, c in enumerate(chunks) if c["type"] == "message_stop")
    assert [c["released_at"] for c in result["calls"]] == [stop, stop]


def test_call_policy_releases_each_call_at_its_own_done() -> None:
    chunks, tools = fixture("anthropic_interleaved_two_calls.json")
    result = replay(chunks, tools, policy="call")
    stops = [i for i, c in enumerate(chunks) if c["type"] == "content_block_stop"]
    assert [c["released_at"] for c in result["calls"]] == stops[1:]


def test_call_policy_is_the_turn_policy_without_per_call_done() -> None:
    chunks, tools = fixture("openai_interleaved_three_calls.json")
    assert [c["released_at"] for c in replay(chunks, tools, policy="call")["calls"]] == [
        c["released_at"] for c in replay(chunks, tools)["calls"]
    ]


def test_parseable_policy_releases_before_the_terminal_event() -> None:
    chunks, tools = fixture("openai_interleaved_three_calls.json")
    finish = len(chunks) - 1
    released = [c["released_at"] for c in replay(chunks, tools, policy="parseable")["calls"]]
    assert all(at is not None and at < finish for at in released)


def test_a_blocked_turn_releases_nothing() -> None:
    chunks, tools = fixture("openai_identity_collision.json")
    result = replay(chunks, tools, policy="call")
    assert result["status"] == "fail"
    assert all(c["released_at"] is None for c in result["calls"])


def test_text_report_shows_text_calls_and_verdict() -> None:
    chunks, tools = fixture("openai_single_call.json")
    text = format_replay(replay(chunks, tools))
    assert "Let me check. " in text
    assert "slot 0: get_weather (id call_w1)" in text
    assert text.splitlines()[-1] == "PASS: executable"


def test_cli_replays_sse_with_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks, tools = fixture("anthropic_single_call.json")
    capture = tmp_path / "capture.sse"
    capture.write_text(
        "".join(f"event: {c['type']}\ndata: {json.dumps(c)}\n\n" for c in chunks),
        encoding="utf-8",
    )
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    assert main(["replay", str(capture), "--tools", str(tmp_path / "tools.json"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["wire"] == "anthropic"
    assert result["calls"][0]["arguments"] == {"city": "Paris", "unit": "C"}


def test_cli_replay_one_unreadable_line_is_a_finding_for_that_chunk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "bad.jsonl"
    capture.write_text('{"choices": []}\nnot json\n', encoding="utf-8")
    assert main(["replay", str(capture), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["wire"] == "openai"
    assert [(f["code"], "line 2" in f["message"]) for f in result["findings"]] == [
        ("malformed_chunk", True)
    ]


def test_cli_replay_tools_must_be_an_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chunks, _ = fixture("openai_single_call.json")
    (tmp_path / "c.json").write_text(json.dumps(chunks), encoding="utf-8")
    (tmp_path / "t.json").write_text("42", encoding="utf-8")
    assert main(["replay", str(tmp_path / "c.json"), "--tools", str(tmp_path / "t.json")]) == 2
    assert "--tools must be a JSON object" in capsys.readouterr().err


def test_replay_reads_a_fixture_object_like_its_chunk_array(tmp_path: Path) -> None:
    fixture = resources.files("callgate") / "examples" / "openai_interleaved_three_calls.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    assert load_capture(fixture.read_bytes()) == data["chunks"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"profile": "openai", "chunks": {"a": 1}}), encoding="utf-8")
    with pytest.raises(CaptureError, match="must be a JSON array"):
        load_capture(broken.read_bytes())


def test_replay_timeline_shows_what_was_held_and_the_drivers_decisions() -> None:
    scenario = json.loads(
        (resources.files("callgate") / "examples" / "demo" / "4_call_nobody_owns.json").read_text(
            encoding="utf-8"
        )
    )
    result = replay(
        scenario["chunks"], {"get_weather": {"type": "object"}}, text_formats=["tool_call_tag"]
    )
    timeline = result["timeline"]
    assert result["display"] == scenario["expect"]["shown"]
    assert "".join(step["shown"] for step in timeline) == result["display"]
    states = [step["state"] for step in timeline]
    assert states.index("holding") < states.index("released")
    assert max(step["held"] for step in timeline) > 0
    assert timeline[-1] == {
        "chunk": None,
        "added": "",
        "arguments": {},
        "shown": "",
        "held": 0,
        "state": "ended",
        "answered": [],
        "partial": [],
    }
    assert "".join(step["added"] for step in timeline) == "".join(
        c["choices"][0]["delta"].get("content") or "" for c in scenario["chunks"]
    )


def test_replay_answers_a_text_call_at_the_chunk_the_policy_allows() -> None:
    scenario = json.loads(
        (
            resources.files("callgate") / "examples" / "demo" / "3_qwen_xml_in_content.json"
        ).read_text(encoding="utf-8")
    )
    tools = scenario["drivers"]["weather"]
    turn = replay(scenario["chunks"], tools, text_formats=["qwen3_coder_xml"])
    call = replay(scenario["chunks"], tools, policy="call", text_formats=["qwen3_coder_xml"])
    [at_end] = turn["text_calls"]
    [at_close] = call["text_calls"]
    assert at_end["released_at"] == len(scenario["chunks"]) - 1, "at the finish_reason chunk"
    assert at_close["released_at"] == at_close["completed_at"] < len(scenario["chunks"]) - 1
    assert at_close["arguments"] == {"city": "Oslo", "days": 3}


def test_replay_json_lists_a_text_call_growing_before_its_block_closes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scenario = demo_scenario("3_qwen_xml_in_content")
    capture, tools = tmp_path / "capture.json", tmp_path / "tools.json"
    capture.write_text(json.dumps(scenario["chunks"]), encoding="utf-8")
    tools.write_text(json.dumps(scenario["drivers"]["weather"]), encoding="utf-8")
    argv = ["replay", str(capture), "--tools", str(tools), "--text-formats", "qwen3_coder_xml"]
    assert main([*argv, "--json"]) == 0
    timeline = json.loads(capsys.readouterr().out)["timeline"]
    seen = [(step["chunk"], view) for step in timeline for view in step["partial"]]
    assert [(chunk, view["arguments"], view["complete"]) for chunk, view in seen] == [
        (6, {}, False),  # the name has streamed: the call is drawn, no argument yet
        (9, {"city": "Oslo"}, False),  # before its </parameter>
        (13, {"city": "Oslo"}, False),  # its string closed
        (17, {"city": "Oslo", "days": 3}, True),  # typed by the schema once whole
    ]
    assert {view["ref"] for _, view in seen} == {"text-0.0"}
    assert {view["source"] for _, view in seen} == {"qwen3_coder_xml"}
    closed = next(step["chunk"] for step in timeline if "</tool" in step["added"])
    assert all(chunk < closed for chunk, _ in seen)
