"""Behaviour of the Anthropic Messages strategy that the mutation run found unobserved.

Raw event dicts go into an :class:`LLMStreamBuffer` fixed to the strategy; the assertions
read the assembled message, the verdict, the findings and the strategy's readers of an
assembled message.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import AnthropicStrategy, ExtractedCall, Limits, LLMStreamBuffer, ToolResult
from callgate.strategies.base import Forming, HistoryCall

START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    },
}


def block_start(index: Any, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def tool_start(index: Any, call_id: str = "toolu_1", name: str = "f", **more: Any) -> Any:
    return block_start(index, {"type": "tool_use", "id": call_id, "name": name, **more})


def delta(index: Any, **body: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def json_delta(index: Any, partial: str) -> dict[str, Any]:
    return delta(index, type="input_json_delta", partial_json=partial)


def stop(index: Any) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def end(reason: str = "tool_use", **usage: int) -> list[dict[str, Any]]:
    message_delta: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": reason}}
    if usage:
        message_delta["usage"] = usage
    return [message_delta, {"type": "message_stop"}]


def feed(*events: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(strategy=AnthropicStrategy())
    for event in events:
        buffer.add(event)
    return buffer


def found(buffer: LLMStreamBuffer) -> list[tuple[str, Any, str]]:
    return [(f.code, f.slot, f.message) for f in buffer.findings]


def test_a_streamed_turn_becomes_the_stream_false_message() -> None:
    buffer = feed(
        START,
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Let me "),
        delta(0, type="text_delta", text="check."),
        stop(0),
        tool_start(1, input={}),
        json_delta(1, '{"city": '),
        json_delta(1, '"Paris"}'),
        stop(1),
        *end(output_tokens=9),
    )
    assert buffer.executable and buffer.is_finished()
    assert buffer.get_content() == "Let me check."
    assert buffer.as_dict() == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "usage": {"input_tokens": 5, "output_tokens": 9},
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"city": "Paris"}},
        ],
    }


def test_usage_keys_merge_across_message_deltas() -> None:
    buffer = feed(
        START,
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 3}},
        {"type": "message_delta", "delta": {}, "usage": {"cache_read_input_tokens": 2}},
    )
    assert buffer.as_dict()["usage"] == {
        "input_tokens": 5,
        "output_tokens": 3,
        "cache_read_input_tokens": 2,
    }


def test_usage_without_a_start_is_the_delta_usage() -> None:
    buffer = feed({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 3}})
    assert buffer.as_dict()["usage"] == {"output_tokens": 3}


def test_blocks_are_in_index_order_with_their_own_text() -> None:
    buffer = feed(
        block_start(1, {"type": "text", "text": ""}),
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(1, type="text_delta", text="shown"),
        delta(0, type="thinking_delta", thinking="hidden"),
        delta(0, type="signature_delta", signature="sig"),
        delta(0, type="signature_delta", signature="nature"),
    )
    assert buffer.as_dict()["content"] == [
        {"type": "thinking", "thinking": "hidden", "signature": "signature"},
        {"type": "text", "text": "shown"},
    ]
    assert buffer.get_content() == "shown"


def test_citations_are_collected_on_their_block() -> None:
    buffer = feed(
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="citations_delta", citation={"cited_text": "a"}),
        delta(0, type="citations_delta", citation={"cited_text": "b"}),
    )
    block = buffer.as_dict()["content"][0]
    assert block["citations"] == [{"cited_text": "a"}, {"cited_text": "b"}]


def test_a_text_delta_without_text_adds_nothing() -> None:
    buffer = feed(block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta"))
    assert buffer.as_dict()["content"] == [{"type": "text", "text": ""}]


def test_an_empty_tool_input_stream_is_the_empty_object() -> None:
    buffer = feed(tool_start(0, input={}), stop(0), *end())
    assert buffer.executable
    assert buffer.as_dict()["content"][0]["input"] == {}
    assert buffer.slots[0].arguments == {}


def test_an_input_given_whole_at_start_is_the_call_arguments() -> None:
    buffer = feed(tool_start(0, input={"city": "Zürich"}), stop(0), *end())
    assert buffer.executable
    assert buffer.slots[0].raw_arguments == '{"city": "Zürich"}'
    assert buffer.as_dict()["content"][0]["input"] == {"city": "Zürich"}


def test_an_unfinished_input_is_shown_as_read_so_far() -> None:
    buffer = feed(tool_start(0, input={}), json_delta(0, '{"a": 1}'))
    assert buffer.as_dict()["content"][0]["input"] == {"a": 1}
    buffer = feed(tool_start(0, input={}), json_delta(0, '{"a": '))
    assert buffer.as_dict()["content"][0]["input"] == '{"a": '


def test_a_tool_block_without_input_reads_as_the_empty_object() -> None:
    buffer = feed(tool_start(0))
    assert buffer.as_dict()["content"][0]["input"] == {}


def test_each_tool_block_closes_its_own_call() -> None:
    buffer = feed(
        tool_start(0, "toolu_a", input={}),
        json_delta(0, "{}"),
        stop(0),
        tool_start(1, "toolu_b", input={}),
        json_delta(1, "{}"),
    )
    assert [s.state for s in buffer.slots] == ["validated", "accumulating"]
    buffer.add(end()[0])
    assert buffer.findings == [], "message_delta gives the reason; message_stop ends the turn"
    buffer.add(end()[1])
    assert [f.code for f in buffer.findings] == ["missing_terminal"]
    assert buffer.findings[0].slot == 1


def test_the_stop_reason_decides_the_turn() -> None:
    good = feed(tool_start(0, input={}), stop(0), *end("tool_use"))
    assert good.executable
    bad = feed(tool_start(0, input={}), stop(0), *end("end_turn"))
    assert [f.code for f in bad.findings] == ["wrong_terminal_reason"]


def test_a_text_turn_is_not_applicable() -> None:
    buffer = feed(START, block_start(0, {"type": "text", "text": ""}), stop(0), *end("end_turn"))
    assert buffer.turn_state == "not_applicable"
    assert buffer.findings == []


def test_message_stop_ends_the_stream() -> None:
    strategy = AnthropicStrategy()
    assert strategy.is_done({"type": "message_stop"})
    assert not strategy.is_done({"type": "message_delta"})


@pytest.mark.parametrize("index", ["0", None, True, 1.0])
def test_a_block_index_that_is_not_an_integer_is_refused(index: Any) -> None:
    buffer = feed(block_start(index, {"type": "text", "text": ""}))
    assert found(buffer) == [
        ("malformed_chunk", None, f"content block index {index!r} is not an integer")
    ]
    assert buffer.as_dict()["content"] == []


def test_a_non_tool_block_started_twice_is_refused() -> None:
    buffer = feed(
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="a"),
        block_start(0, {"type": "text", "text": "x"}),
    )
    assert found(buffer) == [("malformed_chunk", None, "content block 0 started twice")]
    assert buffer.as_dict()["content"] == [{"type": "text", "text": "a"}]


def test_input_json_for_a_text_block_is_refused() -> None:
    buffer = feed(block_start(0, {"type": "text", "text": ""}), json_delta(0, "{}"))
    assert found(buffer) == [("malformed_chunk", None, "input_json_delta for non-tool block 0")]


def test_input_json_for_a_block_never_started_opens_an_orphan_slot() -> None:
    buffer = feed(json_delta(2, "{}"), stop(2), *end())
    assert buffer.turn_state == "blocked"
    assert [f.slot for f in buffer.findings] == [2]


def test_input_json_without_partial_json_is_an_empty_fragment() -> None:
    buffer = feed(tool_start(0, input={}), delta(0, type="input_json_delta"), stop(0), *end())
    assert buffer.executable


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (delta(3, type="text_delta", text="x"), "text_delta for content block 3, never started"),
        (
            delta("0", type="text_delta", text="x"),
            "text_delta for content block '0', never started",
        ),
        (
            delta(None, type="thinking_delta"),
            "thinking_delta for content block None, never started",
        ),
    ],
)
def test_a_delta_for_a_block_never_started_is_an_orphan(event: Any, message: str) -> None:
    buffer = feed(event)
    assert found(buffer) == [("orphan_event", None, message)]
    assert buffer.get_content() == ""


def test_a_stop_for_a_block_never_started_is_an_orphan() -> None:
    buffer = feed(stop(4))
    assert [(f.code, f.slot) for f in buffer.findings] == [("orphan_event", 4)]


def test_a_stop_for_a_text_block_changes_nothing() -> None:
    buffer = feed(block_start(0, {"type": "text", "text": ""}), stop(0))
    assert buffer.findings == []
    assert buffer.slots == []


def test_an_error_event_blocks_the_turn_naming_its_type() -> None:
    buffer = feed(
        tool_start(0, input={}),
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
    )
    assert found(buffer)[0] == (
        "provider_error",
        None,
        "the provider reported 'overloaded_error' mid-stream",
    )
    assert buffer.turn_state == "blocked"


def test_an_error_event_without_a_type_is_named_error() -> None:
    strategy = AnthropicStrategy()
    buffer = LLMStreamBuffer(strategy=strategy)
    buffer.add({"type": "error", "error": {}})
    assert buffer.findings[0].message == "the provider reported 'error' mid-stream"


def test_ping_changes_nothing() -> None:
    buffer = feed(START, {"type": "ping"})
    assert buffer.findings == []
    assert buffer.turn_state == "streaming"


# Readers of an assembled message.


def test_recognition() -> None:
    strategy = AnthropicStrategy()
    assert strategy.recognizes({"type": "ping"})
    assert strategy.recognizes({"type": "error", "error": {"type": "x"}})
    assert not strategy.recognizes({"type": "error", "error": "x"})
    assert not strategy.recognizes({"type": "other"})
    assert not strategy.recognizes({"type": ["message_start"]})
    assert strategy.recognizes({"type": "message", "content": []})
    assert strategy.recognizes({"role": "assistant", "content": []})
    assert not strategy.recognizes({"role": "assistant", "content": "text"})
    assert not strategy.recognizes({"role": "user", "content": []})


def test_extract_reads_named_tool_use_blocks_with_object_input() -> None:
    message = {
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "a", "name": "f", "input": {"x": 1}},
            {"type": "tool_use", "id": "b", "name": "g", "input": "{}"},
            {"type": "tool_use", "id": "c", "name": "", "input": {}},
        ]
    }
    assert AnthropicStrategy().extract(message) == [ExtractedCall("a", "f", {"x": 1}, 1)]


def test_content_text_joins_text_blocks_only() -> None:
    message = {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "thinking", "thinking": "no"},
            {"type": "text"},
            {"type": "text", "text": "b"},
        ]
    }
    assert AnthropicStrategy().content_text(message) == "ab"
    assert AnthropicStrategy().content_text({}) == ""


def test_history_keeps_the_blocks_without_the_envelope() -> None:
    blocks = [{"type": "text", "text": "a"}]
    assert AnthropicStrategy().history({"id": "m", "content": blocks}) == [
        {"role": "assistant", "content": blocks}
    ]
    assert AnthropicStrategy().history({}) == [{"role": "assistant", "content": []}]


def test_result_messages_are_one_user_message_of_tool_results() -> None:
    strategy = AnthropicStrategy()
    assert strategy.result_messages([]) == []
    results = [
        ToolResult(ExtractedCall("a", "f", {}, 0), "18 C"),
        ToolResult(ExtractedCall("b", "g", {}, 1), "boom", is_error=True),
    ]
    assert strategy.result_messages(results) == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "18 C"},
                {"type": "tool_result", "tool_use_id": "b", "content": "boom", "is_error": True},
            ],
        }
    ]


def test_without_message_start_the_envelope_is_an_assistant_message() -> None:
    buffer = feed(block_start(0, {"type": "text"}), delta(0, type="text_delta", text="hi"))
    assert buffer.as_dict() == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
    }


def test_a_tool_input_given_at_start_stands_until_deltas_come() -> None:
    buffer = feed(tool_start(0, input={"a": 1}))
    assert buffer.as_dict()["content"][0]["input"] == {"a": 1}


@pytest.mark.parametrize(("more", "expected"), [({"input": {"a": 1}}, {"a": 1}), ({}, {})])
def test_a_refused_tool_block_keeps_its_start_input(more: Any, expected: Any) -> None:
    buffer = feed(tool_start(5000, **more))
    assert [f.code for f in buffer.findings] == ["limit_exceeded"]
    assert buffer.as_dict()["content"][0]["input"] == expected


def test_a_start_input_is_not_added_to_streamed_input() -> None:
    buffer = feed(tool_start(0, input={"a": 1}), json_delta(0, '{"a": 1}'), stop(0), *end())
    assert buffer.slots[0].raw_arguments == '{"a": 1}'
    assert buffer.executable


def test_input_json_for_a_block_never_started_keeps_its_text_and_shows_nothing() -> None:
    buffer = feed(json_delta(2, '{"a": 1}'))
    assert [s.raw_arguments for s in buffer.slots] == ['{"a": 1}']
    assert buffer.get_content() == ""


def test_a_delta_that_is_not_an_object_is_read_as_empty() -> None:
    buffer = feed(
        block_start(0, {"type": "text", "text": ""}),
        {"type": "content_block_delta", "index": 0, "delta": None},
    )
    assert buffer.findings == []
    assert buffer.as_dict()["content"] == [{"type": "text", "text": ""}]


def test_a_delta_for_an_unhashable_index_is_an_orphan() -> None:
    buffer = feed(delta([0], type="text_delta", text="x"))
    assert found(buffer) == [
        ("orphan_event", None, "text_delta for content block [0], never started")
    ]


def test_a_signature_delta_without_signature_adds_nothing() -> None:
    buffer = feed(
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, type="signature_delta"),
        delta(0, type="signature_delta", signature="s"),
    )
    assert buffer.as_dict()["content"][0]["signature"] == "s"
    assert buffer.findings == []


def test_the_wrong_stop_reason_is_named() -> None:
    buffer = feed(tool_start(0, input={}), stop(0), *end("max_tokens"))
    assert found(buffer) == [
        (
            "wrong_terminal_reason",
            0,
            "the turn ended with reason 'max_tokens', not a tool-call reason",
        )
    ]


def test_text_streamed_into_a_block_follows_the_text_it_started_with() -> None:
    buffer = feed(
        block_start(0, {"type": "text", "text": "pre "}), delta(0, type="text_delta", text="x")
    )
    assert buffer.as_dict()["content"] == [{"type": "text", "text": "pre x"}]


def test_input_json_without_text_for_a_block_never_started_adds_no_text() -> None:
    buffer = feed(delta(2, type="input_json_delta"))
    assert [s.raw_arguments for s in buffer.slots] == [""]


# A tool_use block started again at the same index.


def test_an_identical_restart_after_its_input_is_a_dropped_repeat() -> None:
    buffer = feed(
        START,
        tool_start(0, "toolu_a", input={}),
        json_delta(0, '{"a": 1}'),
        tool_start(0, "toolu_a", input={}),
    )
    assert [s.state for s in buffer.slots] == ["replaying"]
    for event in (json_delta(0, '{"a": 1}'), stop(0), *end()):
        buffer.add(event)
    assert found(buffer) == [("duplicate_call_ignored", 0, "slot 0 repeated its call; dropped")]
    assert buffer.turn_state == "executable"
    assert buffer.as_dict()["content"] == [
        {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {"a": 1}}
    ]


def test_a_restart_with_other_content_is_an_identity_collision_quoting_it() -> None:
    buffer = feed(
        START,
        tool_start(0, "toolu_a", input={}),
        json_delta(0, '{"a": 1}'),
        tool_start(0, "toolu_b", "g", input={"x": "y" * 100}),
    )
    quoted = repr({"x": "y" * 100})[:60]
    assert found(buffer) == [
        (
            "identity_collision",
            0,
            f"content block 0 started again with other content: 'toolu_b' 'g' {quoted}",
        )
    ]
    assert [s.state for s in buffer.slots] == ["blocked"]
    assert buffer.turn_state == "blocked"


def test_a_restated_start_with_its_whole_input_is_dropped_with_a_note() -> None:
    buffer = feed(
        START,
        tool_start(0, "toolu_a", input={"a": 1}),
        tool_start(0, "toolu_a", input={"a": 1}),
        stop(0),
        *end(),
    )
    assert found(buffer) == [("duplicate_call_ignored", 0, "content block 0 restated; dropped")]
    assert buffer.turn_state == "executable"
    assert buffer.as_dict()["content"][0]["input"] == {"a": 1}


def test_a_restated_empty_start_before_any_input_only_restates_the_identity() -> None:
    buffer = feed(
        START,
        tool_start(0, "toolu_a", input={}),
        tool_start(0, "toolu_a", input={}),
        json_delta(0, '{"a": 1}'),
        stop(0),
        *end(),
    )
    assert buffer.findings == []
    assert buffer.turn_state == "executable"
    assert buffer.as_dict()["content"][0]["input"] == {"a": 1}


# A server tool's input, and a start's input restated by the deltas.


def server_block(*events: Any, **start: Any) -> tuple[list[tuple[str, Any, str]], Any]:
    buffer = feed(
        START,
        block_start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                        **start}),
        *events,
    )  # fmt: skip
    return found(buffer), buffer.as_dict()["content"][0]["input"]


def test_a_server_tools_input_is_what_its_deltas_built() -> None:
    assert server_block(json_delta(0, '{"query": '), json_delta(0, '"x"}'), input={}) == (
        [],
        {"query": "x"},
    )


def test_a_server_tools_input_without_deltas_is_the_starts_else_empty() -> None:
    assert server_block(input={"q": 1}) == ([], {"q": 1})
    assert server_block() == ([], {})


def test_a_server_tools_unreadable_input_is_kept_as_text() -> None:
    assert server_block(json_delta(0, '{"query": '), input={}) == ([], '{"query": ')


def test_a_server_tools_partial_json_that_is_not_text_is_refused() -> None:
    assert server_block(json_delta(0, 5), input={}) == (
        [("malformed_chunk", None, "partial_json is not text: 5")],
        {},
    )


def test_a_starts_input_that_the_deltas_contradict_is_an_args_mismatch() -> None:
    buffer = feed(START, tool_start(0, "toolu_a", input={"a": 1}), json_delta(0, '{"a": 2}'),
                  stop(0))  # fmt: skip
    assert found(buffer) == [
        (
            "args_mismatch",
            0,
            "content block 0: the start's input {'a': 1} differs from the input the deltas "
            "built {'a': 2}",
        )
    ]
    assert buffer.turn_state == "blocked"


def test_a_starts_input_that_the_deltas_repeat_passes() -> None:
    buffer = feed(START, tool_start(0, "toolu_a", input={"a": 1}), json_delta(0, '{"a": 1}'),
                  stop(0), *end())  # fmt: skip
    assert buffer.findings == []
    assert buffer.turn_state == "executable"


def test_broken_deltas_after_a_starts_input_are_reported_by_the_check_alone() -> None:
    buffer = feed(START, tool_start(0, "toolu_a", input={"a": 1}), json_delta(0, '{"a": '),
                  stop(0))  # fmt: skip
    assert [f.code for f in buffer.findings] == ["malformed_json"]


def test_a_starts_input_alone_is_the_arguments_as_written() -> None:
    buffer = feed(START, tool_start(0, "toolu_a", input={"a": "é"}), stop(0), *end())
    assert buffer.findings == []
    assert buffer.slots[0].raw_arguments == '{"a": "é"}'
    assert buffer.turn_state == "executable"


# The next request's history.


def test_answerable_repairs_tool_use_blocks_from_their_calls_and_drops_empty_text() -> None:
    calls = [
        HistoryCall(0, "toolu_a", "f", {"a": 1}, "toolu_a"),
        HistoryCall(1, "toolu_stand_in", "g", None, None),
    ]
    thinking = {"type": "thinking", "thinking": "", "signature": "s"}
    history = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": ""},
                thinking,
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "name": "", "input": '{"b": '},
                {"type": "tool_use", "id": "toolu_x", "name": "h", "input": {"c": 3}},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
    ]
    repaired, placed = AnthropicStrategy().answerable(history, calls)
    assert repaired == [
        {
            "role": "assistant",
            "content": [
                thinking,
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "toolu_stand_in", "name": "g", "input": {}},
                {"type": "tool_use", "id": "toolu_x", "name": "h", "input": {"c": 3}},
            ],
        },
    ]
    assert placed[:2] == calls
    assert (placed[2].id, placed[2].name, placed[2].arguments) == ("toolu_x", "h", {"c": 3})


def test_the_message_usage_a_delta_updated_is_a_copy_each_time() -> None:
    buffer = feed(START, *end(output_tokens=7))
    first = buffer.as_dict()
    assert first["usage"] == {"input_tokens": 5, "output_tokens": 7}
    first["usage"]["output_tokens"] = 99
    assert buffer.as_dict()["usage"]["output_tokens"] == 7


def test_thinking_counts_against_the_text_limit_and_is_not_kept_past_it() -> None:
    buffer = LLMStreamBuffer(strategy=AnthropicStrategy(), limits=Limits(max_text_bytes=6))
    for event in (
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="abc"),
        delta(0, type="thinking_delta", thinking="def"),
        delta(0, type="thinking_delta", thinking="g"),
    ):
        buffer.add(event)
    assert found(buffer) == [("limit_exceeded", None, "the turn's text exceeds 6 bytes")]
    assert buffer.as_dict()["content"][0]["thinking"] == "abcdef"


def test_a_message_stop_without_a_stop_reason_ends_the_turn_with_reason_none() -> None:
    buffer = feed(START, tool_start(0, input={}), json_delta(0, "{}"), stop(0), end()[1])
    assert found(buffer) == [
        ("wrong_terminal_reason", 0, "the turn ended with reason None, not a tool-call reason")
    ]


class Counting(AnthropicStrategy):
    """The strategy, counting the events its reader leaves to accumulate()."""

    def __init__(self) -> None:
        self.whole: list[str] = []

    def accumulate(self, acc: Any, chunk: Any) -> str | None:
        self.whole.append(chunk.get("type"))
        return super().accumulate(acc, chunk)


def test_the_reader_takes_argument_and_text_deltas_in_place() -> None:
    """The common events (a block's argument or text delta) never reach accumulate();
    every other one does, once.

    The first event is read before the stream is resolved, so accumulate() reads it too.
    """
    strategy = Counting()
    buffer = LLMStreamBuffer(strategy=strategy)
    events = [
        START,
        tool_start(0),
        json_delta(0, '{"a"'),
        json_delta(0, ": 1}"),
        delta(0, type="text_delta", text="x"),
        stop(0),
        *end(),
    ]
    for event in events:
        buffer.add(event)
    buffer.end()
    assert strategy.whole == [
        "message_start",
        "content_block_start",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert buffer.as_dict()["content"][0]["input"] == {"a": 1}


def test_a_server_tools_delta_without_partial_json_adds_nothing() -> None:
    events = [delta(0, type="input_json_delta"), json_delta(0, '{"q": 1}')]
    assert server_block(*events, input={}) == ([], {"q": 1})


def test_a_boolean_index_is_not_the_server_block_it_equals() -> None:
    buffer = feed(
        START,
        tool_start(0),
        block_start(1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
        json_delta(True, '{"q": 1}'),
    )
    assert found(buffer) == [("malformed_chunk", None, "input_json_delta for non-tool block True")]
    assert buffer.as_dict()["content"][1]["input"] == {}


def test_a_text_delta_for_a_block_never_started_shows_nothing() -> None:
    buffer = feed(START, delta(7, type="text_delta", text="hidden"))
    assert buffer.text() == ""
    assert [code for code, _, _ in found(buffer)] == ["orphan_event"]


def test_a_signature_that_is_not_text_is_named_in_the_finding() -> None:
    buffer = feed(
        START,
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, type="signature_delta", signature=5),
    )
    assert [code for code, _, _ in found(buffer)] == ["malformed_chunk"]
    assert "signature_delta for block 0 is not text" in found(buffer)[0][2]


@pytest.mark.parametrize(
    ("kind", "field", "block"),
    [
        ("text_delta", "text", {"type": "text", "text": ""}),
        ("thinking_delta", "thinking", {"type": "thinking", "thinking": ""}),
    ],
)
def test_a_text_or_thinking_delta_that_is_not_text_is_refused_by_name(
    kind: str, field: str, block: dict[str, Any]
) -> None:
    buffer = feed(START, block_start(0, block), delta(0, type=kind, **{field: 5}))
    assert found(buffer) == [
        ("malformed_chunk", None, f"{kind} for block 0: {field} is not text: 5")
    ]
    assert buffer.text() == "" and buffer.verdict == "fail"


def test_a_message_is_forming_a_call_once_a_tool_use_block_started() -> None:
    strategy = AnthropicStrategy()
    text = {"type": "text", "text": "Let me look."}
    server = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    first = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    last = {"type": "tool_use", "id": "toolu_2", "name": "", "input": {}}
    assert strategy.forming({"role": "assistant", "content": [text, server]}) == Forming()
    assert strategy.forming({"content": [text, first]}) == Forming(True, "lookup")
    assert strategy.forming({"content": [first, server]}) == Forming(True, "lookup")
    assert strategy.forming({"content": [first, last]}) == Forming(True, None)
    assert strategy.forming({"role": "assistant", "content": None}) == Forming()


def test_a_message_replays_as_the_events_that_stream_each_block() -> None:
    text = {"type": "text", "text": "Let me look."}
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "é"}}
    message = {"id": "msg_1", "model": "claude", "content": [thinking, text, call]}
    start = {"type": "message", "role": "assistant", "id": "msg_1", "model": "claude"}

    def block(index: int, first: dict[str, Any], *deltas: dict[str, Any]) -> list[Any]:
        return [
            block_start(index, first),
            *(delta(index, **d) for d in deltas),
            stop(index),
        ]

    assert AnthropicStrategy().replay(message) == [
        {"type": "message_start", "message": {**start, "content": []}},
        *block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "hmm"},
            {"type": "signature_delta", "signature": "sig"},
        ),
        *block(1, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Let me look."}),
        *block(
            2,
            {**call, "input": {}},
            {"type": "input_json_delta", "partial_json": '{"q": "é"}'},
        ),
        *end("tool_use"),
    ]


@pytest.mark.parametrize(
    ("message", "reason", "blocks"),
    [
        ({"content": [{"type": "text", "text": "Hi."}]}, "end_turn", 1),
        (
            {"content": [{"type": "text", "text": "Hi."}], "stop_reason": "max_tokens"},
            "max_tokens",
            1,
        ),
        ({"type": "message", "role": "assistant", "content": "not a list"}, "end_turn", 0),
    ],
)
def test_a_replayed_message_ends_with_its_own_stop_reason_else_by_its_calls(
    message: dict[str, Any], reason: str, blocks: int
) -> None:
    events = AnthropicStrategy().replay(message)
    assert events[0] == {
        "type": "message_start",
        "message": {"type": "message", "role": "assistant", "content": []},
    }
    assert events[-2:] == end(reason)
    assert len(events) == 3 + 3 * blocks  # each text block: start, delta, stop


def test_a_replayed_block_of_another_kind_or_without_text_starts_as_it_is() -> None:
    odd: list[Any] = [
        {"type": "text", "text": None},
        {"type": "thinking", "thinking": 5},
        {"type": "redacted_thinking", "data": "xyz", "text": "not a text block"},
        {"type": "image", "thinking": "not a thinking block"},
        "not a block",
        {"type": "thinking", "thinking": "t"},
    ]
    events = AnthropicStrategy().replay({"content": odd, "stop_reason": "end_turn"})
    assert events[1:-2] == [
        *(e for n, b in enumerate(odd[:5]) for e in (block_start(n, b), stop(n))),
        block_start(5, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(5, type="thinking_delta", thinking="t"),
        stop(5),
    ]


@pytest.mark.parametrize(
    ("kind", "block"),
    [("text_delta", {"type": "text", "text": ""}), ("thinking_delta", {"type": "thinking"})],
)
def test_a_text_or_thinking_delta_without_its_text_adds_nothing(
    kind: str, block: dict[str, Any]
) -> None:
    buffer = feed(START, block_start(0, block), delta(0, type=kind), stop(0), *end("end_turn"))
    assert found(buffer) == []
    field = kind.removesuffix("_delta")
    assert buffer.as_dict()["content"] == [{**block, field: ""}]
    assert buffer.text() == "" and buffer.verdict == "not_applicable"


@pytest.mark.parametrize("field", ["text", "thinking", "signature"])
def test_a_block_that_starts_with_a_field_that_is_not_text_is_refused_by_name(
    field: str,
) -> None:
    buffer = feed(START, block_start(0, {"type": "text", field: ["x"]}))
    assert found(buffer) == [
        ("malformed_chunk", None, f"content block 0 starts with {field} that is not text: ['x']")
    ]
    assert buffer.as_dict()["content"] == [{"type": "text", field: ""}]


@pytest.mark.parametrize(("used", "verdict"), [(12, "fail"), (11, "pass"), (None, "pass")])
def test_the_message_deltas_output_tokens_at_max_tokens_cut_the_turn(
    used: int | None, verdict: str
) -> None:
    """``message_delta``'s usage counts the turn's output tokens: at the request's limit the
    turn was cut, whatever its ``stop_reason`` says (no count, no cut)."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": used} if used is not None else {"input_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    buffer = LLMStreamBuffer(strategy=AnthropicStrategy(), max_tokens=12)
    for event in events:
        buffer.add(event)
    buffer.end()
    assert buffer.verdict == verdict
    assert ("token_limit" in [f.code for f in buffer.findings]) is (verdict == "fail")
