"""The proxy's request reader: every hostile body is a clear 400, never a traceback.

Every field of each wire's request replaced by every JSON type, NaN, infinities, huge
and deep values: :func:`read_request` gives a mapping that strict JSON writes back
unchanged, or raises :class:`RequestBodyError` (a 400 with a message); nothing else.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.proxy import requests
from callgate.proxy.engine import RequestError
from callgate.proxy.requests import (
    MAX_REQUEST_DEPTH,
    RequestBodyError,
    output_token_limit,
    read_request,
    request_bytes,
)

TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
REQUESTS = {
    "chat": {
        "model": "gpt-4.1",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [TOOL],
        "tool_choice": "auto",
        "n": 1,
        "max_completion_tokens": 256,
        "stream_options": {"include_usage": True},
    },
    "messages": {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "system": "be brief",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
    },
    "responses": {
        "model": "gpt-4.1",
        "input": "hi",
        "stream": False,
        "max_output_tokens": 64,
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    },
}


def raw(text: str) -> bytes:
    return text.encode("utf-8")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{"model": NaN}', "NaN is not a JSON number"),
        ('{"model": "m", "temperature": Infinity}', "Infinity is not a JSON number"),
        ('{"model": "m", "temperature": 1e400}', "overflows to infinity"),
        ('{"model": "m", "seed": -1e400}', "overflows to infinity"),
        ('{"model": "m", "model": "n"}', "appears twice"),
        ("[" * 100_000 + "]" * 100_000, f"deeper than {MAX_REQUEST_DEPTH}"),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, f"deeper than {MAX_REQUEST_DEPTH}"),
        (
            '{"stream": "true", "model": "m"}',
            "'stream' must be true or false, not the string 'true'",
        ),
        ('{"model": 7}', "'model' must be a string, not a number"),
        ('{"n": true}', "'n' must be a count"),
        ('{"max_tokens": 0}', "'max_tokens' must be a count (an integer >= 1), not 0"),
        ('{"max_tokens": 1.5}', "'max_tokens' must be a count"),
        ('{"tools": {"a": 1}}', "'tools' must be a list, not an object"),
        ("[1, 2]", "must be a JSON object"),
        ('{"model": "m"} {}', "more text follows"),
        ("", "the request body is empty"),
        ("{", "not strict JSON"),
        ('{"model": "m", "x": ' + "9" * 5000 + "}", "exceeds the limit of 4300 digits"),
    ],
)
def test_a_hostile_body_is_a_clear_400(body: str, says: str) -> None:
    with pytest.raises(RequestBodyError) as caught:
        read_request(raw(body))
    assert says in str(caught.value)
    assert caught.value.status == 400 and isinstance(caught.value, RequestError)


LONG = "x" * 60


@pytest.mark.parametrize(
    ("body", "message", "code"),
    [
        ("", "the request body is empty: send one JSON object", "invalid_json"),
        ("[1, 2]", "the request body must be a JSON object", "invalid_json"),
        (
            "{",
            "the request body is not strict JSON: it is not valid JSON: Expecting property "
            "name enclosed in double quotes at line 1 column 2 (char 1)",
            "invalid_json",
        ),
        (
            "[" * 600 + "]" * 600,
            f"the request body is not strict JSON: the JSON nests deeper than "
            f"{MAX_REQUEST_DEPTH} levels",
            "invalid_json",
        ),
        ('{"model": 1.5}', "'model' must be a string, not a number", "invalid_request"),
        ('{"model": [1]}', "'model' must be a string, not a list", "invalid_request"),
        ('{"model": {}}', "'model' must be a string, not an object", "invalid_request"),
        (
            '{"stream": false, "model": true}',
            "'model' must be a string, not the boolean true",
            "invalid_request",
        ),
        (
            f'{{"stream": "{LONG}"}}',
            f"'stream' must be true or false, not the string {LONG[:40]!r}",
            "invalid_request",
        ),
    ],
)
def test_the_400_says_exactly_what_to_fix_with_the_wire_errors_code(
    body: str, message: str, code: str
) -> None:
    with pytest.raises(RequestBodyError) as caught:
        read_request(raw(body))
    assert (str(caught.value), caught.value.code) == (message, code)


def test_a_strict_json_problem_is_said_of_the_body_not_of_arguments() -> None:
    from callgate.proxy.requests import _of_the_body

    assert _of_the_body("arguments text is empty: x") == "its text is empty: x"
    assert _of_the_body("arguments are not valid JSON: x") == "it is not valid JSON: x"
    assert _of_the_body("arguments nest too deeply to parse") == "it nests too deeply to parse"
    assert _of_the_body("arguments exceed a parser limit: x") == "it exceeds a parser limit: x"
    assert _of_the_body("NaN is not a JSON number") == "NaN is not a JSON number"
    assert _of_the_body("the arguments are x") == "the arguments are x"


def test_a_request_error_is_invalid_request_by_default() -> None:
    assert RequestBodyError("x").code == "invalid_request"


def test_bytes_that_are_not_utf8_are_a_400() -> None:
    with pytest.raises(RequestBodyError, match="not UTF-8") as caught:
        read_request(b'{"model": "\xff"}')
    assert caught.value.code == "invalid_json"


@pytest.mark.parametrize("wire", REQUESTS)
def test_a_good_request_comes_back_as_sent(wire: str) -> None:
    body = json.dumps(REQUESTS[wire]).encode()
    assert read_request(body) == REQUESTS[wire]
    assert read_request(b"\xef\xbb\xbf" + body) == REQUESTS[wire]


@pytest.mark.parametrize(
    ("request_", "limit"),
    [
        (REQUESTS["chat"], 256),
        (REQUESTS["messages"], 1024),
        (REQUESTS["responses"], 64),
        ({"max_tokens": 100, "max_completion_tokens": 50}, 50),
        ({"model": "m"}, None),
        ({"max_tokens": None}, None),
        ({"max_tokens": 1}, 1),
        ({"max_output_tokens": 2}, 2),
        ({"max_tokens": 0, "max_output_tokens": 7}, 7),
        ({"max_tokens": True}, None),
    ],
)
def test_the_output_token_limit_is_read_from_the_wires_field(
    request_: dict[str, Any], limit: int | None
) -> None:
    assert output_token_limit(request_) == limit


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
HOSTILE = st.one_of(
    JSON_VALUES.map(json.dumps),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "9" * 4400, '"\\ud800"']),
    st.integers(1, 200_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 2_000).map(lambda n: '{"a":' * n + "0" + "}" * n),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(REQUESTS)), st.data())
def test_any_field_of_any_wire_replaced_by_anything_is_read_or_a_400(
    wire: str, data: st.DataObject
) -> None:
    request = REQUESTS[wire]
    field = data.draw(st.sampled_from([*request, "extra"]))
    value = data.draw(HOSTILE)
    members = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in request.items() if k != field]
    body = "{" + ", ".join([*members, f"{json.dumps(field)}: {value}"]) + "}"
    try:
        read = read_request(raw(body))
    except RequestBodyError as exc:
        assert str(exc) and exc.status == 400
        return
    assert json.loads(json.dumps(read, allow_nan=False)) == read  # strict JSON writes it back


def httpx_json(body: Any) -> bytes:
    """What httpx's ``json=`` sends for ``body`` (its own encoder's arguments)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def written(encode: Any, body: Any) -> Any:
    """The JSON ``encode`` writes for ``body`` read back in order, or the error it raised."""
    try:
        data = encode(body)
    except ValueError as exc:  # a lone surrogate is no UTF-8
        return type(exc)
    return json.loads(data, object_pairs_hook=list)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(REQUESTS)), st.data(), st.booleans())
def test_a_request_read_is_written_upstream_as_httpx_json_writes_it(
    wire: str, data: st.DataObject, fast: bool
) -> None:
    """The same members in the same order with the same values, msgspec or not."""
    request = REQUESTS[wire]
    field = data.draw(st.sampled_from([*request, "extra"]))
    value = data.draw(HOSTILE)
    members = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in request.items() if k != field]
    try:
        read = read_request(raw("{" + ", ".join([*members, f"{json.dumps(field)}: {value}"]) + "}"))
    except RequestBodyError:
        return
    encoder = requests._encode
    try:
        if not fast:  # an install without msgspec
            requests._encode = None
        assert written(request_bytes, read) == written(httpx_json, read)
    finally:
        requests._encode = encoder
