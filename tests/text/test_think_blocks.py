"""``<think>…</think>`` in the content: shown by default, kept out of the display on request.

``Driver(..., hide_think=True)`` (and ``LLMStreamBuffer(hide_think=True)``) drops every
reasoning span, and the whitespace right after its close, from the text the user sees,
at any split; the message keeps the content as it came.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import callgate
from callgate import LLMStreamBuffer, Tool
from callgate.strategies.text.think import ThinkFilter

Chunk = dict[str, Any]
CONTENT = "<think>\nThe user wants Paris.\n</think>\n\nIt is sunny in Paris."


def chunks(pieces: list[str], model: str = "gpt-4.1") -> list[Chunk]:
    def chunk(delta: Chunk, finish: str | None = None) -> Chunk:
        return {"model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    return [*(chunk({"content": p}) for p in pieces), chunk({}, "stop")]


def driver(**options: Any) -> callgate.Driver:
    return callgate.Driver([Tool("get_weather", {"type": "object"}, lambda **a: "ok")], **options)


def shown(pieces: list[str], **options: Any) -> tuple[str, LLMStreamBuffer]:
    chosen = driver(**options)
    buffer = chosen.new_stream_buffer()
    turn = callgate.run_turn(chunks(pieces), chosen, buffer)
    return turn.text, buffer


def test_think_is_shown_as_it_came_by_default() -> None:
    text, buffer = shown([CONTENT])
    assert text == CONTENT == buffer.as_dict()["content"]


def test_hide_think_keeps_it_out_of_the_display_and_in_the_message() -> None:
    text, buffer = shown(list(CONTENT), hide_think=True)
    assert text == "It is sunny in Paris."
    assert buffer.as_dict()["content"] == CONTENT
    assert buffer.get_content() == CONTENT


def test_an_unclosed_think_stays_hidden_and_a_stray_close_is_shown() -> None:
    assert shown(["Hi <think>still thinking"], hide_think=True)[0] == "Hi "
    assert shown(["a </think> b"], hide_think=True)[0] == "a </think> b"
    assert shown(["ends with <thi"], hide_think=True)[0] == "ends with <thi"


def test_a_call_inside_hidden_reasoning_still_never_runs() -> None:
    ran: list[Any] = []
    chosen = callgate.Driver(
        [Tool("get_weather", {"type": "object"}, lambda **a: ran.append(a) or "ok")],
        hide_think=True,
    )
    content = (
        '<think>maybe <tool_call>{"name": "get_weather", "arguments": {}}</tool_call></think>ok'
    )
    buffer = chosen.new_stream_buffer()
    turn = callgate.run_turn(chunks([content], model="Qwen/Qwen3-8B"), chosen, buffer)
    assert ran == []
    assert turn.text == "ok"
    detector = buffer.text_queue.detector
    assert detector is not None
    assert [f.code for f in detector.findings] == ["call_in_reasoning"]


def test_orchestrator_passes_hide_think_to_its_buffers() -> None:
    assert callgate.Orchestrator([driver()], hide_think=True).new_stream_buffer().hide_think
    assert not callgate.Orchestrator([driver()]).new_stream_buffer().hide_think


def reference(text: str) -> str:
    """The display the filter must give for the whole text at once."""
    shown = re.sub(r"<think>.*?</think>\s*", "", text, flags=re.DOTALL)
    return shown.split("<think>", 1)[0]


texts = st.lists(st.sampled_from(["<think>", "</think>", "<", "t", "hi", " ", "\n", ">"]))


@given(texts.map("".join), st.lists(st.integers(min_value=0, max_value=40)))
def test_the_filter_gives_the_same_display_at_every_split(text: str, cuts: list[int]) -> None:
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    think = ThinkFilter()
    out = "".join(think.feed(p) for p in pieces) + think.finish()
    assert out == reference(text)
