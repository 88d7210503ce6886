"""The gateway's JSON parser gives what ``json.loads`` gives, fast where msgspec is installed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.gate import fastcodec
from callgate.proxy import fastjson
from msgspec_hidden import without_msgspec

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
"""Any JSON value, with integers of any size, NaN and infinities, lone surrogates."""


def same(got: Any, expected: Any) -> bool:
    """Equal values of equal types all the way down (NaN equal to NaN, 1 unequal to 1.0)."""
    return repr(got) == repr(expected)


@given(VALUES, st.booleans())
def test_any_text_parses_as_json_loads_parses_it(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert same(fastjson.loads(text), json.loads(text))
    if ascii_only:  # as bytes, as the proxy reads them
        assert same(fastjson.loads(text.encode()), json.loads(text.encode()))


@pytest.mark.parametrize(
    "text",
    ['{"a": 1, "a": 2}', " \n[1, 2.50, -0.0, 1E2]\t", '"\\u00e9\\ud83d\\ude00"', "1e400", "[NaN]"],
)
def test_corners_parse_alike(text: str) -> None:
    assert same(fastjson.loads(text), json.loads(text))
    assert same(fastjson.loads(bytearray(text.encode())), json.loads(text))


@pytest.mark.parametrize("text", ["", "[1,", "{'a': 1}", "[1] x", "\ufeff[1]", b"\xff[1]"])
def test_bad_text_raises_json_loads_own_error(text: str | bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        fastjson.loads(text)
    assert type(got.value) is type(expected.value) and str(got.value) == str(expected.value)


def test_standard_json_never_reaches_the_slow_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fastjson.FAST  # the proxy extra installs msgspec

    def slow(data: Any) -> Any:
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(fastjson.json, "loads", slow)
    chunk = b'{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}'
    assert fastjson.loads(chunk)["choices"][0]["delta"] == {"content": "hi"}


CHUNK = b'{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}'
TEXTS = [
    CHUNK,
    "[1, 2.5, NaN]",
    '{"a": 1, "a": 2}',
    " \n[1, 2.50, -0.0, 1E2]\t",
    '"\\u00e9\\ud83d\\ude00"',
    '"\\ud800"',
    "123456789012345678901234567890",
    '{"a": -Infinity}',
    "[1e400]",
    "",
    '{"a": [1,}',
    "[1] x",
    b"\xff[1]",
]
"""Texts each parse reads alike with msgspec or without: values, refusals and bad text."""


def answers(read: Callable[[str | bytes], Any]) -> list[str]:
    """Each of :data:`TEXTS` as ``read`` answers it: the value, or the error and its text."""
    found = []
    for text in TEXTS:
        try:
            found.append(repr(read(text)))
        except ValueError as error:
            found.append(f"{type(error).__name__}: {error}")
    return found


def test_without_msgspec_in_the_library_it_is_the_json_module_with_the_same_answers() -> None:
    """msgspec hidden from the library's loader alone: the gateway's parse takes json."""
    fast = (answers(fastjson.loads), answers(fastjson.strict_loads))
    assert fastjson.fast_object(CHUNK) is not None
    with without_msgspec(fastjson):
        assert not fastcodec.FAST and not fastjson.FAST
        assert fastjson.json_encoder() is None and fastjson.pack_encoder() is None
        assert fastjson.fast_object(CHUNK) is None and fastjson.fast_string(b'"a"') is None
        read: list[object] = []
        loads = json.loads
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(
                json, "loads", lambda data, **hooks: read.append(data) or loads(data, **hooks)
            )
            assert (answers(fastjson.loads), answers(fastjson.strict_loads)) == fast
        assert read.count(CHUNK) == 2  # both parses read the standard chunk with json
    assert fastjson.FAST and fastjson.fast_object(CHUNK) is not None


def strict_reference(text: str | bytes) -> Any:
    """What ``strict_loads`` owes: ``json.loads`` refusing NaN, infinities and deep nesting."""
    try:
        return json.loads(text, parse_constant=fastjson._no_constant, parse_float=fastjson._finite)
    except RecursionError:
        raise ValueError("the JSON nests too deep to read") from None


@given(VALUES, st.booleans())
def test_strict_reads_any_text_as_its_reference_does(value: Any, ascii_only: bool) -> None:
    """Same values, or a ValueError from both, for every text (NaN and huge numbers too)."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    try:
        expected = strict_reference(text)
    except ValueError as error:
        with pytest.raises(ValueError) as got:
            fastjson.strict_loads(text)
        assert str(got.value) == str(error)
        return
    assert same(fastjson.strict_loads(text), expected)
    if ascii_only:
        assert same(fastjson.strict_loads(text.encode()), expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[NaN]", "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ("[1e400]", "the number 1e400 is past a double's range"),
        ("[-1e400]", "the number -1e400 is past a double's range"),
        ("[" * 100_000 + "]" * 100_000, "the JSON nests too deep to read"),
        ('{"a": [1,}', "Expecting value: line 1 column 10 (char 9)"),
    ],
)
def test_strict_refuses_what_could_not_be_written_back(text: str, message: str) -> None:
    with pytest.raises(ValueError) as got:
        fastjson.strict_loads(text)
    assert str(got.value) == message
    with pytest.raises(ValueError) as got:
        fastjson.strict_loads(text.encode())
    assert str(got.value) == message


@pytest.mark.parametrize(
    "text", ['{"a": 1, "a": 2}', '"\\ud800"', "123456789012345678901234567890", "[-0.0, 1E2]"]
)
def test_strict_corners_read_as_json_reads_them(text: str) -> None:
    assert same(fastjson.strict_loads(text), json.loads(text))


def test_a_standard_chunk_never_reaches_the_slow_strict_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def slow(data: Any, **hooks: Any) -> Any:
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(fastjson.json, "loads", slow)
    chunk = b'{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}'
    assert fastjson.strict_loads(chunk)["choices"][0]["delta"] == {"content": "hi"}
