"""Behaviour of the OpenAI Chat Completions strategy that the mutation run found unobserved.

Raw chunk dicts go into an :class:`LLMStreamBuffer` fixed to the strategy; the assertions
read the assembled message, the verdict, the findings and the strategy's readers of an
assembled message (extract, unreadable, content_text, forming, result_messages).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from callgate import (
    ExtractedCall,
    Limits,
    LLMStreamBuffer,
    MistralStrategy,
    OpenAIStrategy,
    ToolResult,
    TurnGate,
)
from callgate.strategies.base import HistoryCall


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0) -> Any:
    return {"choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}]}


def call(
    index: Any, call_id: str | None = None, name: str | None = None, arguments: Any = None
) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    entry: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        entry["id"] = call_id
    return entry


def feed(*chunks: Any, strategy: OpenAIStrategy | None = None) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(strategy=strategy or OpenAIStrategy())
    for item in chunks:
        buffer.add(item)
    return buffer


def found(buffer: LLMStreamBuffer) -> list[tuple[str, Any, str]]:
    return [(f.code, f.slot, f.message) for f in buffer.findings]


def tool_calls(delta_calls: list[dict[str, Any]]) -> Any:
    return chunk({"tool_calls": delta_calls})


def test_a_streamed_call_becomes_the_stream_false_message() -> None:
    buffer = feed(
        chunk({"role": "assistant", "content": "Hi"}),
        chunk({"content": None, "refusal": None}),
        tool_calls([call(0, "call_1", "get_weather", "")]),
        tool_calls([call(0, arguments='{"city": ')]),
        tool_calls([call(0, arguments='"Paris"}')]),
        chunk(finish="tool_calls"),
    )
    assert buffer.executable and buffer.is_finished()
    assert buffer.as_dict() == {
        "role": "assistant",
        "content": "Hi",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert buffer.get_content() == "Hi"


def test_a_text_turn_has_no_tool_calls_key_and_null_content_when_empty() -> None:
    buffer = feed(chunk({"role": "assistant", "content": ""}), chunk(finish="stop"))
    assert buffer.as_dict() == {"role": "assistant", "content": None}
    assert buffer.turn_state == "not_applicable"


def test_the_role_of_the_delta_is_kept() -> None:
    buffer = feed(chunk({"role": "model", "content": "x"}), chunk(finish="stop"))
    assert buffer.as_dict()["role"] == "model"


def test_other_string_fields_are_kept_by_name_and_never_shown() -> None:
    buffer = feed(
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning_content": "more", "content": "answer"}),
        chunk({"refusal": "no", "weird": 3}),
        chunk(finish="stop"),
    )
    message = buffer.as_dict()
    assert message["reasoning_content"] == "think more"
    assert message["refusal"] == "no"
    assert "weird" not in message
    assert buffer.get_content() == "answer"


def test_a_fragment_only_entry_appends_to_its_own_slot() -> None:
    buffer = feed(
        tool_calls([call(0, "a", "f", ""), call(1, "b", "g", "")]),
        tool_calls([call(1, arguments="{}"), call(0, arguments='{"x"')]),
        tool_calls([call(0, arguments=": 1}")]),
        chunk(finish="tool_calls"),
    )
    assert buffer.executable
    assert [s.raw_arguments for s in buffer.slots] == ['{"x": 1}', "{}"]


def test_an_entry_without_function_opens_its_slot() -> None:
    buffer = feed(
        tool_calls([{"index": 0}]),
        tool_calls([call(0, "a", "f", "{}")]),
        chunk(finish="tool_calls"),
    )
    assert buffer.executable
    assert buffer.findings == []


def test_an_identity_with_arguments_in_one_entry_is_read_whole() -> None:
    buffer = feed(tool_calls([call(0, "a", "f", '{"k": 2}')]), chunk(finish="tool_calls"))
    assert buffer.executable
    assert buffer.slots[0].arguments == {"k": 2}


def test_an_empty_fragment_only_entry_opens_the_slot() -> None:
    buffer = feed(tool_calls([call(0, arguments="")]))
    assert [s.key for s in buffer.slots] == [0]
    assert buffer.findings == []


def test_the_finish_reason_decides_between_pass_and_wrong_terminal() -> None:
    good = feed(tool_calls([call(0, "a", "f", "{}")]), chunk(finish="tool_calls"))
    assert good.executable
    bad = feed(tool_calls([call(0, "a", "f", "{}")]), chunk(finish="length"))
    assert [f.code for f in bad.findings] == ["wrong_terminal_reason"]
    assert "'length'" in bad.findings[0].message
    stop = feed(tool_calls([call(0, "a", "f", "{}")]), chunk(finish="stop"))
    assert stop.executable
    assert [f.code for f in stop.findings] == ["stop_finish_reason"]


def test_a_finish_reason_ends_the_stream_only_on_choice_zero() -> None:
    strategy = OpenAIStrategy()
    assert strategy.is_done(chunk(finish="stop"))
    assert not strategy.is_done(chunk())
    assert not strategy.is_done({"choices": []})
    assert not strategy.is_done({"usage": {}})


def test_another_choice_is_kept_apart_and_not_shown() -> None:
    buffer = feed(chunk({"content": "other"}, index=1))
    assert found(buffer) == []
    assert buffer.get_content() == ""
    assert buffer.as_dict()["choices"][1]["message"]["content"] == "other"


def test_a_choice_without_index_is_choice_zero() -> None:
    buffer = feed({"choices": [{"delta": {"content": "x"}}]})
    assert buffer.get_content() == "x"
    assert buffer.findings == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"choices": {"0": {}}}, "choices is not a list: {'0': {}}"),
        (chunk({"tool_calls": {"index": 0}}), "tool_calls is not a list: {'index': 0}"),
        (chunk({"function_call": {"name": "f"}}), "legacy function_call deltas are not read"),
        (tool_calls(["call"]), "a tool_calls entry is not an object: 'call'"),
    ],
)
def test_unreadable_parts_of_a_chunk_are_refused(bad: Any, message: str) -> None:
    buffer = feed(bad)
    assert found(buffer)[0] == ("malformed_chunk", None, message)
    assert buffer.turn_state == "blocked"


def test_a_long_unreadable_value_is_cut_in_the_message() -> None:
    buffer = feed({"choices": {"k": "v" * 100}})
    message = buffer.findings[0].message
    assert message == "choices is not a list: " + repr({"k": "v" * 100})[:60]


def test_tool_calls_after_unreadable_tool_calls_are_still_read() -> None:
    buffer = feed(
        chunk({"tool_calls": "x", "content": "after"}),
    )
    assert buffer.get_content() == "after"


def test_null_choices_are_no_choices() -> None:
    buffer = feed({"choices": None, "usage": {"total_tokens": 3}})
    assert buffer.findings == []
    assert buffer.as_dict() == {"role": "assistant", "content": None}


# Readers of an assembled message.


def test_extract_and_unreadable_split_the_calls_of_a_message() -> None:
    strategy = OpenAIStrategy()
    message = {
        "tool_calls": [
            {"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "b", "function": {"name": "g", "arguments": "[1]"}},
            {"id": "c", "function": {"arguments": "{}"}},
        ]
    }
    assert strategy.extract(message) == [ExtractedCall("a", "f", {"x": 1}, 0)]
    unreadable = strategy.unreadable(message)
    assert [(c.id, c.name, p.code) for c, p in unreadable] == [
        ("b", "g", "non_object_arguments"),
        ("c", "(no name)", "missing_name"),
    ]


def test_content_text_is_the_content_string_or_empty() -> None:
    strategy = OpenAIStrategy()
    assert strategy.content_text({"content": "hi"}) == "hi"
    assert strategy.content_text({"content": None}) == ""
    assert strategy.content_text({"content": [{"type": "text"}]}) == ""


def test_content_text_of_parts_joins_their_text_without_separator() -> None:
    parts = [
        {"type": "text", "text": "Paris "},
        {"type": "thinking", "thinking": [{"type": "text", "text": "hidden"}]},
        "not a part",
        {"type": "text", "text": "is sunny"},
    ]
    assert OpenAIStrategy().content_text({"content": parts}) == "Paris is sunny"


def test_result_messages_are_tool_messages_by_call_id() -> None:
    strategy = OpenAIStrategy()
    results = [
        ToolResult(ExtractedCall("a", "f", {}, 0), "18 C"),
        ToolResult(ExtractedCall("b", "g", {}, 1), "boom", is_error=True),
    ]
    assert strategy.result_messages(results) == [
        {"role": "tool", "tool_call_id": "a", "content": "18 C"},
        {"role": "tool", "tool_call_id": "b", "content": "boom"},
    ]


def test_recognition_is_by_choices_or_tool_calls() -> None:
    strategy = OpenAIStrategy()
    assert strategy.recognizes({"choices": []})
    assert strategy.recognizes({"tool_calls": []})
    assert not strategy.recognizes({"type": "message_start"})


def test_an_error_frame_alone_is_recognised_and_reported() -> None:
    strategy = OpenAIStrategy()
    frame = {"error": {"code": "overloaded", "message": "try later"}}
    assert strategy.recognizes(frame)
    assert not strategy.recognizes({"error": "overloaded"})
    assert not strategy.recognizes({"error": {"code": "x"}, "type": "error"})
    buffer = LLMStreamBuffer()
    buffer.add(frame)
    assert found(buffer) == [
        ("provider_error", None, "the provider reported overloaded: try later")
    ]
    assert buffer.get_content() == ""
    acc = strategy.new_accumulator(TurnGate())
    assert strategy.accumulate(acc, frame) == ""


def test_mistral_reads_the_same_shape_but_is_chosen_by_name_only() -> None:
    mistral = MistralStrategy()
    assert mistral.name == "mistral"
    assert not mistral.recognizes({"choices": []})
    buffer = feed(
        tool_calls([call(0, "abc123XYZ", "f", "{}")]), chunk(finish="tool_calls"), strategy=mistral
    )
    assert buffer.executable


def test_content_deltas_join_without_separator() -> None:
    buffer = feed(
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({"role": "assistant", "content": "!"}),
        chunk(finish="stop"),
    )
    assert buffer.as_dict() == {"role": "assistant", "content": "Hello!"}


def test_two_choices_zero_in_one_chunk_are_both_read() -> None:
    buffer = feed({"choices": [{"delta": {"content": "a"}}, {"delta": {"content": "b"}}]})
    assert buffer.get_content() == "ab"
    assert buffer.as_dict()["content"] == "ab"


def test_choice_zero_after_another_choice_is_still_read() -> None:
    buffer = feed(
        {
            "choices": [
                {"index": 1, "delta": {"content": "x"}},
                {"index": 0, "delta": {"content": "y"}},
            ]
        }
    )
    assert buffer.get_content() == "y"
    assert buffer.findings == []
    assert [c["message"]["content"] for c in buffer.as_dict()["choices"]] == ["y", "x"]


def test_the_delta_after_unreadable_tool_calls_is_still_read() -> None:
    buffer = feed(chunk({"tool_calls": 5, "content": "after", "refusal": "r"}))
    assert buffer.get_content() == "after"
    assert buffer.as_dict()["refusal"] == "r"


def test_choices_that_are_a_mapping_show_nothing() -> None:
    buffer = feed({"choices": {0: {"delta": {"content": "x"}}}})
    assert buffer.get_content() == ""
    assert [f.code for f in buffer.findings] == ["malformed_chunk"]


def test_an_entry_that_is_a_read_only_mapping_is_read_like_a_dict() -> None:
    entry = MappingProxyType({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}})
    buffer = feed(tool_calls([entry]), chunk(finish="tool_calls"))  # type: ignore[list-item]
    assert buffer.executable
    assert buffer.findings == []


@pytest.mark.parametrize(
    ("first", "rest"),
    [
        ({"index": 0, "id": "a", "function": {"arguments": "{"}}, "}"),
        ({"index": 0, "id": "a", "function": {}}, "{}"),
        ({"index": 0, "id": "a"}, "{}"),
    ],
)
def test_an_id_without_a_name_is_recorded(first: dict[str, Any], rest: str) -> None:
    buffer = feed(
        tool_calls([first]),
        tool_calls([call(0, name="f", arguments=rest)]),
        chunk(finish="tool_calls"),
    )
    assert buffer.executable
    assert (buffer.slots[0].id, buffer.slots[0].name) == ("a", "f")
    assert buffer.slots[0].raw_arguments == "{}"


def test_a_name_without_an_id_with_arguments_is_recorded() -> None:
    buffer = feed(
        tool_calls([{"index": 0, "function": {"name": "f", "arguments": "{}"}}]),
        tool_calls([{"index": 0, "id": "a"}]),
        chunk(finish="tool_calls"),
    )
    assert buffer.executable
    assert (buffer.slots[0].id, buffer.slots[0].name) == ("a", "f")


def test_a_bare_entry_alone_opens_its_slot() -> None:
    buffer = feed(tool_calls([{"index": 3}]))
    assert [s.key for s in buffer.slots] == [3]
    buffer = feed(tool_calls([{"index": 3, "function": {}}]))
    assert [s.key for s in buffer.slots] == [3]


def test_null_fields_of_a_delta_are_skipped_not_the_rest() -> None:
    buffer = feed(chunk({"role": None, "content": "x", "refusal": None, "reasoning_content": "r"}))
    assert buffer.get_content() == "x"
    assert buffer.as_dict() == {"role": "assistant", "content": "x", "reasoning_content": "r"}


def test_answerable_gives_each_entry_its_calls_id_and_name_and_drops_empty_messages() -> None:
    calls = [
        HistoryCall(0, "call_a", "get_weather", {"city": "Paris"}, "call_a"),
        HistoryCall(1, "call_1", "get_time", None, None),
    ]
    entry_a = {
        "id": "call_a",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    entry_b = {"type": "function", "function": {"name": "", "arguments": '{"tz": '}}
    history = [
        {"role": "user", "content": "weather and time?"},
        {"role": "assistant", "content": None, "tool_calls": [entry_a, entry_b]},
        {"role": "assistant", "content": ""},
    ]
    repaired, placed = OpenAIStrategy().answerable(history, calls)
    assert repaired == [
        {"role": "user", "content": "weather and time?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                entry_a,
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        },
    ]
    assert placed == calls


def test_reasoning_text_counts_against_the_turns_text_limit() -> None:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy(), limits=Limits(max_text_bytes=8))
    buffer.add(chunk({"reasoning_content": "think "}))
    buffer.add(chunk({"reasoning_content": "more"}))
    buffer.add(chunk({"reasoning_content": "!"}))
    assert found(buffer) == [("limit_exceeded", None, "the turn's text exceeds 8 bytes")]
    assert buffer.turn_state == "blocked"
    assert buffer.as_dict()["reasoning_content"] == "think "


def test_forming_names_the_last_entry_once_its_name_has_streamed() -> None:
    from callgate.strategies.base import NOT_FORMING, Forming

    strategy = OpenAIStrategy()
    assert strategy.forming({"role": "assistant", "content": "hi"}) == NOT_FORMING
    assert strategy.forming({"role": "assistant", "tool_calls": None}) == NOT_FORMING
    assert strategy.forming({"tool_calls": []}) == NOT_FORMING
    two = [{"index": 0, "function": {"name": "a"}}, {"index": 1, "function": {"name": "b"}}]
    assert strategy.forming({"tool_calls": two}) == Forming(True, "b")
    unnamed = [{"index": 0, "function": {"arguments": "{"}}]
    assert strategy.forming({"tool_calls": unnamed}) == Forming(True, None)
    assert strategy.forming({"tool_calls": [{"function": {"name": ""}}]}) == Forming(True, None)
    for function in (None, "get_weather", ["get_weather"]):
        entry = {"index": 0, "function": function}
        assert strategy.forming({"tool_calls": [entry]}) == Forming(True, None)
