"""How OpenAI Chat chunks that bend the shape are placed: entries, parts, choices, repeats.

Index-less ``tool_calls`` entries (Mistral's whole calls) go by call id, else continue the
slot before them; content parts are read one by one, each kind by its own rule, against
the turn's text limit; a choice without an index is choice 0 on the common path too; a
repeated finish on a chunk that is not an object is refused, not taken for a bare repeat.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Limits, LLMStreamBuffer, OpenAIStrategy, TurnGate


def chunk(delta: Any = None, finish: str | None = None, **choice: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish, **choice}]}


def calls(*entries: Any) -> dict[str, Any]:
    return chunk({"tool_calls": list(entries)})


def entry(arguments: Any, **fields: Any) -> dict[str, Any]:
    function = {"arguments": arguments}
    if "name" in fields:
        function["name"] = fields.pop("name")
    return {**fields, "function": function}


def fed(*chunks: Any, **options: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy(), **options)
    for item in chunks:
        buffer.add(item)
    buffer.end()
    return buffer


def found(buffer: LLMStreamBuffer) -> list[tuple[str, Any, str]]:
    return [(f.code, f.slot, f.message) for f in buffer.findings]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(*pieces: Any) -> dict[str, Any]:
    return {"type": "thinking", "thinking": list(pieces)}


# -- index-less entries -------------------------------------------------------------------


def test_a_first_entry_with_neither_index_nor_id_is_slot_zero() -> None:
    buffer = fed(calls(entry("{}", name="get_time")), chunk(finish="tool_calls"))
    assert [(s.key, s.name, s.raw_arguments) for s in buffer.slots] == [(0, "get_time", "{}")]
    assert found(buffer) == [("missing_id", 0, "slot 0 has no call id")]


def test_an_index_less_entry_whose_id_is_not_text_continues_the_slot_before_it() -> None:
    buffer = fed(
        calls(entry('{"a": 1', id="call_a", name="f")),
        calls(entry("}", id=7)),
        chunk(finish="tool_calls"),
    )
    assert [(s.key, s.id, s.raw_arguments) for s in buffer.slots] == [(0, "call_a", '{"a": 1}')]
    assert ("malformed_chunk", 0, "slot 0: the call id is not text") in found(buffer)


@pytest.mark.parametrize("beside", [{}, {"content": None}], ids=["alone", "beside null content"])
def test_an_index_less_entry_continues_the_slot_the_last_fragment_went_to(
    beside: dict[str, Any],
) -> None:
    """A fragment read on the common path (alone in its delta, or beside the ``content:
    null`` some servers repeat on every delta) moves the slot an entry without index or id
    continues, as a fragment read with its entry's identity does."""
    buffer = fed(
        calls(entry("", index=0, id="call_a", name="get_weather")),
        calls(entry("", index=1, id="call_b", name="get_time")),
        calls(entry('{"city": "Paris"}', index=0)),
        chunk({**beside, "tool_calls": [entry('{"zone": ', index=1)]}),
        calls(entry('"UTC"}')),
        chunk(finish="tool_calls"),
    )
    assert [(c["id"], c["function"]["arguments"]) for c in buffer.as_dict()["tool_calls"]] == [
        ("call_a", '{"city": "Paris"}'),
        ("call_b", '{"zone": "UTC"}'),
    ]
    assert [(c.name, c.arguments) for c in buffer.calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "UTC"}),
    ]
    assert buffer.verdict == "pass" and found(buffer) == []


def test_a_refused_slot_key_is_not_the_slot_an_index_less_entry_continues() -> None:
    buffer = fed(
        calls(entry('{"x"', index=0, id="call_a", name="f")),
        calls(entry("1", index="x")),
        calls(entry(": 1}")),
        chunk(finish="tool_calls"),
    )
    assert [(s.key, s.raw_arguments, s.state) for s in buffer.slots] == [
        (0, '{"x": 1}', "validated")
    ]
    assert found(buffer) == [
        ("malformed_chunk", None, "slot key 'x' is not a non-negative integer")
    ]


