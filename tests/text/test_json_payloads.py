"""Tests for the JSON-payload text-format parsers (tool_call tag, Mistral, Llama, codec, ...)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.strategies.text.base import Parser, TextCall
from callgate.strategies.text.json_payloads import (
    JSON_PARSERS,
    parse_bare_json,
    parse_bracket_tool_calls,
    parse_codec,
    parse_command_r,
    parse_fenced_json,
    parse_granite,
    parse_python_tag,
    parse_tool_call_json,
    parse_tools_tag,
)
from callgate.testing.plans import JSON_OBJECTS

WEATHER = TextCall("get_weather", {"city": "Paris"})
TIME = TextCall("get_time", {"zone": "Europe/Paris"})
SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "get_time": {"type": "object", "properties": {"zone": {"type": "string"}}},
}

GENERAL = [parse_tool_call_json, parse_tools_tag, parse_fenced_json]
"""Parsers that take one call object or an array of them, with every key alias."""


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_contract_names() -> None:
    assert set(JSON_PARSERS) == {
        "tool_call_tag",
        "tools_tag",
        "fenced_json",
        "bracket_tool_calls",
        "bare_json",
        "python_tag",
        "granite",
        "command_r",
        "codec",
    }
    assert JSON_PARSERS["tool_call_tag"] is parse_tool_call_json
    assert JSON_PARSERS["codec"] is parse_codec


# tool_call tag (Hermes, Qwen2.5/3), tools tag (Gemma fallback), fenced json


def test_qwen_tool_call_shape() -> None:
    payload = '\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    assert parse_tool_call_json(payload, None) == [WEATHER]


@pytest.mark.parametrize("parse", GENERAL)
def test_general_object_and_array(parse: Parser) -> None:
    one = dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    both = dumps(
        [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_time", "arguments": {"zone": "Europe/Paris"}},
        ]
    )
    assert parse(one, None) == [WEATHER]
    assert parse(f"  {both}\n", None) == [WEATHER, TIME]


@pytest.mark.parametrize("parse", GENERAL)
@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"tool": "get_weather", "parameters": {"city": "Paris"}}, WEATHER),
        ({"tool_name": "get_weather", "args": {"city": "Paris"}}, WEATHER),
        ({"name": "get_weather", "input": {"city": "Paris"}}, WEATHER),
        ({"name": "get_weather", "arguments": '{"city": "Paris"}'}, WEATHER),
        ({"name": "get_weather", "arguments": {"city": "Paris"}, "type": "function"}, WEATHER),
        ({"name": "get_time"}, TextCall("get_time", {})),
        (
            {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"},
            TextCall("get_weather", {"city": "Paris"}, "call_1"),
        ),
        (
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            TextCall("get_weather", {"city": "Paris"}, "call_9"),
        ),
        ({"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}, WEATHER),
        ({"name": "get_weather", "arguments": {"city": "Paris"}, "id": ""}, WEATHER),
    ],
)
def test_key_aliases(parse: Parser, obj: dict[str, Any], expected: TextCall) -> None:
    assert parse(dumps(obj), None) == [expected]


@pytest.mark.parametrize("parse", GENERAL)
def test_unicode_and_nested_arguments(parse: Parser) -> None:
    arguments = {
        "text": 'Grüße, 東京 🌧 \u2028 "quoted" \\ </tool_call>',
        "filters": {"days": [1, 2, {"deep": [None, True, -0.5, 1e300]}], "empty": {}},
        "ключ": [],
    }
    for ensure_ascii in (True, False):
        payload = json.dumps(
            {"name": "search_web", "arguments": arguments}, ensure_ascii=ensure_ascii
        )
        assert parse(payload, None) == [TextCall("search_web", arguments)]


NOT_CALLS = [
    "",
    "   \n",
    "I will call get_weather for Paris.",
    '{"city": "Paris"}',
    '{"type": "object", "properties": {"city": {"type": "string"}}}',
    "[]",
    "{}",
    '[{"city": "Paris"}]',
    '["get_weather"]',
    '"get_weather"',
    "null",
    # broken or non-strict JSON
    '{"name": "get_weather", "arguments": {"city": "Paris"}',
    '{"name": "get_weather", "arguments": {"city": "Paris"}}}',
    '{"name": "get_weather", "arguments": {"city": "Paris"}} and then',
    '{"name": "get_weather", "arguments": {"city": "Paris"}} {"name": "get_time"}',
    "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}",
    '{"name": "get_weather", "arguments": {"temp": NaN}}',
    '{"name": "get_weather", "arguments": {"temp": Infinity}}',
    '{"name": "get_weather", "arguments": {"temp": 1e400}}',
    '{"name": "get_weather", "arguments": {"city": "Paris", "city": "Lyon"}}',
    '{"name": "get_weather", "name": "get_time", "arguments": {}}',
    '{"name": "get_weather", "arguments": {"city": "\\ud800"}}',
    '{"name": "get_weather", "arguments": {"city": "Paris",}}',
    # shapes that are not calls
    '{"name": "", "arguments": {}}',
    '{"name": "get weather", "arguments": {}}',
    '{"name": " get_weather", "arguments": {}}',
    '{"name": 42, "arguments": {}}',
    '{"name": null, "arguments": {}}',
    '{"name": "get_weather", "arguments": null}',
    '{"name": "get_weather", "arguments": ["Paris"]}',
    '{"name": "get_weather", "arguments": "Paris"}',
    '{"name": "get_weather", "arguments": "[\\"Paris\\"]"}',
    '{"name": "get_weather", "arguments": "{\\"a\\": NaN}"}',
    '{"name": "get_weather", "arguments": "{\\"a\\": 1} x"}',
    '{"name": "get_weather", "tool": "get_time", "arguments": {}}',
    '{"name": "get_weather", "arguments": {}, "parameters": {}}',
    '{"name": "get_weather", "arguments": {}, "id": 7}',
    '{"name": "get_weather", "arguments": {}, "id": "a", "tool_call_id": "b"}',
    '{"name": "f", "function": {"name": "get_weather", "arguments": {}}}',
    '{"function": {"arguments": {}}}',
    '{"function": {"name": "get_weather", "arguments": {}}, "arguments": {}}',
    '[{"name": "get_weather", "arguments": {}}, {"arguments": {}}]',
    '[{"name": "get_weather", "arguments": {}}, "and"]',
    # the other payloads that share the <tool_call> tag
    "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
    "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>",
]


@pytest.mark.parametrize("parse", GENERAL)
@pytest.mark.parametrize("payload", NOT_CALLS)
def test_general_near_misses(parse: Parser, payload: str) -> None:
    assert parse(payload, None) is None


def test_fenced_json_example_is_not_a_call() -> None:
    example = '\n{\n  "city": "Paris",\n  "forecast": [{"day": 1, "high": 21}]\n}\n'
    assert parse_fenced_json(example, None) is None
    call = '\n{\n  "name": "get_weather",\n  "arguments": {"city": "Paris"}\n}\n'
    assert parse_fenced_json(call, None) == [WEATHER]


def test_data_with_a_name_key_is_not_a_call() -> None:
    assert parse_fenced_json('[{"name": "Alice", "age": 30}]', None) is None
    assert parse_fenced_json('{"name": "ping"}', None) == [TextCall("ping", {})]


def test_a_tool_definition_is_not_a_call() -> None:
    definition = (
        '{"name": "get_weather", "description": "Weather for a city", '
        '"parameters": {"type": "object", "properties": {}}}'
    )
    for parse in (parse_fenced_json, parse_tools_tag, parse_tool_call_json):
        assert parse(definition, None) is None


def test_tools_tag_gemma_shape() -> None:
    payload = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]'
    assert parse_tools_tag(payload, None) == [WEATHER]


def test_schemas_are_not_consulted_by_delimited_formats() -> None:
    payload = '{"name": "unknown_tool", "arguments": {"x": 1}}'
    assert parse_tool_call_json(payload, SCHEMAS) == [TextCall("unknown_tool", {"x": 1})]


def test_deep_nesting_is_refused_not_raised() -> None:
    deep = '{"name": "f", "arguments": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"
    for parse in JSON_PARSERS.values():
        assert parse(deep, None) is None


# Mistral [TOOL_CALLS]


def test_mistral_pre_v11_array() -> None:
    payload = (
        '[{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}, '
        '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}, "id": "f5g6h7i8j"}]'
    )
    expected = [
        TextCall("get_weather", {"city": "Paris"}, "a1b2c3d4e"),
        TextCall("get_time", {"zone": "Europe/Paris"}, "f5g6h7i8j"),
    ]
    assert parse_bracket_tool_calls(payload, None) == expected
    assert parse_bracket_tool_calls(" " + payload + "</s>", None) == expected
    assert parse_bracket_tool_calls(payload + " \n</s>\n", None) == expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('get_weather[ARGS]{"city": "Paris"}', [WEATHER]),
        ('get_weather[ARGS]{"city": "Paris"}</s>', [WEATHER]),
        (
            'get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"zone": "Europe/Paris"}',
            [WEATHER, TIME],
        ),
        (
            'get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}'
            '[TOOL_CALLS]get_time[CALL_ID]f5g6h7i8j[ARGS]{"zone": "Europe/Paris"}</s>',
            [
                TextCall("get_weather", {"city": "Paris"}, "a1b2c3d4e"),
                TextCall("get_time", {"zone": "Europe/Paris"}, "f5g6h7i8j"),
            ],
        ),
        (
            'get_weather{"city": "Paris"}[TOOL_CALLS]get_time{"zone": "Europe/Paris"}',
            [WEATHER, TIME],
        ),
        ("get_time[ARGS]{}", [TextCall("get_time", {})]),
        (
            'note[ARGS]{"text": "a [TOOL_CALLS] b[ARGS]{} </s>"}',
            [TextCall("note", {"text": "a [TOOL_CALLS] b[ARGS]{} </s>"})],
        ),
        (
            'get_weather[ARGS]{"city": "東京", "opts": {"units": ["c"]}}',
            [TextCall("get_weather", {"city": "東京", "opts": {"units": ["c"]}})],
        ),
    ],
)
def test_mistral_v11(payload: str, expected: list[TextCall]) -> None:
    assert parse_bracket_tool_calls(payload, None) == expected


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "</s>",
        "get_weather",
        "get_weather[ARGS]",
        "get_weather[ARGS]</s>",
        '[ARGS]{"city": "Paris"}',
        'get_weather[CALL_ID]a1b2c3d4e{"city": "Paris"}',
        'get_weather[CALL_ID][ARGS]{"city": "Paris"}',
        'get_weather[ARGS]["Paris"]',
        'get_weather[ARGS]"Paris"',
        'get_weather[ARGS]{"city": "Paris"} thanks',
        'get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]',
        'get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time',
        'get_weather[ARGS]{"city": "Paris"}get_time[ARGS]{}',
        'get_weather[ARGS]{"city": NaN}',
        'get_weather[ARGS]{"city": "Paris", "city": "Lyon"}',
        'get weather[ARGS]{"city": "Paris"}',
        'get_weather[ARGS]{"city": "Paris"}</s></s>',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}][TOOL_CALLS]',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}] ok',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "[]",
        '[{"arguments": {"city": "Paris"}}]',
        "Sure, I can help with that.",
    ],
)
def test_mistral_near_misses(payload: str) -> None:
    assert parse_bracket_tool_calls(payload, None) is None


# bare JSON


def test_bare_json_exact_keys() -> None:
    assert parse_bare_json('{"name": "get_weather", "arguments": {"city": "Paris"}}', None) == [
        WEATHER
    ]
    assert parse_bare_json('{"tool": "get_weather", "parameters": {"city": "Paris"}}', None) == [
        WEATHER
    ]
    both = dumps(
        [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_time", "arguments": {"zone": "Europe/Paris"}},
        ]
    )
    assert parse_bare_json(both, SCHEMAS) == [WEATHER, TIME]


@pytest.mark.parametrize(
    "payload",
    [
        '{"name": "get_weather"}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "type": "function"}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}',
        '{"type": "function", "function": {"name": "get_weather", "arguments": {}}}',
        '{"name": "Alice", "age": 30}',
        '{"name": "Alice", "input": "hello"}',
        '{"name": "get_weather", "tool": "get_time"}',
        '{"arguments": {}, "parameters": {}}',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "x"}]',
        "[]",
        "Here is the answer: 42",
        '{"name": "get_weather", "arguments": {"city": "Paris"}} trailing',
    ],
)
def test_bare_json_near_misses(payload: str) -> None:
    assert parse_bare_json(payload, None) is None
    assert parse_bare_json(payload, SCHEMAS) is None


def test_bare_json_schemas_decide() -> None:
    answer = '{"name": "Alice", "args": {"age": 30}}'
    assert parse_bare_json(answer, None) == [TextCall("Alice", {"age": 30})]
    assert parse_bare_json(answer, SCHEMAS) is None
    assert parse_bare_json('{"name": "get_weather", "arguments": {}}', SCHEMAS) is None
    assert parse_bare_json('{"name": "get_weather", "arguments": {"city": 7}}', SCHEMAS) is None
    wrong = '{"name": "get_weather", "arguments": {"city": "Paris", "units": "c"}}'
    assert parse_bare_json(wrong, SCHEMAS) is None
    assert parse_bare_json('{"name": "get_weather", "arguments": {"city": "Paris"}}', {}) is None
    encoded = '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}'
    assert parse_bare_json(encoded, SCHEMAS) == [WEATHER]


# Llama <|python_tag|>


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"name": "get_weather", "parameters": {"city": "Paris"}}', [WEATHER]),
        ('{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>', [WEATHER]),
        ('{"name": "get_weather", "parameters": {"city": "Paris"}}\n<|eot_id|>', [WEATHER]),
        (
            '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
            '{"name": "get_time", "parameters": {"zone": "Europe/Paris"}}<|eom_id|>',
            [WEATHER, TIME],
        ),
        (
            '{"name": "get_weather", "arguments": {"city": "Paris"}} ;\n'
            '{"type": "function", "name": "get_time", "parameters": {"zone": "Europe/Paris"}}',
            [WEATHER, TIME],
        ),
        (
            '{"name": "note", "parameters": {"text": "a; {\\"b\\": 1}; <|eom_id|>"}}',
            [TextCall("note", {"text": 'a; {"b": 1}; <|eom_id|>'})],
        ),
    ],
)
def test_python_tag(payload: str, expected: list[TextCall]) -> None:
    assert parse_python_tag(payload, None) == expected


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "<|eom_id|>",
        'brave_search.call(query="weather in Paris")<|eom_id|>',
        '{"name": "get_weather", "parameters": {"city": "Paris"}};',
        '{"name": "get_weather", "parameters": {"city": "Paris"}};;{"name": "get_time"}',
        '{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time"}',
        '{"name": "get_weather", "parameters": {"city": "Paris"}} {"name": "get_time"}',
        '; {"name": "get_weather", "parameters": {"city": "Paris"}}',
        '[{"name": "get_weather", "parameters": {"city": "Paris"}}]',
        '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|><|eot_id|>',
        '{"name": "get_weather", "parameters": {"city": "Paris"}}; {"parameters": {}}',
        '{"name": "get_weather", "parameters": {"city": NaN}}',
        '{"name": "get_weather", "parameters": {"city": "Paris"}',
    ],
)
def test_python_tag_near_misses(payload: str) -> None:
    assert parse_python_tag(payload, None) is None


# Granite <|tool_call|>, Command R7B <|START_ACTION|>


def test_granite() -> None:
    payload = dumps(
        [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_time", "arguments": {"zone": "Europe/Paris"}},
        ]
    )
    assert parse_granite(payload, None) == [WEATHER, TIME]
    assert parse_granite(' [{"name": "get_time", "arguments": {}}]\n', None) == [
        TextCall("get_time", {})
    ]
    assert parse_granite('{"name": "get_weather", "arguments": {"city": "Paris"}}', None) is None
    assert (
        parse_granite('[{"name": "get_weather", "arguments": {"city": "Paris"}}] done', None)
        is None
    )
    assert parse_granite("[]", None) is None


def test_command_r() -> None:
    payload = """[
    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}},
    {"tool_call_id": "1", "tool_name": "get_time", "parameters": {"zone": "Europe/Paris"}}
]"""
    assert parse_command_r(payload, None) == [
        TextCall("get_weather", {"city": "Paris"}, "0"),
        TextCall("get_time", {"zone": "Europe/Paris"}, "1"),
    ]
    assert parse_command_r('[{"tool_name": "get_time", "parameters": {}}]', None) == [
        TextCall("get_time", {})
    ]
    single = '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}'
    assert parse_command_r(single, None) is None
    assert parse_command_r('[{"tool_call_id": 0, "tool_name": "get_time"}]', None) is None
    assert parse_command_r('[{"parameters": {"city": "Paris"}}]', None) is None
    assert parse_command_r("I will look it up.", None) is None


# callgate's codec


def test_codec() -> None:
    assert parse_codec('{"name": "get_weather", "arguments": {"city": "Paris"}}', None) == [WEATHER]
    with_id = '\n{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}\n'
    assert parse_codec(with_id, None) == [TextCall("get_weather", {"city": "Paris"}, "c1")]


@pytest.mark.parametrize(
    "payload",
    [
        '{"name": "get_weather"}',
        '{"arguments": {"city": "Paris"}}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "type": "function"}',
        '{"tool": "get_weather", "arguments": {"city": "Paris"}}',
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "id": 1}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "id": ""}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "id": null}',
        '{"name": "get weather", "arguments": {}}',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        '{"type": "function", "function": {"name": "get_weather", "arguments": {}}}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}{"name": "get_time"}',
        '{"name": "get_weather", "arguments": {"n": NaN}}',
    ],
)
def test_codec_near_misses(payload: str) -> None:
    assert parse_codec(payload, None) is None


# size: large payloads (their speed is measured by bench/, not asserted here)


BIG = 200_000


@pytest.mark.parametrize(
    ("parse", "render"),
    [
        (
            parse_tool_call_json,
            lambda n: dumps([{"name": "f", "arguments": {"i": i}} for i in range(n)]),
        ),
        (parse_granite, lambda n: dumps([{"name": "f", "arguments": {"i": i}} for i in range(n)])),
        (
            parse_bare_json,
            lambda n: dumps([{"name": "f", "arguments": {"i": i}} for i in range(n)]),
        ),
        (
            parse_bracket_tool_calls,
            lambda n: "[TOOL_CALLS]".join(f'f[ARGS]{{"i": {i}}}' for i in range(n)),
        ),
        (
            parse_python_tag,
            lambda n: "; ".join(f'{{"name": "f", "parameters": {{"i": {i}}}}}' for i in range(n)),
        ),
    ],
)
def test_many_calls_all_parse(parse: Parser, render: Callable[[int], str]) -> None:
    result = parse(render(10_000), None)
    assert result is not None
    assert [call.arguments["i"] for call in result] == list(range(10_000))


@pytest.mark.parametrize("parse", list(JSON_PARSERS.values()))
@pytest.mark.parametrize(
    "payload",
    [
        '{"name": "f", "arguments": {"text": "' + "x" * BIG + '"}}',
        "[TOOL_CALLS]" * (BIG // 12),
        ";" * BIG,
        "{" * BIG,
        "[" * BIG,
        '"' + "\\" * BIG,
        "f[ARGS]{}" * (BIG // 9),
        "<|eom_id|>" * (BIG // 10),
        "a" * BIG,
    ],
)
def test_large_hostile_payloads_never_raise(parse: Parser, payload: str) -> None:
    result = parse(payload, None)
    assert result is None or all(isinstance(call, TextCall) for call in result)


# properties

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,30}", fullmatch=True)
IDS = st.none() | st.from_regex(r"[A-Za-z0-9]{9}", fullmatch=True)
ARGUMENTS = JSON_OBJECTS
"""Arguments with JSON at its edges: the kit's own generator."""
CALLS = st.lists(st.builds(TextCall, NAMES, ARGUMENTS, IDS), min_size=1, max_size=4)


