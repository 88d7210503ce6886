"""Defects of the text path, each pinned by the content that showed it."""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Driver, Tool
from callgate.driver.loop import run_turn
from callgate.strategies.text.detector import Detector
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    SEP,
)


def deltas(content: str, size: int) -> list[str]:
    return [content[i : i + size] for i in range(0, len(content), size)]


def run(detector: Detector, pieces: list[str]) -> tuple[str, list[Any]]:
    steps = [detector.feed(p) for p in pieces]
    steps.append(detector.finish())
    calls = [(b.format, c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
    return "".join(s.shown for s in steps), calls


TIME_CALL = (
    'Checking.<tool_call>{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}'
    "</tool_call>Done."
)
QWEN_CODER = (
    "Checking.<tool_call>\n<function=get_time>\n<parameter=timezone>\nAsia/Tokyo\n"
    "</parameter>\n</function>\n</tool_call>Done."
)
GLM = (
    "Checking.<tool_call>get_time\n<arg_key>timezone</arg_key>\n"
    "<arg_value>Asia/Tokyo</arg_value>\n</tool_call>Done."
)
TOOLS = '<tools>{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}</tools>'
CODEC = (
    '<callgate:call>{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}</callgate:call>'
)


@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        ("tool_call_tag", TIME_CALL),
        ("qwen3_coder_xml", QWEN_CODER),
        ("glm45", GLM),
        ("tools_tag", "Checking." + TOOLS + "Done."),
        ("codec", "Checking." + CODEC + "Done."),
    ],
)
@pytest.mark.parametrize("size", [1, 2, 3, len(TIME_CALL) * 2])
def test_a_close_arriving_in_small_pieces_is_matched_with_one_format(
    fmt: str, content: str, size: int
) -> None:
    shown, calls = run(Detector([fmt]), deltas(content, size))
    assert shown == "Checking.Done."
    assert calls == [(fmt, "get_time", {"timezone": "Asia/Tokyo"})]


DEEPSEEK_V3 = (
    f"{CALLS_BEGIN}{CALL_BEGIN}function{SEP}get_weather\n```json\n"
    f'{{"city": "Paris"}}\n```{CALL_END}{CALLS_END}'
)


@pytest.mark.parametrize("size", [1, 2, 5, len(DEEPSEEK_V3)])
def test_deepseek_v3_fence_inside_its_block_does_not_break_it_with_the_default_set(
    size: int,
) -> None:
    assert run(Detector(), deltas(DEEPSEEK_V3, size)) == (
        "",
        [("deepseek", "get_weather", {"city": "Paris"})],
    )


def test_a_bare_json_list_is_checked_at_the_end() -> None:
    content = '[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]'
    shown, calls = run(Detector(end_formats=("bare_json",)), [content])
    assert shown == content
    assert calls == [("bare_json", "f", {"a": 1}), ("bare_json", "g", {})]


@pytest.mark.parametrize("size", [1, 3, 100])
def test_mistral_name_then_json_without_args_token_is_read(size: int) -> None:
    content = '[TOOL_CALLS]get_weather{"city": "Paris"}'
    assert run(Detector(), deltas(content, size)) == (
        "",
        [("bracket_tool_calls", "get_weather", {"city": "Paris"})],
    )


@pytest.mark.parametrize("size", [1, 4, 100])
def test_repeated_python_tag_runs_both_calls_or_none(size: int) -> None:
    content = '<|python_tag|>{"name":"a","parameters":{}}<|python_tag|>{"name":"b","parameters":{}}'
    assert run(Detector(), deltas(content, size)) == (
        "",
        [("python_tag", "a", {}), ("python_tag", "b", {})],
    )


def test_qwen3_coder_value_holding_another_parameter_is_no_call() -> None:
    content = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n"
        "<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>"
    )
    assert run(Detector(), [content]) == (content, [])


FENCE = '```json\n{"name": "f", "arguments": {"cmd": "ls"}}```json\n'


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, len(FENCE)])
def test_fenced_json_followed_by_a_new_fence_gives_one_result_for_every_split(
    size: int,
) -> None:
    detector = Detector(["fenced_json"])
    assert run(detector, deltas(FENCE, size)) == run(Detector(["fenced_json"]), [FENCE])
    assert run(Detector(["fenced_json"]), [FENCE]) == (FENCE, [])


def _driver() -> Driver:
    return Driver([Tool("f", lambda: "ran", {"type": "object"})])


def _chunks(content: str, size: int) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in deltas(content, size)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 100])
def test_a_text_call_restarted_inside_its_block_is_a_verdict_not_a_traceback(size: int) -> None:
    content = '<tool_call>{"name": "f"<tool_call>'
    driver = _driver()
    turn = run_turn(_chunks(content, size), driver, driver.new_stream_buffer())
    assert turn.results == ()
    assert turn.text == content
