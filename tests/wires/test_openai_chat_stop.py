"""How an OpenAI turn may end its calls: ``tool_calls``, ``stop``, and a relay's trailing end.

api.openai.com ends a call made under a named ``tool_choice`` with ``finish_reason: "stop"``
(vLLM on purpose, older Ollama ``/v1`` and LiteLLM routes too): complete, strict, valid
calls then run, with a ``stop_finish_reason`` warning; ``strict_finish`` keeps the seed
validator's rule. ``length``, ``content_filter`` and a missing finish always block, and the
answer the model gets says the server, not its call, was at fault. OpenRouter relaying
Gemini sends one more chunk of whitespace text with Gemini's own ``stop``: a warning.
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
from callgate.cli.check import check_fixture
from callgate.cli.fixtures import examples
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall

Chunk = dict[str, Any]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def ended_with(reason: str | None, arguments: str = '{"city": "Paris"}') -> list[Chunk]:
    """One call, then the finish ``reason`` (None: the stream stops without one)."""
    chunks = openai_chunks([WireCall("call_1", "get_weather", (arguments,))], [0, 0])
    if reason is None:
        return chunks[:-1]
    chunks[-1]["choices"][0]["finish_reason"] = reason
    return chunks


def trailing(delta: Chunk, reason: str = "stop") -> list[Chunk]:
    """A call ended by ``tool_calls``, then one more chunk with ``delta`` and ``reason``."""
    chunks = ended_with("tool_calls")
    extra = json.loads(json.dumps(chunks[-1]))
    extra["choices"][0].update(delta=delta, finish_reason=reason)
    return [*chunks, extra]


def played(chunks: list[Chunk], **options: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": SCHEMA}, **options)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


def codes(buffer: LLMStreamBuffer) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in buffer.findings]


def test_a_complete_call_ended_by_stop_is_executable_with_a_warning() -> None:
    buffer = played(ended_with("stop"))
    assert buffer.executable
    assert codes(buffer) == [("stop_finish_reason", "warning")]
    assert buffer.findings[0].message == (
        "the turn ended with finish_reason 'stop', not 'tool_calls'; its calls are checked "
        "as complete (strict_finish refuses them)"
    )
    assert [s.arguments for s in buffer.slots] == [{"city": "Paris"}]


def test_strict_finish_keeps_the_seed_rule_for_stop() -> None:
    buffer = played(ended_with("stop"), strict_finish=True)
    assert buffer.turn_state == "blocked"
    assert codes(buffer) == [("wrong_terminal_reason", "error")]


@pytest.mark.parametrize("reason", ["length", "content_filter"])
@pytest.mark.parametrize("strict", [False, True])
def test_length_and_content_filter_still_block(reason: str, strict: bool) -> None:
    buffer = played(ended_with(reason), strict_finish=strict)
    assert buffer.turn_state == "blocked"
    assert codes(buffer) == [("wrong_terminal_reason", "error")]


def test_a_missing_finish_still_blocks() -> None:
    buffer = played(ended_with(None))
    assert buffer.turn_state == "blocked"
    assert "missing_terminal" in [code for code, _ in codes(buffer)]


@pytest.mark.parametrize(
    ("arguments", "code"),
    [('{"city": "Par', "malformed_json"), ('{"town": "Paris"}', "schema_invalid")],
)
def test_stop_is_no_excuse_for_a_call_that_is_not_strict_and_valid(
    arguments: str, code: str
) -> None:
    buffer = played(ended_with("stop", arguments))
    assert buffer.turn_state == "blocked"
    assert code in [c for c, _ in codes(buffer)]


def test_stop_after_stop_is_still_a_second_terminal() -> None:
    chunks = ended_with("stop")
    extra = json.loads(json.dumps(chunks[-1]))
    extra["choices"][0]["delta"] = {"content": "and more"}
    buffer = played([*chunks, extra])
    assert buffer.turn_state == "blocked"
    assert "duplicate_terminal" in [c for c, _ in codes(buffer)]


def test_a_turn_without_calls_ending_in_stop_has_no_warning() -> None:
    buffer = played(openai_chunks([], [], text=("Hello",)))
    assert buffer.turn_state == "not_applicable"
    assert buffer.findings == []


@pytest.mark.parametrize(
    "delta", [{"content": "\n"}, {"content": " \n\t"}, {}, {"role": "assistant", "content": ""}]
)
def test_a_relays_trailing_whitespace_stop_is_a_warning(delta: Chunk) -> None:
    buffer = played(trailing(delta))
    assert buffer.executable
    assert codes(buffer) == [("trailing_terminal", "warning")]
    assert buffer.findings[0].message == (
        "finish_reason 'stop' after 'tool_calls', on a chunk with nothing but whitespace "
        "text (a relay's own end); the turn had ended"
    )
    assert buffer.as_dict()["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'


def test_a_bare_repeat_of_the_finish_shows_nothing() -> None:
    chunks = [*ended_with("tool_calls"), *ended_with("tool_calls")[-1:]]
    buffer = played(chunks)
    assert codes(buffer) == [("repeated_terminal", "warning")]
    assert buffer.get_content() == ""
    strategy = callgate.OpenAIStrategy()
    acc = strategy.new_accumulator(callgate.TurnGate())
    assert [strategy.accumulate(acc, chunk) for chunk in chunks] == [""] * len(chunks)


@pytest.mark.parametrize(
    ("delta", "reason"),
    [
        ({"content": "Done."}, "stop"),
        ({"content": "\n"}, "length"),
        ({"content": "\n"}, "tool_calls"),
        ({"tool_calls": [{"index": 0, "function": {"arguments": " "}}]}, "stop"),
        (
            {"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "get_weather"}}]},
            "stop",
        ),
        ({"reasoning_content": "hm"}, "stop"),
    ],
)
def test_a_trailing_chunk_with_call_data_or_text_still_blocks(delta: Chunk, reason: str) -> None:
    buffer = played(trailing(delta, reason))
    assert buffer.turn_state == "blocked"
    assert codes(buffer)[0][1] == "error"


def test_the_bundled_fixtures_show_each_rule() -> None:
    fixtures = dict(examples())
    stop = check_fixture(fixtures["openai_stop_finish_reason.json"])
    assert stop["status"] == "pass"
    assert [f["code"] for f in stop["findings"]] == ["stop_finish_reason"]
    strict = check_fixture(fixtures["openai_stop_finish_reason.json"], strict_finish=True)
    assert strict["status"] == "fail"
    assert [f["code"] for f in strict["findings"]] == ["wrong_terminal_reason"]
    relay = check_fixture(fixtures["openai_trailing_terminal.json"])
    assert (relay["status"], [f["code"] for f in relay["findings"]]) == (
        "pass",
        ["trailing_terminal"],
    )


def test_callgate_check_has_the_strict_finish_flag(tmp_path: Path) -> None:
    fixture = tmp_path / "stop.json"
    fixture.write_text(dict(examples())["openai_stop_finish_reason.json"], encoding="utf-8")

    def check(*flags: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "callgate", "check", str(fixture), *flags]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    lenient = check()
    assert lenient.returncode == 0, lenient.stderr
    assert "warning stop_finish_reason" in lenient.stdout
    strict = check("--strict-finish", "--report", "json")
    assert strict.returncode == 1, strict.stderr
    assert [f["code"] for f in json.loads(strict.stdout)["findings"]] == ["wrong_terminal_reason"]


def driver(ran: list[dict[str, Any]], **options: Any) -> callgate.Driver:
    def get_weather(city: str) -> str:
        ran.append({"city": city})
        return "sunny"

    return callgate.Driver([Tool("get_weather", SCHEMA, get_weather)], **options)


def test_the_driver_runs_a_call_ended_by_stop() -> None:
    ran: list[dict[str, Any]] = []
    chosen = driver(ran)
    turn = callgate.run_turn(ended_with("stop"), chosen, chosen.new_stream_buffer())
    assert ran == [{"city": "Paris"}]
    assert turn.status == "pass"
    assert [r.content for r in turn.results] == ["sunny"]


@pytest.mark.parametrize(("reason", "strict"), [("stop", True), ("length", False)])
def test_the_answer_to_a_refused_call_blames_the_server_not_the_call(
    reason: str, strict: bool
) -> None:
    ran: list[dict[str, Any]] = []
    chosen = driver(ran, strict_finish=strict)
    turn = callgate.run_turn(ended_with(reason), chosen, chosen.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    [result] = turn.results
    assert result.is_error and result.refused
    assert f"reason {reason!r}" in result.content
    assert "The server ended the turn" in result.content
    assert "not at fault" in result.content
    assert "Send the call again" not in result.content


def test_orchestrator_passes_strict_finish_to_its_buffer() -> None:
    ran: list[dict[str, Any]] = []
    both = callgate.Orchestrator([driver(ran)], strict_finish=True)
    assert both.new_stream_buffer().strict_finish
    assert not callgate.Orchestrator([driver(ran)]).new_stream_buffer().strict_finish


def test_callgate_replay_gives_checks_verdict_under_either_rule(tmp_path: Path) -> None:
    fixture = tmp_path / "stop.json"
    fixture.write_text(dict(examples())["openai_stop_finish_reason.json"], encoding="utf-8")

    def replay(*flags: str) -> dict[str, Any]:
        command = [sys.executable, "-m", "callgate", "replay", str(fixture), "--json", *flags]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert "Traceback" not in done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    lenient, strict = replay(), replay("--strict-finish")
    assert (lenient["status"], [f["code"] for f in lenient["findings"]]) == (
        "pass",
        ["stop_finish_reason"],
    )
    assert (strict["status"], [f["code"] for f in strict["findings"]]) == (
        "fail",
        ["wrong_terminal_reason"],
    )