def _openai_shape(call: TextCall, draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    function: dict[str, Any] = {"name": call.name}
    target = draw(st.sampled_from(["flat", "nested"]))
    inner = function if target == "nested" else obj
    if target == "flat":
        obj[draw(st.sampled_from(["name", "tool", "tool_name"]))] = call.name
    arg_key = draw(st.sampled_from(["arguments", "parameters", "args", "input"]))
    written: bool = draw(st.booleans())
    if call.arguments or written:
        encoded = draw(st.booleans())
        inner[arg_key] = dumps(call.arguments) if encoded else call.arguments
    if target == "nested":
        obj["type"] = "function"
        obj["function"] = function
    if call.id is not None:
        obj[draw(st.sampled_from(["id", "tool_call_id"]))] = call.id
    return obj


@st.composite
def general_payload(draw: st.DrawFn) -> tuple[list[TextCall], str]:
    calls = draw(CALLS)
    objects = [_openai_shape(call, draw) for call in calls]
    value: Any = objects[0] if len(objects) == 1 and draw(st.booleans()) else objects
    ascii_only = draw(st.booleans())
    indent = draw(st.sampled_from([None, 2]))
    space = draw(st.sampled_from(["", "\n", " \n  "]))
    return calls, space + json.dumps(value, ensure_ascii=ascii_only, indent=indent) + space


@pytest.mark.parametrize("parse", GENERAL)
@given(case=general_payload())
def test_round_trip_general(parse: Parser, case: tuple[list[TextCall], str]) -> None:
    calls, payload = case
    assert parse(payload, None) == calls


@st.composite
def mistral_payload(draw: st.DrawFn) -> tuple[list[TextCall], str]:
    calls = draw(CALLS)
    end = draw(st.sampled_from(["", "</s>", "\n</s>"]))
    if draw(st.booleans()):
        items = [
            {"name": c.name, "arguments": c.arguments} | ({"id": c.id} if c.id else {})
            for c in calls
        ]
        return calls, dumps(items) + end
    parts = []
    for call in calls:
        marker = f"[CALL_ID]{call.id}[ARGS]" if call.id else "[ARGS]"
        parts.append(
            call.name + marker + json.dumps(call.arguments, ensure_ascii=draw(st.booleans()))
        )
    return calls, "[TOOL_CALLS]".join(parts) + end


@given(case=mistral_payload())
def test_round_trip_mistral(case: tuple[list[TextCall], str]) -> None:
    calls, payload = case
    assert parse_bracket_tool_calls(payload, None) == calls


@st.composite
def llama_payload(draw: st.DrawFn) -> tuple[list[TextCall], str]:
    calls = [TextCall(c.name, c.arguments) for c in draw(CALLS)]
    key = draw(st.sampled_from(["parameters", "arguments"]))
    separator = draw(st.sampled_from([";", "; ", " ;\n"]))
    end = draw(st.sampled_from(["", "<|eom_id|>", "<|eot_id|>"]))
    return calls, separator.join(dumps({"name": c.name, key: c.arguments}) for c in calls) + end


@given(case=llama_payload())
def test_round_trip_python_tag(case: tuple[list[TextCall], str]) -> None:
    calls, payload = case
    assert parse_python_tag(payload, None) == calls


@given(calls=CALLS)
def test_round_trip_granite_and_command_r(calls: list[TextCall]) -> None:
    plain = [TextCall(c.name, c.arguments) for c in calls]
    granite = dumps([{"name": c.name, "arguments": c.arguments} for c in calls])
    assert parse_granite(granite, None) == plain
    command = dumps(
        [
            ({"tool_call_id": c.id} if c.id else {})
            | {"tool_name": c.name, "parameters": c.arguments}
            for c in calls
        ]
    )
    assert parse_command_r(command, None) == calls


@given(calls=CALLS, data=st.data())
def test_round_trip_bare_json(calls: list[TextCall], data: st.DataObject) -> None:
    plain = [TextCall(c.name, c.arguments) for c in calls]
    objects = [{"name": c.name, "arguments": c.arguments} for c in calls]
    value: Any = objects[0] if len(objects) == 1 and data.draw(st.booleans()) else objects
    payload = dumps(value)
    assert parse_bare_json(payload, None) == plain
    open_schemas = {c.name: {"type": "object"} for c in calls}
    assert parse_bare_json(payload, open_schemas) == plain
    closed = {c.name: {"type": "object", "additionalProperties": False} for c in calls}
    expected = plain if all(not c.arguments for c in calls) else None
    assert parse_bare_json(payload, closed) == expected


@given(call=st.builds(TextCall, NAMES, ARGUMENTS, IDS))
def test_round_trip_codec(call: TextCall) -> None:
    obj: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    if call.id is not None:
        obj["id"] = call.id
    assert parse_codec(dumps(obj), None) == [call]


def _well_formed(result: list[TextCall] | None) -> None:
    if result is None:
        return
    assert result
    for call in result:
        assert isinstance(call, TextCall)
        assert call.name
        assert not any(c.isspace() for c in call.name)
        assert isinstance(call.arguments, dict)
        assert call.id is None or isinstance(call.id, str)


@settings(max_examples=300)
@given(text=st.text())
def test_never_raises_on_text(text: str) -> None:
    for parse in JSON_PARSERS.values():
        _well_formed(parse(text, None))
        _well_formed(parse(text, SCHEMAS))


STRUCTURAL = st.sampled_from(
    [
        *'{}[]":,;\\ \n0-.eE',
        *("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "</s>", "<|eom_id|>", "NaN", "\\ud800"),
    ]
)


@st.composite
def near_miss(draw: st.DrawFn) -> str:
    _, payload = draw(general_payload() | mistral_payload() | llama_payload())
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(payload)))
        action = draw(st.sampled_from(["insert", "delete", "cut"]))
        if action == "insert":
            payload = payload[:position] + draw(STRUCTURAL) + payload[position:]
        elif action == "delete":
            payload = payload[:position] + payload[position + 1 :]
        else:
            payload = payload[:position]
    return payload


