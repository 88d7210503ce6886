"""The OpenAI fast reader reads every chunk as the checked path does, malformed ones too.

``OpenAIStrategy.reader`` reads a content delta or a lone arguments fragment in place and
hands every other chunk to ``accumulate``. A buffer built on a strategy without the fast
reader is the reference: on clean streams and on streams whose chunks are bent out of
shape (fields missing, of another type, extra keys, several entries), both must assemble
the same message, show the same text, and find the same things.
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import LLMStreamBuffer
from callgate.strategies.openai import OpenAIStrategy
from callgate.testing import streams
from wire_common import played

ODD = st.sampled_from([None, 0, 1, True, "", "x", [], [1], {}, {"a": 1}, 2.5])


class CheckedOnly(OpenAIStrategy):
    """The strategy without its fast reader: every chunk goes through ``accumulate``."""

    def reader(self, acc: Any) -> Any:
        return partial(self.accumulate, acc)


@st.composite
def bent(draw: st.DrawFn, chunk: dict[str, Any]) -> dict[str, Any]:
    """``chunk`` with one field replaced, dropped or added, somewhere along its fast path."""
    chunk = copy.deepcopy(chunk)
    places: list[tuple[dict[str, Any], str]] = [(chunk, "choices")]
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        places += [(choice, "delta"), (choice, "index"), (choice, "finish_reason")]
        delta = choice.get("delta")
        if isinstance(delta, dict):
            places += [(delta, "content"), (delta, "tool_calls"), (delta, "role")]
            entries = delta.get("tool_calls")
            if isinstance(entries, list) and entries and isinstance(entries[0], dict):
                entry = entries[0]
                places += [(entry, "index"), (entry, "id"), (entry, "function")]
                if isinstance(entry.get("function"), dict):
                    function = entry["function"]
                    places += [(function, "arguments"), (function, "name")]
                if draw(st.booleans()):
                    entries.append(copy.deepcopy(entry))
    where, key = draw(st.sampled_from(places[-5:]) | st.sampled_from(places))  # deep ones often
    if draw(st.booleans()):
        where.pop(key, None)
    else:
        where[key] = draw(ODD)
    return chunk


def _common(chunk: dict[str, Any]) -> bool:
    """Whether ``chunk`` is one the fast reader takes (a lone content or arguments delta)."""
    choices = chunk.get("choices")
    delta = choices[0].get("delta") if isinstance(choices, list) and choices else None
    return isinstance(delta, dict) and len(delta) == 1


@st.composite
def bent_streams(draw: st.DrawFn) -> list[Any]:
    """A stream of the kit, with a few of its chunks bent (mostly the fast reader's ones)."""
    example = draw(streams("openai", faults=draw(st.booleans())))
    chunks = [copy.deepcopy(c) for c in example.chunks]
    common = [n for n, c in enumerate(chunks) if _common(c)] or list(range(len(chunks)))
    for at in draw(st.lists(st.sampled_from(common), min_size=1, max_size=4)):
        chunks[at] = draw(bent(chunks[at]))
    return chunks


@settings(max_examples=200)
@given(bent_streams())
def test_the_fast_reader_reads_every_chunk_as_accumulate_does(chunks: list[Any]) -> None:
    options = {"text_formats": None}
    assert played(OpenAIStrategy(), chunks, **options) == played(CheckedOnly(), chunks, **options)


def test_the_fast_reader_takes_the_common_chunks_in_place() -> None:
    strategy = OpenAIStrategy()
    buffer = LLMStreamBuffer(strategy=strategy)
    calls = []
    strategy.accumulate = lambda acc, chunk: calls.append(chunk) or ""  # type: ignore[method-assign]
    read = strategy.reader(strategy.new_accumulator(buffer.gate))  # type: ignore[arg-type]
    content = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
    entry = {"index": 0, "function": {"arguments": '{"a'}}
    fragment = {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}
    assert read(content) == "Hi"
    assert read(fragment) is None
    assert calls == []
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    read(done)
    assert calls == [done]
