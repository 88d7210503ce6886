"""Behaviour of strict argument parsing that the mutation run found unobserved.

Each test states one rule of :func:`callgate.gate.strictjson.parse_arguments` through its public
result (the object, or the finding's code and message), never through private helpers.
"""

from __future__ import annotations

import json
import sys

import pytest

from callgate.gate.findings import Finding
from callgate.gate.strictjson import MAX_INT_DIGITS, parse_arguments


def refused(text: str, max_depth: int = 128) -> Finding:
    value, problem = parse_arguments(text, max_depth=max_depth)
    assert value is None
    assert problem is not None
    return problem


# Messages quote the offending key or string cut to 60 characters.


def test_a_key_of_exactly_the_snippet_length_is_quoted_whole() -> None:
    key = "k" * 58  # its repr, with quotes, is 60 characters
    problem = refused(f'{{"{key}": 1, "{key}": 2}}')
    assert problem.code == "duplicate_key"
    assert problem.message == f"key '{key}' appears twice in the same object"


def test_a_longer_key_is_cut_to_57_characters_and_an_ellipsis() -> None:
    key = "k" * 59
    problem = refused(f'{{"{key}": 1, "{key}": 2}}')
    assert problem.message == f"key '{'k' * 56}... appears twice in the same object"


def test_the_duplicate_key_named_is_the_repeated_one() -> None:
    problem = refused('{"a": 1, "b": 2, "b": 3}')
    assert problem.message == "key 'b' appears twice in the same object"


def test_a_long_overflowing_number_is_cut_in_the_message() -> None:
    literal = "1" + "0" * 70 + "e400"
    problem = refused(f'{{"n": {literal}}}')
    assert problem.code == "non_finite_number"
    assert problem.message == (
        f"number {literal[:57]}... overflows to infinity; JSON allows only finite numbers"
    )


# The non-finite literals of Python's json each get their own wording.


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_each_non_finite_literal_is_named_as_not_a_json_number(literal: str) -> None:
    problem = refused(f'{{"n": {literal}}}')
    assert problem.code == "non_finite_number"
    assert problem.message == f"{literal} is not a JSON number; JSON allows only finite numbers"


# Integer digit limit: the sign is not a digit.


def test_a_negative_integer_at_the_digit_limit_is_accepted() -> None:
    value, problem = parse_arguments('{"n": -' + "1" * MAX_INT_DIGITS + "}")
    assert problem is None
    assert value is not None
    assert value["n"] == -int("1" * MAX_INT_DIGITS)


def test_a_negative_integer_one_digit_over_the_limit_is_refused() -> None:
    digits = MAX_INT_DIGITS + 1
    problem = refused('{"n": -' + "1" * digits + "}")
    assert problem.code == "limit_exceeded"
    assert problem.message == (
        f"integer with {digits} digits exceeds the limit of {MAX_INT_DIGITS} digits"
    )


def test_a_lower_interpreter_digit_limit_becomes_a_finding() -> None:
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(1000)
    try:
        problem = refused('{"n": ' + "1" * 2000 + "}")
    finally:
        sys.set_int_max_str_digits(previous)
    assert problem.code == "limit_exceeded"
    assert problem.message.startswith("arguments exceed a parser limit: ")
    assert "1000" in problem.message


@pytest.mark.parametrize("limit", [0, MAX_INT_DIGITS, 5 * MAX_INT_DIGITS])
def test_an_integer_past_the_limit_is_refused_whatever_the_interpreters_own_limit(
    limit: int,
) -> None:
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        problem = refused('{"a": [1.5, 2], "n": ' + "7" * 5000 + "}")
        fine, none = parse_arguments('{"n": ' + "7" * MAX_INT_DIGITS + "}")
    finally:
        sys.set_int_max_str_digits(previous)
    assert (
        problem.message == f"integer with 5000 digits exceeds the limit of {MAX_INT_DIGITS} digits"
    )
    assert none is None
    assert fine == {"n": int("7" * MAX_INT_DIGITS)}


# Nesting depth counts only open brackets outside strings, closing brackets included.


