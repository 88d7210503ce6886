"""A delta the detector collects into an open block is read as feeding it would read it.

:meth:`Detector.collect` takes a delta into a block past its head with one search (no close,
no breaking marker, within the size limit) and shows nothing. For a call in every format
(long enough to pass its head, known or not, quoted or bare, with prose around it), cut
anywhere, trying ``collect`` before every ``feed`` gives the text shown, the blocks found,
the state and the findings that ``feed`` alone gives.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.strategies.text.detector import HEAD, Detector
from callgate.testing.cuts import fixed, splits
from long_calls import LONG_CALLS as CALLS


def _read(fmt: str, deltas: list[str], collect: bool, max_block: int) -> dict[str, Any]:
    detector = Detector([fmt], max_block=max_block)
    shown, blocks, collected = [], [], 0
    for delta in deltas:
        if collect and detector.collect(delta):
            collected += 1
            continue
        step = detector.feed(delta)
        shown.append(step.shown)
        blocks += [(b.format, b.calls, b.markup, b.at) for b in step.blocks]
    end = detector.finish()
    return {
        "shown": "".join(shown) + end.shown,
        "blocks": [*blocks, *((b.format, b.calls, b.markup) for b in end.blocks)],
        "state": detector.state,
        "findings": detector.findings,
        "collected": bool(collected) if collect else None,
    }


contents = st.tuples(
    st.sampled_from(CALLS),
    st.sampled_from(["{}", "`{}`", "{} then {}", "```\n{}\n```"]),
    st.booleans(),
    st.sampled_from(["", "Sure. ", "Use `<tool_call>` here.\n"]),
    st.sampled_from(["", " Done.", " <tool_call>", "\n[TOOL_CALLS]"]),
)


@settings(max_examples=400, deadline=None)
@given(
    contents.flatmap(lambda c: st.tuples(st.just(c), splits(_text(c)))),
    st.sampled_from([HEAD + 20, 1 << 20]),
)
def test_collecting_a_delta_reads_it_as_feeding_it_at_every_split(
    drawn: tuple[Any, list[str]], max_block: int
) -> None:
    (call, *_), deltas = drawn
    fmt = call[0]
    fast = _read(fmt, deltas, True, max_block)
    full = _read(fmt, deltas, False, max_block)
    del fast["collected"], full["collected"]
    assert fast == full


def _text(drawn: tuple[Any, ...]) -> str:
    (_, markup), wrap, unknown, before, after = drawn
    if unknown:
        markup = markup.replace("get_weather", "no_such_tool")
    return before + wrap.format(markup, markup) + after


@pytest.mark.parametrize(("fmt", "markup"), CALLS)
@pytest.mark.parametrize("size", [1, 3, 8])
def test_a_long_payload_is_collected_past_its_head(fmt: str, markup: str, size: int) -> None:
    """Each format's call, a few characters per delta: collected past the head, read alike."""
    deltas = fixed("Sure. " + markup + " Done.", size)
    fast = _read(fmt, deltas, True, 1 << 20)
    full = _read(fmt, deltas, False, 1 << 20)
    assert fast["collected"] is True
    del fast["collected"], full["collected"]
    assert fast == full


def test_collect_takes_nothing_outside_a_block_or_inside_its_head() -> None:
    detector = Detector(["tool_call_tag"])
    assert not detector.collect("plain prose")
    detector.feed("<tool_call>\n")
    assert not detector.collect('{"name": "get_weather"')  # the head is still young
    detector.feed('{"name": "get_weather", "arguments": {"city": "' + "x" * HEAD)
    assert detector.collect(" more payload")
    assert not detector.collect("</tool_call>")  # the close: feed reads it
    assert not detector.collect("")
