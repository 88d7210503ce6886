"""Tests for strict parsing of tool-call arguments."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.gate.findings import CODES, Finding, UnknownCodeError, finding
from callgate.gate.strictjson import MAX_INT_DIGITS, is_complete_object, parse_arguments


def only_finding(text: str, **kwargs: Any) -> Finding:
    value, problem = parse_arguments(text, **kwargs)
    assert value is None
    assert problem is not None
    return problem


# findings module


def test_codes_are_the_public_set() -> None:
    assert set(CODES) == {
        "identity_collision",
        "provider_error",
        "repeated_terminal",
        "text_call_set_aside",
        "token_limit",
        "no_finish_reason",
        "repaired_arguments",
        "missing_terminal",
        "duplicate_terminal",
        "delta_after_terminal",
        "wrong_terminal_reason",
        "malformed_json",
        "trailing_data",
        "non_finite_number",
        "duplicate_key",
        "lone_surrogate",
        "non_object_arguments",
        "unknown_tool",
        "unsupported_schema_keyword",
        "schema_invalid",
        "missing_name",
        "missing_id",
        "args_mismatch",
        "limit_exceeded",
        "duplicate_call_ignored",
        "call_in_reasoning",
        "invalid_fixture",
        "no_tool_calls",
        "malformed_chunk",
        "orphan_event",
        "stop_finish_reason",
        "trailing_terminal",
    }
    not_errors = {code: sev for code, (sev, _) in CODES.items() if sev != "error"}
    assert not_errors == {
        "duplicate_call_ignored": "info",
        "call_in_reasoning": "warning",
        "repeated_terminal": "warning",
        "text_call_set_aside": "warning",
        "no_tool_calls": "info",
        "stop_finish_reason": "warning",
        "trailing_terminal": "warning",
        "no_finish_reason": "warning",
        "repaired_arguments": "warning",
    }
    assert all(description for _, description in CODES.values())


def test_finding_helper_and_as_dict() -> None:
    made = finding("call_in_reasoning", "call inside reasoning", slot=2)
    assert made == Finding(
        code="call_in_reasoning", severity="warning", message="call inside reasoning", slot=2
    )
    assert made.as_dict() == {
        "code": "call_in_reasoning",
        "severity": "warning",
        "slot": 2,
        "message": "call inside reasoning",
    }
    assert finding("malformed_json", "m").slot is None


def test_finding_rejects_unknown_code() -> None:
    with pytest.raises(ValueError, match="no_such_code"):
        finding("no_such_code", "m")
    with pytest.raises(KeyError):
        finding("no_such_code", "m")
    assert str(UnknownCodeError("plain text")) == "plain text"


def test_finding_is_frozen() -> None:
    made = finding("malformed_json", "m")
    with pytest.raises(AttributeError):
        made.code = "other"  # type: ignore[misc]


# each rule


def test_valid_object() -> None:
    assert parse_arguments(' \n{"a": [1, 2.5, "x", null, true], "b": {}} \t') == (
        {"a": [1, 2.5, "x", None, True], "b": {}},
        None,
    )


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_malformed(text: str) -> None:
    problem = only_finding(text)
    assert problem.code == "malformed_json"
    assert "empty" in problem.message
    assert "line 1 column" in problem.message or "line 2 column" in problem.message


def test_malformed_json_says_where() -> None:
    problem = only_finding('{"a" 1}')
    assert problem.code == "malformed_json"
    assert problem.severity == "error"
    assert "Expecting ':' delimiter" in problem.message
    assert "line 1 column 6" in problem.message


def test_malformed_json_on_second_line() -> None:
    problem = only_finding('{\n  "a": tru\n}')
    assert problem.code == "malformed_json"
    assert "line 2 column" in problem.message


@pytest.mark.parametrize(
    "text",
    ["{'a': 1}", '{"a": 1,}', '{"a": 01}', '{"a": "\x01"}', "\ufeff{}", '{"a": undefined}'],
)
def test_lenient_forms_are_malformed(text: str) -> None:
    assert only_finding(text).code == "malformed_json"


@pytest.mark.parametrize("text", ['{"a": 1} x', '{"a": 1}{"b": 2}', "{} []", '{"a":1}\n\n,'])
def test_trailing_data(text: str) -> None:
    problem = only_finding(text)
    assert problem.code == "trailing_data"
    assert "more text follows" in problem.message
    assert "line" in problem.message


def test_non_breaking_space_is_not_json_whitespace() -> None:
    assert only_finding('{"a": 1}\u00a0').code == "trailing_data"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_constants(literal: str) -> None:
    problem = only_finding(f'{{"a": {{"b": [{literal}]}}}}')
    assert problem.code == "non_finite_number"
    assert literal in problem.message


def test_float_overflow_is_non_finite() -> None:
    problem = only_finding('{"a": 1e400}')
    assert problem.code == "non_finite_number"
    assert "1e400" in problem.message
    assert "infinity" in problem.message


def test_float_underflow_is_fine() -> None:
    assert parse_arguments('{"a": 1e-400}') == ({"a": 0.0}, None)


def test_duplicate_key_top_level() -> None:
    problem = only_finding('{"path": "a", "path": "b"}')
    assert problem.code == "duplicate_key"
    assert "'path'" in problem.message


def test_duplicate_key_nested_in_array() -> None:
    problem = only_finding('{"a": [1, {"k": 1, "j": 2, "k": 3}]}')
    assert problem.code == "duplicate_key"
    assert "'k'" in problem.message


def test_same_key_in_sibling_objects_is_fine() -> None:
    assert parse_arguments('{"a": {"k": 1}, "b": {"k": 2}}')[1] is None


def test_escaped_lone_surrogate_in_value() -> None:
    problem = only_finding('{"a": ["ok", "x\\ud800y"]}')
    assert problem.code == "lone_surrogate"
    assert "$.a[1]" in problem.message
    assert "unpaired surrogate" in problem.message


def test_escaped_lone_low_surrogate_in_key() -> None:
    problem = only_finding('{"a": {"\\udc00": 1}}')
    assert problem.code == "lone_surrogate"
    assert "key" in problem.message
    assert "$.a" in problem.message


def test_escaped_reversed_pair_is_lone() -> None:
    assert only_finding('{"a": "\\ude00\\ud83d"}').code == "lone_surrogate"


def test_escaped_surrogate_pair_is_fine() -> None:
    assert parse_arguments('{"a": "\\ud83d\\ude00"}') == ({"a": "\U0001f600"}, None)


def test_raw_surrogate_code_point() -> None:
    problem = only_finding('{"a": "\ud800"}')
    assert problem.code == "lone_surrogate"
    assert "U+D800" in problem.message
    assert "line 1 column 8 (char 7)" in problem.message


def test_escaped_backslash_before_u_is_not_a_surrogate() -> None:
    assert parse_arguments('{"a": "\\\\ud800"}') == ({"a": "\\ud800"}, None)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[1, 2]", "array"),
        ('"x"', "string"),
        ("3", "number"),
        ("null", "null"),
        ("true", "boolean"),
    ],
)
def test_non_object_arguments(text: str, kind: str) -> None:
    problem = only_finding(text)
    assert problem.code == "non_object_arguments"
    assert f"got a JSON {kind}" in problem.message


def test_depth_at_limit_is_fine_and_over_is_not() -> None:
    at_limit = '{"a":' * 3 + "1" + "}" * 3
    assert parse_arguments(at_limit, max_depth=3)[1] is None
    problem = only_finding('{"a":' * 4 + "1" + "}" * 4, max_depth=3)
    assert problem.code == "limit_exceeded"
    assert "3" in problem.message


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"a": "[[[[{{{{", 'b\\"[[': ['"[[[', "\\"]})
    assert parse_arguments(text, max_depth=2)[1] is None


def test_many_sibling_containers_are_not_deep() -> None:
    text = json.dumps({"a": [[1], [2], {"b": []}] * 200})
    assert parse_arguments(text, max_depth=4)[1] is None


def test_two_hundred_thousand_brackets() -> None:
    start = time.perf_counter()
    problem = only_finding("[" * 200_000)
    elapsed = time.perf_counter() - start
    assert problem.code == "limit_exceeded"
    assert "128" in problem.message
    assert elapsed < 1.0


def test_deep_object_inside_object() -> None:
    text = '{"a": ' + '{"b": ' * 200_000 + "1" + "}" * 200_000 + "}"
    assert only_finding(text).code == "limit_exceeded"


def test_recursion_in_json_becomes_limit_exceeded() -> None:
    depth = 200_000
    problem = only_finding("[" * depth + "]" * depth, max_depth=10 * depth)
    assert problem.code == "limit_exceeded"


def test_huge_integer() -> None:
    start = time.perf_counter()
    problem = only_finding('{"n": ' + "7" * 5000 + "}")
    elapsed = time.perf_counter() - start
    assert problem.code == "limit_exceeded"
    assert "5000 digits" in problem.message
    assert elapsed < 1.0


def test_integer_at_digit_limit_is_fine() -> None:
    digits = "9" * MAX_INT_DIGITS
    value, problem = parse_arguments('{"n": -' + digits + "}")
    assert problem is None
    assert value == {"n": -int(digits)}
    assert only_finding('{"n": -' + digits + "9}").code == "limit_exceeded"


def test_huge_top_level_integer() -> None:
    assert only_finding("1" * 5000).code == "limit_exceeded"


def test_is_complete_object() -> None:
    assert is_complete_object('{"a": 1}')
    assert is_complete_object(" {} ")
    assert not is_complete_object('{"a": 1')
    assert not is_complete_object("[]")
    assert not is_complete_object('{"a": 1, "a": 2}')
    assert not is_complete_object("")


# properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8"))
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)
json_objects = st.dictionaries(st.text(st.characters(codec="utf-8")), json_values, max_size=6)


def nesting(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    return 0


@given(json_objects, st.booleans(), st.sampled_from([None, 2]))
def test_round_trip(obj: dict[str, Any], ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(obj, ensure_ascii=ascii_only, indent=indent)
    assert parse_arguments(text) == (obj, None)
    assert is_complete_object(text)


@given(json_objects)
def test_depth_limit_matches_real_nesting(obj: dict[str, Any]) -> None:
    text = json.dumps(obj)
    depth = nesting(obj)
    assert parse_arguments(text, max_depth=depth) == (obj, None)
    problem = only_finding(text, max_depth=depth - 1)
    assert problem.code == "limit_exceeded"


def check_total(text: str, max_depth: int = 128) -> None:
    value, problem = parse_arguments(text, max_depth=max_depth)
    assert (value is None) != (problem is None)
    if problem is not None:
        assert problem.code in CODES
        assert problem.message
    else:
        assert isinstance(value, dict)


@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    check_total(text)


json_ish = st.lists(
    st.sampled_from(
        [
            "{",
            "}",
            "[",
            "]",
            '"',
            ":",
            ",",
            " ",
            "\n",
            "\\",
            "\\u",
            "\\\\",
            "\\n",
            "d800",
            "dc00",
            "\ud800",
            '"a"',
            '"b"',
            "1",
            "-",
            "0",
            ".",
            "e",
            "E",
            "+",
            "true",
            "false",
            "null",
            "NaN",
            "Infinity",
            "1e400",
            "9" * 50,
            "\u00a0",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300)
@given(json_ish, st.integers(min_value=-1, max_value=6))
def test_never_raises_on_json_ish_text(text: str, max_depth: int) -> None:
    check_total(text, max_depth=max_depth)
    check_total("{" + text, max_depth=max_depth)
    check_total('{"k": ' + text + "}")


_NUMBERS = st.one_of(
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["9" * 4301, "-" + "9" * 4300, "1e400", "-1e999", "NaN", "1.5e308"]),
)


@st.composite
def _json_texts(draw: st.DrawFn) -> str:
    """Objects of numbers (some past the limits, as literals), a key repeated now and then."""
    keys = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=5))
    values = [draw(_NUMBERS) for _ in keys]
    body = ", ".join(
        f"{json.dumps(k)}: {v if isinstance(v, str) else json.dumps(v)}"
        for k, v in zip(keys, values, strict=True)
    )
    return "{" + body + ', "inner": {' + body + "}}"


@settings(max_examples=200)
@given(_json_texts())
def test_integers_parsed_natively_read_as_the_strict_hooks_read_them(text: str) -> None:
    from callgate.gate import strictjson

    value, problem = parse_arguments(text)
    try:
        expected: Any = strictjson._DECODER.decode(text)
    except Exception as error:  # the strict hooks refused: the same refusal, by its kind
        assert value is None and problem is not None
        kinds = {
            "_DuplicateKey": "duplicate_key",
            "_NonFinite": "non_finite_number",
            "_IntTooLong": "limit_exceeded",
        }
        assert problem.code == kinds.get(type(error).__name__, "limit_exceeded")
        return
    assert problem is None
    assert value == expected


# the fast read (msgspec) against the json module's read

_KEYS = st.sampled_from(["a", "b", "a:b", 'q"', "\\", "é", ":", ""])
_CHARS = st.sampled_from(["x", ":", '"', "\\", "/", "\n", "\t", "\x01", "é", "→", "😀", " "])


@st.composite
def _written_string(draw: st.DrawFn, content: str | None = None) -> str:
    """A JSON string of ``content`` (else drawn), each character raw or escaped at a whim."""
    out = ['"']
    for char in draw(st.lists(_CHARS, max_size=6)) if content is None else content:
        short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "/": "\\/"}
        raw = char not in '"\\' and char >= " "
        way = draw(st.sampled_from(["raw", "short", "u", "U"]))
        if way == "raw" and raw:
            out.append(char)
        elif way == "short" and char in short:
            out.append(short[char])
        elif ord(char) > 0xFFFF:  # a pair of surrogate escapes
            pair = char.encode("utf-16-be")
            hexes = (pair[:2].hex(), pair[2:].hex())
            out.append("".join(f"\\u{h}" for h in hexes))
        else:
            code = f"{ord(char):04x}"
            out.append("\\u" + (code.upper() if way == "U" else code))
    if draw(st.booleans()) and draw(st.booleans()):
        out.append(draw(st.sampled_from(["\\ud800", "\\udc00", "\ud800"])))
    out.append('"')
    return "".join(out)


_NUMBER_TEXTS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-0", "0e0", "1E+2", "1e-400", "2.5E-3", "1e400", "9" * 4301, "01", "1."]),
)
_WS = st.sampled_from(["", " ", "\n  ", "\t"])


@st.composite
def _written_value(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON text as a writer may set it out: keys repeated now and then, colons in strings."""
    kind = draw(st.sampled_from(["object", "object", "array", "string", "number", "literal"]))
    if depth >= 3 and kind in ("object", "array"):
        kind = "string"
    if kind == "object":
        members = []
        for _ in range(draw(st.integers(min_value=0, max_value=4))):
            key = draw(_written_string(draw(_KEYS)))
            gap, after = draw(_WS), draw(_WS)
            members.append(f"{key}{gap}:{after}{draw(_written_value(depth + 1))}")
        return "{" + ",".join(members) + "}"
    if kind == "array":
        items = [draw(_written_value(depth + 1)) for _ in range(draw(st.integers(0, 3)))]
        return "[" + ", ".join(items) + "]"
    if kind == "string":
        return str(draw(_written_string()))
    if kind == "number":
        return str(draw(_NUMBER_TEXTS))
    return str(draw(st.sampled_from(["true", "false", "null", "NaN", "-Infinity"])))