def test_many_shallow_brackets_are_not_deep_nesting() -> None:
    value, problem = parse_arguments('{"a": [[], [], []]}', max_depth=3)
    assert problem is None
    assert value == {"a": [[], [], []]}


def test_brackets_beyond_the_limit_only_in_count_are_judged_by_the_json() -> None:
    problem = refused("[[],[],[]]", max_depth=2)
    assert problem.code == "non_object_arguments"


def test_stray_closing_brackets_do_not_lower_the_depth_below_zero() -> None:
    problem = refused("]]][[[", max_depth=2)
    assert problem.code == "limit_exceeded"
    assert problem.message == "arguments nest deeper than the limit of 2 levels"


def test_a_value_closed_at_the_top_level_returns_the_depth_to_zero() -> None:
    problem = refused("{} {}", max_depth=1)
    assert problem.code == "trailing_data"


def test_brackets_inside_strings_do_not_count() -> None:
    value, problem = parse_arguments('{"a": "[[[[{{{{"}', max_depth=1)
    assert problem is None
    assert value == {"a": "[[[[{{{{"}


def test_nesting_past_the_interpreter_stack_is_a_finding() -> None:
    problem = refused("[" * 100_000, max_depth=10**6)
    assert problem.code == "limit_exceeded"
    assert problem.message == "arguments nest too deeply to parse"


# Positions in messages agree with json's own line and column.


@pytest.mark.parametrize(
    "text",
    [
        '{"a": }',
        '\n{"a": }',
        '{\n"a": }\n\n',
        '\n\n{"a":\n 1,\n "b": }\n"tail"\n',
        '{"a": 1,\n\n"b" 2}',
    ],
)
def test_error_positions_match_the_json_module(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    error = caught.value
    problem = refused(text)
    assert problem.code == "malformed_json"
    assert problem.message == (
        f"arguments are not valid JSON: {error.msg} at line {error.lineno} "
        f"column {error.colno} (char {error.pos})"
    )


def test_trailing_data_positions_count_lines_from_the_start() -> None:
    problem = refused('\n{"a": 1}\n  x\n')
    assert problem.message == (
        "a complete JSON value ends at line 2 column 9 (char 9) "
        "but more text follows at line 3 column 3 (char 12)"
    )


# Empty means JSON whitespace only.


@pytest.mark.parametrize("text", ["", " \t\r\n"])
def test_json_whitespace_alone_is_empty(text: str) -> None:
    problem = refused(text)
    assert problem.code == "malformed_json"
    assert problem.message.startswith("arguments text is empty: expected a JSON value at ")


@pytest.mark.parametrize("text", ["\x0b", "\u00a0", "X", " X "])
def test_other_characters_are_not_empty_but_invalid(text: str) -> None:
    problem = refused(text)
    assert problem.code == "malformed_json"
    assert problem.message.startswith("arguments are not valid JSON: Expecting value at ")


# Escaped surrogates are found wherever they are, and their place is named.


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a b": "\\ud800"}', 'string at $["a b"]'),
        ('{"a": ["\\ud800", "ok"]}', "string at $.a[0]"),
        ('{"a": ["ok", "ok", "\\udfff"]}', "string at $.a[2]"),
        ('{"a": [[], {"c": ["x", "\\ud800y"]}]}', "string at $.a[1].c[1]"),
    ],
)
def test_an_escaped_surrogate_is_located_by_its_path(text: str, where: str) -> None:
    problem = refused(text)
    assert problem.code == "lone_surrogate"
    assert problem.message.startswith(f"{where} (")
    assert problem.message.endswith(") holds an unpaired surrogate written as a \\u escape")


def test_the_surrogate_message_quotes_the_string() -> None:
    problem = refused('{"a": "x\\ud800y"}')
    assert problem.message == (
        "string at $.a ('x\\ud800y') holds an unpaired surrogate written as a \\u escape"
    )


def test_brackets_after_an_unterminated_string_are_not_nesting() -> None:
    problem = refused('{"a": "[[[', max_depth=2)
    assert problem.code == "malformed_json"
