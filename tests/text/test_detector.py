"""The streaming detector: chunking invariance, nothing lost, no markup shown, bounded hold."""

from __future__ import annotations

import json
import keyword
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from callgate.fsm.interpreter import TransitionError
from callgate.strategies.text.detector import Detected, Detector
from callgate.strategies.text.formats import DEFAULT_FORMATS, FORMATS, FormatMemory
from callgate.strategies.text.invoke_payloads import DSML
from callgate.strategies.text.markup_payloads import CALL_BEGIN, CALL_END, SEP
from callgate.testing.cuts import splits

Args = dict[str, Any]
DS_BEGIN, DS_END = FORMATS["deepseek"].opens[0], FORMATS["deepseek"].close


def js(args: Args) -> str:
    return json.dumps(args, ensure_ascii=False)


def gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(gemma_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def dsml(block: str, name: str, args: Args) -> str:
    params = "".join(
        f'<{DSML}parameter name="{k}" string="true">{v}</{DSML}parameter>\n'
        for k, v in args.items()
    )
    invoke = f'<{DSML}invoke name="{name}">\n{params}</{DSML}invoke>'
    return f"<{DSML}{block}>\n{invoke}\n</{DSML}{block}>"


RENDER: dict[str, Callable[[str, Args], str]] = {
    "tool_call_tag": lambda n, a: f'<tool_call>{{"name": "{n}", "arguments": {js(a)}}}</tool_call>',
    "tools_tag": lambda n, a: f'<tools>{{"name": "{n}", "arguments": {js(a)}}}</tools>',
    "fenced_json": lambda n, a: f'```json\n{{"name": "{n}", "arguments": {js(a)}}}\n```',
    "gemma_special": lambda n, a: f"<|tool_call>call:{n}{gemma_value(a)}<tool_call|>",
    "deepseek": lambda n, a: f"{DS_BEGIN}{CALL_BEGIN}{n}{SEP}{js(a)}{CALL_END}{DS_END}",
    "command_r": lambda n, a: (
        f'<|START_ACTION|>[{{"tool_name": "{n}", "parameters": {js(a)}}}]<|END_ACTION|>'
    ),
    "codec": lambda n, a: f'<callgate:call>{{"name": "{n}", "arguments": {js(a)}}}</callgate:call>',
    "qwen3_coder_xml": lambda n, a: (
        f"<tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>"
    ),
    "glm45": lambda n, a: (
        f"<tool_call>{n}\n"
        + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in a.items())
        + "</tool_call>"
    ),
    "kimi_k2": lambda n, a: (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0"
        f"<|tool_call_argument_begin|>{js(a)}<|tool_call_end|><|tool_calls_section_end|>"
    ),
    "minimax_m2": lambda n, a: (
        f'<minimax:tool_call>\n<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in a.items())
        + "</invoke>\n</minimax:tool_call>"
    ),
    "deepseek_v32": lambda n, a: dsml("function_calls", n, a),
    "deepseek_v4": lambda n, a: dsml("tool_calls", n, a),
    "harmony": lambda n, a: (
        f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{js(a)}<|call|>"
    ),
    "llama4_python": lambda n, a: (
        f"<|python_start|>[{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})]<|python_end|>"
    ),
}
"""Formats with a closing delimiter: a call can sit anywhere in the content."""

TAIL_RENDER: dict[str, Callable[[str, Args], str]] = {
    "bracket_tool_calls": lambda n, a: f'[TOOL_CALLS][{{"name": "{n}", "arguments": {js(a)}}}]',
    "python_tag": lambda n, a: f'<|python_tag|>{{"name": "{n}", "parameters": {js(a)}}}',
    "granite": lambda n, a: f'<|tool_call|>[{{"name": "{n}", "arguments": {js(a)}}}]',
    "granite_tool_call": lambda n, a: f'<tool_call>[{{"name": "{n}", "arguments": {js(a)}}}]',
}
"""Formats without a closing delimiter: the call runs to the end of the content."""

STRING_ONLY = {"qwen3_coder_xml", "glm45", "minimax_m2", "deepseek_v32", "deepseek_v4"}
"""Untyped values: without schemas they parse back as strings, so generate strings."""

