"""The detector with its scanning tables built afresh for each case: what it shows and finds.

The tables of a choice of formats are built once and cached; a case run after another with
the same formats would scan with the tables the first one built. Each case here clears that
cache first, so that what it states (the text released or held, the calls found) depends on
how the tables are built: each block's stop tokens (its close and the openers that break
it), how many characters wait between deltas, the tokens that may still grow into longer
ones, and a block that nothing stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from callgate.strategies.text._scan import _scanning
from callgate.strategies.text.detector import Detector
from test_detector_blocks import (
    CASES,
    TC,
    Block,
    run,
    splits,
)
from test_detector_blocks import (
    test_a_block_is_not_given_up_while_its_payload_may_be_starting_its_close as waits_for_close,
)
from test_detector_blocks import (
    test_what_is_shown_and_found_for_any_split as shown_and_found,
)


@pytest.fixture(autouse=True)
def fresh_tables() -> Iterator[None]:
    """Every detector of the case builds its tables anew (and leaves none behind)."""
    _scanning.cache_clear()
    yield
    _scanning.cache_clear()


@pytest.mark.parametrize(("content", "shown", "blocks"), CASES)
def test_fresh_tables_show_and_find_the_same_for_any_split(
    content: str, shown: str, blocks: list[Block]
) -> None:
    shown_and_found(content, shown, blocks)


@pytest.mark.parametrize(
    ("fmt", "markup"),
    [
        ("bracket_tool_calls", '[TOOL_CALLS][{"name": "f", "arguments": {}}]'),
        ("python_tag", '<|python_tag|>{"name": "f", "parameters": {}}'),
    ],
)
def test_a_block_that_nothing_stops_holds_its_payload_to_the_end(fmt: str, markup: str) -> None:
    for deltas in splits("x" + markup):
        _scanning.cache_clear()
        detector = Detector(formats=[fmt])
        released = [detector.feed(d).shown for d in deltas]
        assert "".join(released) == "x", deltas
        end = detector.finish()
        assert end.shown == ""
        assert [(b.format, b.markup, len(b.calls)) for b in end.blocks] == [(fmt, markup, 1)]


def test_a_close_split_over_deltas_is_held_until_it_completes() -> None:
    detector = Detector(formats=["tool_call_tag"])
    body = '<tool_call>{"name": "f", "arguments": {}}</tool_'
    assert detector.feed(body).shown == ""
    step = detector.feed("call>after")
    assert step.shown == "after"
    assert [(b.format, [c.name for c in b.calls]) for b in step.blocks] == [
        ("tool_call_tag", ["f"])
    ]


def test_an_opener_of_another_format_breaks_an_open_block() -> None:
    deltas = ['<tool_call>{"name": "f", ``', '`json\n{"name": "g", "arguments": {}}\n```']
    result = run(Detector(formats=["tool_call_tag", "fenced_json"]), deltas)
    fence = '```json\n{"name": "g", "arguments": {}}\n```'
    assert result == (
        '<tool_call>{"name": "f", ',
        [("fenced_json", [("g", {})], fence, 25, False)],
        [],
    )


def test_a_block_held_one_character_at_a_time_releases_nothing_early() -> None:
    detector = Detector(formats=["tool_call_tag"])
    assert [detector.feed(c).shown for c in "A " + TC] == ["A", " "] + [""] * len(TC)
    end = detector.finish()
    assert end.shown == "" and [b.markup for b in end.blocks] == []


def _calls(detector: Detector, deltas: list[str]) -> list[tuple[str, dict[str, Any]]]:
    found = [c for d in deltas for b in detector.feed(d).blocks for c in b.calls]
    found += [c for b in detector.finish().blocks for c in b.calls]
    return [(c.name, c.arguments) for c in found]


def test_default_formats_build_the_same_tables_twice() -> None:
    first = _calls(Detector(), splits("A " + TC)[1])
    _scanning.cache_clear()
    second = _calls(Detector(), splits("A " + TC)[2])
    assert first == second == [("f", {"a": 1})]


def test_fresh_tables_hold_a_payload_that_may_be_starting_its_close() -> None:
    waits_for_close()
