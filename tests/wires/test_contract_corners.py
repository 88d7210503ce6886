"""Real streams callgate used to refuse, and the contract's corners, one test each.

Where a real recording shows the case, the test reads it from tests/captures/ (see its
manifest for the source); the rest are the smallest streams that show the corner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.cli.capture import load_capture
from callgate.cli.check import check_fixture, check_stream
from callgate.cli.commands import main
from callgate.cli.replay import replay
from callgate.gate.schema import ToolSchemas

CAPTURES = Path(__file__).resolve().parents[1] / "captures"


def capture(name: str) -> list[dict[str, Any]]:
    return load_capture((CAPTURES / name).read_bytes())


def codes(result: dict[str, Any]) -> list[str]:
    return [f["code"] for f in result["findings"]]


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [choice]}


def call_delta(index: int | None, arguments: str, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"function": {"arguments": arguments, **extra.pop("function", {})}}
    if index is not None:
        entry["index"] = index
    return {"tool_calls": [{**entry, **extra}]}


ANTHROPIC_START = {
    "type": "message_start",
    "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
}


def tool_start(index: int, tool_input: dict[str, Any], name: str = "bash") -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": tool_input}
    return {"type": "content_block_start", "index": index, "content_block": block}


def json_delta(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


ANTHROPIC_END = [
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    {"type": "message_stop"},
]


# -- real streams callgate refused --------------------------------------------------------


def test_anthropic_server_tools_are_assembled_and_never_client_calls() -> None:
    result = replay(capture("anthropic/anthropic__anthropic-web-search-tool.1.jsonl"))
    assert (result["status"], result["calls"]) == ("not_applicable", [])
    server = [b for b in result["message"]["content"] if b["type"] == "server_tool_use"]
    assert server[0]["input"] == {"query": "tech news today September 26 2025"}


def test_a_client_call_beside_a_server_tool_runs() -> None:
    result = replay(capture("anthropic/anthropic__anthropic-tool-search-regex.1.jsonl"))
    assert result["status"] == "pass"
    assert [(c["name"], c["arguments"]) for c in result["calls"]] == [
        ("get_temp_data", {"location": "San Francisco, CA"})
    ]


def test_vertex_streamed_arguments_are_fragments_of_one_slot() -> None:
    result = replay(capture("gemini/google__google-stream-tool-call-arguments.jsonl"))
    assert result["status"] == "pass"
    assert [(c["name"], c["arguments"]) for c in result["calls"]] == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]


def test_vertex_streamed_arguments_cut_by_the_turn_end_block() -> None:
    chunks = capture("gemini/google__google-stream-tool-call-arguments.jsonl")
    opened = chunks[:2]  # the call opens and streams "Boston", willContinue still true
    last = json.loads(json.dumps(chunks[-1]))
    last["candidates"][0]["content"]["parts"] = []  # the finish, without the closing piece
    result = check_stream([*opened, last], None, "gemini")
    assert result["status"] == "fail"
    assert "missing_terminal" in codes(result)


def test_openai_compatible_calls_without_index_are_keyed_by_id() -> None:
    result = replay(capture("openai/mistral__mistral-tool-call.jsonl"))
    assert result["status"] == "pass"
    assert [(c["name"], c["arguments"]) for c in result["calls"]] == [
        ("weather", {"location": "San Francisco"})
    ]


def test_two_index_less_calls_take_two_slots_and_a_continuation_the_last() -> None:
    chunks = [
        openai_chunk(call_delta(None, '{"a": 1}', id="A", function={"name": "f"})),
        openai_chunk(call_delta(None, '{"b":', id="B", function={"name": "g"})),
        openai_chunk(call_delta(None, " 2}")),
        openai_chunk({}, "tool_calls"),
    ]
    result = check_stream(chunks, None)
    assert result["status"] == "pass"
    assert [(c["slot"], c["name"], c["arguments"]) for c in result["calls"]] == [
        (0, "f", {"a": 1}),
        (1, "g", {"b": 2}),
    ]


@pytest.mark.parametrize(
    "name",
    [
        "openai/alibaba__alibaba-tool-call.jsonl",
        "openai/mistral__mistral-incremental-tool-call.jsonl",
    ],
)
def test_empty_id_or_name_in_a_continuation_means_absent(name: str) -> None:
    result = replay(capture(name))
    assert result["status"] == "pass", result["findings"]
    assert len(result["calls"]) == 1


def test_a_repeated_bare_finish_reason_is_a_warning_and_anything_more_blocks() -> None:
    opened = openai_chunk(call_delta(0, '{"a": 1}', id="call_1", function={"name": "f"}))
    done = openai_chunk({}, "tool_calls")
    usage = {**openai_chunk({"content": ""}, "tool_calls"), "usage": {"total_tokens": 3}}
    result = check_stream([opened, done, usage], None)
    assert (result["status"], codes(result)) == ("pass", ["repeated_terminal"])
    assert result["findings"][0]["severity"] == "warning"
    more = openai_chunk({"content": "late"}, "tool_calls")
    assert check_stream([opened, done, more], None)["status"] == "fail"


def test_content_as_a_list_of_parts_shows_the_text_and_keeps_the_thinking() -> None:
    result = replay(capture("openai/mistral__mistral-reasoning.jsonl"))
    assert result["display"] == "2 + 2 = 4"
    content = result["message"]["content"]
    assert [part["type"] for part in content] == ["thinking", "text"]
    assert content[0]["thinking"][0]["text"].startswith("The user is asking for 2+2.")
    assert main(["replay", str(CAPTURES / "openai/mistral__mistral-reasoning.jsonl")]) == 2


def test_a_responses_call_with_no_delta_takes_the_done_arguments() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    events = [
        {"type": "response.created", "response": {"id": "r1", "object": "response"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "item_id": "fc_1",
            "arguments": '{"a": 1}',
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": '{"a": 1}', "status": "completed"},
        },
        {"type": "response.completed", "response": {"id": "r1", "object": "response"}},
    ]
    result = check_stream(events, None)
    assert (result["status"], result["calls"][0]["arguments"]) == ("pass", {"a": 1})


def test_a_cohere_call_with_no_argument_fragment_means_an_empty_object() -> None:
    result = replay(capture("cohere/cohere__cohere-empty-tool-call.jsonl"))
    assert result["status"] == "pass"
    assert [(c["name"], c["arguments"]) for c in result["calls"]] == [("currentTime", {})]


def test_a_mid_stream_error_frame_is_a_finding_that_names_it() -> None:
    result = check_fixture(
        (Path(__file__).parents[2] / "src/callgate/examples/openai_provider_error.json").read_text()
    )
    assert result["status"] == "fail"
    error = next(f for f in result["findings"] if f["code"] == "provider_error")
    assert "tool_use_failed" in error["message"]


ANTHROPIC_CUT_BY_AN_ERROR = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                          "content": [], "model": "claude", "usage": {}}},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
]  # fmt: skip
RESPONSES_CUT_BY_AN_ERROR = [
    {"type": "response.output_item.added", "output_index": 0, "sequence_number": 1,
     "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
              "arguments": ""}},
    {"type": "error", "sequence_number": 2, "code": "server_error", "message": "try again"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "stream", "named"),
    [
        ("anthropic", ANTHROPIC_CUT_BY_AN_ERROR, "overloaded_error"),
        ("openai-responses", RESPONSES_CUT_BY_AN_ERROR, "server_error"),
    ],
)
def test_an_error_event_is_a_provider_error_before_the_missing_terminal(
    profile: str, stream: list[dict[str, Any]], named: str
) -> None:
    result = check_stream(stream, {"f": {"type": "object"}}, profile)
    assert result["status"] == "fail"
    codes = [f["code"] for f in result["findings"]]
    assert codes[0] == "provider_error", codes
    assert named in result["findings"][0]["message"]
    assert all(c["state"] == "blocked" for c in result["calls"])


def test_gemini_schema_dialect_is_read_as_json_schema() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER", "nullable": True}},
        "required": ["city"],
        "propertyOrdering": ["city", "days"],
    }
    schemas = ToolSchemas({"weather": schema})
    assert schemas.check("weather", {"city": "Paris", "days": None}, 0) is None
    problem = schemas.check("weather", {"city": "Paris", "days": "3"}, 0)
    assert problem is not None and problem.code == "schema_invalid"


# -- the contract's corners ---------------------------------------------------------------


def test_replay_calls_hold_every_call_with_its_source() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    chunks = [openai_chunk({"content": text}), openai_chunk({}, "stop")]
    result = replay(chunks, text_formats=["tool_call_tag"])
    assert result["status"] == "pass"
    assert [(c["source"], c["name"], c["arguments"]) for c in result["calls"]] == [
        ("tool_call_tag", "get_weather", {"city": "Paris"})
    ]
    native = replay(capture("openai/groq__groq-tool-call.jsonl"))
    assert [c["source"] for c in native["calls"]] == ["native"]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_fragment_after_terminal_is_reported_first_even_when_json_then_fails(wire: str) -> None:
    if wire == "openai":
        chunks = [
            openai_chunk(call_delta(0, '{"a":', id="call_1", function={"name": "f"})),
            openai_chunk({}, "tool_calls"),
            openai_chunk(call_delta(0, " 1}")),
        ]
    else:
        chunks = [
            ANTHROPIC_START,
            tool_start(0, {}),
            json_delta(0, '{"a":'),
            {"type": "content_block_stop", "index": 0},
            json_delta(0, " 1}"),
            *ANTHROPIC_END,
        ]
    result = check_stream(chunks, None)
    assert codes(result)[:2] == ["delta_after_terminal", "malformed_json"]


def test_an_anthropic_turn_cut_after_message_delta_is_missing_its_terminal() -> None:
    chunks = [
        ANTHROPIC_START,
        tool_start(0, {}),
        json_delta(0, '{"cmd": "ls"}'),
        {"type": "content_block_stop", "index": 0},
        ANTHROPIC_END[0],
    ]
    buffer = LLMStreamBuffer()
    for chunk in chunks:
        buffer.add(chunk)
        assert not buffer.executable
    assert not buffer.is_finished()
    result = check_stream(chunks, None)
    assert (result["status"], codes(result)) == ("fail", ["missing_terminal"])


def test_a_blocked_turn_reports_no_call_validated() -> None:
    chunks = capture("openai-responses/openai__openai-client-tool-search.2.jsonl")
    cut = [c for c in chunks if c.get("type") != "response.completed"]
    result = replay(cut)
    assert result["status"] == "fail"
    assert result["calls"] and {c["state"] for c in result["calls"]} == {"blocked"}


def test_a_refused_slot_index_is_tool_call_evidence() -> None:
    chunks = [
        openai_chunk(call_delta(10**12, "{}", id="call_1", function={"name": "f"})),
        openai_chunk({}, "tool_calls"),
    ]
    result = check_stream(chunks, None)
    assert (result["status"], result["applicable"]) == ("fail", True)


def test_parseable_replay_keeps_every_fragment_in_its_timeline() -> None:
    pieces = ['{"a":', " 1}", " ", "\n"]
    chunks = [openai_chunk(call_delta(0, "", id="call_1", function={"name": "f"}))]
    chunks += [openai_chunk(call_delta(0, piece)) for piece in pieces]
    chunks.append(openai_chunk({}, "tool_calls"))
    result = replay(chunks, policy="parseable")
    streamed = "".join(step["arguments"].get("0") or "" for step in result["timeline"])
    assert streamed == "".join(pieces)


def test_one_non_json_sse_line_is_a_finding_and_check_reads_raw_captures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.dumps(c) for c in capture("openai/groq__groq-tool-call.jsonl")]
    sse = "".join(f"data: {line}\n\n" for line in [lines[0], "{not json", *lines[1:]])
    raw = tmp_path / "groq.sse"
    raw.write_text(sse + "data: [DONE]\n\n", encoding="utf-8")
    assert main(["check", str(raw), "--report", "json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert codes(result) == ["malformed_chunk"]
    assert result["profile"] == "openai" and len(result["calls"]) == 1
    clean = tmp_path / "clean.sse"
    clean.write_text("".join(f"data: {line}\n\n" for line in lines), encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"weather": {"type": "object"}}), encoding="utf-8")
    assert main(["check", str(clean), "--profile", "openai", "--tools", str(tools)]) == 0
    tools.write_text(json.dumps({"other": {"type": "object"}}), encoding="utf-8")
    assert main(["check", str(clean), "--tools", str(tools)]) == 1
    capsys.readouterr()


# -- fail closed, with the right finding ---------------------------------------------------


def test_an_anthropic_block_restarted_with_other_input_is_a_collision() -> None:
    chunks = [
        ANTHROPIC_START,
        tool_start(0, {"cmd": "ls"}),
        tool_start(0, {"cmd": "rm -rf /"}),
        {"type": "content_block_stop", "index": 0},
        *ANTHROPIC_END,
    ]
    result = check_stream(chunks, None)
    assert result["status"] == "fail"
    assert "identity_collision" in codes(result)


def test_an_anthropic_block_restarted_identically_is_the_duplicate_call_case() -> None:
    chunks = [
        ANTHROPIC_START,
        tool_start(0, {"cmd": "ls"}),
        tool_start(0, {"cmd": "ls"}),
        {"type": "content_block_stop", "index": 0},
        *ANTHROPIC_END,
    ]
    result = check_stream(chunks, None)
    assert (result["status"], codes(result)) == ("pass", ["duplicate_call_ignored"])
    assert result["calls"][0]["arguments"] == {"cmd": "ls"}


def test_a_chunk_of_another_wire_inside_a_resolved_stream_blocks() -> None:
    foreign = openai_chunk(call_delta(0, '{"cmd": "rm"}', id="call_1", function={"name": "bash"}))
    chunks = [
        ANTHROPIC_START,
        tool_start(0, {}),
        json_delta(0, '{"cmd": "ls"}'),
        foreign,
        {"type": "content_block_stop", "index": 0},
        *ANTHROPIC_END,
    ]
    result = check_stream(chunks, None)
    assert result["status"] == "fail"
    assert "malformed_chunk" in codes(result)


def test_a_start_input_that_disagrees_with_its_deltas_is_an_args_mismatch() -> None:
    chunks = [
        ANTHROPIC_START,
        tool_start(0, {"cmd": "ls"}),
        json_delta(0, '{"cmd": "rm -rf /"}'),
        {"type": "content_block_stop", "index": 0},
        *ANTHROPIC_END,
    ]
    result = check_stream(chunks, None)
    assert (result["status"], codes(result)) == ("fail", ["args_mismatch"])


def test_an_empty_stream_is_not_applicable(tmp_path: Path) -> None:
    result = check_stream([], None)
    assert (result["status"], codes(result)) == ("not_applicable", ["no_tool_calls"])
    buffer = LLMStreamBuffer()
    buffer.end()
    assert buffer.turn_state == "not_applicable"
    fixture = tmp_path / "empty.json"
    fixture.write_text(json.dumps({"profile": "openai", "chunks": []}), encoding="utf-8")
    assert main(["check", str(fixture)]) == 2


def test_a_chunk_that_repeats_a_key_is_a_finding() -> None:
    call = (
        '{"index": 0, "id": "call_1", "function": {"name": "ls", "name": "rm", "arguments": "{}"}}'
    )
    first = '{"choices": [{"index": 0, "delta": {"tool_calls": [' + call + "]}}]}"
    last = json.dumps(openai_chunk({}, "tool_calls"))
    fixture = '{"profile": "openai", "chunks": [' + first + ", " + last + "]}"
    result = check_fixture(fixture)
    assert result["status"] == "fail"
    assert "duplicate_key" in codes(result)
    assert not any(c["name"] == "rm" and c["state"] == "validated" for c in result["calls"])


@pytest.mark.parametrize(
    "chunks",
    [
        [openai_chunk({"content": ["not a part"]}), openai_chunk({}, "stop")],
        [openai_chunk({"content": 7}), openai_chunk({}, "stop")],
        [openai_chunk({"content": [{"type": {}}]}), openai_chunk({}, "stop")],
        [ANTHROPIC_START, {"type": "content_block_delta", "index": 0, "delta": {"type": {}}}],
        [
            openai_chunk(call_delta(0, "{}", id={}, function={"name": []})),
            openai_chunk({}, "tool_calls"),
        ],
    ],
)
def test_values_of_the_wrong_type_are_a_finding_never_a_traceback(
    chunks: list[dict[str, Any]],
) -> None:
    result = check_stream(chunks, None)
    assert result["status"] == "fail"
    assert "malformed_chunk" in codes(result) or "orphan_event" in codes(result)
    replayed = replay(chunks)  # the message and the replay are built without a traceback
    assert replayed["status"] == "fail"
    json.dumps(replayed["message"])


def test_a_first_chunk_of_no_known_shape_is_a_clean_error() -> None:
    result = check_stream([{"type": {}}], None)
    assert result["status"] == "invalid"
