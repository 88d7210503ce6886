"""Ollama native /api/chat: the native response, display, results, recognition.

The stateful test of this wire (whole calls packed into lines, an error line, faults) is
the generic machine of tests/wires/test_every_wire_stateful.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer, ToolResult
from callgate.strategies import (
    CohereStrategy,
    ExtractedCall,
    OllamaStrategy,
    OpenAIStrategy,
    default_wire_strategies,
)
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from wire_common import FIXTURES, calls_of, codes, fed, fed_fixture, stream_of

Chunk = dict[str, Any]
MODEL = "qwen3:8b"
COUNTERS = {
    "total_duration": 2815468125,
    "load_duration": 41204250,
    "prompt_eval_count": 182,
    "prompt_eval_duration": 310559042,
    "eval_count": 61,
    "eval_duration": 2462173458,
}


def line(n: int, message: Chunk, done: bool = False, reason: str | None = "stop") -> Chunk:
    out: Chunk = {
        "model": MODEL,
        "created_at": f"2025-10-14T09:21:{n % 60:02d}.{n:09d}Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
    }
    if done:
        out["done_reason"] = reason
        out.update(COUNTERS)
    return out


def tool_call(name: str | None, arguments: Any, call_id: str | None = None) -> Chunk:
    function: Chunk = {} if name is None else {"name": name}
    function["arguments"] = arguments
    entry: Chunk = {"function": function}
    if call_id is not None:
        entry["id"] = call_id
    return entry


# -- the native response ------------------------------------------------------------------


def test_parallel_calls_assemble_into_the_stream_false_response() -> None:
    buffer = fed_fixture("ollama_parallel_calls.json")
    assert buffer.strategy is not None and buffer.strategy.name == "ollama"
    assert buffer.executable
    assert buffer.as_dict() == {
        "model": "qwen3:8b",
        "created_at": "2025-10-14T09:21:09.000000000Z",
        "message": {
            "role": "assistant",
            "content": "",
            "thinking": "Weather, time and a search.",
            "tool_calls": [
                {
                    "function": {
                        "index": 0,
                        "name": "get_weather",
                        "arguments": {"city": "Paris", "unit": "C"},
                    }
                },
                {"function": {"index": 1, "name": "get_time", "arguments": {"tz": "Europe/Paris"}}},
                {
                    "function": {
                        "index": 2,
                        "name": "search",
                        "arguments": {"query": "café near Louvre", "limit": 3},
                    }
                },
            ],
        },
        "done": True,
        "done_reason": "stop",
        **COUNTERS,
    }


def test_content_is_displayed_and_thinking_is_not() -> None:
    chunks = [
        line(1, {"thinking": "Short answer."}),
        line(2, {"content": "Paris is"}),
        line(3, {"content": " the capital."}),
        line(4, {}, done=True),
    ]
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    shown = []
    for item in chunks:
        buffer.add(item)
        shown.append(buffer.text())
    buffer.end()
    assert shown == ["", "Paris is", " the capital.", ""]
    message = buffer.as_dict()
    assert message["message"] == {
        "role": "assistant",
        "content": "Paris is the capital.",
        "thinking": "Short answer.",
    }
    assert OllamaStrategy().content_text(message) == "Paris is the capital."
    assert buffer.turn_state == "not_applicable"


def test_calls_by_position_whatever_their_index_says() -> None:
    chunks = [
        line(1, {"tool_calls": [{"function": {"index": 0, "name": "ping", "arguments": {}}}]}),
        line(2, {"tool_calls": [{"function": {"index": 0, "name": "ping", "arguments": {}}}]}),
        line(3, {}, done=True),
    ]
    buffer = fed(chunks)
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "ping", {}), (1, None, "ping", {})]
    indices = [c["function"]["index"] for c in buffer.as_dict()["message"]["tool_calls"]]
    assert indices == [0, 0]


def test_ids_from_a_newer_server_are_kept() -> None:
    buffer = fed(
        [line(1, {"tool_calls": [tool_call("ping", {}, "call_k7f2m9xq")]}), line(2, {}, True)]
    )
    assert calls_of(buffer) == [(0, "call_k7f2m9xq", "ping", {})]
    assert buffer.as_dict()["message"]["tool_calls"] == [
        {"function": {"name": "ping", "arguments": {}}, "id": "call_k7f2m9xq"}
    ]


def test_missing_arguments_mean_an_empty_object() -> None:
    buffer = fed([line(1, {"tool_calls": [{"function": {"name": "ping"}}]}), line(2, {}, True)])
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "ping", {})]
    assert buffer.as_dict()["message"]["tool_calls"] == [{"function": {"name": "ping"}}]


def test_calls_are_not_executable_before_the_done_line() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    buffer.add(line(1, {"tool_calls": [tool_call("get_weather", {"city": "Paris"})]}))
    buffer.add(line(2, {}))
    assert not buffer.executable and not buffer.is_finished()
    buffer.add(line(3, {}, done=True))
    assert buffer.executable and buffer.is_finished()


@pytest.mark.parametrize("reason", ["length", "load", "unload"])
def test_only_stop_ends_a_turn_with_calls(reason: str) -> None:
    buffer = fed(
        [
            line(1, {"tool_calls": [tool_call("get_weather", {"city": "Paris"})]}),
            line(2, {}, True, reason),
        ]
    )
    assert codes(buffer) == [("wrong_terminal_reason", 0)]


def test_an_older_server_without_done_reason_ends_the_turn_normally() -> None:
    done = line(2, {}, True)
    del done["done_reason"]
    buffer = fed([line(1, {"tool_calls": [tool_call("ping", {})]}), done])
    assert buffer.executable


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"tool_calls": [tool_call("get_weather", ["Paris"])]}, "non_object_arguments"),
        ({"tool_calls": [tool_call("get_weather", '{"city": "Paris"}')]}, "non_object_arguments"),
        ({"tool_calls": [tool_call(None, {"city": "Paris"})]}, "missing_name"),
        ({"tool_calls": [{"function": "get_weather"}]}, "malformed_chunk"),
        ({"tool_calls": ["get_weather"]}, "malformed_chunk"),
        ({"tool_calls": {"function": {"name": "ping", "arguments": {}}}}, "malformed_chunk"),
    ],
)
def test_unreadable_or_invalid_calls_block_the_turn(message: Chunk, code: str) -> None:
    buffer = fed([line(1, message), line(2, {}, True)])
    assert code in [c for c, _ in codes(buffer)]
    assert not buffer.executable


def test_an_error_line_is_the_providers_error_and_blocks_the_turn() -> None:
    buffer = fed_fixture("ollama_error_line.json")
    assert codes(buffer) == [("provider_error", None), ("missing_terminal", 0)]
    assert not buffer.executable


# -- lines after the done line ------------------------------------------------------------

TURNS = {
    "text": [line(1, {"content": "Hi"}), line(2, {}, done=True)],
    "a call": [line(1, {"tool_calls": [tool_call("ping", {})]}), line(2, {}, done=True)],
}


def ended_turn(turn: str) -> tuple[LLMStreamBuffer, dict[str, Any], list[Any]]:
    """A buffer fed a whole turn (not ended), its message and its findings so far."""
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    for chunk in TURNS[turn]:
        buffer.add(chunk)
    return buffer, buffer.as_dict(), list(buffer.findings)


@pytest.mark.parametrize("turn", TURNS)
@pytest.mark.parametrize("late", [{}, {"content": ""}, {"thinking": ""}])
def test_an_idle_line_after_the_done_line_is_a_finding_and_changes_no_field(
    turn: str, late: Chunk
) -> None:
    buffer, message, before = ended_turn(turn)
    buffer.add(line(3, late))
    buffer.end()
    assert buffer.as_dict() == message
    assert buffer.as_dict()["done"] is True
    assert buffer.findings[: len(before)] == before
    assert codes(buffer)[-1] == ("delta_after_terminal", None)
    assert buffer.turn_state == "blocked" and not buffer.executable


@pytest.mark.parametrize("turn", TURNS)
@pytest.mark.parametrize("late", [{"model": MODEL, "done": False}, {"signature": "0xff3b"}])
def test_a_line_without_a_message_after_the_done_line_is_a_finding(turn: str, late: Chunk) -> None:
    buffer, message, _ = ended_turn(turn)
    buffer.add(late)
    buffer.end()
    assert buffer.as_dict() == message
    late_finding = buffer.findings[-1]
    assert (late_finding.code, late_finding.slot) == ("delta_after_terminal", None)
    assert late_finding.message == "a line after the done line: no message"
    assert buffer.turn_state == "blocked"


@pytest.mark.parametrize("turn", TURNS)
def test_text_after_the_done_line_is_kept_and_the_envelope_is_the_done_lines(turn: str) -> None:
    buffer, message, _ = ended_turn(turn)
    buffer.add(line(3, {"content": " late", "thinking": "more"}))
    buffer.add(line(4, {}))
    buffer.end()
    after = buffer.as_dict()
    content = message["message"]["content"] + " late"
    assert after == {
        **message,
        "message": {**message["message"], "content": content, "thinking": "more"},
    }
    assert buffer.get_content() == content
    late = [f for f in buffer.findings if f.code == "delta_after_terminal"]
    assert [f.slot for f in late] == [None, None]
    assert "' late'" in late[0].message and "'more'" in late[0].message
    assert buffer.turn_state == "blocked"


@pytest.mark.parametrize("turn", TURNS)
def test_a_call_after_the_done_line_keeps_the_done_lines_envelope(turn: str) -> None:
    buffer, message, _ = ended_turn(turn)
    buffer.add(line(3, {"tool_calls": [tool_call("get_time", {"tz": "UTC"})]}))
    buffer.end()
    after = buffer.as_dict()
    assert {k: v for k, v in after.items() if k != "message"} == {
        k: v for k, v in message.items() if k != "message"
    }
    late_key = len(message["message"].get("tool_calls", []))
    assert codes(buffer) == [("delta_after_terminal", late_key), ("missing_terminal", late_key)]
    assert after["message"]["tool_calls"][-1]["function"]["name"] == "get_time"


def test_a_second_done_line_keeps_the_first_ones_reason_and_counters() -> None:
    buffer, message, _ = ended_turn("a call")
    second = line(9, {}, done=True, reason="length")
    second["eval_count"] = 1
    buffer.add(second)
    buffer.end()
    assert buffer.as_dict() == message
    assert codes(buffer) == [("duplicate_terminal", None)]


# -- reading messages, results, recognition ------------------------------------------------


def test_extract_reads_the_response() -> None:
    strategy = OllamaStrategy()
    message = fed_fixture("ollama_parallel_calls.json").as_dict()
    assert strategy.extract(message) == [
        ExtractedCall(None, "get_weather", {"city": "Paris", "unit": "C"}, 0),
        ExtractedCall(None, "get_time", {"tz": "Europe/Paris"}, 1),
        ExtractedCall(None, "search", {"query": "café near Louvre", "limit": 3}, 2),
    ]
    assert strategy.extract(message["message"]) == strategy.extract(message)
    text_only = fed_fixture("ollama_text_only.json").as_dict()
    assert strategy.extract(text_only) == []


def test_result_messages_are_tool_messages_naming_the_tool() -> None:
    calls = [
        ExtractedCall(None, "get_weather", {"city": "Paris"}, 0),
        ExtractedCall("call_k7f2m9xq", "get_time", {"tz": "UTC"}, 1),
    ]
    results = [ToolResult(calls[0], "18 C"), ToolResult(calls[1], "no such zone", is_error=True)]
    assert OllamaStrategy().result_messages(results) == [
        {"role": "tool", "content": "18 C", "tool_name": "get_weather"},
        {
            "role": "tool",
            "content": "no such zone",
            "tool_name": "get_time",
            "tool_call_id": "call_k7f2m9xq",
        },
    ]


def test_profile_attributes() -> None:
    strategy = OllamaStrategy()
    assert (strategy.name, strategy.per_call_done, strategy.requires_id) == ("ollama", False, False)
    assert strategy.empty_arguments_object and strategy.leaks_into_text


def test_recognition_is_disjoint_from_every_other_wire_strategy() -> None:
    strategies = default_wire_strategies()
    own = [c for name in FIXTURES if name.startswith("ollama_") for c in stream_of(name)]
    own = [c for c in own if "error" not in c]
    own.append(fed_fixture("ollama_parallel_calls.json").as_dict())
    for shape in own:
        claimed = [s.name for s in strategies if s.recognizes(shape)]
        assert claimed == ["ollama"], (claimed, shape)
    ollama = OllamaStrategy()
    for name, data in FIXTURES.items():
        if not name.startswith("ollama_"):
            for shape in data.get("chunks", data.get("events")):
                assert not ollama.recognizes(shape), shape
    cohere_response = fed(FIXTURES["cohere_parallel_calls.json"]["events"]).as_dict()
    assert not ollama.recognizes(cohere_response)
    assert not CohereStrategy().recognizes(fed_fixture("ollama_parallel_calls.json").as_dict())
    assert not OpenAIStrategy().recognizes(line(1, {"tool_calls": [tool_call("ping", {})]}))