PROSE = st.text(alphabet="ab <[|tol_c\n.é", max_size=24)
IDENTIFIERS = st.from_regex(r"[a-z][a-z_]{0,9}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)
"""Names and keys every format can write: pythonic calls cannot name a Python keyword."""
NAMES = IDENTIFIERS
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<>|`["), max_size=8)
BOUND = max(len(o) for f in DEFAULT_FORMATS for o in FORMATS[f].opens) - 1
SCALARS = st.one_of(TEXT, st.integers(-1000, 1000), st.booleans(), st.none())
KEYS = st.from_regex(r"[a-z]{1,6}", fullmatch=True).filter(lambda k: not keyword.iskeyword(k))
ARGS = st.dictionaries(KEYS, SCALARS, max_size=3)
STR_ARGS = st.dictionaries(
    KEYS,
    st.text(alphabet="abc xyz", min_size=1, max_size=8).map(str.strip).filter(bool),
    max_size=3,
)


@st.composite
def contents(draw: st.DrawFn) -> tuple[str, str, list[tuple[str, str, Args]]]:
    """Prose with calls in random formats: (content, the prose alone, the calls)."""
    pieces: list[str] = []
    prose: list[str] = []
    calls: list[tuple[str, str, Args]] = []
    for _ in range(draw(st.integers(0, 3))):
        text = draw(PROSE)
        pieces.append(text)
        prose.append(text)
        fmt = draw(st.sampled_from(sorted(RENDER)))
        name = draw(NAMES)
        args = draw(STR_ARGS if fmt in STRING_ONLY else ARGS)
        pieces.append(RENDER[fmt](name, args))
        calls.append((fmt, name, args))
    text = draw(PROSE)
    pieces.append(text)
    prose.append(text)
    if draw(st.booleans()):
        fmt = draw(st.sampled_from(sorted(TAIL_RENDER)))
        name, args = draw(NAMES), draw(ARGS)
        pieces.append(TAIL_RENDER[fmt](name, args))
        calls.append((fmt, name, args))
    return "".join(pieces), "".join(prose), calls


def split(data: st.DataObject, text: str) -> list[str]:
    return data.draw(splits(text), label="deltas")


def run(deltas: list[str], detector: Detector | None = None) -> tuple[str, list[Any]]:
    detector = detector or Detector()
    steps: list[Detected] = [detector.feed(d) for d in deltas]
    steps.append(detector.finish())
    shown = "".join(s.shown for s in steps)
    calls = [(b.format, c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
    return shown, calls


@settings(max_examples=300, deadline=None)
@given(contents(), st.data())
def test_every_split_shows_the_prose_exactly_once_and_extracts_every_call(
    case: tuple[str, str, list[tuple[str, str, Args]]], data: st.DataObject
) -> None:
    content, prose, calls = case
    shown, found = run(split(data, content))
    assert shown == prose
    assert found == calls
    assert (shown, found) == run([content])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="<>[]{}|`/_tolcalsTOCLjn:! think\n", max_size=60), st.data())
def test_any_text_is_shown_the_same_for_every_split_and_held_within_the_bound(
    text: str, data: st.DataObject
) -> None:
    detector = Detector()
    shown = []
    for delta in split(data, text):
        shown.append(detector.feed(delta).shown)
        if detector.state in ("printing", "matching_prefix"):
            assert len(detector.held) <= BOUND
    shown.append(detector.finish().shown)
    whole, calls = run([text])
    assert "".join(shown) == whole
    if not calls:
        assert whole == text


@pytest.mark.parametrize(
    "content",
    [
        "Use <tools carefully, please.",
        "The literal <tool_result> is not a call.",
        "Wrap a call in `<tool_call>` tags, like <tool_call> this.",
        'Here is JSON:\n```json\n{"city": "Paris", "days": 3}\n```\nDone.',
        "I will <tool_call>",
        '<|tool_call>call:get_weather{city:<|"|>Paris',
    ],
)
def test_text_that_is_not_a_call_is_shown_unchanged(content: str) -> None:
    for pieces in ([content], list(content)):
        assert run(pieces) == (content, [])


def test_a_call_inside_think_is_never_a_call_and_is_reported() -> None:
    content = '<think>maybe <tool_call>{"name": "rm", "arguments": {}}</tool_call></think>ok'
    detector = Detector()
    shown, calls = run(list(content), detector)
    assert (shown, calls) == (content, [])
    assert [f.code for f in detector.findings] == ["call_in_reasoning"]


def test_opt_in_treats_a_call_in_reasoning_as_closing_it() -> None:
    content = '<think>let me call <tool_call>{"name": "f", "arguments": {}}</tool_call>'
    detector = Detector(reasoning_calls=True)
    shown, calls = run([content], detector)
    assert calls == [("tool_call_tag", "f", {})]
    assert shown == "<think>let me call "


def test_a_call_naming_a_tool_no_driver_owns_is_released_as_text() -> None:
    content = 'x <tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> y'
    assert run([content], Detector(known_tools={"get_weather"})) == (content, [])


def test_an_unterminated_block_is_released_at_the_end_of_the_stream() -> None:
    content = 'Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    detector = Detector()
    first = detector.feed(content)
    assert first.shown == "Sure. "
    assert detector.finish().shown == content[len("Sure. ") :]


def test_a_new_marker_breaks_the_open_block_which_is_shown() -> None:
    content = '<tool_call>{"a": <tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert run([content]) == ('<tool_call>{"a": ', [("tool_call_tag", "f", {})])


def test_a_block_over_the_size_limit_is_shown_from_the_limit_on() -> None:
    content = "<tool_call>{" + "x" * 100
    detector = Detector(max_block=10)
    assert run([content], detector) == (content, [])


def test_bare_json_is_checked_at_the_end_against_the_exact_schemas() -> None:
    schemas = {
        "get_weather": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        }
    }
    call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    detector = Detector(schemas=schemas, end_formats=("bare_json",))
    step = detector.feed(call)
    assert step.shown == call
    [block] = detector.finish().blocks
    assert (block.format, block.shown, block.calls[0].arguments) == (
        "bare_json",
        True,
        {"city": "Paris"},
    )
    other = '{"name": "get_weather", "arguments": {"town": "Paris"}}'
    assert run([other], Detector(schemas=schemas, end_formats=("bare_json",))) == (other, [])
    assert run([call], Detector(schemas=schemas)) == (call, []), "bare JSON is opt-in"


def test_the_remembered_format_is_tried_first_and_updated() -> None:
    memory = FormatMemory()
    assert memory.seed_from_models(["text-embedding-3", "Qwen3-Coder-30B-A3B"]) == (
        "qwen3_coder_xml"
    )
    detector = Detector(memory=memory)
    run(['<tool_call>{"name": "f", "arguments": {}}</tool_call>'], detector)
    assert memory.remembered == "tool_call_tag"


def test_feeding_after_the_end_is_an_error_naming_the_machine() -> None:
    detector = Detector()
    detector.finish()
    with pytest.raises(TransitionError, match="'detector' cannot handle event 'text'"):
        detector.feed("more")


def test_unknown_format_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown text format"):
        Detector(["tool_call_tag", "nope"])


HELD = [*DEFAULT_FORMATS, "bare_json", "pythonic"]
"""The default set plus the formats a driver opts into, held from the content's start."""


class DetectorMachine(RuleBasedStateMachine):
    """Random pieces of prose and markup fed in random deltas; compared with one feed.

    Each run uses the default set or (drawn at the start) the default set plus bare JSON
    and pythonic lists, which hold content starting with ``{`` or ``[``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.formats: list[str] | None = None
        self.detector = Detector()
        self.fed: list[str] = []
        self.shown: list[str] = []
        self.calls: list[Any] = []
        self.ended = False

    @initialize(held=st.booleans())
    def choose_formats(self, held: bool) -> None:
        self.formats = HELD if held else None
        self.detector = Detector(self.formats)

    @precondition(lambda self: not self.ended)
    @rule(
        piece=st.sampled_from(
            [
                "<",
                "<tool",
                "_call>",
                "</tool_call>",
                '{"name": "f", "arguments": {}}',
                "<think>",
                "</think>",
                "[TOOL",
                "_CALLS]",
                "```json\n",
                "```",
                "<tools>",
                "</tools>",
                "text ",
                "<|tool_call>",
                "call:f{}",
                "<tool_call|>",
                "\n",
                "é",
                "</tool",
                "```j",
                "<|channel|>",
                "commentary to=functions.f<|message|>{}",
                "<|call|>",
                "<|python_tag|>",
                '{"name": "g", "parameters": {}}',
                "[",
                "f(a='x]')",
                "]",
                "{",
                '"',
                "}",
                "'''",
                " ",
            ]
        )
    )
    def feed(self, piece: str) -> None:
        self.fed.append(piece)
        step = self.detector.feed(piece)
        self.shown.append(step.shown)
        self.calls += [(b.format, c.name) for b in step.blocks for c in b.calls]

    @precondition(lambda self: not self.ended)
    @rule()
    def finish(self) -> None:
        step = self.detector.finish()
        self.shown.append(step.shown)
        self.calls += [(b.format, c.name) for b in step.blocks for c in b.calls]
        self.ended = True
        whole, calls = run(["".join(self.fed)], Detector(self.formats))
        assert "".join(self.shown) == whole
        assert self.calls == [(f, n) for f, n, _ in calls]

    @precondition(lambda self: self.ended)
    @rule()
    def next_turn(self) -> None:
        self.detector.reset()
        assert self.detector.state == "printing"
        self.fed, self.shown, self.calls, self.ended = [], [], [], False

    @invariant()
    def state_is_a_table_state_and_hold_is_bounded(self) -> None:
        assert self.detector.state in {
            "printing",
            "matching_prefix",
            "in_block",
            "reasoning",
            "ended",
        }
        assert len(self.detector.held) <= BOUND
        if self.detector.state != "matching_prefix":
            assert self.detector.held == ""

    def teardown(self) -> None:
        if not self.ended:
            self.finish()


TestDetectorMachine = DetectorMachine.TestCase
TestDetectorMachine.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)


def test_bare_json_and_pythonic_stream_detection_is_opt_in() -> None:
    call = '{"name": "f", "arguments": {}}'
    detector = Detector(["tool_call_tag", "bare_json"], end_formats=())
    assert [detector.feed(d).shown for d in ("  ", call[:9], call[9:])] == ["  ", "", ""]
    [block] = detector.finish().blocks
    assert (block.format, block.shown) == ("bare_json", False)
    assert run(['{"answer": 42}'], Detector(["bare_json"], end_formats=())) == (
        '{"answer": 42}',
        [],
    )
    assert run(["[get(a=1)]"], Detector(["pythonic"], end_formats=()))[1] == [
        ("pythonic", "get", {"a": 1})
    ]
    assert run([call], Detector())[0] == call


def test_a_call_in_the_provider_reasoning_channel_is_reported_not_shown() -> None:
    detector = Detector()
    for piece in ("I could call <tool", '_call>{"name": "rm"}</tool_call> but won\'t'):
        detector.feed_reasoning(piece)
    assert [f.code for f in detector.findings] == ["call_in_reasoning"]
    assert run(["The answer."], detector) == ("The answer.", [])


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_a_python_keyword_is_no_pythonic_call_name_at_any_split(size: int) -> None:
    content = "<|python_start|>[def()]<|python_end|>"
    detector = Detector(["llama4_python"])
    steps = [detector.feed(content[i : i + size]) for i in range(0, len(content), size)]
    steps.append(detector.finish())
    assert "".join(s.shown for s in steps) == content
    assert not [b for s in steps for b in s.blocks if b.calls]


FENCED_CALL = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'


@pytest.mark.parametrize(
    "pieces",
    [
        ["Intro\n", "~~~\n", FENCED_CALL, "\n~~~\n"],
        ["Intro\n", "  ", "  ", "~~~\n" + FENCED_CALL + "\n~~~\n"],
        ["Intro\n", " ", "~~~ text\n" + FENCED_CALL + "\n~~~\n"],
    ],
    ids=["fence-alone", "indent-in-pieces", "one-space"],
)
def test_a_tilde_fence_opened_at_a_pieces_start_still_quotes_its_call(pieces: list[str]) -> None:
    """The fence's line began in earlier pieces: looking back for the line's start goes on
    through them (a tilde run not at a line start is text, and the call in it would run)."""
    content = "".join(pieces)
    assert run(pieces, Detector(["tool_call_tag"])) == (content, [])


@pytest.mark.parametrize("size", [1, 5, 40])
def test_a_run_after_more_than_look_characters_of_indent_is_no_fence_at_any_split(
    size: int,
) -> None:
    """A backtick run with 40 spaces before it on its line is no fence (the look back for
    the line's start stops at LOOK characters, however the spaces came): it opens a span,
    which the blank line ends, so the call after it is prose, at every split."""
    indent = " " * 40
    pieces = ["Intro\n", *(indent[i : i + size] for i in range(0, 40, size))]
    pieces.append("```\n\n" + FENCED_CALL + "\n")
    shown, calls = run(pieces, Detector(["tool_call_tag"]))
    assert calls == [("tool_call_tag", "f", {})]
    assert shown == "Intro\n" + indent + "```\n\n\n"
