"""One or two sample calls per text format, as the models write them, with the calls meant.

Shared by the exhaustive split test and the benchmark; the markup follows each format's
public chat template or its peers' parser tests (see docs/text-formats.md).
"""

from __future__ import annotations

from typing import Any

from callgate.strategies.text.invoke_payloads import DSML
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    SEP,
)

Call = tuple[str, dict[str, Any]]

KIMI_CALL = (
    "<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>"
    '{{"city": "{city}"}}<|tool_call_end|>'
)
DS_PARAM = f'<{DSML}parameter name="city" string="true">{{city}}</{DSML}parameter>'

SAMPLES: dict[str, list[tuple[str, list[Call]]]] = {
    "tool_call_tag": [
        (
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "qwen3_coder_xml": [
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "</function>\n</tool_call>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "glm45": [
        (
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
            "</tool_call>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "gemma_special": [
        (
            '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "tools_tag": [
        (
            '<tools>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tools>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "fenced_json": [
        (
            '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "command_r": [
        (
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}}]<|END_ACTION|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "codec": [
        (
            '<callgate:call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
            "</callgate:call>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek": [
        (
            f"{CALLS_BEGIN}{CALL_BEGIN}function{SEP}get_weather\n```json\n"
            f'{{"city": "Paris"}}\n```{CALL_END}{CALLS_END}',
            [("get_weather", {"city": "Paris"})],
        ),
        (
            f'{CALLS_BEGIN}{CALL_BEGIN}get_weather{SEP}{{"city": "Paris"}}{CALL_END}'
            f"{CALL_BEGIN}get_time{SEP}{{}}{CALL_END}{CALLS_END}",
            [("get_weather", {"city": "Paris"}), ("get_time", {})],
        ),
    ],
    "kimi_k2": [
        (
            "<|tool_calls_section_begin|>"
            + KIMI_CALL.format(i=0, city="Paris")
            + KIMI_CALL.format(i=1, city="Oslo")
            + "<|tool_calls_section_end|>",
            [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        ),
    ],
    "minimax_m2": [
        (
            '<minimax:tool_call>\n<invoke name="get_weather">\n'
            '<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek_v32": [
        (
            f'<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\n'
            + DS_PARAM.format(city="Paris")
            + f"\n</{DSML}invoke>\n</{DSML}function_calls>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek_v4": [
        (
            f'<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">\n'
            + DS_PARAM.format(city="Paris")
            + f"\n</{DSML}invoke>\n</{DSML}tool_calls>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "harmony": [
        (
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
            '{"city": "Paris"}<|call|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "llama4_python": [
        (
            '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
}
"""Formats with a closing delimiter: prose may follow the call."""

TAIL_SAMPLES: dict[str, list[tuple[str, list[Call]]]] = {
    "bracket_tool_calls": [
        (
            '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
        (
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}',
            [("get_weather", {"city": "Paris"}), ("get_time", {})],
        ),
    ],
    "python_tag": [
        (
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "granite": [
        (
            '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "granite_tool_call": [
        (
            '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "phi4_functools": [
        (
            'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
}
"""Formats without a closing delimiter (or with an optional one): the call ends the content."""

BEFORE = "Sure, checking: "
AFTER = " Done."
