"""The newer formats' parsers: exactly their grammar, strictly; anything else is no call."""

from __future__ import annotations

import pytest

from callgate.strategies.text.base import TextCall
from callgate.strategies.text.formats import DEFAULT_FORMATS, FORMATS, formats_for_model
from callgate.strategies.text.invoke_payloads import DSML, parse_dsml, parse_minimax_m2
from callgate.strategies.text.json_payloads import parse_python_tag
from callgate.strategies.text.token_payloads import parse_harmony, parse_kimi_k2

KIMI = "<|tool_call_begin|>{id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"
CITY = {"get_weather": {"type": "object", "properties": {"days": {"type": "integer"}}}}


def test_kimi_reads_each_call_with_its_id() -> None:
    payload = (
        KIMI.format(id="functions.a:0", args="{}") + "\n" + KIMI.format(id="b:1", args='{"x": 1}')
    )
    assert parse_kimi_k2(payload, None) == [
        TextCall("a", {}, "functions.a:0"),
        TextCall("b", {"x": 1}, "b:1"),
    ]


@pytest.mark.parametrize(
    "payload",
    [
        KIMI.format(id="0", args="{}"),
        KIMI.format(id="functions.a", args="{}"),
        KIMI.format(id="functions.a:0", args="[]"),
        KIMI.format(id="functions.a:0", args='{"x": NaN}'),
        KIMI.format(id="functions.a:0", args='{"x": 1, "x": 2}'),
        "prose " + KIMI.format(id="a:0", args="{}"),
        KIMI.format(id="a:0", args="{}") + " trailing",
        "<|tool_call_begin|>a:0 {}<|tool_call_end|>",
        "",
        KIMI.format(id="a:0", args='{"x": "\ud800"}'),
    ],
)
def test_kimi_refuses_anything_else(payload: str) -> None:
    assert parse_kimi_k2(payload, None) is None


def test_harmony_reads_the_recipient_and_optional_content_type() -> None:
    for head in (
        "commentary to=functions.f <|constrain|>json",
        "commentary to=functions.f json",
        "analysis to=functions.f",
        "commentary to=functions.f",
    ):
        assert parse_harmony(head + '<|message|>{"a": 1}', None) == [TextCall("f", {"a": 1})]


@pytest.mark.parametrize(
    "payload",
    [
        "final<|message|>hello",
        "commentary to=browser.search<|message|>{}",
        "commentary to=functions.f<|message|>",
        "commentary to=functions.f<|message|>foo",
        "commentary to=functions.f<|message|>{} {}",
        "commentary to=functions.<|message|>{}",
    ],
)
def test_harmony_refuses_anything_else(payload: str) -> None:
    assert parse_harmony(payload, None) is None


def minimax(params: str, name: str = "get_weather") -> str:
    return f'<invoke name="{name}">{params}</invoke>'


def test_minimax_types_values_by_the_schema_and_keeps_text_otherwise() -> None:
    payload = minimax('<parameter name="days">3</parameter><parameter name="city">Oslo</parameter>')
    assert parse_minimax_m2(payload, CITY) == [TextCall("get_weather", {"days": 3, "city": "Oslo"})]
    assert parse_minimax_m2(payload, None) == [
        TextCall("get_weather", {"days": "3", "city": "Oslo"})
    ]


@pytest.mark.parametrize(
    "payload",
    [
        minimax('<parameter name="days">three</parameter>'),
        minimax('<parameter name="a">1</parameter><parameter name="a">2</parameter>'),
        minimax('<parameter name="a">1'),
        minimax('<parameter name="a">1<parameter name="b">2</parameter>'),
        minimax("", name=""),
        minimax("", name="a b"),
        '<invoke name="f">',
        "text " + minimax(""),
        minimax("") + " text",
    ],
)
def test_minimax_refuses_anything_else(payload: str) -> None:
    assert parse_minimax_m2(payload, CITY) is None


def dsml(flag: str, value: str) -> str:
    return (
        f'<{DSML}invoke name="f"><{DSML}parameter name="v" string="{flag}">{value}'
        f"</{DSML}parameter></{DSML}invoke>"
    )


def test_dsml_string_flag_decides_text_or_json() -> None:
    assert parse_dsml(dsml("true", '{"a": 1}'), None) == [TextCall("f", {"v": '{"a": 1}'})]
    assert parse_dsml(dsml("false", '{"a": 1}'), None) == [TextCall("f", {"v": {"a": 1}})]


@pytest.mark.parametrize(
    "payload",
    [
        dsml("false", "not json"),
        dsml("false", "NaN"),
        dsml("maybe", "1"),
        f'<{DSML}invoke name="f"><{DSML}parameter name="v">1</{DSML}parameter></{DSML}invoke>',
        '<invoke name="f"><parameter name="v" string="true">1</parameter></invoke>',
    ],
)
def test_dsml_refuses_anything_else(payload: str) -> None:
    assert parse_dsml(payload, None) is None


def test_python_tag_joins_calls_by_semicolon_or_a_repeated_tag() -> None:
    two = [TextCall("a", {}), TextCall("b", {})]
    for sep in ("; ", ";", "<|python_tag|>", " <|python_tag|> "):
        payload = '{"name": "a", "parameters": {}}' + sep + '{"name": "b", "parameters": {}}'
        assert parse_python_tag(payload, None) == two
    assert parse_python_tag('{"name": "a", "parameters": {}};', None) is None
    assert parse_python_tag('{"name": "a", "parameters": {}} x', None) is None


@pytest.mark.parametrize(
    ("model", "formats"),
    [
        ("moonshotai/Kimi-K2-Instruct", ("kimi_k2", "kimi_k2_singular")),
        ("MiniMaxAI/MiniMax-M2", ("minimax_m2",)),
        ("deepseek-ai/DeepSeek-V3.2-Exp", ("deepseek_v32", "deepseek")),
        ("deepseek-ai/DeepSeek-V4", ("deepseek_v4",)),
        ("deepseek-ai/DeepSeek-V3.1", ("deepseek",)),
        ("openai/gpt-oss-120b", ("harmony", "harmony_role")),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", ("llama4_python", "pythonic", "python_tag")),
        ("meta-llama/Llama-3.2-3B-Instruct", ("pythonic", "python_tag")),
        ("ibm-granite/granite-3.0-8b-instruct", ("granite",)),
        ("ibm-granite/granite-3.3-8b-instruct", ("granite_tool_call", "tool_call_tag", "granite")),
        ("microsoft/Phi-4-mini-instruct", ("phi4_functools",)),
        ("gpt-4o", ()),
    ],
)
def test_formats_for_model_names_the_formats_models_ship(
    model: str, formats: tuple[str, ...]
) -> None:
    assert formats_for_model(model) == formats
    assert all(name in FORMATS for name in formats)


def test_functools_is_opt_in_and_every_other_stream_format_is_default() -> None:
    assert "phi4_functools" not in DEFAULT_FORMATS
    for name in (
        "kimi_k2",
        "minimax_m2",
        "deepseek_v32",
        "deepseek_v4",
        "harmony",
        "llama4_python",
        "granite_tool_call",
    ):
        assert name in DEFAULT_FORMATS
