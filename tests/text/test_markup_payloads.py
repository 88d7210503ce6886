"""Tests for the non-JSON text-format payload parsers and for schema-typed coercion."""

from __future__ import annotations

import json
import keyword
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callgate.strategies.text.base import TextCall
from callgate.strategies.text.coerce import (
    coerce,
    coerce_types,
    property_types,
    strict_json_value,
)
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    GEMMA_STRING,
    MARKUP_PARSERS,
    MAX_DEPTH,
    SEP,
    parse_deepseek,
    parse_gemma_special,
    parse_glm45,
    parse_pythonic,
    parse_qwen3_coder_xml,
)

Q = GEMMA_STRING


def same(a: Any, b: Any) -> bool:
    """Equal as JSON, telling 1 from 1.0 from True."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def one(calls: list[TextCall] | None) -> TextCall:
    assert calls is not None
    assert len(calls) == 1
    return calls[0]


def tool(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# the registry and the constants


def test_registry_names_are_the_contract_names() -> None:
    expected = {
        "gemma_special": parse_gemma_special,
        "deepseek": parse_deepseek,
        "pythonic": parse_pythonic,
        "qwen3_coder_xml": parse_qwen3_coder_xml,
        "glm45": parse_glm45,
    }
    assert expected == MARKUP_PARSERS


def test_deepseek_markers_use_fullwidth_bars_and_lower_blocks() -> None:
    assert CALLS_BEGIN == "<\uff5ctool\u2581calls\u2581begin\uff5c>"
    assert CALLS_END == "<\uff5ctool\u2581calls\u2581end\uff5c>"
    assert CALL_BEGIN == "<\uff5ctool\u2581call\u2581begin\uff5c>"
    assert CALL_END == "<\uff5ctool\u2581call\u2581end\uff5c>"
    assert SEP == "<\uff5ctool\u2581sep\uff5c>"
    for marker in (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP):
        assert "|" not in marker
        assert " " not in marker


# coerce


WEATHER = {
    "get_weather": tool(
        city={"type": "string"},
        days={"type": "integer"},
        temp={"type": "number"},
        metric={"type": "boolean"},
        nothing={"type": "null"},
        where={"type": "object"},
        tags={"type": "array"},
        maybe={"type": ["string", "null"]},
        either={"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        first_string={"type": ["string", "integer"]},
        nested={"oneOf": [{"anyOf": [{"type": "null"}]}, {"type": "array"}]},
        loose={"description": "no type at all"},
        odd={"type": "str"},
        empty_union={"anyOf": []},
    )
}


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("city", " Paris\n", " Paris\n"),
        ("city", "42", "42"),
        ("city", "null", "null"),
        ("days", "42", 42),
        ("days", " -7\n", -7),
        ("days", "0", 0),
        ("temp", "3.5", 3.5),
        ("temp", "3", 3),
        ("temp", "-1e3", -1000.0),
        ("metric", "true", True),
        ("metric", "False", False),
        ("metric", " TRUE ", True),
        ("nothing", "null", None),
        ("nothing", "None", None),
        ("where", '{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]}),
        ("tags", '["x", 2]', ["x", 2]),
        ("maybe", "null", None),
        ("maybe", "None", None),
        ("maybe", "Paris", "Paris"),
        ("either", "5", 5),
        ("either", "true", True),
        ("first_string", "5", 5),
        ("first_string", "five", "five"),
        ("nested", "null", None),
        ("nested", "[1]", [1]),
        ("loose", "42", "42"),
        ("unknown_key", "42", "42"),
    ],
)
def test_coerce_types_values_by_schema(key: str, raw: str, expected: Any) -> None:
    ok, value = coerce("get_weather", key, raw, WEATHER)
    assert ok
    assert same(value, expected)


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("days", "4.5"),
        ("days", "1.0"),
        ("days", "+5"),
        ("days", "012"),
        ("days", "1_000"),
        ("days", "\u0663"),
        ("days", "1" * 5000),
        ("days", "true"),
        ("days", ""),
        ("temp", "1e999"),
        ("temp", "NaN"),
        ("temp", "Infinity"),
        ("temp", "0x10"),
        ("metric", "yes"),
        ("metric", "1"),
        ("nothing", ""),
        ("nothing", "nil"),
        ("where", "{'a': 1}"),
        ("where", '{"a": 1, "a": 2}'),
        ("where", '{"a": NaN}'),
        ("where", '{"a": "\\ud800"}'),
        ("where", '{"a": 1} {"b": 2}'),
        ("where", "[1]"),
        ("tags", '{"a": 1}'),
        ("tags", "[1,]"),
        ("tags", "[" * 200 + "]" * 200),
        ("either", "maybe"),
        ("odd", "anything"),
        ("empty_union", "anything"),
    ],
)
def test_coerce_refuses_text_that_is_not_the_declared_type(key: str, raw: str) -> None:
    assert coerce("get_weather", key, raw, WEATHER) == (False, None)


def test_coerce_without_schema_keeps_the_raw_text() -> None:
    assert coerce("get_weather", "days", " 42 ", None) == (True, " 42 ")
    assert coerce("other_tool", "days", "42", WEATHER) == (True, "42")
    assert coerce("t", "k", "1", {"t": {"type": "object"}}) == (True, "1")
    assert coerce("t", "k", "1", {"t": {"properties": {"k": "not a schema"}}}) == (True, "1")


def test_property_types_puts_string_last() -> None:
    assert property_types("get_weather", "first_string", WEATHER) == ("integer", "string")
    assert property_types("get_weather", "maybe", WEATHER) == ("null", "string")
    assert property_types("get_weather", "loose", WEATHER) is None
    assert property_types("get_weather", "empty_union", WEATHER) == ()
    assert coerce_types(("integer", "integer"), "3") == (True, 3)


def test_strict_json_value_reads_any_single_value() -> None:
    assert strict_json_value(" 1 ") == (True, 1)
    assert strict_json_value('"a"') == (True, "a")
    assert strict_json_value("null") == (True, None)
    assert strict_json_value("[1, 2]") == (True, [1, 2])
    for bad in ("", "1 2", '1, "v": 2', '1, "w": 2', "1}", "nan", "'a'", "[1" + "]" * 2):
        assert strict_json_value(bad) == (False, None), bad
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert strict_json_value(nested)[0]
    assert strict_json_value("[" + nested + "]") == (False, None)


# Gemma 4


def test_gemma_reads_the_documented_shape() -> None:
    payload = f"call:get_weather{{location:{Q}Tokyo{Q},unit:{Q}celsius{Q}}}"
    call = one(parse_gemma_special(payload, None))
    assert call == TextCall("get_weather", {"location": "Tokyo", "unit": "celsius"})


def test_gemma_reads_every_value_kind() -> None:
    payload = (
        f'call:search{{query:{Q}He said "hi", {{ok}} [x]\nnext line{Q},num:42,neg:-3,'
        f"pi:3.14,big:1e+20,small:1e-05,flag:true,off:false,none:null,py_none:None,"
        f"obj:{{a:1,b:{{c:[{Q}d{Q}]}}}},list:[1,{Q}x{Q},[],{{}}],empty:{Q}{Q},"
        f"{Q}quoted key{Q}:1}}"
    )
    call = one(parse_gemma_special(payload, None))
    assert call.name == "search"
    assert same(
        call.arguments,
        {
            "query": 'He said "hi", {ok} [x]\nnext line',
            "num": 42,
            "neg": -3,
            "pi": 3.14,
            "big": 1e20,
            "small": 1e-05,
            "flag": True,
            "off": False,
            "none": None,
            "py_none": None,
            "obj": {"a": 1, "b": {"c": ["d"]}},
            "list": [1, "x", [], {}],
            "empty": "",
            "quoted key": 1,
        },
    )


def test_gemma_unicode_and_whitespace_between_tokens() -> None:
    payload = f"\n call:天気.get-v2{{ 都市 : {Q}東京 🗼{Q} , n : [ 1 , 2 ] }} \n"
    call = one(parse_gemma_special(payload, None))
    assert call == TextCall("天気.get-v2", {"都市": "東京 🗼", "n": [1, 2]})


def test_gemma_no_arguments() -> None:
    assert one(parse_gemma_special("call:get_time{}", None)) == TextCall("get_time", {})


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "   ",
        "Sure, I will call the weather tool.",
        "call:get_weather",
        "call:get_weather{",
        f"call:get_weather{{city:{Q}Paris{Q}",
        f"call:get_weather{{city:{Q}Paris}}",
        f"call:get_weather{{city:{Q}Paris{Q},}}",
        "call:get_weather{city:Paris}",
        'call:get_weather{"city":"Paris"}',
        "call:get_weather{city:'Paris'}",
        f"call:get_weather{{city:{Q}Paris{Q}}}call:get_time{{}}",
        f"call:get_weather{{city:{Q}Paris{Q}}} trailing",
        f"call:get weather{{city:{Q}Paris{Q}}}",
        f"call:{{city:{Q}Paris{Q}}}",
        f"call:get_weather{{city:{Q}Paris{Q},city:{Q}Rome{Q}}}",
        "call:f{a:NaN}",
        "call:f{a:inf}",
        "call:f{a:1e999}",
        "call:f{a:01}",
        "call:f{a:+1}",
        "call:f{a:1.}",
        "call:f{a:True}",
        "call:f{a:nil}",
        "call:f{a:[1,]}",
        "call:f{a:[1 2]}",
        "call:f{a:{b:1]}",
        "call:f{a:1}}",
        "call:f{:1}",
        f"call:f{{{Q}{Q}:1}}",
        "call:f{a}",
        "call:f{a:}",
        "call:f{a:" + "1" * 5000 + "}",
        "call:f[1]",
        "call:f{a:\ud800}",
        f"call:f{{a:{Q}\ud800{Q}}}",
        "<|tool_call>call:f{}<tool_call|>",
    ],
)
def test_gemma_near_misses_are_not_calls(payload: str) -> None:
    assert parse_gemma_special(payload, None) is None


def test_gemma_depth_limit_without_recursion_error() -> None:
    def nested(levels: int) -> str:
        return "call:f{a:" + "[" * (levels - 1) + "]" * (levels - 1) + "}"

    assert parse_gemma_special(nested(MAX_DEPTH), None) is not None
    assert parse_gemma_special(nested(MAX_DEPTH + 1), None) is None
    assert parse_gemma_special("call:f{a:" + "[" * 200_000, None) is None
    assert parse_gemma_special("call:f{a:" + "{a:" * 200_000, None) is None


# DeepSeek


def ds_v3(name: str, args: str) -> str:
    return f"{CALL_BEGIN}function{SEP}{name}\n```json\n{args}\n```{CALL_END}"


def ds_v31(name: str, args: str) -> str:
    return f"{CALL_BEGIN}{name}{SEP}{args}{CALL_END}"


def test_deepseek_v3_documented_shape() -> None:
    payload = (
        ds_v3("get_current_weather", '{"location": "Beijing"}')
        + "\n"
        + ds_v3("get_current_weather", '{"location": "Shanghai"}')
    )
    calls = parse_deepseek(payload, None)
    assert calls == [
        TextCall("get_current_weather", {"location": "Beijing"}),
        TextCall("get_current_weather", {"location": "Shanghai"}),
    ]


def test_deepseek_v31_shape_and_mixed_entries() -> None:
    payload = (
        "\n"
        + ds_v31("get_weather", '{"city": "北京", "days": [1, {"x": null}]}')
        + ds_v31("get_time", "{}")
        + "  \n"
        + ds_v3("ns.tool-2", '{"a": "\\u00e9"}')
        + "\n"
    )
    assert parse_deepseek(payload, None) == [
        TextCall("get_weather", {"city": "北京", "days": [1, {"x": None}]}),
        TextCall("get_time", {}),
        TextCall("ns.tool-2", {"a": "é"}),
    ]


def test_deepseek_v31_tool_named_function() -> None:
    assert parse_deepseek(ds_v31("function", '{"a": 1}'), None) == [TextCall("function", {"a": 1})]


@pytest.mark.parametrize(
    "payload",
    [
        "",
        " \n ",
        "I will call a tool now.",
        ds_v31("get_weather", '{"city": "Paris"}')[: -len(CALL_END)],
        ds_v31("get_weather", '{"city": "Paris"}') + "and some prose",
        "prose" + ds_v31("get_weather", '{"city": "Paris"}'),
        ds_v31("get_weather", '{"city": "Paris"} trailing'),
        ds_v31("get_weather", '{"city": NaN}'),
        ds_v31("get_weather", '{"a": 1, "a": 2}'),
        ds_v31("get_weather", '{"a": "\\ud800"}'),
        ds_v31("get_weather", '["Paris"]'),
        ds_v31("get_weather", "{'city': 'Paris'}"),
        ds_v31("get weather", '{"city": "Paris"}'),
        ds_v31("", '{"city": "Paris"}'),
        ds_v31("get_weather", ""),
        f"{CALL_BEGIN}get_weather{CALL_END}",
        f"{CALL_BEGIN}func{SEP}get_weather\n```json\n{{}}\n```{CALL_END}",
        f"{CALL_BEGIN}function{SEP}get_weather\n{{}}{CALL_END}",
        f"{CALL_BEGIN}function{SEP}get_weather```json\n{{}}\n```{CALL_END}",
        f"{CALL_BEGIN}function{SEP}get_weather\n```json\n{{}}\n{CALL_END}",
        f"{CALL_BEGIN}function{SEP}get_weather\n```python\n{{}}\n```{CALL_END}",
        ds_v3("get_weather", '{"a": 1} {"b": 2}'),
        ds_v31("get_weather", '{"a": 1}').replace("\uff5c", "|"),
        ds_v31("get_weather", '{"a": 1}').replace("\u2581", " "),
        CALLS_BEGIN + ds_v31("get_weather", '{"a": 1}') + CALLS_END,
        ds_v31("a", f'{{"x": 1}}{SEP}{{"y": 2}}'),
        ds_v31("get_weather", '{"a": 1}') + "\ud800",
    ],
)
def test_deepseek_near_misses_are_not_calls(payload: str) -> None:
    assert parse_deepseek(payload, None) is None


def test_deepseek_depth_limit() -> None:
    ok = '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    deep = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    assert parse_deepseek(ds_v31("f", ok), None) is not None
    assert parse_deepseek(ds_v31("f", deep), None) is None


# pythonic


def test_pythonic_reads_the_documented_shape() -> None:
    payload = "[get_weather(city='Paris', unit=\"C\"), get_time(tz='UTC')]"
    assert parse_pythonic(payload, None) == [
        TextCall("get_weather", {"city": "Paris", "unit": "C"}),
        TextCall("get_time", {"tz": "UTC"}),
    ]


def test_pythonic_literal_values() -> None:
    payload = """[
        search(q="naïve café ☕", n=-3, x=2.5, neg=-0.5, ok=True, no=False, none=None,
               t=true, f=false, z=null, pair=(1, 'two'), items=[1, [2, {'k': 'v'}]],
               mapping={'a': {'b': [None]}, "c": ()}, joined='ab' 'cd', big=10**0 if 0 else 7),
    ]"""
    assert parse_pythonic(payload, None) is None
    payload = payload.replace(", big=10**0 if 0 else 7", "")
    call = one(parse_pythonic(payload, None))
    assert call.name == "search"
    assert same(
        call.arguments,
        {
            "q": "naïve café ☕",
            "n": -3,
            "x": 2.5,
            "neg": -0.5,
            "ok": True,
            "no": False,
            "none": None,
            "t": True,
            "f": False,
            "z": None,
            "pair": [1, "two"],
            "items": [1, [2, {"k": "v"}]],
            "mapping": {"a": {"b": [None]}, "c": []},
            "joined": "abcd",
        },
    )


def test_pythonic_ascii_identifiers_with_unicode_strings() -> None:
    payload = "[get_weather(city='\uff47\u00e9\u6771\u4eac', note=\"\u2603\")]"
    assert parse_pythonic(payload, None) == [
        TextCall("get_weather", {"city": "\uff47\u00e9\u6771\u4eac", "note": "\u2603"})
    ]
    multiline = "[get_weather(\n  city='\u00e9',\n  ok=true),\n tools.\n  web(q='\u00e9')]"
    assert parse_pythonic(multiline, None) == [
        TextCall("get_weather", {"city": "\u00e9", "ok": True}),
        TextCall("tools.web", {"q": "\u00e9"}),
    ]


def test_pythonic_dotted_names_no_arguments_and_comments_inside() -> None:
    payload = "  [tools.web.search(q='x'),\n get_time(),  # the clock\n ]\n"
    assert parse_pythonic(payload, None) == [
        TextCall("tools.web.search", {"q": "x"}),
        TextCall("get_time", {}),
    ]


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "[]",
        "[1, 2, 3]",
        "['a', get_time()]",
        "get_weather(city='Paris')",
        "(get_weather(city='Paris'))",
        "([get_weather(city='Paris')])",
        "[get_weather(city='Paris')] # trailing comment",
        "[get_weather(city='Paris')] and more",
        "[get_weather('Paris')]",
        "[get_weather(*args)]",
        "[get_weather(**{'city': 'Paris'})]",
        "[get_weather(city=city)]",
        "[get_weather(city=os.environ)]",
        "[get_weather(city=open('/etc/passwd').read())]",
        "[__import__('os').system('echo pwned')]",
        "[get_weather(city=f'{x}')]",
        "[get_weather(city=b'Paris')]",
        "[get_weather(n=1j)]",
        "[get_weather(n=...)]",
        "[get_weather(n={1, 2})]",
        "[get_weather(n=1+2)]",
        "[get_weather(n=+1)]",
        "[get_weather(n=--1)]",
        "[get_weather(n=-True)]",
        "[get_weather(n=1e999)]",
        "[get_weather(n=-1e999)]",
        "[get_weather(n={1: 'a'})]",
        "[get_weather(n={'a': 1, 'a': 2})]",
        "[get_weather(n=[x for x in y])]",
        "[get_weather(n=lambda: 1)]",
        "[get_weather(city='Paris', city='Rome')]",
        "[get_weather()(x=1)]",
        "[get_weather[0](x=1)]",
        "[get_weather(city='\\ud800')]",
        "[get_weather(city='Paris')",
        "[get_weather(city='Paris'),]" + "]",
        "[g\u0435t_weather(city='Paris')]",
        "[get_weather(c\u0456ty='Paris')]",
        "[\uff47et_weather(city='Paris')]",
        "[get_weather(\uff43ity='Paris')]",
        "[tools.\uff57eb(city='Paris')]",
        "[get_weather(ok=\uff54rue)]",
        "[get_weather(city='Paris', \uff43ity='Rome')]",
        "[get_weather(n=" + "1" * 5000 + ")]",
        "[f(a=1)]\x00",
        "[f(a='\ud800')]",
        "I think [get_weather(city='Paris')] would work",
    ],
)
def test_pythonic_near_misses_are_not_calls(payload: str) -> None:
    assert parse_pythonic(payload, None) is None


def test_pythonic_depth_limit_and_parser_limits() -> None:
    def nested(levels: int) -> str:
        return "[f(a=" + "[" * (levels - 1) + "]" * (levels - 1) + ")]"

    assert parse_pythonic(nested(MAX_DEPTH), None) is not None
    assert parse_pythonic(nested(MAX_DEPTH + 1), None) is None
    for hostile in (
        "[f(a=" + "-" * 100_000 + "1)]",
        "[" + "a." * 100_000 + "b()]",
        "[f" + "()" * 100_000 + "]",
        "[f(a=" + "[" * 100_000 + ")]",
        "[f(a=" + "not " * 100_000 + "1)]",
    ):
        assert parse_pythonic(hostile, None) is None


# Qwen3-Coder XML


def test_qwen3_coder_reads_the_template_shape() -> None:
    payload = (
        "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n"
    )
    schemas = {"get_weather": tool(city={"type": "string"}, days={"type": "integer"})}
    assert parse_qwen3_coder_xml(payload, schemas) == [
        TextCall("get_weather", {"city": "Paris", "days": 3})
    ]
    assert parse_qwen3_coder_xml(payload, None) == [
        TextCall("get_weather", {"city": "Paris", "days": "3"})
    ]


def test_qwen3_coder_values_keep_inner_newlines_and_closing_markup() -> None:
    code = 'def f():\n    return "</parameter>"  # </function>\n'
    payload = (
        "<function=write_file>\n<parameter=path>\n/tmp/a.py\n</parameter>\n"
        f"<parameter=content>\n{code}\n</parameter>\n</function>"
    )
    call = one(parse_qwen3_coder_xml(payload, None))
    assert call.arguments == {"path": "/tmp/a.py", "content": code}


@pytest.mark.parametrize("tag", ["<parameter=x>", "<function=g>"])
def test_qwen3_coder_value_holding_an_opening_tag_is_refused(tag: str) -> None:
    payload = (
        "<function=write_file>\n<parameter=path>\n/tmp/a.py\n</parameter>\n"
        f"<parameter=content>\nx = 1  # {tag}\n</parameter>\n</function>"
    )
    assert parse_qwen3_coder_xml(payload, None) is None


def test_qwen3_coder_strips_exactly_one_newline_each_side() -> None:
    payload = (
        "<function=f>\n<parameter=a>\n\n  x  \n\n</parameter>\n<parameter=b></parameter></function>"
    )
    assert one(parse_qwen3_coder_xml(payload, None)).arguments == {"a": "\n  x  \n", "b": ""}


def test_qwen3_coder_types_values_by_schema() -> None:
    schemas = {
        "f": tool(
            n={"type": "number"},
            ok={"type": "boolean"},
            opt={"anyOf": [{"type": "string"}, {"type": "null"}]},
            cfg={"type": "object"},
            ids={"type": "array"},
            name={"type": "string"},
        )
    }
    payload = (
        "<function=f>\n"
        "<parameter=n>\n2.5\n</parameter>\n"
        "<parameter=ok>\nTrue\n</parameter>\n"
        "<parameter=opt>\nNone\n</parameter>\n"
        '<parameter=cfg>\n{"k": [1, "é"]}\n</parameter>\n'
        "<parameter=ids>\n[1, 2]\n</parameter>\n"
        "<parameter=name>\nnull\n</parameter>\n"
        "<parameter=extra>\n5\n</parameter>\n"
        "</function>"
    )
    call = one(parse_qwen3_coder_xml(payload, schemas))
    assert same(
        call.arguments,
        {
            "n": 2.5,
            "ok": True,
            "opt": None,
            "cfg": {"k": [1, "é"]},
            "ids": [1, 2],
            "name": "null",
            "extra": "5",
        },
    )


def test_qwen3_coder_several_functions_in_one_block() -> None:
    payload = "<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n<function=b>\n</function>"
    assert parse_qwen3_coder_xml(payload, None) == [TextCall("a", {"x": "1"}), TextCall("b", {})]


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "\n",
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>",
        "Let me check.\n<function=get_weather>\n</function>",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
        "<function=get_weather>\n<parameter=city>\nParis\n</function>",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function> done",
        "<function=get weather>\n</function>",
        "<function=>\n</function>",
        "<function=get_weather\n</function>",
        "<function=get_weather>\nprose\n</function>",
        "<function=f>\n<parameter=a b>\n1\n</parameter>\n</function>",
        "<function=f>\n<parameter=>\n1\n</parameter>\n</function>",
        "<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>",
        "<function=f>\n<parameter=days>\nthree\n</parameter>\n</function>",
        "<function=f>\n<parameter=days>\n3.0\n</parameter>\n</function>",
        "<function=f>\n<parameter=a>\n\ud800\n</parameter>\n</function>",
        "<tool_call>\n<function=f>\n</function>\n</tool_call>",
    ],
)
def test_qwen3_coder_near_misses_are_not_calls(payload: str) -> None:
    schemas = {"f": tool(days={"type": "integer"})}
    assert parse_qwen3_coder_xml(payload, schemas) is None


# GLM-4.5


def test_glm45_reads_the_template_shape() -> None:
    payload = (
        "get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "<arg_key>date</arg_key>\n<arg_value>2024-12-25</arg_value>\n"
    )
    assert parse_glm45(payload, None) == [
        TextCall("get_weather", {"city": "Beijing", "date": "2024-12-25"})
    ]


def test_glm47_shape_without_newlines_and_no_arguments() -> None:
    payload = "get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value>"
    assert parse_glm45(payload, None) == [TextCall("get_weather", {"city": "Beijing"})]
    assert parse_glm45("get_time\n", None) == [TextCall("get_time", {})]
    assert parse_glm45("get_time", None) == [TextCall("get_time", {})]


def test_glm45_untyped_values_are_json_when_strict_json() -> None:
    payload = (
        "f\n<arg_key>n</arg_key>\n<arg_value>42</arg_value>\n"
        '<arg_key>l</arg_key>\n<arg_value>[1, {"a": null}]</arg_value>\n'
        "<arg_key>b</arg_key>\n<arg_value>true</arg_value>\n"
        "<arg_key>s</arg_key>\n<arg_value>hello world</arg_value>\n"
        '<arg_key>q</arg_key>\n<arg_value>"quoted"</arg_value>\n'
        "<arg_key>lenient</arg_key>\n<arg_value>{'a': 1}</arg_value>\n"
        "<arg_key>nan</arg_key>\n<arg_value>NaN</arg_value>\n"
    )
    call = one(parse_glm45(payload, None))
    assert same(
        call.arguments,
        {
            "n": 42,
            "l": [1, {"a": None}],
            "b": True,
            "s": "hello world",
            "q": "quoted",
            "lenient": "{'a': 1}",
            "nan": "NaN",
        },
    )


def test_glm45_typed_values() -> None:
    schemas = {
        "f": tool(
            code={"type": "string"},
            n={"type": "integer"},
            ok={"type": "boolean"},
            opt={"type": ["integer", "null"]},
        )
    }
    payload = (
        "f\n<arg_key> code </arg_key>\n<arg_value>  42 </arg_value>\n"
        "<arg_key>n</arg_key>\n<arg_value> 7 </arg_value>\n"
        "<arg_key>ok</arg_key>\n<arg_value>False</arg_value>\n"
        "<arg_key>opt</arg_key>\n<arg_value>null</arg_value>\n"
    )
    call = one(parse_glm45(payload, schemas))
    assert same(call.arguments, {"code": "  42 ", "n": 7, "ok": False, "opt": None})


def test_glm45_value_may_contain_its_closing_tag() -> None:
    payload = (
        "write\n<arg_key>text</arg_key>\n<arg_value>a</arg_value> b</arg_value>\n"
        "<arg_key>n</arg_key>\n<arg_value>1</arg_value>"
    )
    call = one(parse_glm45(payload, {"write": tool(text={"type": "string"})}))
    assert same(call.arguments, {"text": "a</arg_value> b", "n": 1})


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "  \n ",
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '{"name":"get_weather","arguments":{}}',
        "<function=get_weather>\n</function>",
        "get weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>",
        "I will check the weather.",
        "f\nprose",
        "f\n<arg_key>city</arg_key>\n<arg_value>Paris",
        "f\n<arg_key>city</arg_key>\nParis</arg_value>",
        "f\n<arg_key>city\n<arg_value>Paris</arg_value>",
        "f\n<arg_key></arg_key>\n<arg_value>Paris</arg_value>",
        "f\n<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>a</arg_key><arg_value>2</arg_value>",
        "f\n<arg_key>days</arg_key>\n<arg_value>many</arg_value>",
        "f\n<arg_key>days</arg_key>\n<arg_value>1e999</arg_value>",
        "f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value> trailing",
        "f\n<arg_key>a</arg_key>\n<arg_value>\ud800</arg_value>",
    ],
)
def test_glm45_near_misses_are_not_calls(payload: str) -> None:
    assert parse_glm45(payload, {"f": tool(days={"type": "integer"})}) is None


# Hypothesis: round trips


SAFE_CHARS = st.characters(exclude_categories=("Cs",))
ANY_TEXT = st.text(SAFE_CHARS, max_size=30)
IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s)
)
TOOL_NAME = st.from_regex(r"[\w][\w.\-]{0,15}", fullmatch=True)


def json_values(strings: st.SearchStrategy[str], keys: st.SearchStrategy[str]) -> Any:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(10**30), max_value=10**30)
        | st.floats(allow_nan=False, allow_infinity=False)
        | strings
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=12,
    )


def gemma_render(value: Any) -> str:
    if isinstance(value, str):
        return Q + value + Q
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma_render(v)}" for k, v in sorted(value.items())) + "}"
    return "[" + ",".join(gemma_render(v) for v in value) + "]"


GEMMA_STRINGS = ANY_TEXT.filter(lambda s: Q not in s)


@given(
    name=TOOL_NAME,
    args=st.dictionaries(IDENT, json_values(GEMMA_STRINGS, IDENT), max_size=5),
)
def test_gemma_round_trip(name: str, args: dict[str, Any]) -> None:
    payload = f"call:{name}{gemma_render(args)}"
    call = one(parse_gemma_special(payload, None))
    assert call.name == name
    assert same(call.arguments, args)


@given(
    calls=st.lists(
        st.tuples(
            TOOL_NAME,
            st.dictionaries(ANY_TEXT, json_values(ANY_TEXT, ANY_TEXT), max_size=4),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
    gap=st.sampled_from(["", "\n", " \n\t"]),
)
def test_deepseek_round_trip(calls: list[tuple[str, dict[str, Any], bool, bool]], gap: str) -> None:
    entries = []
    for name, args, v3, ascii_only in calls:
        text = json.dumps(args, ensure_ascii=ascii_only)
        entries.append(ds_v3(name, text) if v3 else ds_v31(name, text))
    parsed = parse_deepseek(gap + gap.join(entries) + gap, None)
    assert parsed is not None
    assert [c.name for c in parsed] == [c[0] for c in calls]
    for got, (_, args, _, _) in zip(parsed, calls, strict=True):
        assert same(got.arguments, args)


@given(
    calls=st.lists(
        st.tuples(
            st.lists(IDENT, min_size=1, max_size=3).map(".".join),
            st.dictionaries(IDENT, json_values(ANY_TEXT, ANY_TEXT), max_size=4),
        ),
        min_size=1,
        max_size=4,
    ),
    sep=st.sampled_from([", ", ",", ",\n  "]),
)
def test_pythonic_round_trip(calls: list[tuple[str, dict[str, Any]]], sep: str) -> None:
    rendered = [
        f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")" for name, args in calls
    ]
    parsed = parse_pythonic("[" + sep.join(rendered) + "]", None)
    assert parsed is not None
    assert [c.name for c in parsed] == [name for name, _ in calls]
    for got, (_, args) in zip(parsed, calls, strict=True):
        assert same(got.arguments, args)


def schema_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def raw_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


RAW_KEYS = st.from_regex(r"[\w][\w.\-]{0,10}", fullmatch=True)


def no_qwen_markup(text: str) -> bool:
    """A value that holds no tag of the format (such a value is refused: a lost close)."""
    return not any(tag in text for tag in ("</parameter>", "<parameter=", "<function="))


@given(
    calls=st.lists(
        st.dictionaries(
            RAW_KEYS,
            json_values(ANY_TEXT.filter(no_qwen_markup), ANY_TEXT.filter(no_qwen_markup)),
            max_size=4,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_qwen3_coder_round_trip(calls: list[dict[str, Any]]) -> None:
    schemas = {
        f"tool_{i}": tool(**{k: {"type": schema_type(v)} for k, v in args.items()})
        for i, args in enumerate(calls)
    }
    blocks = []
    for i, args in enumerate(calls):
        params = "".join(f"<parameter={k}>\n{raw_text(v)}\n</parameter>\n" for k, v in args.items())
        blocks.append(f"<function=tool_{i}>\n{params}</function>")
    parsed = parse_qwen3_coder_xml("\n" + "\n".join(blocks) + "\n", schemas)
    assert parsed is not None
    assert [c.name for c in parsed] == [f"tool_{i}" for i in range(len(calls))]
    for got, args in zip(parsed, calls, strict=True):
        assert same(got.arguments, args)


@given(
    name=TOOL_NAME,
    args=st.dictionaries(
        RAW_KEYS,
        json_values(ANY_TEXT.filter(lambda s: "</arg_value>" not in s), ANY_TEXT),
        max_size=5,
    ),
    newlines=st.booleans(),
)
def test_glm45_round_trip(name: str, args: dict[str, Any], newlines: bool) -> None:
    nl = "\n" if newlines else ""
    schemas = {name: tool(**{k: {"type": schema_type(v)} for k, v in args.items()})}
    body = "".join(
        f"<arg_key>{k}</arg_key>{nl}<arg_value>{raw_text(v)}</arg_value>{nl}"
        for k, v in args.items()
    )
    call = one(parse_glm45(name + nl + body, schemas))
    assert call.name == name
    assert same(call.arguments, args)


# Hypothesis: never raise


SCHEMAS = {
    "f": tool(a={"type": "integer"}, b={"type": ["boolean", "null"]}, c={"type": "object"}),
    "get_weather": tool(city={"type": "string"}),
}
PARSERS = sorted(MARKUP_PARSERS.items())

SEEDS = [
    f"call:f{{a:{Q}x{Q},b:[1,{{c:null}}]}}",
    ds_v3("f", '{"a": 1}') + ds_v31("g", '{"b": [true]}'),
    "[f(a=1, b=[True, {'c': None}]), g.h(x='y')]",
    "<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=c>\n{}\n</parameter>\n</function>",
    "f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n<arg_key>b</arg_key><arg_value>null</arg_value>",
]


def check_result(result: list[TextCall] | None) -> None:
    assert result is None or (isinstance(result, list) and result)
    for call in result or []:
        assert isinstance(call, TextCall)
        assert call.name
        assert not any(c.isspace() for c in call.name)
        assert isinstance(call.arguments, dict)


@settings(max_examples=300)
@given(text=st.text(), with_schemas=st.booleans())
def test_parsers_never_raise_on_arbitrary_text(text: str, with_schemas: bool) -> None:
    for _, parser in PARSERS:
        check_result(parser(text, SCHEMAS if with_schemas else None))


TOKENS = [
    Q,
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "(",
    ")",
    "=",
    "'",
    '"',
    "\n",
    " ",
    "<",
    ">",
    "\\",
    CALL_BEGIN,
    CALL_END,
    SEP,
    "```json",
    "```",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "call:",
    "function",
    "true",
    "None",
    "-",
    "1e999",
    "\ud800",
]


@st.composite
def near_misses(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        action = draw(st.sampled_from(["insert", "delete", "cut"]))
        if action == "insert":
            piece = draw(st.sampled_from(TOKENS) | st.text(max_size=3))
            text = text[:at] + piece + text[at:]
        elif action == "delete":
            length = draw(st.integers(min_value=1, max_value=5))
            text = text[:at] + text[at + length :]
        else:
            text = text[:at]
    return text


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(text=near_misses(), with_schemas=st.booleans())
def test_parsers_never_raise_on_near_misses(text: str, with_schemas: bool) -> None:
    for _, parser in PARSERS:
        check_result(parser(text, SCHEMAS if with_schemas else None))


def test_seeds_parse() -> None:
    for seed, (_, parser) in zip(
        SEEDS,
        [
            (None, parse_gemma_special),
            (None, parse_deepseek),
            (None, parse_pythonic),
            (None, parse_qwen3_coder_xml),
            (None, parse_glm45),
        ],
        strict=True,
    ):
        assert parser(seed, SCHEMAS) is not None, seed


# size: large and hostile payloads (their speed is measured by bench/, not asserted here)


MB = 200_000


def test_large_payloads_parse() -> None:
    big = "x" * MB
    cases = [
        (parse_gemma_special, f"call:f{{a:{Q}{big}{Q}}}"),
        (parse_gemma_special, "call:f{a:[" + ",".join(["1"] * (MB // 2)) + "]}"),
        (parse_deepseek, ds_v31("f", json.dumps({"a": big}))),
        (parse_deepseek, "".join(ds_v31("f", "{}") for _ in range(MB // 40))),
        (parse_pythonic, "[f(a=" + repr(big) + ")]"),
        (parse_pythonic, "[" + ",".join(["f(a=1)"] * (MB // 7)) + "]"),
        (parse_qwen3_coder_xml, f"<function=f>\n<parameter=a>\n{big}\n</parameter>\n</function>"),
        (parse_glm45, f"f\n<arg_key>a</arg_key>\n<arg_value>{big}</arg_value>"),
    ]
    for parser, payload in cases:
        assert parser(payload, None) is not None, parser.__name__


def test_hostile_payloads_never_raise() -> None:
    n = MB // 14
    cases = [
        (
            parse_qwen3_coder_xml,
            "<function=f>\n<parameter=a>\n" + "x</parameter>y" * n + "\n</parameter>\n</function>",
        ),
        (parse_qwen3_coder_xml, "<function=f>\n<parameter=a>\n" + "</parameter>y" * n),
        (parse_qwen3_coder_xml, "<function=f>\n" + "<parameter=a" * n),
        (parse_glm45, "f\n<arg_key>a</arg_key><arg_value>" + "</arg_value>y" * n),
        (parse_glm45, "f\n" + "<arg_key>" * n),
        (parse_gemma_special, "call:f{a:" + Q * n),
        (parse_gemma_special, "call:f{" + "a:[" * n),
        (parse_deepseek, CALL_BEGIN * n),
        (parse_deepseek, (CALL_BEGIN + "f" + SEP + "{" + CALL_END) * (n // 4)),
        (parse_pythonic, "[f(a=" + "(" * n),
        (parse_pythonic, "[" + "f(a=[" * n),
    ]
    for parser, payload in cases:
        result = parser(payload, None)
        assert result is None or isinstance(result, list), parser.__name__
