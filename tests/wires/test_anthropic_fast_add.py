"""The Anthropic buffer's own ``add`` reads every event as the checked path does.

Once an Anthropic stream is resolved, the buffer's ``add`` is the wire's closure
(``AnthropicStrategy.fast_add``): a tool block's argument delta within its slot's grant
(of characters, each counted at its widest) is appended in place, anything else goes to
the buffer's own path. A strategy with neither that closure nor the fast reader is the
reference: on clean streams, on streams with faults, with events bent out of shape,
non-ASCII text and limits small enough to end the grants and the text, both must assemble
the same message, show the same text, find the same things and give the same verdict. And
a closure a caller still holds after the turn it was made for reads into the buffer's
current turn, never into the old one.
"""

from __future__ import annotations

import copy
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import BufferUsageError, Limits, LLMStreamBuffer
from callgate.cli.capture import load_capture
from callgate.strategies.anthropic import AnthropicStrategy
from callgate.testing import streams
from wire_common import played

ODD = st.sampled_from([None, 0, 1, True, False, -1, "", "x", "é", [], {}, 2.5, b"{}"])


class CheckedOnly(AnthropicStrategy):
    """The strategy without its fast paths: every event goes through ``accumulate``."""

    def reader(self, acc: Any) -> Any:
        return partial(self.accumulate, acc)

    def fast_add(self, acc: Any, steady: Any, rest: Any) -> None:
        return None


@st.composite
def bent(draw: st.DrawFn, event: dict[str, Any]) -> dict[str, Any]:
    """``event`` with one field along the fast path replaced, dropped or made non-ASCII."""
    event = copy.deepcopy(event)
    places: list[tuple[dict[str, Any], str]] = [(event, "type"), (event, "index")]
    delta = event.get("delta")
    if isinstance(delta, dict):
        places += [(event, "delta"), (delta, "type"), (delta, "partial_json")]
        places += [(delta, "text")] if "text" in delta else []
    where, key = draw(st.sampled_from(places))
    choice = draw(st.sampled_from(["drop", "odd", "wide"]))
    if choice == "drop":
        where.pop(key, None)
    elif choice == "wide" and isinstance(where.get(key), str):
        where[key] = where[key] + draw(st.sampled_from(["é", "\u2603", "\U0001f600", "\ud800"]))
    else:
        where[key] = draw(ODD)
    return event


def _argument_delta(event: Any) -> bool:
    """An argument or text delta: the events the wire's fast paths read."""
    delta = event.get("delta") if isinstance(event, dict) else None
    return isinstance(delta, dict) and delta.get("type") in ("input_json_delta", "text_delta")


@st.composite
def events(draw: st.DrawFn) -> list[Any]:
    """A kit stream of the wire, a few of its events bent (mostly argument and text deltas)."""
    example = draw(streams("anthropic", faults=draw(st.booleans())))
    chunks = [copy.deepcopy(c) for c in example.chunks]
    if draw(st.booleans()):
        common = [n for n, c in enumerate(chunks) if _argument_delta(c)] or list(range(len(chunks)))
        for at in draw(st.lists(st.sampled_from(common), min_size=1, max_size=4)):
            chunks[at] = draw(bent(chunks[at]))
    return chunks


LIMITS = st.sampled_from(
    [
        Limits(),
        Limits(max_argument_bytes=40),
        Limits(max_turn_bytes=60, max_slots=2),
        Limits(max_text_bytes=8),
        Limits(max_argument_bytes=1, max_turn_bytes=1, max_text_bytes=1),
    ]
)


@settings(max_examples=300)
@given(events(), LIMITS)
def test_the_buffers_add_reads_every_event_as_accumulate_does(
    chunks: list[Any], limits: Limits
) -> None:
    reference = played(CheckedOnly(), chunks, limits=limits)
    assert played(AnthropicStrategy(), chunks, limits=limits) == reference


START = {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}}


