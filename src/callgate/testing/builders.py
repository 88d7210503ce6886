"""Exact OpenAI and Anthropic streams built from given calls and a given order.

Where :func:`callgate.testing.streams` draws streams, these build one you describe: the
chunks the official SDKs' own accumulators take, for a differential test or a fixture.

A turn is described by its pieces (text, calls, each call's argument fragments) and by an
``order``: one entry per emitted piece, naming the call (or block) it belongs to. The k-th
occurrence of ``i`` in ``order`` emits the k-th piece of call ``i``: its opening (id and
name) first, then its fragments, then (Anthropic only) its stop. Calls open in index order,
as both providers send them; the pieces of different calls interleave freely after that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from callgate.testing.wires.anthropic import AnthropicEncoder, message_start
from callgate.testing.wires.base import Chunk, WireCall


def split(text: str, sizes: Sequence[int]) -> tuple[str, ...]:
    """Cut text into consecutive pieces of the given sizes (cycled, at least 1 each)."""
    if not sizes:
        return (text,) if text else ()
    pieces: list[str] = []
    start = 0
    while start < len(text):
        size = max(1, sizes[len(pieces) % len(sizes)])
        pieces.append(text[start : start + size])
        start += size
    return tuple(pieces)


def check_order(order: Sequence[int], lengths: Sequence[int]) -> None:
    """Fail loudly when ``order`` is not a merge of sequences of ``lengths`` opening in order."""
    counts = [0] * len(lengths)
    for entry in order:
        if entry > 0 and counts[entry - 1] == 0:
            raise ValueError(f"item {entry} opens before item {entry - 1}")
        counts[entry] += 1
    if counts != list(lengths):
        raise ValueError(f"order emits {counts} pieces, the items have {list(lengths)}")


# -- OpenAI Chat Completions ---------------------------------------------------------------


def _openai_chunk(delta: Chunk, finish_reason: str | None = None) -> Chunk:
    return {
        "id": "chatcmpl-sdk1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4.1",
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def openai_chunks(
    calls: Sequence[WireCall],
    order: Sequence[int],
    *,
    text: Sequence[str] = (),
    opening_content: str | None = "",
    content_key: bool = True,
    usage: bool = False,
) -> list[Chunk]:
    """The ``chat.completion.chunk`` dicts of one assistant turn.

    The first chunk carries the role (and ``opening_content`` unless ``content_key`` is
    false),
    then the text fragments, then each call's opening (index, id, type, name, arguments
    ``""``) and fragments in ``order``; the last choice chunk finishes with ``tool_calls``
    (``stop`` without calls); ``usage`` appends the include_usage chunk (no choices).
    """
    check_order(order, [1 + len(call.fragments) for call in calls])
    first: Chunk = {"role": "assistant"}
    if content_key:
        first["content"] = opening_content
    chunks = [_openai_chunk(first)]
    chunks += [_openai_chunk({"content": piece}) for piece in text]
    emitted = [0] * len(calls)
    for index in order:
        call, step = calls[index], emitted[index]
        emitted[index] += 1
        entry: Chunk
        if step == 0:
            entry = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
        else:
            entry = {"index": index, "function": {"arguments": call.fragments[step - 1]}}
        chunks.append(_openai_chunk({"tool_calls": [entry]}))
    chunks.append(_openai_chunk({}, "tool_calls" if calls else "stop"))
    if usage:
        chunk = _openai_chunk({})
        chunk["choices"] = []
        chunk["usage"] = {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}
        chunks.append(chunk)
    return chunks


# -- Anthropic Messages --------------------------------------------------------------------


@dataclass(frozen=True)
class WireText:
    """A text content block and its text_delta fragments (as :class:`WireCall` is a call)."""

    fragments: tuple[str, ...]

    @property
    def text(self) -> str:
        """The complete text."""
        return "".join(self.fragments)


Block = WireText | WireCall


def _anthropic_piece(block: Block, index: int, step: int) -> Chunk:
    if step == 0:
        start: Chunk
        if isinstance(block, WireText):
            start = {"type": "text", "text": ""}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        return {"type": "content_block_start", "index": index, "content_block": start}
    if step > len(block.fragments):
        return {"type": "content_block_stop", "index": index}
    piece = block.fragments[step - 1]
    delta = (
        {"type": "text_delta", "text": piece}
        if isinstance(block, WireText)
        else {"type": "input_json_delta", "partial_json": piece}
    )
    return {"type": "content_block_delta", "index": index, "delta": delta}


def anthropic_events(blocks: Sequence[Block], order: Sequence[int]) -> list[Chunk]:
    """The Messages stream events of one assistant turn.

    ``message_start``, then each block's ``content_block_start``, deltas and
    ``content_block_stop`` in ``order`` (the block's position is its index), then
    ``message_delta`` with ``tool_use`` (``end_turn`` without tool_use blocks) and
    ``message_stop``.
    """
    check_order(order, [2 + len(block.fragments) for block in blocks])
    events = [message_start("msg_sdk1")]
    emitted = [0] * len(blocks)
    for index in order:
        events.append(_anthropic_piece(blocks[index], index, emitted[index]))
        emitted[index] += 1
    calls = [block for block in blocks if isinstance(block, WireCall)]
    return events + AnthropicEncoder().finish(calls)
