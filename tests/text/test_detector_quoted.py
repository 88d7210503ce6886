"""Markup quoted as Markdown code is text, never a call, in every format at every split.

Each format's sample call is written inside a code span (one or two backticks) or a fenced
block (of another language, or of none); shown whole, nothing runs. The same markup after
the code closes is still a call, so the property also shows that the code ends where
Markdown ends it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.testing.cuts import splits
from callgate.testing.text import AFTER, BEFORE, SAMPLES, TAIL_SAMPLES
from test_detector_splits import run

QUOTES = (
    ("`", "`"),
    ("`` ", " ``"),
    ("\n```python\n", "\n```\n"),
    ("\n````\n", "\n````\n"),
    ("\n  ```text\n", "\n  ```\n"),
    ("\n~~~ python\n", "\n~~~\n"),
    ("\n~~~~~\n", "\n~~~~~~\n"),
    ("\n```````xml\n", "\n```````\n"),
    ("\n- ```text\n  intro\n\n  ", "\n  ```\n"),
    ("\n1. ~~~\n   ", "\n   ~~~\n"),
    ("\n   * ```\n", "\n     ```\n"),
    ("\n> ```\n", "\n> ```\n"),
)
"""How prose quotes markup: code spans, and fences of backticks or tildes (four backticks
around a payload that holds a triple one, longer runs, indented ones, fences inside list
items, with a blank line in the item, and inside a block quote)."""
MARKUPS = [
    (fmt, markup, calls, fmt in TAIL_SAMPLES)
    for table in (SAMPLES, TAIL_SAMPLES)
    for fmt, samples in table.items()
    for markup, calls in samples
]
IDS = [f"{fmt}-{n}" for n, (fmt, *_) in enumerate(MARKUPS)]


def formats_for(fmt: str) -> list[list[str] | None]:
    """The format alone, beside the opt-in fenced JSON, and the defaults where it is one."""
    sets: list[list[str] | None] = [[fmt]]
    if fmt != "fenced_json":
        sets.append([fmt, "fenced_json"])
    if fmt in DEFAULT_FORMATS:
        sets.append(None)
    return sets


def quoted(markup: str, quote: tuple[str, str]) -> str:
    opening, closing = quote
    return BEFORE + opening + markup + closing


@pytest.mark.parametrize("sample", MARKUPS, ids=IDS)
@settings(max_examples=60, deadline=None)
@given(quote=st.sampled_from(QUOTES), data=st.data())
def test_quoted_markup_is_shown_whole_and_runs_nothing_at_any_split(
    sample: tuple[str, str, list[Any], bool], quote: tuple[str, str], data: st.DataObject
) -> None:
    fmt, markup, _, _ = sample
    content = quoted(markup, quote) + AFTER
    formats = data.draw(st.sampled_from(formats_for(fmt)), label="formats")
    pieces = data.draw(splits(content), label="deltas")
    assert run(formats, pieces) == (content, [])


@pytest.mark.parametrize("sample", MARKUPS, ids=IDS)
@settings(max_examples=60, deadline=None)
@given(quote=st.sampled_from(QUOTES), data=st.data())
def test_the_same_markup_after_the_code_closes_is_a_call_at_any_split(
    sample: tuple[str, str, list[Any], bool], quote: tuple[str, str], data: st.DataObject
) -> None:
    fmt, markup, calls, tail = sample
    prose = quoted(markup, quote) + "Now: "
    content = prose + markup + ("" if tail else AFTER)
    formats = data.draw(st.sampled_from(formats_for(fmt)), label="formats")
    pieces = data.draw(splits(content), label="deltas")
    assert run(formats, pieces) == (prose + ("" if tail else AFTER), calls)


@pytest.mark.parametrize(
    "content",
    [
        "the model emits `<tool_call>",  # a span still open at the end
        "a `<tool_call>` span\n\nthen a paragraph",
        "one ` tick, a blank line\n\nthen <tool_call",
    ],
)
def test_text_around_code_is_shown_unchanged_by_char(content: str) -> None:
    assert run(None, list(content)) == (content, [])


def test_a_blank_line_ends_a_span_that_never_closed() -> None:
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    content = "A stray ` tick.\n\n" + call
    assert run(None, list(content)) == ("A stray ` tick.\n\n", [("f", {})])
    assert run(None, [content]) == ("A stray ` tick.\n\n", [("f", {})])


def test_a_fenced_json_block_stays_the_opt_in_format() -> None:
    call = '```json\n{"name": "f", "arguments": {"a": 1}}\n```'
    assert run(["fenced_json"], list("Here: " + call)) == ("Here: ", [("f", {"a": 1})])
    without = run(["tool_call_tag"], list("Here: " + call))
    assert without == ("Here: " + call, [])  # a fence like any other
