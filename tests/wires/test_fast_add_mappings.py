"""A chunk that is a mapping but no dict reads on the wire's own ``add`` as the same dict does.

The wires' closures (``fast_add``) do not test a chunk's type: a mapping that is no dict
(an SDK's read-only view, a capture reader's record) is read through it field by field,
where the buffer's checked path reads it as its own dict. Each chunk of a stream wrapped so
must make the same message, text, findings and verdict as the stream of plain dicts read
through the checked path alone; and an object that cannot be indexed still reaches the
buffer's path (a clear error, nothing kept).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings

from callgate import LLMStreamBuffer
from callgate.strategies.anthropic import AnthropicStrategy
from callgate.strategies.openai import OpenAIStrategy
from test_anthropic_fast_add import LIMITS, events
from test_anthropic_fast_add import CheckedOnly as AnthropicChecked
from test_openai_chat_fast_add import CheckedOnly as OpenAIChecked
from test_openai_chat_fast_add import widened
from wire_common import played


class Record(Mapping[str, Any]):
    """A read-only mapping over a chunk's fields: a Mapping, no dict."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


def records(chunks: list[Any]) -> list[Any]:
    return [Record(copy.deepcopy(c)) if isinstance(c, dict) else c for c in chunks]


@settings(max_examples=150)
@given(widened(), LIMITS)
def test_openai_chunks_as_mappings_read_as_dicts_on_the_checked_path(
    chunks: list[Any], limits: Any
) -> None:
    options = {"text_formats": None, "limits": limits}
    reference = played(OpenAIChecked(), chunks, **options)
    assert played(OpenAIStrategy(), records(chunks), **options) == reference


@settings(max_examples=150)
@given(events(), LIMITS)
def test_anthropic_events_as_mappings_read_as_dicts_on_the_checked_path(
    chunks: list[Any], limits: Any
) -> None:
    reference = played(AnthropicChecked(), chunks, limits=limits)
    assert played(AnthropicStrategy(), records(chunks), limits=limits) == reference


@pytest.mark.parametrize(
    "first",
    [
        {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
    ],
)
def test_a_chunk_that_cannot_be_indexed_reaches_the_buffers_path(first: dict[str, Any]) -> None:
    buffer = LLMStreamBuffer()
    buffer.add(first)
    assert "add" in vars(buffer)  # the wire's closure
    with pytest.raises(TypeError, match="a chunk must be a mapping or an SDK model object"):
        buffer.add(42)
    buffer.end()
    assert buffer.findings == []
