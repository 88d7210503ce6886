"""The depth check before a strict parse: summed over the brackets left once strings are cut.

``_exceeds_depth`` cuts the strings out with the regex engine and sums the brackets left;
``_scan_depth`` walks the text one structural character at a time. On any text (valid JSON
or not: unterminated strings, stray backslashes, closes with nothing open) and any limit
they must say the same.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.gate.strictjson import _exceeds_depth, _scan_depth

PIECES = st.sampled_from(['"', "\\", "[", "]", "{", "}", "a", ":", ",", '\\"', "\n", "é"])
TEXTS = st.lists(PIECES, max_size=80).map("".join)


@settings(max_examples=500)
@given(TEXTS, st.integers(min_value=0, max_value=8))
def test_summed_depth_says_what_the_scan_says(text: str, max_depth: int) -> None:
    assert _exceeds_depth(text, max_depth) == _scan_depth(text, max_depth)


def test_brackets_inside_strings_do_not_count() -> None:
    text = '{"a": "[[[[[[", "b": [[1]]}'
    assert not _exceeds_depth(text, 3)
    assert _exceeds_depth(text, 2)


def test_an_unterminated_string_hides_the_rest() -> None:
    assert not _exceeds_depth('[["abc\\' + "[" * 10, 2)
    assert _exceeds_depth('[[["abc' + "[" * 10, 2)


def test_a_close_with_nothing_open_is_read_as_the_scan_reads_it() -> None:
    text = "]]]]" + "[" * 5
    assert _exceeds_depth(text, 4) and not _exceeds_depth(text, 5)


def test_the_scan_counts_from_nothing_open() -> None:
    """Nesting exactly at the limit passes the scan; one more bracket is over it."""
    assert not _scan_depth("[[1]]", 2) and not _scan_depth('{"a": [1]}', 2)
    assert _scan_depth("[[[1]]]", 2) and _scan_depth('{"a": {"b": []}}', 2)


def test_brackets_only_inside_strings_nest_nothing() -> None:
    """Over the cheap bound, but every bracket is in a string: no nesting at all."""
    assert not _exceeds_depth('"[[{"', 0) and not _scan_depth('"[[{"', 0)
    assert _exceeds_depth('["[["]', 0)


def test_a_stray_close_does_not_lower_the_count_past_nothing_open() -> None:
    """After a close with nothing open, each later open counts one from zero."""
    assert _exceeds_depth("][[][[", 2) and _scan_depth("][[][[", 2)
    assert not _exceeds_depth("][[][[", 3)
