"""Behaviour of the streaming detector that the mutation run found unobserved.

Each case is fed whole, one character at a time and in three-character deltas; all three
must show the same text and find the same calls at the same places, and that result is
stated exactly (what is shown, each block's format, calls, markup and position).
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.fsm.interpreter import TransitionError
from callgate.strategies.text.detector import Detector
from callgate.strategies.text.formats import FormatMemory

TC = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
TG = TC.replace('"f"', '"g"')
FG = '```json\n{"name": "g", "arguments": {}}\n```'

Block = tuple[str, list[tuple[str, dict[str, Any]]], str, int, bool]


def run(detector: Detector, deltas: list[str]) -> tuple[str, list[Block], list[str]]:
    """Feed the deltas and finish; return the shown text, the blocks and the findings."""
    shown = ""
    blocks: list[Block] = []
    for step in [*(detector.feed(d) for d in deltas), detector.finish()]:
        for b in step.blocks:
            calls = [(c.name, c.arguments) for c in b.calls]
            blocks.append((b.format, calls, b.markup, len(shown) + b.at, b.shown))
        shown += step.shown
    return shown, blocks, [f.message for f in detector.findings]


def splits(text: str) -> list[list[str]]:
    return [[text], list(text), [text[i : i + 3] for i in range(0, len(text), 3)]]


CASES: list[tuple[str, str, list[Block]]] = [
    ("plain text", "plain text", []),
    ("", "", []),
    (
        "A " + TC + " B " + TG + " C",
        "A  B  C",
        [
            ("tool_call_tag", [("f", {"a": 1})], TC, 2, False),
            ("tool_call_tag", [("g", {"a": 1})], TG, 5, False),
        ],
    ),
    ('a <tool_call>{"name": "f"', 'a <tool_call>{"name": "f"', []),
    (
        'x [TOOL_CALLS][{"name": "f", "arguments": {}}]',
        "x ",
        [
            (
                "bracket_tool_calls",
                [("f", {})],
                '[TOOL_CALLS][{"name": "f", "arguments": {}}]',
                2,
                False,
            )
        ],
    ),
    ("<tool_call>hello world and more", "<tool_call>hello world and more", []),
    ("abc <tool", "abc <tool", []),
    ("abc <tool_call", "abc <tool_call", []),
    ("<think>abc", "<think>abc", []),
    (
        '  {"name": "f", "arguments": {}}',
        '  {"name": "f", "arguments": {}}',
        [("bare_json", [("f", {})], '  {"name": "f", "arguments": {}}', 32, True)],
    ),
    ('hello {"name": "f", "arguments": {}}', 'hello {"name": "f", "arguments": {}}', []),
    (
        "x<|tool_call>call:f{a:1}<tool_call|>y",
        "xy",
        [("gemma_special", [("f", {"a": 1})], "<|tool_call>call:f{a:1}<tool_call|>", 1, False)],
    ),
    (
        'x```json\n{"name": "f", "arguments": {}}\n```y',
        "xy",
        [("fenced_json", [("f", {})], '```json\n{"name": "f", "arguments": {}}\n```', 1, False)],
    ),
    (
        'x<|python_tag|>{"name": "f", "parameters": {}}',
        "x",
        [("python_tag", [("f", {})], '<|python_tag|>{"name": "f", "parameters": {}}', 1, False)],
    ),
    (
        'x<|START_ACTION|>[{"tool_name": "f", "parameters": {}}]<|END_ACTION|>y',
        "xy",
        [
            (
                "command_r",
                [("f", {})],
                '<|START_ACTION|>[{"tool_name": "f", "parameters": {}}]<|END_ACTION|>',
                1,
                False,
            )
        ],
    ),
    (
        'x<|tool_call|>[{"name": "f", "arguments": {}}]',
        "x",
        [("granite", [("f", {})], '<|tool_call|>[{"name": "f", "arguments": {}}]', 1, False)],
    ),
    (
        '<tool_call>{"name": "f", ' + TG,
        '<tool_call>{"name": "f", ',
        [("tool_call_tag", [("g", {"a": 1})], TG, 25, False)],
    ),
    (
        "<think>r " + TC + "</think>after",
        "<think>r " + TC + "</think>after",
        [],
    ),
    (  # a new fence inside an open one breaks it (its ``` is not the close): shown as text
        'x```json\n{"name": "f", "arguments": {}}\n' + FG + "y",
        'x```json\n{"name": "f", "arguments": {}}\ny',
        [("fenced_json", [("g", {})], FG, 40, False)],
    ),
]


@pytest.mark.parametrize(("content", "shown", "blocks"), CASES)
def test_what_is_shown_and_found_for_any_split(
    content: str, shown: str, blocks: list[Block]
) -> None:
    for deltas in splits(content):
        result = run(Detector(end_formats=("bare_json",)), deltas)
        assert result[:2] == (shown, blocks), deltas


@pytest.mark.parametrize(
    ("fmt", "markup"),
    [
        ("bracket_tool_calls", '[TOOL_CALLS][{"name": "f", "arguments": {}}]'),
        ("python_tag", '<|python_tag|>{"name": "f", "parameters": {}}'),
    ],
)
def test_a_block_with_nothing_to_stop_it_runs_to_the_end_of_the_stream(
    fmt: str, markup: str
) -> None:
    # The only format watched (as for a Mistral or a Llama model) has no close and repeats
    # its opener, so nothing inside its block ends or breaks it.
    for deltas in splits("x" + markup):
        result = run(Detector(formats=[fmt]), deltas)
        assert result == ("x", [(fmt, [("f", {})], markup, 1, False)], []), deltas


def test_a_block_is_not_given_up_while_its_payload_may_be_starting_its_close() -> None:
    # "<" cannot start a tool_call_tag payload ("{" or "["), but it may start the close,
    # after a blank or not: the block waits for it, then shows the empty block as text.
    for blank in ("", "\n"):
        detector = Detector(formats=["tool_call_tag"])
        opened = "<tool_call>" + blank + "</tool_c"
        assert [detector.feed(c).shown for c in opened] == [""] * len(opened)
        assert detector.forming() == (True, None)
        assert detector.feed("all> ok").shown == opened + "all> ok"


def test_a_call_marker_inside_reasoning_is_reported_and_shown() -> None:
    for deltas in splits("<think>r " + TC + "</think>after"):
        _, _, findings = run(Detector(), deltas)
        assert findings == ["a '<tool_call>' call marker inside reasoning; not run"]


def test_calls_inside_reasoning_run_when_asked() -> None:
    # Inside reasoning the opener is found behind text already shown, so only a delta that
    # holds the whole opener keeps all of it back (the detector's documented exception).
    content = "<think>r " + TC + "</think>after"
    for deltas in (["<think>r ", TC + "</think>after"], [content]):
        shown, blocks, findings = run(Detector(reasoning_calls=True), deltas)
        assert shown == "<think>r </think>after"
        assert blocks == [("tool_call_tag", [("f", {"a": 1})], TC, 9, False)]
        assert findings == ["a '<tool_call>' call marker inside reasoning; not run"]
    shown, blocks, _ = run(Detector(reasoning_calls=True), list(content))
    assert [b[1] for b in blocks] == [[("f", {"a": 1})]]
    assert shown.replace("<tool_call", "") == "<think>r </think>after"


def test_a_call_to_a_tool_nobody_has_is_text() -> None:
    for deltas in splits(TC):
        assert run(Detector(known_tools={"g"}), deltas)[:2] == (TC, [])
        assert run(Detector(known_tools={"f"}), deltas)[1] != []


def test_an_end_format_call_to_a_tool_nobody_has_is_no_call() -> None:
    content = '{"name": "f", "arguments": {}}'
    assert run(Detector(known_tools={"g"}), [content])[1] == []


def test_a_block_longer_than_the_limit_is_released_as_text() -> None:
    for deltas in splits(TC):
        assert run(Detector(max_block=20), deltas)[:2] == (TC, [])
    assert run(Detector(max_block=len(TC)), [TC])[1] != []


def test_end_formats_are_chosen_by_the_caller() -> None:
    assert run(Detector(end_formats=("pythonic",)), ["[f(a=1)]"])[1] == [
        ("pythonic", [("f", {"a": 1})], "[f(a=1)]", 8, True)
    ]
    assert run(Detector(end_formats=None), ['{"name": "f", "arguments": {}}'])[1] == []
    assert run(Detector(end_formats=()), ['{"name": "f", "arguments": {}}'])[1] == []


def test_an_end_format_is_not_tried_after_a_streamed_call() -> None:
    content = TC + ' {"name": "g", "arguments": {}}'
    blocks = run(Detector(formats=["tool_call_tag"]), [content])[1]
    assert [b[0] for b in blocks] == ["tool_call_tag"]


def test_a_stream_format_cannot_be_an_end_format() -> None:
    with pytest.raises(ValueError, match="tool_call_tag is stream-detected, not an end-of-stream"):
        Detector(end_formats=("tool_call_tag",))


def test_forming_names_the_tool_once_its_name_has_streamed() -> None:
    detector = Detector()
    assert detector.forming() == (False, None)
    detector.feed('<tool_call>{"name": "get_w')
    assert detector.forming() == (True, None)
    detector.feed('eather", ')
    assert detector.forming() == (True, "get_weather")


def test_abandon_shows_the_block_and_reads_on_as_text() -> None:
    detector = Detector()
    assert detector.abandon().shown == ""
    detector.feed('<tool_call>{"name": "x", ')
    assert detector.abandon().shown == '<tool_call>{"name": "x", '
    assert detector.forming() == (False, None)
    assert detector.feed("z </tool_call>").shown == "z </tool_call>"
    assert detector.finish().blocks == ()


def test_a_delta_after_the_end_is_a_usage_error() -> None:
    detector = Detector()
    detector.feed("x")
    detector.finish()
    with pytest.raises(TransitionError):
        detector.feed("y")


def test_reset_starts_a_new_turn() -> None:
    detector = Detector()
    detector.feed("<think>" + TC)
    detector.finish()
    assert detector.findings
    detector.reset()
    assert detector.findings == []
    assert run(detector, ["a " + TC])[:2] == (
        "a ",
        [("tool_call_tag", [("f", {"a": 1})], TC, 2, False)],
    )


def test_the_reasoning_channel_reports_markers_split_across_deltas_once() -> None:
    detector = Detector()
    for delta in ["x <tool_", "call> y </think> <tools", ">", " z"]:
        detector.feed_reasoning(delta)
    assert [f.message for f in detector.findings] == [
        "a '<tool_call>' call marker inside reasoning; not run",
        "a '<tools>' call marker inside reasoning; not run",
    ]


def test_abandoning_a_block_open_at_the_start_shows_its_opener_once() -> None:
    detector = Detector(formats=["tool_call_tag", "pythonic"])
    assert detector.feed("[f(a=") == ("", ())
    assert detector.forming() == (True, None)
    assert detector.abandon().shown == "[f(a="
    assert detector.feed("1)] more").shown == "1)] more"
    assert detector.finish() == ("", ())


def test_abandoning_a_block_open_at_the_start_finds_the_calls_inside_it() -> None:
    detector = Detector(formats=["tool_call_tag", "pythonic"])
    assert detector.feed("[x(" + TG) == ("", ())
    step = detector.abandon()
    assert step.shown == "[x("
    assert [(b.format, b.markup, b.at) for b in step.blocks] == [("tool_call_tag", TG, 3)]


def test_a_block_of_exactly_the_limit_is_a_call_and_one_more_is_text() -> None:
    payload = '{"name": "f", "arguments": {"a": 1}}'
    assert run(Detector(max_block=len(payload)), [TC])[1] != []
    assert run(Detector(max_block=len(payload) - 1), [TC])[:2] == (TC, [])


def test_the_tool_schemas_type_the_parameters_of_xml_calls() -> None:
    content = "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>"
    schemas = {"f": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    typed = run(Detector(schemas=schemas), [content])[1]
    untyped = run(Detector(), [content])[1]
    assert [b[1] for b in typed] == [[("f", {"n": 5})]]
    assert [b[1] for b in untyped] == [[("f", {"n": "5"})]]


def test_a_format_that_opens_at_the_start_may_follow_leading_blanks_only() -> None:
    formats = ["tool_call_tag", "pythonic"]
    for deltas in splits("  [f(a=1)]"):
        shown, blocks, _ = run(Detector(formats=formats, end_formats=None), deltas)
        assert shown == "  "
        assert blocks == [("pythonic", [("f", {"a": 1})], "[f(a=1)]", 2, False)]
    later = (["hello", " [f(a=1)]"], ["hello", " [f(a=1)] <x"], [" ", "\n", "x [f(a=1)] <"])
    for deltas in later:
        shown, blocks, _ = run(Detector(formats=formats, end_formats=None), deltas)
        assert (shown, blocks) == ("".join(deltas), [])


def test_an_end_format_call_is_remembered() -> None:
    memory = FormatMemory()
    run(Detector(memory=memory, end_formats=("bare_json",)), ['{"name": "f", "arguments": {}}'])
    assert memory.remembered == "bare_json"
    run(Detector(memory=memory), [TC])
    assert memory.remembered == "tool_call_tag"


def test_a_closed_block_needs_no_complete_ending_a_glm_name_alone_is_a_call() -> None:
    assert run(Detector(), ["<tool_call>get_time</tool_call>"])[:2] == (
        "",
        [("glm45", [("get_time", {})], "<tool_call>get_time</tool_call>", 0, False)],
    )


@pytest.mark.parametrize("blank", ["", "\n", " \n\t"])
def test_a_stopped_block_with_blanks_after_its_payload_is_a_call_and_text_when_cut(
    blank: str,
) -> None:
    content = '<tool_call>{"name": "f", "arguments": {}}' + blank
    assert run(Detector(), [content])[:2] == (
        "",
        [("tool_call_tag", [("f", {})], content, 0, False)],
    )
    detector = Detector()
    assert detector.feed(content) == ("", ())
    assert detector.finish(cut=True) == (content, ())


def test_a_stopped_block_whose_payload_does_not_end_complete_is_text() -> None:
    content = "<tool_call>get_time"
    assert run(Detector(), [content])[:2] == (content, [])


def test_a_format_without_a_close_is_a_call_after_a_cut_too() -> None:
    content = '<|tool_call|>[{"name": "f", "arguments": {}}]'
    detector = Detector()
    assert detector.feed(content) == ("", ())
    [block] = detector.finish(cut=True).blocks
    assert (block.format, block.markup) == ("granite", content)
