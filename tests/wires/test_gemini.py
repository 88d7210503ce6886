"""Gemini streamGenerateContent: the native response, display, split args, recognition.

The stateful test of this wire (whole calls packed into chunks, calls split over two
chunks, faults) is the generic machine of tests/wires/test_every_wire_stateful.py.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest

from callgate import LLMStreamBuffer, ToolResult
from callgate.strategies import (
    AnthropicStrategy,
    ExtractedCall,
    GeminiStrategy,
    OpenAIStrategy,
    default_wire_strategies,
)
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from wire_common import FIXTURES, calls_of, codes, fed, fed_fixture, stream_of

Chunk = dict[str, Any]
META = {"modelVersion": "gemini-2.5-flash", "responseId": "mK3aaNaeBcOxz7IP8ZPUoQw"}


def chunk(parts: list[Chunk], finish: str | None = None, tokens: int = 5) -> Chunk:
    candidate: Chunk = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 54, "candidatesTokenCount": tokens}
    return {"candidates": [candidate], "usageMetadata": usage, **META}


def call(name: str | None, args: Any, call_id: str | None = None) -> Chunk:
    function: Chunk = {} if name is None else {"name": name}
    if args is not None:
        function["args"] = args
    if call_id is not None:
        function["id"] = call_id
    return {"functionCall": function}


# -- the native response ------------------------------------------------------------------


def test_parallel_calls_assemble_into_the_stream_false_response() -> None:
    buffer = fed_fixture("gemini_parallel_calls.json")
    assert buffer.strategy is not None and buffer.strategy.name == "gemini"
    assert buffer.executable
    assert buffer.as_dict() == {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "text": "The user wants weather and time; both tools apply.",
                            "thought": True,
                        },
                        {"text": "I'll look both up for you."},
                        {
                            "functionCall": {
                                "name": "get_weather",
                                "args": {"city": "Paris", "unit": "C"},
                                "id": "fc_7qe2",
                            },
                            "thoughtSignature": "CiQBjz1rX2ZkYQ==",
                        },
                        {
                            "functionCall": {
                                "name": "get_time",
                                "args": {"tz": "Europe/Paris"},
                                "id": "fc_9xk1",
                            }
                        },
                        {
                            "functionCall": {
                                "name": "search",
                                "args": {"query": "café near Louvre", "limit": 3},
                                "id": "fc_3mz8",
                            }
                        },
                    ],
                },
                "index": 0,
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 54,
            "candidatesTokenCount": 55,
            "totalTokenCount": 109,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 54}],
        },
        **META,
    }


def test_thought_parts_are_kept_but_never_displayed() -> None:
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES["gemini_parallel_calls.json"]["tool_schemas"])
    shown = []
    for item in stream_of("gemini_parallel_calls.json"):
        buffer.add(item)
        shown.append(buffer.text())
    assert shown[:4] == ["", "", "I'll look both up", " for you."]
    assert buffer.get_content() == "I'll look both up for you."
    strategy = GeminiStrategy()
    assert strategy.content_text(buffer.as_dict()) == "I'll look both up for you."


def test_split_args_are_merged_into_one_call() -> None:
    buffer = fed_fixture("gemini_split_args.json")
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "search", {"query": "café near Louvre", "limit": 3})]
    parts = buffer.as_dict()["candidates"][0]["content"]["parts"]
    assert parts == [
        {"text": "Checking."},
        {"functionCall": {"name": "search", "args": {"query": "café near Louvre", "limit": 3}}},
    ]


def test_snake_case_chunks_keep_their_names() -> None:
    buffer = fed_fixture("gemini_snake_case_sdk.json")
    assert buffer.executable
    message = buffer.as_dict()
    assert set(message) == {"candidates", "model_version", "response_id", "usage_metadata"}
    candidate = message["candidates"][0]
    assert candidate["finish_reason"] == "STOP"
    assert [next(iter(p)) for p in candidate["content"]["parts"]] == [
        "text",
        "function_call",
        "function_call",
    ]
    assert [c.name for c in GeminiStrategy().extract(message)] == ["get_weather", "get_time"]


class FinishReason(str, Enum):  # noqa: UP042 (as google-genai defines it)
    """google-genai's finish reasons are a ``str`` enum."""

    STOP = "STOP"


class SdkChunk:
    """Stands in for a google-genai ``GenerateContentResponse`` (pydantic, snake_case)."""

    def __init__(self, data: Chunk) -> None:
        self.data = data

    def model_dump(self, **options: object) -> Chunk:
        return self.data


def test_sdk_objects_with_an_enum_finish_reason_are_read() -> None:
    chunks = [
        SdkChunk({"candidates": [{"content": {"parts": [{"text": "Hi. "}], "role": "model"}}]}),
        SdkChunk(
            {
                "candidates": [
                    {
                        "content": {
                            "parts": [{"function_call": {"name": "ping", "id": "fc_1"}}],
                            "role": "model",
                        },
                        "finish_reason": FinishReason.STOP,
                    }
                ],
                "usage_metadata": {"total_token_count": 9},
            }
        ),
    ]
    buffer = fed(chunks)
    assert buffer.executable
    assert calls_of(buffer) == [(0, "fc_1", "ping", {})]
    part = buffer.as_dict()["candidates"][0]["content"]["parts"][1]
    assert part == {"function_call": {"name": "ping", "id": "fc_1"}}


