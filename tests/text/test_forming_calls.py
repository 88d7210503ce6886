"""The readers of an open text block: which format reads it, and where each stops.

The property that every split gives prefixes of the parser's calls is in
tests/buffer/test_partial_text_calls.py; here are the readers' own decisions.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.gate.partialjson import value_at
from callgate.strategies.text.forming import BlockReader

SHARED = ["tool_call_tag", "qwen3_coder_xml", "glm45", "granite_tool_call"]
"""The formats that share ``<tool_call>``, in the default order."""


STRING_A = {"f": {"type": "object", "properties": {"a": {"type": "string"}}}}


def read(
    formats: list[str], pieces: list[str], close: str = "</tool_call>", schemas: Any = None
) -> BlockReader:
    reader = BlockReader(formats, schemas, close)
    for piece in pieces:
        reader.feed(piece)
    return reader


def arguments(reader: BlockReader) -> list[object]:
    return [value_at(call.shot()) for call in reader.calls]


def test_the_payload_picks_the_format_among_those_sharing_the_opener() -> None:
    qwen = read(SHARED, ["\n<function=f>\n<parameter=a>\nxy"])
    assert qwen.format == "qwen3_coder_xml" and arguments(qwen) == [{"a": "xy"}]
    glm = read(SHARED, ["f\n<arg_key>a</arg_key>\n<arg_value>xy"], schemas=STRING_A)
    assert glm.format == "glm45" and arguments(glm) == [{"a": "xy"}]
    untyped = read(SHARED, ["f\n<arg_key>a</arg_key>\n<arg_value>12"])
    assert arguments(untyped) == [{}]  # JSON or text: only its close decides


def test_a_json_payload_is_read_by_the_json_format_the_markup_ones_leave_it() -> None:
    reader = read(SHARED, ['{"name": "f", "arguments": {"a": "' + "x" * 50])
    assert reader.format == "tool_call_tag" and [c.name for c in reader.calls] == ["f"]
    assert value_at(reader.calls[0].shot()) == {"a": "x" * 50}
    markup = read(SHARED[1:], ['{"name": "f", "arguments": {"a": "' + "x" * 50])
    assert markup.broken and markup.calls == [] and markup.format == ""


@pytest.mark.parametrize(
    "payload",
    [
        '{"arguments": {"a": "x"}, "name": "f"}',  # the arguments first
        '{"id": "1", "name": "f", "arguments": {"a": "x"}}',  # another key first
        '{"name": "f", "arguments": "{\\"a\\": \\"x\\"}"}',  # double-encoded
        "[1, 2]",
    ],
)
def test_a_json_call_object_of_another_shape_shows_nothing_while_open(payload: str) -> None:
    for size in (1, len(payload)):
        pieces = [payload[i : i + size] for i in range(0, len(payload), size)]
        assert read(["tool_call_tag"], pieces).calls == []


def test_a_glm_name_waits_for_its_newline_or_first_key() -> None:
    reader = read(["glm45"], ["get_wea", "ther  ", "<arg_k"])
    assert reader.calls == [] and not reader.broken
    reader.feed("ey>city</arg_key><arg_value>Paris")
    assert [c.name for c in reader.calls] == ["get_weather"]
    assert not read(["glm45"], ["get weather\n"]).calls  # a name holds no space


@pytest.mark.parametrize(
    ("formats", "pieces"),
    [
        (["qwen3_coder_xml"], ["<function=f><parameter=a>x<function=g>"]),
        (["qwen3_coder_xml"], ["<function=f><parameter=a b>x"]),
        (["minimax_m2"], ['<invoke name="f"><parameter name="a">x<parameter name="b">y']),
        (["minimax_m2"], ['<invoke name="f"><paramx>']),
        (["kimi_k2"], ["<|tool_call_begin|>functions.f:0<|tool_call_end|>"]),
        (["kimi_k2"], ["<|tool_call_begin|>no id here<|tool_call_argument_begin|>{}"]),
        (["glm45"], ["f<arg_key>a</arg_key>x"]),
    ],
)
def test_a_payload_the_parser_refuses_stops_its_reader(
    formats: list[str], pieces: list[str]
) -> None:
    assert read(formats, pieces).broken


def test_an_earlier_call_stays_whole_when_a_later_one_breaks() -> None:
    reader = read(["minimax_m2"], ['<invoke name="f"><parameter name="a">1</parameter></invoke>'])
    reader.feed("<nonsense>")
    assert reader.broken
    assert arguments(reader) == [{"a": "1"}] and reader.calls[0].complete


def test_a_kimi_call_carries_its_id_and_reads_its_json_as_it_comes() -> None:
    reader = read(["kimi_k2"], ["<|tool_call_begin|>functions.get_weather:0", "<|tool_call_arg"])
    assert reader.calls == []
    reader.feed('ument_begin|>{"city": "Par')
    (call,) = reader.calls
    assert (call.name, call.id) == ("get_weather", "functions.get_weather:0")
    assert value_at(call.shot()) == {"city": "Par"} and not call.complete
    reader.feed('is"}<|tool_call_e')
    assert not call.complete
    reader.feed("nd|>")
    assert call.complete and value_at(call.shot()) == {"city": "Paris"}