def test_an_entry_with_only_an_id_that_is_not_text_opens_no_slot() -> None:
    """The refused identity leaves the slot unopened: the finish finds an orphan, not a call."""
    buffer = fed(calls({"index": 0, "id": 7}), chunk(finish="tool_calls"))
    assert [(code, slot) for code, slot, _ in found(buffer)] == [
        ("malformed_chunk", 0),
        ("orphan_event", 0),
    ]
    assert found(buffer)[0][2] == "slot 0: the call id is not text"


# -- arguments that are not text, on the common path ---------------------------------------


def test_object_arguments_in_a_continuation_are_refused_as_not_text() -> None:
    """After the stream settled, a lone entry with object arguments is refused as such."""
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
    for item in (
        chunk({"role": "assistant", "content": ""}),
        calls(entry("", index=0, id="call_a", name="f")),
        calls(entry('{"a"', index=0)),
        calls(entry({"a": 1}, index=0)),
    ):
        buffer.add(item)
    assert found(buffer) == [
        ("malformed_chunk", 0, "function.arguments is an object, not a JSON string: {'a': 1}")
    ]
    assert buffer.slots[0].raw_arguments == '{"a"'


# -- choices without an index, on the common path -------------------------------------------


def test_a_choice_without_index_is_choice_zero_for_a_buffer_that_reads_choice_one() -> None:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy(), choice=1)
    for item in (
        chunk({"role": "assistant", "content": "one "}, index=1),
        chunk({"content": "more"}, index=1),
        {"choices": [{"delta": {"content": "zero"}}]},
        chunk({}, "stop", index=1),
    ):
        buffer.add(item)
    buffer.end()
    assert buffer.get_content() == "one more"
    assert [(c.index, c.message["content"]) for c in buffer.choices] == [
        (0, "zero"),
        (1, "one more"),
    ]


def test_a_choice_index_that_is_not_a_count_is_refused_with_what_came() -> None:
    for index, shown in (("1", "'1'"), (-1, "-1"), (1.0, "1.0"), (True, "True")):
        buffer = fed({"choices": [{"index": index, "delta": {"content": "x"}}]})
        assert found(buffer) == [
            ("malformed_chunk", None, f"a choice index is not a count: {shown}")
        ]
        assert buffer.get_content() == ""


def test_a_choice_index_up_to_the_slot_index_limit_is_read_and_past_it_refused() -> None:
    limits = Limits(max_slot_index=3)
    buffer = fed(chunk({"content": "x"}, index=3), chunk({"content": "y"}, index=4), limits=limits)
    assert [(c.index, c.message["content"]) for c in buffer.choices] == [(0, None), (3, "x")]
    assert found(buffer) == [("limit_exceeded", None, "choice index 4 exceeds 3")]


def test_the_completion_of_several_choices_carries_the_streams_usage() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    buffer = fed(
        {"id": "chatcmpl-1", "model": "gpt-4.1", **chunk({"content": "a"})},
        {"id": "chatcmpl-1", "model": "gpt-4.1", **chunk({"content": "b"}, index=1)},
        {"id": "chatcmpl-1", "choices": [], "usage": usage},
    )
    completion = buffer.as_dict()
    assert {k: completion[k] for k in ("id", "model", "object", "usage")} == {
        "id": "chatcmpl-1",
        "model": "gpt-4.1",
        "object": "chat.completion",
        "usage": usage,
    }
    assert [c["message"]["content"] for c in completion["choices"]] == ["a", "b"]


def test_the_usage_of_several_choices_is_theirs_together_and_cuts_no_choice() -> None:
    """``max_tokens`` bounds each choice; the stream's one count is of them all together."""
    usage = {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}
    opened = [
        calls(entry('{"city": "Paris"}', index=0, id=f"call_{n}", name="get_weather"))
        for n in range(2)
    ]
    opened[1]["choices"][0]["index"] = 1
    buffer = fed(
        *opened,
        chunk(finish="tool_calls"),
        chunk(finish="tool_calls", index=1),
        {"choices": [], "usage": usage},
        max_tokens=5,
    )
    assert buffer.as_dict()["usage"] == usage
    assert buffer.verdict == "pass" and found(buffer) == []
    assert [(c.index, c.verdict, c.findings) for c in buffer.choices] == [
        (0, "pass", ()),
        (1, "pass", ()),
    ]
    assert [(c.id, c.arguments) for c in buffer.calls] == [("call_0", {"city": "Paris"})]


