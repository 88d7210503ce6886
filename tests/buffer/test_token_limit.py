"""Usage at the request's token limit is a cut, whatever finish reason the server wrote.

vLLM reports ``finish_reason: "tool_calls"`` on turns that ``max_tokens`` cut; the usage
block says what happened. Every recorded stream with calls (tests/captures), cut at every
chunk boundary and ended with its wire's tool-use end relabelled onto it and usage at the
limit, releases no call; the same end one token below the limit runs the whole turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.cli.replay import replay
from callgate.strategies import WIRE_RECORDS
from corpus.relabelled_ends import LIMIT, MANIFEST, Chunk, end_index, relabelled


def buffered(chunks: list[Chunk], wire: str, limit: int = LIMIT) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(strategy=WIRE_RECORDS[wire].strategy(), max_tokens=limit)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_no_cut_of_a_recorded_stream_releases_a_call_when_usage_is_at_the_limit(
    entry: dict[str, Any],
) -> None:
    wire = entry["wire"]
    for cut in range(end_index(entry) + 1):
        for used in (LIMIT, LIMIT + 7):
            buffer = buffered(relabelled(entry, cut, used), wire)
            assert buffer.calls == [] and not buffer.executable, (cut, used)
            assert buffer.verdict == "fail", (cut, used)
            assert "token_limit" in [f.code for f in buffer.findings], (cut, used)
            assert buffer.gate is not None and buffer.gate.cut is True, (cut, used)


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_the_whole_turn_one_token_below_the_limit_runs_its_calls(entry: dict[str, Any]) -> None:
    """The control: the relabelled end is accepted, so the usage alone decides."""
    chunks = relabelled(entry, end_index(entry), LIMIT - 1)
    buffer = buffered(chunks, entry["wire"])
    assert buffer.verdict == "pass", buffer.findings
    assert [c.name for c in buffer.calls] == [c["name"] for c in entry["expect"]["calls"]]
    assert "token_limit" not in [f.code for f in buffer.findings]


@pytest.mark.parametrize("entry", MANIFEST[::4], ids=[e["file"] for e in MANIFEST[::4]])
def test_replay_releases_nothing_from_a_cut_turn_at_any_chunk(entry: dict[str, Any]) -> None:
    """The driver's side: the dry-run driver answers no call at any chunk, nor at the end."""
    for cut in range(end_index(entry) + 1):
        result = replay(relabelled(entry, cut, LIMIT), profile=entry["wire"], max_tokens=LIMIT)
        assert result["status"] == "fail"
        assert all(call["released_at"] is None for call in result["calls"]), cut


WEATHER = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
OPENAI_CALL = [
    {
        "choices": [
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": WEATHER}]}}
        ]
    },
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12}},
]


def test_the_end_waits_for_the_usage_report_that_follows_the_finish() -> None:
    """Under ``max_tokens`` nothing is finished, or executable, before the usage came."""
    buffer = LLMStreamBuffer(max_tokens=12)
    for chunk in OPENAI_CALL[:2]:
        buffer.add(chunk)
    assert not buffer.is_finished() and not buffer.executable and buffer.calls == []
    buffer.add(OPENAI_CALL[2])
    assert buffer.is_finished() and buffer.verdict == "fail"
    assert [f.code for f in buffer.findings] == ["token_limit"]


def test_without_a_usage_report_the_stream_end_decides() -> None:
    buffer = LLMStreamBuffer(max_tokens=12)
    for chunk in OPENAI_CALL[:2]:
        buffer.add(chunk)
    buffer.end()
    assert buffer.is_finished() and buffer.verdict == "pass"


def test_without_max_tokens_usage_decides_nothing() -> None:
    buffer = LLMStreamBuffer()
    for chunk in OPENAI_CALL[:2]:
        buffer.add(chunk)
    assert buffer.is_finished() and buffer.executable
    buffer.add(OPENAI_CALL[2])
    assert buffer.verdict == "pass" and buffer.findings == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_max_tokens_must_be_a_count(bad: object) -> None:
    with pytest.raises(ValueError, match="max_tokens must be a count"):
        LLMStreamBuffer(max_tokens=bad)  # type: ignore[arg-type]


def test_the_driver_passes_max_tokens_to_its_buffers() -> None:
    from callgate import Driver, Tool, run_turn

    ran: list[Any] = []
    tool = Tool("get_weather", {"type": "object"}, lambda **kw: ran.append(kw) or "sunny")
    for limit, runs in ((12, []), (13, [{"city": "Paris"}])):
        ran.clear()
        driver = Driver([tool], max_tokens=limit)
        turn = run_turn(OPENAI_CALL, driver, driver.new_stream_buffer())
        assert ran == runs and turn.status == ("fail" if limit == 12 else "pass")


def test_check_takes_max_tokens_from_the_fixture_or_the_command_line(tmp_path: Path) -> None:
    from callgate.cli.check import check_fixture
    from callgate.cli.commands import main

    schemas = {"get_weather": {"type": "object"}}
    fixture = {
        "profile": "openai",
        "tool_schemas": schemas,
        "chunks": OPENAI_CALL,
        "max_tokens": 12,
    }
    assert check_fixture(json.dumps(fixture))["status"] == "fail"
    assert check_fixture(json.dumps(fixture), max_tokens=100)["status"] == "pass"
    path = tmp_path / "turn.json"
    path.write_text(json.dumps({**fixture, "max_tokens": None}), encoding="utf-8")
    assert main(["check", str(path)]) == 0
    assert main(["check", str(path), "--max-tokens", "12"]) == 1
    assert main(["replay", str(path), "--max-tokens", "12", "--json"]) == 1
    bad = {**fixture, "max_tokens": "twelve"}
    report = check_fixture(json.dumps(bad))
    assert report["status"] == "invalid" and "'max_tokens'" in report["findings"][0]["message"]


def test_an_incomplete_response_reports_its_usage_and_is_finished_at_once() -> None:
    """``response.incomplete`` is a cut already; its usage ends the wait for it too."""
    events = [
        {
            "type": "response.created",
            "response": {"id": "r", "status": "in_progress", "output": []},
        },
        {
            "type": "response.incomplete",
            "response": {
                "id": "r",
                "status": "incomplete",
                "output": [],
                "incomplete_details": {"reason": "max_output_tokens"},
                "usage": {"output_tokens": 16},
            },
        },
    ]
    buffer = LLMStreamBuffer(max_tokens=16)
    for event in events:
        buffer.add(event)
    assert buffer.is_finished() and buffer.verdict != "pass"
    assert "token_limit" in [f.code for f in buffer.findings]