@settings(max_examples=400)
@given(
    _written_value(),
    _WS,
    st.sampled_from(["", " ", " x", "{}"]),
    st.sampled_from([128, 128, -1, 0, 1, 2, 3, 4]),
)
def test_the_fast_read_answers_as_the_json_module_reads(
    body: str, lead: str, tail: str, depth: int
) -> None:
    from unittest import mock

    from callgate.gate import strictjson

    for text in (lead + body + tail, '{"k":' + body + "}", body):
        fast = (
            parse_arguments(text, max_depth=depth),
            strictjson.parse_value(text, max_depth=depth),
        )
        with mock.patch.object(strictjson, "_FAST", None):
            slow = (
                parse_arguments(text, max_depth=depth),
                strictjson.parse_value(text, max_depth=depth),
            )
        assert repr(fast) == repr(slow), text


@pytest.mark.parametrize(
    ("text", "fast"),
    [
        ('{"a": 1, "b": {"c": [1.5, "x:y"]}}', True),
        ('{"a": 1, "a": 2}', False),
        ('{"a:b": {"c": 1, "c": 2}}', False),
        ('{"a": "\\u003a", "a": 1}', False),
        ('{"a": "\\u00e9", "b": "\\u003a"}', True),
        ('{"a": "\\ud800"}', False),
        ('{"a": "\\\\u003a"}', False),
        ('{"a": 1e400}', False),
        ('{"a": 1} x', False),
    ],
)
def test_the_fast_read_takes_only_what_it_can_answer(text: str, fast: bool) -> None:
    from callgate.gate import strictjson

    taken, value = strictjson._fast_decode(text)
    assert taken is fast
    if fast:
        assert value == json.loads(text)