def test_a_call_without_args_is_an_empty_object_and_keeps_its_shape() -> None:
    buffer = fed([chunk([call("ping", None)], "STOP")])
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "ping", {})]
    assert buffer.as_dict()["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "ping"}}
    ]
    assert GeminiStrategy().extract(buffer.as_dict()) == [ExtractedCall(None, "ping", {}, 0)]


def test_calls_are_not_executable_before_the_finish_reason() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    buffer.add(chunk([call("get_weather", {"city": "Paris"})]))
    buffer.add(chunk([{"text": ""}]))
    assert not buffer.executable and not buffer.is_finished()
    assert buffer.slots[0].state == "accumulating"
    buffer.add(chunk([], "STOP"))
    assert buffer.executable and buffer.is_finished()


# -- the split-args rule ------------------------------------------------------------------

W = "get_weather"
SPLIT_CASES: list[tuple[str, list[Chunk], list[tuple[Any, ...]]]] = [
    (
        "disjoint keys in the next chunk: merged",
        [chunk([call(W, {"city": "Paris"})]), chunk([call(W, {"unit": "C"})], "STOP")],
        [(0, None, W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "an empty text part between the pieces: merged",
        [
            chunk([call(W, {"city": "Paris"})]),
            chunk([{"text": ""}]),
            chunk([call(W, {"unit": "C"})], "STOP"),
        ],
        [(0, None, W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "the rest without an id, the first with one: merged, id kept",
        [chunk([call(W, {"city": "Paris"}, "fc_1")]), chunk([call(W, {"unit": "C"})], "STOP")],
        [(0, "fc_1", W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "the rest with the same id: merged",
        [
            chunk([call(W, {"city": "Paris"}, "fc_1")]),
            chunk([call(W, {"unit": "C"}, "fc_1")], "STOP"),
        ],
        [(0, "fc_1", W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "both in one chunk: two calls",
        [chunk([call("ping", {"a": 1}), call("ping", {"b": 2})], "STOP")],
        [(0, None, "ping", {"a": 1}), (1, None, "ping", {"b": 2})],
    ),
    (
        "an overlapping key: two calls",
        [chunk([call(W, {"city": "Paris"})]), chunk([call(W, {"city": "Rome"})], "STOP")],
        [(0, None, W, {"city": "Paris"}), (1, None, W, {"city": "Rome"})],
    ),
    (
        "another name: two calls",
        [
            chunk([call(W, {"city": "Paris"})]),
            chunk([call("search", {"query": "x", "limit": 1})], "STOP"),
        ],
        [(0, None, W, {"city": "Paris"}), (1, None, "search", {"query": "x", "limit": 1})],
    ),
    (
        "another id: two calls",
        [
            chunk([call(W, {"city": "Paris"}, "fc_1")]),
            chunk([call(W, {"unit": "C", "city": "Rome"}, "fc_2")], "STOP"),
        ],
        [(0, "fc_1", W, {"city": "Paris"}), (1, "fc_2", W, {"unit": "C", "city": "Rome"})],
    ),
    (
        "an id where the first had none: two calls",
        [
            chunk([call(W, {"city": "Paris"})]),
            chunk([call(W, {"city": "Rome", "unit": "C"}, "fc_2")], "STOP"),
        ],
        [(0, None, W, {"city": "Paris"}), (1, "fc_2", W, {"city": "Rome", "unit": "C"})],
    ),
    (
        "text between the pieces: two calls",
        [
            chunk([call("ping", {"a": 1})]),
            chunk([{"text": "and "}, call("ping", {"b": 2})], "STOP"),
        ],
        [(0, None, "ping", {"a": 1}), (1, None, "ping", {"b": 2})],
    ),
    (
        "empty args on either side: two calls",
        [chunk([call("ping", {})]), chunk([call("ping", {"b": 2})], "STOP")],
        [(0, None, "ping", {}), (1, None, "ping", {"b": 2})],
    ),
]


@pytest.mark.parametrize(
    ("chunks", "expected"), [c[1:] for c in SPLIT_CASES], ids=[c[0] for c in SPLIT_CASES]
)
def test_split_args_rule(chunks: list[Chunk], expected: list[tuple[Any, ...]]) -> None:
    buffer = fed(chunks)
    assert (calls_of(buffer), codes(buffer)) == (expected, [])
    assert buffer.executable


def test_overlapping_key_with_the_same_id_is_a_collision_not_a_merge() -> None:
    buffer = fed_fixture("gemini_identity_collision.json")
    assert codes(buffer) == [("identity_collision", 1)]
    assert not buffer.executable


def test_a_piece_after_the_finish_reason_is_never_merged() -> None:
    buffer = fed([chunk([call(W, {"city": "Paris"})], "STOP"), chunk([call(W, {"unit": "C"})])])
    assert codes(buffer) == [("delta_after_terminal", 1), ("missing_terminal", 1)]
    assert not buffer.executable


@pytest.mark.parametrize(
    ("part", "code"),
    [
        (call(W, ["Paris"]), "non_object_arguments"),
        (call(W, "Paris"), "non_object_arguments"),
        (call(None, {"city": "Paris"}), "missing_name"),
        ({"functionCall": "get_weather"}, "malformed_chunk"),
        ("get_weather", "malformed_chunk"),
    ],
)
def test_unreadable_or_invalid_calls_block_the_turn(part: Any, code: str) -> None:
    buffer = fed([chunk([call(W, {"city": "Rome"}), part], "STOP")])
    assert code in [c for c, _ in codes(buffer)]
    assert not buffer.executable


def test_a_second_candidate_is_refused() -> None:
    second = chunk([call(W, {"city": "Rome"})], "STOP")
    second["candidates"].append({**second["candidates"][0], "index": 1})
    buffer = fed([second])
    assert ("malformed_chunk", None) in codes(buffer)
    assert not buffer.executable


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", "OTHER"])
def test_only_stop_ends_a_turn_with_calls(reason: str) -> None:
    buffer = fed([chunk([call(W, {"city": "Rome"})], reason)])
    assert codes(buffer) == [("wrong_terminal_reason", 0)]


# -- reading messages, results, recognition ------------------------------------------------


def test_extract_and_content_text_read_the_response() -> None:
    strategy = GeminiStrategy()
    message = fed_fixture("gemini_parallel_calls.json").as_dict()
    assert strategy.extract(message) == [
        ExtractedCall("fc_7qe2", "get_weather", {"city": "Paris", "unit": "C"}, 0),
        ExtractedCall("fc_9xk1", "get_time", {"tz": "Europe/Paris"}, 1),
        ExtractedCall("fc_3mz8", "search", {"query": "café near Louvre", "limit": 3}, 2),
    ]
    text_only = fed_fixture("gemini_text_only.json").as_dict()
    assert strategy.extract(text_only) == []
    assert strategy.content_text(text_only) == "Paris is the capital of France."
    assert strategy.extract({"role": "model", "parts": [call("ping", None)]}) == [
        ExtractedCall(None, "ping", {}, 0)
    ]


def test_result_messages_are_function_responses_in_a_user_content() -> None:
    calls = [
        ExtractedCall("fc_1", "get_weather", {"city": "Paris"}, 0),
        ExtractedCall(None, "get_time", {"tz": "UTC"}, 1),
    ]
    results = [ToolResult(calls[0], "18 C"), ToolResult(calls[1], "no such zone", is_error=True)]
    assert GeminiStrategy().result_messages(results) == [
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "18 C"},
                        "id": "fc_1",
                    }
                },
                {"functionResponse": {"name": "get_time", "response": {"error": "no such zone"}}},
            ],
        }
    ]
    assert GeminiStrategy().result_messages([]) == []


def test_prompt_blocked_response_ends_the_turn_without_calls() -> None:
    buffer = fed_fixture("gemini_prompt_blocked.json")
    assert buffer.is_finished() and buffer.turn_state == "not_applicable"
    assert "candidates" not in buffer.as_dict()


def own_shapes() -> list[Chunk]:
    shapes = [c for name in FIXTURES if name.startswith("gemini_") for c in stream_of(name)]
    return [*shapes, fed_fixture("gemini_parallel_calls.json").as_dict()]


def other_shapes() -> list[Chunk]:
    others = [
        c
        for name, data in FIXTURES.items()
        if not name.startswith("gemini_")
        for c in data.get("chunks", data.get("events"))
    ]
    messages = [
        fed(stream_of("openai_single_call.json")).as_dict(),
        fed(FIXTURES["anthropic_single_call.json"]["events"]).as_dict(),
    ]
    return others + messages


def test_recognition_is_disjoint_from_every_other_wire_strategy() -> None:
    strategies = default_wire_strategies()
    for shape in own_shapes():
        claimed = [s.name for s in strategies if s.recognizes(shape)]
        assert claimed == ["gemini"], (claimed, shape)
    gemini = GeminiStrategy()
    for shape in other_shapes():
        assert not gemini.recognizes(shape), shape
    assert not OpenAIStrategy().recognizes({"candidates": []})
    assert not AnthropicStrategy().recognizes({"candidates": []})


def test_profile_attributes() -> None:
    strategy = GeminiStrategy()
    assert (strategy.name, strategy.per_call_done, strategy.requires_id) == ("gemini", False, False)
    assert strategy.empty_arguments_object and strategy.leaks_into_text


def test_auto_recognition_picks_gemini() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    buffer.add(chunk([{"text": "hi"}]))
    assert buffer.strategy is not None and buffer.strategy.name == "gemini"