@settings(max_examples=500)
@given(payload=near_miss())
def test_never_raises_on_near_misses(payload: str) -> None:
    for parse in JSON_PARSERS.values():
        _well_formed(parse(payload, None))
        _well_formed(parse(payload, SCHEMAS))


SINGLE_VALUE = [
    parse_tool_call_json,
    parse_tools_tag,
    parse_fenced_json,
    parse_granite,
    parse_command_r,
]


@pytest.mark.parametrize("parse", SINGLE_VALUE)
@given(case=general_payload(), data=st.data())
def test_a_cut_payload_is_never_a_call(
    parse: Parser, case: tuple[list[TextCall], str], data: st.DataObject
) -> None:
    _, payload = case
    body = payload.strip()
    cut = data.draw(st.integers(0, len(body) - 1))
    assert parse(body[:cut], None) is None


@given(case=mistral_payload() | llama_payload(), data=st.data())
def test_a_cut_sequence_gives_a_prefix_or_nothing(
    case: tuple[list[TextCall], str], data: st.DataObject
) -> None:
    calls, payload = case
    cut = data.draw(st.integers(0, len(payload)))
    for parse in (parse_bracket_tool_calls, parse_python_tag):
        result = parse(payload[:cut], None)
        if result is not None:
            assert calls[: len(result)] == result