def test_the_fast_read_is_taken_where_it_is_the_cheaper() -> None:
    from callgate.gate import strictjson

    dense = json.dumps({"rows": [{"id": n, "ok": True} for n in range(50)]})
    sparse = json.dumps({"path": "a.txt", "content": "prose: " * 400})
    assert strictjson._fast_read(dense, 128)[0]
    assert not strictjson._fast_read(sparse, 128)[0]
    assert strictjson._fast_read(sparse, 0)[0]  # its nesting is then counted on the value
    for text in (dense, sparse):
        assert parse_arguments(text) == (json.loads(text), None)
    assert only_finding(sparse, max_depth=0).code == "limit_exceeded"


@pytest.mark.parametrize("escape", ["\\u003a", "\\u003A"])
def test_a_repeated_key_is_found_whichever_value_holds_an_escaped_colon(escape: str) -> None:
    for text in (f'{{"a": 1, "a": "{escape}"}}', f'{{"a": "{escape}", "a": 1}}'):
        assert only_finding(text).code == "duplicate_key"


def test_with_no_digit_limit_the_strict_read_still_refuses_a_long_integer() -> None:
    import sys

    text = '{"n": ' + "7" * (MAX_INT_DIGITS + 1) + "}"
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert only_finding(text).code == "limit_exceeded"
    finally:
        sys.set_int_max_str_digits(before)