def turn(call_id: str, *parts: str) -> list[dict[str, Any]]:
    """One turn with one call to ``lookup`` whose arguments stream as ``parts``."""
    block = {"type": "tool_use", "id": call_id, "name": "lookup", "input": {}}
    return [
        START,
        {"type": "content_block_start", "index": 0, "content_block": block},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            for part in parts
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def inputs(buffer: LLMStreamBuffer) -> list[Any]:
    return [(c.id, c.arguments) for c in buffer.calls]


def test_once_resolved_the_buffers_add_is_the_wires_and_it_goes_at_the_end() -> None:
    buffer = LLMStreamBuffer()
    events = turn("toolu_1", '{"q": ', '"a"}')
    buffer.add(events[0])
    assert "add" in vars(buffer)  # the wire's closure, installed on the instance
    for event in events[1:]:
        buffer.add(event)
    buffer.end()
    assert "add" not in vars(buffer)
    assert buffer.add.__func__ is LLMStreamBuffer.add  # type: ignore[attr-defined]
    assert inputs(buffer) == [("toolu_1", {"q": "a"})]


def test_an_add_held_across_reset_reads_into_the_new_turn() -> None:
    buffer = LLMStreamBuffer()
    first = turn("toolu_1", '{"q": ', '"a"}')
    for event in first[:3]:  # the slot's first fragment opens its grant
        buffer.add(event)
    held = buffer.add  # the first turn's closure, its slot still open with room to spare
    buffer.reset()
    for event in turn("toolu_2", '{"q": ', '"b"}'):
        held(event)
    buffer.end()
    assert inputs(buffer) == [("toolu_2", {"q": "b"})]
    assert buffer.verdict == "pass"


def test_an_add_held_across_reset_reads_text_into_the_new_turn() -> None:
    """A text delta on the old turn's closure: the new turn shows and keeps it."""
    text = {"type": "content_block_start", "index": 1, "content_block": {"type": "text"}}
    delta = {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta"}}
    buffer = LLMStreamBuffer()
    first = turn("toolu_1", '{"q": "a"}')
    for event in [first[0], text, {**delta, "delta": {**delta["delta"], "text": "old "}}]:
        buffer.add(event)
    held = buffer.add  # its text block is started
    buffer.reset()
    held(first[0])
    held(text)
    held({**delta, "delta": {**delta["delta"], "text": "new"}})
    assert buffer.text() == "new"
    assert buffer.get_content() == "new"


def test_an_add_held_past_the_end_refuses_as_the_buffer_does() -> None:
    buffer = LLMStreamBuffer()
    events = turn("toolu_1", '{"q": "a"}')
    buffer.add(events[0])
    held = buffer.add
    for event in events[1:]:
        held(event)
    buffer.end()
    with pytest.raises(BufferUsageError, match=r"add\(\) after end\(\)"):
        held(events[2])
    assert inputs(buffer) == [("toolu_1", {"q": "a"})]  # nothing of it was kept


def test_an_add_held_past_the_text_limit_keeps_no_argument_bytes() -> None:
    events = turn("toolu_1", '{"q": "a"}')
    text = {"type": "content_block_start", "index": 1, "content_block": {"type": "text"}}
    over = {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "text_delta", "text": "too long"},
    }
    buffer = LLMStreamBuffer(limits=Limits(max_text_bytes=4))
    buffer.add(events[0])
    held = buffer.add
    for event in [events[1], text, over, *events[2:]]:
        held(event)
    buffer.end()
    reference = LLMStreamBuffer(strategy=CheckedOnly(), limits=Limits(max_text_bytes=4))
    for event in [events[0], events[1], text, over, *events[2:]]:
        reference.add(event)
    reference.end()
    assert buffer.as_dict() == reference.as_dict()
    assert [f.code for f in buffer.findings] == [f.code for f in reference.findings]
    assert buffer.verdict == reference.verdict == "fail"


def test_a_subclass_that_defines_add_keeps_every_chunk() -> None:
    seen: list[object] = []

    class Watched(LLMStreamBuffer):
        def add(self, chunk: object) -> None:
            seen.append(chunk)
            super().add(chunk)

    buffer = Watched()
    events = turn("toolu_1", '{"q": ', '"a"}')
    for event in events:
        buffer.add(event)
    buffer.end()
    assert seen == events
    assert inputs(buffer) == [("toolu_1", {"q": "a"})]


CAPTURES = Path(__file__).resolve().parents[1] / "captures"
RECORDED = [
    entry
    for entry in json.loads((CAPTURES / "manifest.json").read_text(encoding="utf-8"))
    if entry["wire"] == "anthropic" and "profile" not in entry
]


def recut(events: list[Any], how: str) -> list[Any]:
    """The recorded events with each argument delta cut into single characters, or each
    block's argument deltas merged into one (an empty one stays in place)."""
    out: list[Any] = []
    merged: dict[Any, dict[str, Any]] = {}
    for event in events:
        delta = event.get("delta") if isinstance(event, dict) else None
        if not (isinstance(delta, dict) and delta.get("type") == "input_json_delta"):
            out.append(event)
            continue
        text = delta.get("partial_json", "")
        if how == "chars":
            for char in text or [""]:
                out.append({**event, "delta": {**delta, "partial_json": char}})
        elif event.get("index") in merged:
            merged[event["index"]]["delta"]["partial_json"] += text
        else:
            merged[event.get("index")] = whole = copy.deepcopy(event)
            out.append(whole)
    return out


@pytest.mark.parametrize("how", ["recorded", "chars", "whole"])
@pytest.mark.parametrize("entry", RECORDED, ids=[e["file"] for e in RECORDED])
def test_recorded_anthropic_streams_read_the_same_through_the_buffers_add(
    entry: dict[str, Any], how: str
) -> None:
    events = load_capture((CAPTURES / entry["file"]).read_bytes())
    if how != "recorded":
        events = recut(events, how)
    assert played(AnthropicStrategy(), events) == played(CheckedOnly(), events)


def two_calls(odd: dict[str, Any], start_input: Any = None) -> list[dict[str, Any]]:
    """Two calls whose grants are open (each has had a fragment) when ``odd`` arrives."""

    def start(index: int) -> dict[str, Any]:
        block = {"type": "tool_use", "id": f"toolu_{index}", "name": "lookup", "input": {}}
        if start_input is not None:
            block["input"] = start_input
        return {"type": "content_block_start", "index": index, "content_block": block}

    def part(index: int, text: str) -> dict[str, Any]:
        delta = {"type": "input_json_delta", "partial_json": text}
        return {"type": "content_block_delta", "index": index, "delta": delta}

    return [
        START,
        start(0),
        start(1),
        part(0, '{"q": '),
        part(1, '{"q": '),
        odd,
        part(0, '"a"}'),
        part(1, '"b"}'),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def odd_delta(index: Any, **delta: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


@pytest.mark.parametrize("index", [False, True, 0.0, 1.0], ids=repr)
def test_an_argument_delta_whose_index_is_not_an_integer_is_refused(index: Any) -> None:
    events = two_calls(odd_delta(index, type="input_json_delta", partial_json="1"))
    result = played(AnthropicStrategy(), events)
    assert result == played(CheckedOnly(), events)
    assert [code for code, _, _ in result["findings"]] == ["malformed_chunk"]
    assert result["verdict"] == "fail"


@pytest.mark.parametrize("kind", ["text_delta", "citations_delta", "later_delta"])
def test_a_delta_of_another_type_at_a_tool_block_adds_no_arguments(kind: str) -> None:
    events = two_calls(odd_delta(0, type=kind, partial_json="1, ", text="1, "))
    result = played(AnthropicStrategy(), events)
    assert result == played(CheckedOnly(), events)
    assert [(c.slot, c.arguments) for c in result["calls"]] == [(0, {"q": "a"}), (1, {"q": "b"})]


@pytest.mark.parametrize("text", [b'"x', bytearray(b'"x'), 7, None], ids=repr)
def test_an_argument_delta_that_is_not_text_is_refused_on_the_buffers_add(text: Any) -> None:
    events = two_calls(odd_delta(0, type="input_json_delta", partial_json=text))
    result = played(AnthropicStrategy(), events)
    assert result == played(CheckedOnly(), events)
    assert [(code, slot) for code, _, slot in result["findings"]] == [("malformed_chunk", 0)]
    assert result["verdict"] == "fail"


@pytest.mark.parametrize("index", [255, 256, 257, 300, 4095])
def test_a_tool_block_past_the_shared_small_integers_reads_the_same(index: int) -> None:
    """An index read from JSON, not the slot's own object past 256: the buffer's path reads it."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    events = [
        START,
        {"type": "content_block_start", "index": index, "content_block": block},
        *[
            odd_delta(index, type="input_json_delta", partial_json=p)
            for p in ('{"q"', ': "é', '"}')
        ],
        {"type": "content_block_stop", "index": index},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    events = json.loads(json.dumps(events))  # every index its own int object, as a wire gives
    result = played(AnthropicStrategy(), events)
    assert result == played(CheckedOnly(), events)
    assert [(c.slot, c.arguments) for c in result["calls"]] == [(index, {"q": "é"})]
    assert result["verdict"] == "pass"


def test_wide_argument_deltas_count_their_bytes_against_the_limit() -> None:
    wide = "é" * 12  # 12 characters, 24 bytes
    events = two_calls(odd_delta(0, type="input_json_delta", partial_json=f'"{wide}", "r": '))
    limits = Limits(max_argument_bytes=30)
    result = played(AnthropicStrategy(), events, limits=limits)
    assert result == played(CheckedOnly(), events, limits=limits)
    assert [(code, slot) for code, _, slot in result["findings"]] == [("limit_exceeded", 0)]


@pytest.mark.parametrize("limits", [Limits(max_argument_bytes=12), Limits(max_turn_bytes=20)])
def test_argument_deltas_past_a_grant_are_counted_against_the_limits(limits: Limits) -> None:
    events = two_calls(odd_delta(0, type="input_json_delta", partial_json='"aaaaaaaaaa", "r": '))
    result = played(AnthropicStrategy(), events, limits=limits)
    assert result == played(CheckedOnly(), events, limits=limits)
    assert "limit_exceeded" in [code for code, _, _ in result["findings"]]
    assert result["verdict"] == "fail"


def test_an_empty_argument_delta_leaves_a_starts_input_to_stand() -> None:
    start = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "a"}}
    empty = odd_delta(0, type="input_json_delta", partial_json="")
    events = [
        START,
        {"type": "content_block_start", "index": 0, "content_block": start},
        empty,
        empty,
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    result = played(AnthropicStrategy(), events)
    assert result == played(CheckedOnly(), events)
    assert [(c.id, c.arguments) for c in result["calls"]] == [("toolu_1", {"q": "a"})]
    assert result["findings"] == [] and result["verdict"] == "pass"


@pytest.mark.parametrize("kind", ["message_delta", "ping"])
def test_an_event_of_another_type_is_never_read_as_an_argument_delta(kind: str) -> None:
    shaped = {**odd_delta(0, type="input_json_delta", partial_json="1, "), "type": kind}
    events = two_calls(shaped)
    result = played(AnthropicStrategy(), events)
    assert result == played(CheckedOnly(), events)
    assert [(c.slot, c.arguments) for c in result["calls"]] == [(0, {"q": "a"}), (1, {"q": "b"})]


@st.composite
def split_text(draw: st.DrawFn) -> tuple[list[Any], int]:
    """A text block (wide characters, a lone surrogate) split at any points, then a call;
    and a text limit drawn around the text's UTF-8 size, so that any delta may cross it."""
    text = draw(st.text(st.sampled_from("ab é\u2603\U0001f600\ud800"), min_size=1, max_size=24))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    opening = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    deltas = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in pieces
        if p
    ]
    call = turn("toolu_1", '{"q": ', '"a"}')
    for event in call[1:4]:
        event["index"] = 1
    chunks = [call[0], opening, *deltas, {"type": "content_block_stop", "index": 0}, *call[1:]]
    size = len(text.encode("utf-8", "surrogatepass"))
    return chunks, draw(st.integers(max(1, size - 6), size + 2))


@settings(max_examples=300)
@given(split_text())
def test_text_deltas_count_against_the_limit_as_the_gate_counts_them(
    drawn: tuple[list[Any], int],
) -> None:
    """The wire's ``add`` counts a text delta's bytes itself: at every split and every limit
    around the text's size it keeps, shows and refuses what the checked path does."""
    chunks, most = drawn
    limits = Limits(max_text_bytes=most)
    reference = played(CheckedOnly(), chunks, limits=limits)
    assert played(AnthropicStrategy(), chunks, limits=limits) == reference


def text_side(
    strategy: AnthropicStrategy, chunks: list[Any], limits: Limits, held: set[int]
) -> list[Any]:
    """Per event: the turn's content so far, the characters held back and ``text()`` (the
    display held at the positions in ``held``), with the text after the end."""
    buffer = LLMStreamBuffer(strategy=strategy, limits=limits)
    seen: list[Any] = []
    for at, event in enumerate(chunks):
        if at in held:
            buffer.hold()
        buffer.add(copy.deepcopy(event))
        seen.append((buffer.get_content(), buffer.text_queue.held, buffer.text()))
        buffer.release()
    buffer.end()
    return [*seen, (buffer.get_content(), buffer.text_queue.held, buffer.text())]


@settings(max_examples=300)
@given(split_text(), st.sets(st.integers(0, 12), max_size=4))
def test_text_deltas_keep_the_content_and_the_queue_as_the_checked_path_does(
    drawn: tuple[list[Any], int], held: set[int]
) -> None:
    """A text delta on the wire's ``add`` is kept and queued in one call (no detector):
    at every split, limit and held display the content, the count of characters held back
    and the text handed out are the checked path's."""
    chunks, most = drawn
    limits = Limits(max_text_bytes=most)
    reference = text_side(CheckedOnly(), chunks, limits, held)
    assert text_side(AnthropicStrategy(), chunks, limits, held) == reference


def test_a_subclass_that_defines_show_sees_every_text_delta() -> None:
    """The one-call text step stands in for the buffer's own ``_show`` only."""

    class Seeing(LLMStreamBuffer):
        def _show(self, shown: str) -> None:
            seen.append(shown)
            super()._show(shown)

    seen: list[str] = []
    text = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    deltas = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        for t in ("Hel", "lo")
    ]
    buffer = Seeing()
    for event in [START, text, *deltas]:
        buffer.add(event)
    assert seen == ["Hel", "lo"]
    assert buffer.text() == "Hello" and buffer.get_content() == "Hello"
