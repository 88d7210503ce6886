"""The OpenAI buffer's own ``add`` reads every chunk as the checked path does.

Once an OpenAI stream is resolved, the buffer's ``add`` is the wire's closure
(``OpenAIStrategy.fast_add``): a lone argument fragment of the chosen choice, within its
slot's grant, is appended in place in one call; anything else goes to the buffer's own
path. A strategy with neither that closure nor the fast reader is the reference: on clean
streams, streams with faults, chunks bent out of shape, wide (non-ASCII) fragments and
limits small enough to end the grants, both must assemble the same message, show the same
text, find the same things and give the same verdict.
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

from callgate import Limits, LLMStreamBuffer
from callgate.cli.capture import load_capture
from callgate.strategies.openai import OpenAIStrategy
from test_anthropic_fast_add import LIMITS
from test_openai_chat_fast_reader import bent_streams
from wire_common import played


class CheckedOnly(OpenAIStrategy):
    """The strategy without its fast paths: every chunk goes through ``accumulate``."""

    def reader(self, acc: Any) -> Any:
        return partial(self.accumulate, acc)

    def fast_add(self, acc: Any, steady: Any, rest: Any) -> None:  # type: ignore[override]
        return None


WIDE = st.sampled_from(["é", "\u2603", "\U0001f600", "\ud800"])


@st.composite
def widened(draw: st.DrawFn) -> list[Any]:
    """A bent kit stream, some of its argument fragments made non-ASCII."""
    chunks = draw(bent_streams())
    for chunk in chunks:
        try:
            function = chunk["choices"][0]["delta"]["tool_calls"][0]["function"]
            if isinstance(function["arguments"], str) and draw(st.booleans()):
                function["arguments"] += draw(WIDE)
        except (KeyError, TypeError, IndexError):
            continue
    return chunks


@st.composite
def dressed(draw: st.DrawFn) -> list[Any]:
    """A bent kit stream whose continuation entries carry a type, a null id or a null name."""
    chunks = draw(bent_streams())
    for piece in chunks:
        try:
            entry = piece["choices"][0]["delta"]["tool_calls"][0]
            function = entry["function"]
        except (KeyError, TypeError, IndexError):
            continue
        bare = type(entry) is dict and type(function) is dict
        if bare and not {"id", "name"} & {*entry, *function}:
            extra = draw(st.sets(st.sampled_from(["type", "id", "name"])))
            if "type" in extra:
                entry["type"] = "function"
            if "id" in extra:
                entry["id"] = None
            if "name" in extra:
                function["name"] = None
    return chunks


@st.composite
def enveloped(draw: st.DrawFn) -> list[Any]:
    """A kit stream whose argument chunks carry what the wire's ``add`` must check beside a
    fragment: a usage report, an error on the chunk or its choice, a finish reason, a choice
    index (or none), an entry's id and a function's name, each present, null or another value."""
    chunks = draw(bent_streams())
    values = st.sampled_from(
        [None, 0, 1, "x", "stop", {"message": "m"}, {"completion_tokens": 4}, [], {}]
    )
    for piece in chunks:
        try:
            choice = piece["choices"][0]
            entry = choice["delta"]["tool_calls"][0]
            function = entry["function"]
        except (KeyError, TypeError, IndexError):
            continue
        if not (type(choice) is dict and type(entry) is dict and type(function) is dict):
            continue
        places = [
            (piece, "usage"),
            (piece, "error"),
            (choice, "error"),
            (choice, "finish_reason"),
            (choice, "index"),
            (entry, "id"),
            (function, "name"),
        ]
        for where, key in draw(st.lists(st.sampled_from(places), max_size=3)):
            if draw(st.booleans()):
                where.pop(key, None)
            else:
                where[key] = draw(values)
    return chunks


@settings(max_examples=300)
@given(st.one_of(widened(), dressed()), LIMITS)
def test_the_buffers_add_reads_every_chunk_as_accumulate_does(
    chunks: list[Any], limits: Limits
) -> None:
    options = {"text_formats": None, "limits": limits}
    assert played(OpenAIStrategy(), chunks, **options) == played(CheckedOnly(), chunks, **options)


@settings(max_examples=300)
@given(enveloped(), LIMITS, st.sampled_from([None, 4]))
def test_what_comes_beside_a_fragment_is_read_as_accumulate_does(
    chunks: list[Any], limits: Limits, max_tokens: int | None
) -> None:
    """A usage report (against the request's token limit), an error, a finish reason, another
    choice, an id or a name beside a fragment: the wire's ``add`` leaves the chunk to the
    buffer's path, which reads it as the checked path does."""
    options = {"text_formats": None, "limits": limits, "max_tokens": max_tokens}
    assert played(OpenAIStrategy(), chunks, **options) == played(CheckedOnly(), chunks, **options)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def turn(*parts: str) -> list[dict[str, Any]]:
    """One turn with one call to ``lookup`` whose arguments stream as ``parts``."""
    opening = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup"}}
    return [
        chunk({"role": "assistant", "tool_calls": [opening]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in parts),
        chunk({}, "tool_calls"),
    ]


BESIDE = [
    ("chunk", "usage", {"completion_tokens": 5}),
    ("chunk", "usage", None),
    ("chunk", "error", {"message": "overloaded"}),
    ("choice", "error", {"message": "overloaded"}),
    ("choice", "finish_reason", "length"),
    ("choice", "finish_reason", None),
    ("choice", "index", 1),
    ("choice", "index", None),
    ("entry", "id", "call_2"),
    ("entry", "id", None),
    ("function", "name", "other"),
    ("function", "name", None),
]


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize(("where", "key", "value"), BESIDE)
def test_each_field_beside_a_fragment_is_read_as_accumulate_does(
    where: str, key: str, value: Any, drop: bool
) -> None:
    chunks = turn('{"q": ', '"a", ', '"r": 1}')
    piece = chunks[2]
    choice = piece["choices"][0]
    entry = choice["delta"]["tool_calls"][0]
    place = {"chunk": piece, "choice": choice, "entry": entry, "function": entry["function"]}
    if drop:
        place[where].pop(key, None)
    else:
        place[where][key] = value
    options = {"max_tokens": 4}
    assert played(OpenAIStrategy(), chunks, **options) == played(CheckedOnly(), chunks, **options)


def test_once_resolved_the_buffers_add_is_the_wires_and_it_goes_at_the_end() -> None:
    buffer = LLMStreamBuffer()
    chunks = turn('{"q": ', '"é"}')
    buffer.add(chunks[0])
    assert "add" in vars(buffer)  # the wire's closure, installed on the instance
    for piece in chunks[1:]:
        buffer.add(piece)
    buffer.end()
    assert "add" not in vars(buffer)
    assert [(c.id, c.arguments) for c in buffer.calls] == [("call_1", {"q": "é"})]


@pytest.mark.parametrize("limits", [Limits(max_argument_bytes=12), Limits(max_turn_bytes=9)])
def test_wide_fragments_count_their_bytes_against_the_limits(limits: Limits) -> None:
    chunks = turn('{"q": ', '"' + "é" * 4 + '"}')  # 4 characters, 8 bytes
    result = played(OpenAIStrategy(), chunks, limits=limits)
    assert result == played(CheckedOnly(), chunks, limits=limits)
    assert "limit_exceeded" in [code for code, _, _ in result["findings"]]
    assert result["verdict"] == "fail"


CAPTURES = Path(__file__).resolve().parents[1] / "captures"
RECORDED = [
    entry
    for entry in json.loads((CAPTURES / "manifest.json").read_text(encoding="utf-8"))
    if entry["wire"] == "openai" and "profile" not in entry
]


def by_char(chunks: list[Any]) -> list[Any]:
    """Every lone argument fragment cut into single characters."""
    out: list[Any] = []
    for piece in chunks:
        try:
            function = piece["choices"][0]["delta"]["tool_calls"][0]["function"]
            text = function["arguments"]
        except (KeyError, TypeError, IndexError):
            out.append(piece)
            continue
        for char in text or [""]:
            cut = copy.deepcopy(piece)
            cut["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = char
            out.append(cut)
    return out


@pytest.mark.parametrize("how", ["recorded", "chars"])
@pytest.mark.parametrize("entry", RECORDED, ids=[e["file"] for e in RECORDED])
def test_recorded_openai_streams_read_the_same_through_the_buffers_add(
    entry: dict[str, Any], how: str
) -> None:
    chunks = load_capture((CAPTURES / entry["file"]).read_bytes())
    if how == "chars":
        chunks = by_char(chunks)
    assert played(OpenAIStrategy(), chunks) == played(CheckedOnly(), chunks)


def test_a_text_chunk_passes_the_wires_add_without_raising() -> None:
    """A text chunk leaves the closure for the buffer's path by a test, not a caught KeyError.

    Raising and catching an exception per chunk is most of a text chunk's cost there.
    """
    import sys
    from types import FrameType

    from callgate.strategies import openai_fast

    envelope = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any]) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    buffer = LLMStreamBuffer()
    buffer.add(chunk({"role": "assistant", "content": ""}))
    buffer.add(chunk({"content": "Hello"}))
    assert "add" in buffer.__dict__  # the wire's closure is the buffer's add
    raised: list[str] = []
    closure = openai_fast.fast_add.__code__.co_consts
    codes = {c for c in closure if hasattr(c, "co_name")}

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            return trace if frame.f_code in codes else None
        if event == "exception":
            raised.append(arg[0].__name__)
        return trace

    sys.settrace(trace)
    try:
        buffer.add(chunk({"content": " there"}))
    finally:
        sys.settrace(None)
    assert raised == []
    buffer.end()
    assert buffer.as_dict()["content"] == "Hello there"


@pytest.mark.parametrize("delta", ["arguments", "content"])
def test_usage_on_every_chunk_is_read_where_it_comes(delta: str) -> None:
    """vLLM's continuous usage puts a count on every chunk: the one that reaches
    ``max_tokens`` cuts the turn there, on a settled buffer's fast path as on the checked one.
    """

    def counted(piece: dict[str, Any], tokens: int | None) -> dict[str, Any]:
        usage = None if tokens is None else {"prompt_tokens": 3, "completion_tokens": tokens}
        return {**piece, "usage": usage}

    pieces = [
        '{"q": ',
        '"a',
        'b"}',
    ]
    opening, *rest = turn(*pieces)
    if delta == "content":
        rest = [chunk({"content": p}) for p in pieces]
    for strategy in (OpenAIStrategy(), CheckedOnly()):
        buffer = LLMStreamBuffer(strategy=strategy, max_tokens=3, text_formats=None)
        buffer.add(counted(opening, None))  # include_usage's null count on every other chunk
        buffer.add(counted(rest[0], 1))
        buffer.add(counted(rest[1], 3))
        assert [f.code for f in buffer.findings] == ["token_limit"], strategy


def left_the_wires_add(chunks: list[dict[str, Any]]) -> list[int]:
    """The positions of the chunks the wire's ``add`` handed to the buffer's own path."""
    buffer = LLMStreamBuffer()
    buffer.add(chunks[0])
    fast = vars(buffer)["add"]
    rest = dict(zip(fast.__code__.co_freevars, fast.__closure__ or (), strict=True))["rest"]
    seen: list[int] = []
    original = rest.cell_contents
    rest.cell_contents = lambda piece: (seen.append(chunks.index(piece)), original(piece))
    for piece in chunks[1:]:
        buffer.add(piece)
    buffer.end()
    assert [(c.id, c.arguments) for c in buffer.calls] == [("call_1", {"q": "x"})]
    return seen


def test_a_fragment_whose_entry_repeats_its_type_stays_on_the_wires_add() -> None:
    """``"type": "function"`` and ``"id": null`` on a fragment's entry keep it on the fast path."""
    plain = turn('{"q": ', '"x', '"}')
    dressed = turn('{"q": ', '"x', '"}')
    for piece in dressed[1:-1]:
        piece["choices"][0]["delta"]["tool_calls"][0].update(type="function", id=None)
    assert left_the_wires_add(dressed) == left_the_wires_add(plain)
    assert 2 not in left_the_wires_add(dressed)
