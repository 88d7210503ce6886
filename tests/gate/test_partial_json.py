"""The incremental JSON reader: a prefix of the final value after every piece, never raising.

The reader's value after each piece must be a prefix of what the whole text parses to
(the relation :func:`is_prefix` spells out, tested here too), equal to it once the
text is whole; on text that stops being strict JSON it stops growing and never raises.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.gate.partialjson import PartialJSON, TextLog, is_prefix, value_at
from callgate.gate.strictjson import parse_arguments
from callgate.testing.cuts import splits
from callgate.testing.plans import JSON_OBJECTS, serialised


def values_while_fed(pieces: list[str]) -> tuple[PartialJSON, list[Any]]:
    """Feed ``pieces`` one by one; the value after each."""
    reader = PartialJSON()
    seen = []
    for piece in pieces:
        reader.feed(piece)
        seen.append(value_at(reader.shot()))
    return reader, seen


# -- the prefix relation --------------------------------------------------------------


@pytest.mark.parametrize(
    ("partial", "final"),
    [
        ({}, {"a": 1}),
        ({"a": ""}, {"a": "xy"}),
        ({"a": "x"}, {"a": "xy"}),
        ({"a": 1, "b": []}, {"a": 1, "b": [2, 3]}),
        ({"a": 1, "b": [2, {}]}, {"a": 1, "b": [2, {"c": None}]}),
        ({"a": [1, "x"]}, {"a": [1, "xy"]}),
        ({"a": True}, {"a": True, "b": 2}),
        ("ab", "abc"),
        (1.5, 1.5),
    ],
)
def test_prefixes_are_recognised(partial: Any, final: Any) -> None:
    assert is_prefix(partial, final)


@pytest.mark.parametrize(
    ("partial", "final"),
    [
        ({"b": 1}, {"a": 1, "b": 1}),  # a key out of order
        ({"a": "x", "b": 1}, {"a": "xy", "b": 1}),  # a cut value that is not the last
        ({"a": 1}, {"a": 12}),  # a number is whole or absent
        ({"a": 1}, {"a": True}),  # 1 == True in Python, not in JSON
        ({"a": [1, 2]}, {"a": [1]}),  # longer than the final
        ({"a": "xz"}, {"a": "xy"}),
        ({"a": {}}, {"a": []}),
        ([], {}),
        ({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2}),
        ({"a": [0, {"x": 1}]}, {"a": [0.0, {"x": 1}]}),  # an int for a float, not the last
    ],
)
def test_non_prefixes_are_refused(partial: Any, final: Any) -> None:
    assert not is_prefix(partial, final)


# -- every split of clean text --------------------------------------------------------


@st.composite
def split_objects(draw: st.DrawFn) -> tuple[dict[str, Any], str, list[str]]:
    arguments = draw(JSON_OBJECTS)
    text = draw(serialised(arguments))
    if draw(st.booleans()):
        text = " \n" + text.replace(", ", " ,\t") + " \r\n"
    return arguments, text, draw(splits(text))


@given(split_objects())
def test_after_every_piece_the_value_is_a_prefix_and_the_last_is_the_whole(
    case: tuple[dict[str, Any], str, list[str]],
) -> None:
    _, text, pieces = case
    final, problem = parse_arguments(text)
    assert problem is None
    reader, seen = values_while_fed(pieces)
    for value in seen:
        assert is_prefix(value, final), (value, final)
    assert seen[-1] == final
    assert reader.complete and not reader.broken
    assert reader.valid == len(text)


@given(split_objects())
def test_one_character_per_piece_grows_as_the_text_does(
    case: tuple[dict[str, Any], str, list[str]],
) -> None:
    _, text, _ = case
    final, _ = parse_arguments(text)
    _, seen = values_while_fed(list(text))
    assert all(is_prefix(value, final) for value in seen)
    assert seen[-1] == final


def test_a_string_shows_as_it_grows_and_a_number_only_once_whole() -> None:
    _, seen = values_while_fed(['{"path": "a.', 'py", "size": 12', "3", ', "ok": tr', "ue}"])
    assert seen == [
        {"path": "a."},
        {"path": "a.py"},
        {"path": "a.py"},
        {"path": "a.py", "size": 123},
        {"path": "a.py", "size": 123, "ok": True},
    ]


def test_a_key_shows_only_once_its_value_has_started() -> None:
    _, seen = values_while_fed(['{"a": 1, "lo', 'ng"', ": ", "[", '"x', '"]}'])
    assert seen == [
        {"a": 1},
        {"a": 1},
        {"a": 1},
        {"a": 1, "long": []},
        {"a": 1, "long": ["x"]},
        {"a": 1, "long": ["x"]},
    ]


def test_an_escape_cut_in_two_waits_for_its_end() -> None:
    _, seen = values_while_fed(['{"a": "x\\', "u00", "e9", "\\ud83d", '\\ude00"}'])
    assert seen == [{"a": "x"}, {"a": "x"}, {"a": "xé"}, {"a": "xé"}, {"a": "xé\U0001f600"}]


def test_an_earlier_shot_keeps_its_value_while_the_reader_goes_on() -> None:
    reader = PartialJSON()
    reader.feed('{"a": ["x", {"b": "yy')
    shot = reader.shot()
    reader.feed('y"}, 3], "c": "z"}')
    assert value_at(shot) == {"a": ["x", {"b": "yy"}]}
    assert value_at(reader.shot()) == {"a": ["x", {"b": "yyy"}, 3], "c": "z"}


# -- bad input: the reader stops where the text stops being strict JSON ----------------


@pytest.mark.parametrize(
    ("pieces", "last"),
    [
        (['{"a": "x"}', "}"], {"a": "x"}),  # a stray close after the object
        (['{"a": 1}}'], {"a": 1}),
        (['{"a": "x"', "]"], {"a": "x"}),  # a close of the wrong kind
        (['{"a": "x\\', "q", 'y"}'], {"a": "x"}),  # an unknown escape
        (['{"a": "x\\u12', "zz", '"}'], {"a": "x"}),  # a bad unicode escape
        (['{"a": "x\\ud800', '"}'], {"a": "x"}),  # a lone high surrogate escape
        (['{"a": "x\\udc00"}'], {"a": "x"}),  # a lone low surrogate escape
        (['{"a": "x\\ud800\\u0041"}'], {"a": "x"}),  # a high surrogate then no low
        (['{"a": "x\udcff"}'], {"a": "x"}),  # an invalid UTF-8 byte kept as a surrogate
        (['{"a": "x\ud83d', '\ude00"}'], {"a": "x"}),  # a character split into raw halves
        (['{"a": "x\ny"}'], {"a": "x"}),  # a raw control character in a string
        (['{"a": 1, "a": 2}'], {"a": 1}),  # a duplicate key
        (['{"a": 1e999, "b": 2}'], {}),  # a number that overflows
        (['{"a": 01}'], {}),  # a number strict JSON refuses
        (['{"a": tru', "e1}"], {"a": True}),  # a whole word, then more
        (['{"a": nul', "x}"], {}),
        (['{"a": NaN}'], {}),
        (["[1, 2]"], {}),  # arguments that are not an object
        (['{"a": 1', " x"], {"a": 1}),
        (['{"a": [1, 2,]}'], {"a": [1, 2]}),
        (['{"a": 1} {"b": 2}'], {"a": 1}),  # a second document
    ],
)
def test_bad_text_stops_growing_at_its_last_valid_prefix(pieces: list[str], last: Any) -> None:
    reader, seen = values_while_fed(pieces)
    assert reader.broken and not reader.complete
    assert seen[-1] == last
    reader.feed('"more": "text"}')  # nothing after the break is read
    assert value_at(reader.shot()) == last


def test_a_break_counts_only_the_valid_characters() -> None:
    reader = PartialJSON()
    reader.feed('{"a": "x"}}tail')
    assert reader.valid == len('{"a": "x"}')


@given(st.text(max_size=40), st.integers(1, 4))
def test_any_text_is_read_without_raising(text: str, size: int) -> None:
    reader = PartialJSON()
    for at in range(0, len(text), size):
        reader.feed(text[at : at + size])
    value = value_at(reader.shot())
    assert isinstance(value, dict)
    final, problem = parse_arguments(text)
    if problem is None:
        assert value == final
    elif reader.complete:
        pytest.fail(f"{text!r} does not parse, yet the reader says it is whole")


def test_nesting_past_the_depth_limit_stops_the_reader() -> None:
    reader = PartialJSON(max_depth=3)
    reader.feed('{"a": {"b": [')
    assert not reader.broken
    reader.feed("[1]]}}")
    assert reader.broken
    assert value_at(reader.shot()) == {"a": {"b": []}}


# -- the text log ----------------------------------------------------------------------


@given(st.lists(st.text(max_size=5), max_size=8), st.integers(0, 40), st.integers(0, 40))
def test_the_text_log_reads_back_any_range(pieces: list[str], start: int, end: int) -> None:
    log = TextLog()
    for piece in pieces:
        log.append(piece)
    whole = "".join(pieces)
    assert log.length == len(whole)
    assert log.since(start) == whole[start:]
    assert log.since(start, end) == whole[start:end]


def test_values_are_the_strict_parsers_own() -> None:
    text = '{"i": -0, "f": 1.0, "e": 2E3, "big": 123456789012345678901234567890}'
    _, seen = values_while_fed(list(text))
    assert seen[-1] == json.loads(text)
    assert [type(v) for v in seen[-1].values()] == [int, float, float, int]
