"""An ``add`` looked up before the stream settled reads as the one installed after it.

A feeding loop binds ``buffer.add`` once, before the first chunk (``add = buffer.add``);
once the stream is resolved, the buffer's own ``add`` hands each chunk to the wire's
closure (``fast_add``) as the installed one does, so the common chunks of the turn (text
deltas, and every argument fragment but a call's first, which opens its grant) never
reach the strategy's reader, and the turn reads the same as with the installed ``add``.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.strategies.anthropic import AnthropicStrategy
from callgate.strategies.base import ExtractionStrategy
from callgate.strategies.openai import OpenAIStrategy


def _counted(kind: type[ExtractionStrategy], seen: list[Any]) -> ExtractionStrategy:
    """A strategy of ``kind`` whose reader records each chunk it is handed."""

    class Counted(kind):  # type: ignore[misc,valid-type]
        def reader(self, acc: Any) -> Any:
            read = super().reader(acc)

            def counted(chunk: Any) -> Any:
                seen.append(chunk)
                return read(chunk)

            return counted

    return Counted()  # type: ignore[no-any-return]


def _anthropic() -> list[dict[str, Any]]:
    text = {"type": "text", "text": ""}
    tool = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    return [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": text},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
            for t in ("Looking ", "it up, ", "café ✓")
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": tool},
        *(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in ('{"q": ', '"é', '"}')
        ),
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def _openai() -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": ""}}
    return [
        chunk({"role": "assistant", "tool_calls": [call]}),
        *(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
            for p in ('{"q": ', '"é', '"}')
        ),
        chunk({}, "tool_calls"),
    ]


def _deltas(chunks: list[Any]) -> list[str]:
    """The argument fragments and text deltas among ``chunks``, as their text."""
    found = []
    for chunk in chunks:
        if chunk.get("type") == "content_block_delta":
            found.append(chunk["delta"].get("partial_json", chunk["delta"].get("text")))
        elif chunk.get("choices"):
            for entry in chunk["choices"][0]["delta"].get("tool_calls", []):
                if "id" not in entry:
                    found.append(entry["function"]["arguments"])
    return found


@pytest.mark.parametrize(
    ("kind", "stream"), [(AnthropicStrategy, _anthropic), (OpenAIStrategy, _openai)]
)
def test_an_add_bound_before_the_first_chunk_takes_the_wires_own_path(
    kind: type[ExtractionStrategy], stream: Any
) -> None:
    seen: list[Any] = []
    buffer = LLMStreamBuffer([_counted(kind, seen)])  # resolved by the first chunk
    add = buffer.add  # bound once, before the stream settled
    for chunk in stream():
        add(chunk)
    buffer.end()
    assert _deltas(seen) == ['{"q": ']  # the call's first fragment only: it opens the grant
    reference = LLMStreamBuffer([kind()])
    for chunk in stream():
        reference.add(chunk)  # the add installed on the instance
    reference.end()
    assert buffer.as_dict() == reference.as_dict()
    assert buffer.get_content() == reference.get_content()
    assert buffer.text() == reference.text()
    assert [c.arguments for c in buffer.calls] == [{"q": "é"}]
    assert buffer.verdict == reference.verdict == "pass"


def test_text_deltas_are_shown_and_kept_by_the_wires_own_add() -> None:
    seen: list[Any] = []
    buffer = LLMStreamBuffer(strategy=_counted(AnthropicStrategy, seen))
    for chunk in _anthropic():
        buffer.add(chunk)
    assert buffer.text() == "Looking it up, café ✓"
    assert buffer.content_parts == ["Looking ", "it up, ", "café ✓"]
    assert buffer.gate is not None and buffer.gate.text_bytes == len(
        "Looking it up, café ✓".encode()
    )
    assert _deltas(seen) == ['{"q": ']
    assert buffer.as_dict()["content"][0] == {"type": "text", "text": "Looking it up, café ✓"}