def test_the_fast_read_takes_a_text_up_to_one_container_per_dense_characters() -> None:
    from callgate.gate.strictjson import DENSE, _fast_read

    def sized(length: int) -> str:
        """A one-object text of exactly ``length`` characters (one container)."""
        return '{"k": "' + "a" * (length - 9) + '"}'

    assert len(sized(2 * DENSE)) == 2 * DENSE
    assert _fast_read(sized(2 * DENSE - 1), 128)[0]
    assert not _fast_read(sized(2 * DENSE), 128)[0]
    over = '{"k": [' + "1," * 200 + '"' + "a" * 2000 + '"]}'  # two containers, long: sparse
    assert not _fast_read(over, 2)[0]  # its bound is at the limit: the text's scan decides
    assert _fast_read(over, 1)[0]  # over it: the value's walk decides


def test_parse_value_says_how_deep_at_its_default_limit() -> None:
    from callgate.gate.strictjson import parse_value

    assert parse_value("[" * 128 + "]" * 128)[1] is None
    value, problem = parse_value("[" * 129 + "]" * 129)
    assert value is None and problem is not None
    assert problem.code == "limit_exceeded"
    assert problem.message == "the JSON nests deeper than 128 levels"


_EITHER_WAY = [
    '{"a": 1, "b": {"c": [1.5, "x:y"]}}',
    json.dumps({"rows": [{"id": n, "ok": True} for n in range(20)]}),
    '{"a": 1, "a": 2}',
    '{"a": "\\u003a", "a": 1}',
    '{"a": NaN}',
    '{"a": 1e400}',
    '{"n": ' + "7" * (MAX_INT_DIGITS + 1) + "}",
    '{"a": "\\ud800"}',
    '{"a": 1} x',
    '{"a": [1,}',
    "",
    "[1, 2]",
    "[" * 129 + "]" * 129,
]
"""Texts the strict read answers alike with msgspec or without: values and each finding."""


def test_without_msgspec_in_the_library_the_strict_read_is_the_json_modules() -> None:
    """msgspec hidden from the library's loader alone: the same values and findings."""
    from callgate.gate import fastcodec, strictjson
    from msgspec_hidden import without_msgspec

    def read() -> list[str]:
        return [repr((parse_arguments(t), strictjson.parse_value(t))) for t in _EITHER_WAY]

    fast = read()
    assert strictjson._fast_decode(_EITHER_WAY[0])[0]  # msgspec reads it
    with without_msgspec(strictjson):
        assert not fastcodec.FAST and strictjson._FAST is None
        assert strictjson._fast_decode(_EITHER_WAY[0]) == (False, None)
        assert read() == fast
    assert strictjson._FAST is not None and strictjson._fast_decode(_EITHER_WAY[0])[0]
