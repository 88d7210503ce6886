"""Bare JSON and pythonic lists held from the content's start, at every split.

A driver that chooses either format streams it: content starting with ``{`` or ``[`` is
held while it can still be a call. A call is never shown (only the blanks before it); what
cannot be one is shown whole, once, in order, and a call written after it in another
format is still found. Each content is fed whole, one, two and three characters per delta
at every phase, and cut at random points; the oracle is the format's own parser over the
whole content, not the detector.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.strategies.text.detector import Detector
from callgate.strategies.text.formats import DEFAULT_FORMATS, FORMATS
from callgate.testing.cuts import fixed, splits

CALLS = [
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '[{"name": "f", "arguments": {"a": "x}]"}}, {"name": "g", "arguments": {}}]',
    '{"name": "f", "arguments": {"s": "a \\" } ] quote"}}',
    "[get_weather(city='Paris')]",
    "[f(a='x]'), g(b=\"y)\", c=[1, 2])]",
    "[f(a='''it's ] fine''')]",
]
"""Whole-content calls, with brackets and quotes inside their strings."""
NOT_CALLS = [
    '{"answer": 42}',
    "[1, 2, 3]",
    "{curly prose}",
    "[1] Paris is sunny.",
    "[link](https://example.com)",
    "[]",
    "{}",
    "[ ]",
    "[TOOL_CALLS is how Mistral writes it",
    "{'single': 'quotes'}",
]
"""Contents that start like one and are no call."""
AFTER = ["", " ", "\n\n", " and more.", "\n<b>", " {x}", " [f(a=1)]"]
"""What may follow a value: blanks keep a call whole, anything else makes it text."""
TAG = '<tool_call>{"name": "t", "arguments": {}}</tool_call>'
FORMATS_CHOSEN = [
    ["bare_json"],
    ["pythonic"],
    ["bare_json", "pythonic"],
    [*DEFAULT_FORMATS, "bare_json", "pythonic"],
]


def oracle(formats: list[str], content: str) -> tuple[str, list[Any]]:
    """What the content gives, by the parsers alone: a whole-content call, or the text."""
    stripped = content.lstrip()
    lead = content[: len(content) - len(stripped)]
    for name in formats:
        fmt = FORMATS[name]
        if fmt.at_start and stripped.startswith(fmt.opens):
            calls = fmt.parser(stripped, None)
            if calls:
                return lead, [(c.name, c.arguments) for c in calls]
    if TAG in content and "tool_call_tag" in formats:
        return content.replace(TAG, ""), [("t", {})]
    return content, []


def run(formats: list[str], deltas: list[str]) -> tuple[str, list[Any]]:
    detector = Detector(formats)
    steps = [detector.feed(d) for d in deltas]
    steps.append(detector.finish())
    return "".join(s.shown for s in steps), [
        (c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls
    ]


@st.composite
def held_contents(draw: st.DrawFn) -> tuple[list[str], str]:
    formats = draw(st.sampled_from(FORMATS_CHOSEN))
    lead = draw(st.sampled_from(["", " ", "\n  "]))
    value = draw(st.sampled_from(CALLS + NOT_CALLS))
    after = draw(st.sampled_from(AFTER))
    tag = draw(st.sampled_from(["", " " + TAG]))
    return formats, lead + value + after + tag


@settings(max_examples=300, deadline=None)
@given(held_contents(), st.data())
def test_a_held_call_is_never_shown_and_other_text_is_shown_once_at_any_split(
    case: tuple[list[str], str], data: st.DataObject
) -> None:
    formats, content = case
    deltas = data.draw(splits(content), label="deltas")
    assert run(formats, deltas) == oracle(formats, content)


@pytest.mark.parametrize("formats", FORMATS_CHOSEN, ids=lambda f: "+".join(f)[:40])
@pytest.mark.parametrize("value", CALLS + NOT_CALLS)
def test_every_one_two_and_three_character_cut_gives_the_parsers_reading(
    formats: list[str], value: str
) -> None:
    for content in (value, "  " + value + "\n", value + " and more.", value + " " + TAG):
        expected = oracle(formats, content)
        for size in (1, 2, 3):
            for phase in range(size):
                assert run(formats, fixed(content, size, phase)) == expected, (size, phase)


def test_a_call_is_held_from_its_first_character_to_the_end() -> None:
    detector = Detector(["bare_json"])
    call = CALLS[0]
    assert [detector.feed(c).shown for c in call] == [""] * len(call)
    [block] = detector.finish().blocks
    assert (block.format, block.shown, block.markup) == ("bare_json", False, call)


def test_text_after_the_value_releases_it_at_once() -> None:
    detector = Detector(["bare_json"])
    assert detector.feed('{"answer": 42}').shown == ""
    assert detector.feed("  ").shown == ""
    assert detector.feed("is").shown == '{"answer": 42}  is'
    assert detector.feed(" it.").shown == " it."
    assert detector.finish() == ("", ())


def test_a_head_that_is_no_call_is_shown_at_its_first_character() -> None:
    detector = Detector(["pythonic"])
    assert detector.feed("[").shown == ""
    assert detector.feed("1").shown == "[1"
    detector = Detector(["bare_json"])
    assert detector.feed("{").shown == ""
    assert detector.feed(" c").shown == "{ c"


def test_quotes_that_may_grow_into_a_triple_quote_wait_for_the_next_delta() -> None:
    content = "[f(a='''x ] y''')] tail"
    for size in (1, 2, 3, 4):
        assert run(["pythonic"], fixed(content, size)) == (content, [])
    assert run(["pythonic"], fixed(content[:-5], 1)) == ("", [("f", {"a": "x ] y"})])
