"""A quiet step leaves the display machine where the full step would (issue 24's item).

A quiet step repeats the last observation while the buffer's stamp stays the same. An
observation that held once only (a call block nobody owns was shown as text) must not be
repeated: the full step after it observes prose again, and the display is ``flowing``.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from callgate import Driver, LLMStreamBuffer, Tool
from callgate.testing import splits, text_contents
from callgate.testing.builders import openai_chunks

_FRESH = itertools.count(-2, -1)


class Unstamped(LLMStreamBuffer):
    """A buffer whose every stamp is new: no driver step is ever quiet."""

    def stamp(self) -> int:
        return next(_FRESH)


def states(driver: Driver, chunks: list[Any], quiet: bool) -> list[str]:
    """The driver's display state after each step of the turn."""
    buffer = driver.new_stream_buffer()
    if not quiet:
        buffer.__class__ = Unstamped
    seen = []
    for chunk in chunks:
        buffer.add(chunk)
        driver.process_llm_response(buffer)
        seen.append(buffer.text_queue.view(driver).state)
    buffer.end()
    driver.process_llm_response(buffer)
    seen.append(buffer.text_queue.view(driver).state)
    return seen


def weather() -> Driver:
    return Driver([Tool("get_weather", {"type": "object"})], text_formats=("tool_call_tag",))


def test_after_a_block_nobody_owns_a_quiet_step_flows_as_the_full_step_does() -> None:
    block = '<tool_call>{"name": "nobody", "arguments": {}}</tool_call>'
    chunks = openai_chunks([], [], text=["Hi ", block, " and", " more", " prose."])
    full = states(weather(), chunks, quiet=False)
    assert full[3:6] == ["flowing", "flowing", "flowing"]
    assert states(weather(), chunks, quiet=True) == full


@given(text_contents().flatmap(lambda c: st.tuples(st.just(c), splits(c.content))))
def test_a_quiet_step_leaves_the_display_state_of_the_full_step(pair: Any) -> None:
    content, deltas = pair
    chunks = openai_chunks([], [], text=deltas)
    formats = content.formats or None

    def made() -> Driver:
        return Driver([Tool("get_weather", {"type": "object"})], text_formats=formats)

    assert states(made(), chunks, quiet=True) == states(made(), chunks, quiet=False)