def test_the_chosen_choices_finish_ends_the_stream_wherever_it_sits_in_the_chunk() -> None:
    def two(first: str | None, second: str | None) -> dict[str, Any]:
        return {
            "choices": [
                {"index": 1, "delta": {"content": "b"}, "finish_reason": first},
                {"index": 0, "delta": {"content": "a"}, "finish_reason": second},
            ]
        }

    for item, ends in (
        (two(None, "stop"), True),
        (two("stop", "stop"), True),
        (two("stop", None), False),
    ):
        buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
        buffer.add(item)
        assert buffer.is_finished() is ends
        assert buffer.get_content() == "a"


def test_past_the_text_limit_a_chunk_still_ends_the_stream_beside_a_choice_not_an_object() -> None:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy(), limits=Limits(max_text_bytes=4))
    buffer.add(chunk({"content": "too long"}))
    buffer.add({"choices": ["not a choice", {"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert buffer.is_finished()
    assert found(buffer) == [("limit_exceeded", None, "the turn's text exceeds 4 bytes")]


# -- repeated finishes ---------------------------------------------------------------------


def test_a_repeated_finish_on_a_delta_that_is_not_an_object_is_refused() -> None:
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
    buffer.add(chunk({"content": "hi"}))
    buffer.add(chunk(finish="stop"))
    buffer.add(chunk(["not", "a", "delta"], finish="stop"))
    codes = [f.code for f in buffer.findings]
    assert "repeated_terminal" not in codes
    assert codes == ["malformed_chunk"]
    assert buffer.findings[0].message.startswith("openai cannot read this chunk (AttributeError")


# -- content parts -------------------------------------------------------------------------


def test_a_part_of_another_type_with_text_is_refused_not_shown() -> None:
    buffer = fed(chunk({"content": [text("a"), {"type": "reasoning", "text": "hidden"}]}))
    assert buffer.get_content() == "a"
    assert found(buffer) == [
        (
            "malformed_chunk",
            None,
            "a content part callgate cannot read: {'type': 'reasoning', 'text': 'hidden'}",
        )
    ]
    assert buffer.as_dict()["content"] == [text("a")]


def test_a_part_that_is_not_an_object_is_refused_with_what_came() -> None:
    buffer = fed(chunk({"content": ["plain", text("b")]}))
    assert found(buffer) == [
        ("malformed_chunk", None, "a content part callgate cannot read: 'plain'")
    ]
    assert buffer.get_content() == "b"


def test_a_thinking_part_keeps_its_text_pieces_only() -> None:
    buffer = fed(
        chunk({"content": [thinking(text("a"), "loose", {"type": "text"}, text("b"))]}),
        chunk({"content": [thinking()]}),
        chunk({"content": [text("shown")]}),
        chunk({"content": [thinking()]}),
        chunk(finish="stop"),
    )
    assert buffer.findings == []
    assert buffer.as_dict()["content"] == [
        thinking(text("ab")),
        text("shown"),
        thinking(text("")),
    ]


def test_every_part_after_the_text_limit_is_still_read_and_none_kept() -> None:
    parts = [text("x" * 8), text("y" * 8), thinking(text("z")), {"type": "image"}, text("w")]
    buffer = fed(chunk({"content": parts}), limits=Limits(max_text_bytes=10))
    assert found(buffer) == [
        ("limit_exceeded", None, "the turn's text exceeds 10 bytes"),
        ("malformed_chunk", None, "a content part callgate cannot read: {'type': 'image'}"),
    ]
    assert buffer.as_dict()["content"] == [text("x" * 8)]
    assert buffer.get_content() == "x" * 8


def test_accumulate_returns_no_text_the_turn_did_not_keep() -> None:
    strategy = OpenAIStrategy()
    acc = strategy.new_accumulator(TurnGate(limits=Limits(max_text_bytes=10)))
    assert strategy.accumulate(acc, chunk({"content": "x" * 8})) == "x" * 8
    assert strategy.accumulate(acc, chunk({"content": "y" * 8})) == ""
    assert strategy.accumulate(acc, chunk({"content": [text("z")]})) == ""
    assert strategy.message(acc) == {"role": "assistant", "content": [text("x" * 8)]}
