"""Stream shapes that once made callgate's work per chunk grow with the stream's history.

Shared by ``tests/buffer/test_growth.py`` (which counts the work at one size) and
``bench/bench_growth.py`` (which times it per doubling). Each takes the size ``n``.
"""

from __future__ import annotations

from typing import Any

Chunk = dict[str, Any]
ITEM = ', {"k": 1}'
"""An argument fragment that ends in ``}``: any of them could end a complete object."""


def argument_fragments(n: int) -> list[str]:
    """``{"q": [{"k": 0}, {"k": 1}, ...]}`` in ``n + 2`` fragments."""
    return ['{"q": [{"k": 0}', *[ITEM] * n, "]}"]


def arguments(n: int) -> str:
    """The arguments :func:`argument_fragments` spells."""
    return "".join(argument_fragments(n))


def openai_restating(n: int, repeat: bool = False) -> list[Chunk]:
    """One call; each of its ``n`` argument deltas (``, {"k": 1}``) restates id and name.

    With ``repeat`` the whole call comes twice (the known duplicate-call bug).
    """

    def chunk(delta: Chunk, finish: str | None = None) -> Chunk:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def call(arguments: str) -> Chunk:
        function = {"name": "f", "arguments": arguments}
        return chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                      "function": function}]})  # fmt: skip

    calls = [call(text) for text in argument_fragments(n)] * (2 if repeat else 1)
    return [*calls, chunk({}, "tool_calls")]


def bedrock_restarting(n: int) -> list[Chunk]:
    """One call whose ``contentBlockStart`` comes again before each of ``n`` fragments."""
    tool = {"toolUse": {"toolUseId": "t1", "name": "f"}}
    start = {"contentBlockStart": {"contentBlockIndex": 0, "start": tool}}

    def delta(text: str) -> Chunk:
        body = {"contentBlockIndex": 0, "delta": {"toolUse": {"input": text}}}
        return {"contentBlockDelta": body}

    out: list[Chunk] = [{"messageStart": {"role": "assistant"}}]
    for text in argument_fragments(n):
        out += [start, delta(text)]
    return [*out, {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "tool_use"}}]  # fmt: skip


def _anthropic(blocks: list[Chunk], usage: list[Chunk] | None = None) -> list[Chunk]:
    start = {"type": "message_start", "message": {"id": "m", "type": "message",
             "role": "assistant", "content": [], "usage": {"input_tokens": 1}}}  # fmt: skip
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
    return [start, *blocks, *(usage or []), end, {"type": "message_stop"}]


def anthropic_text_blocks(n: int) -> list[Chunk]:
    """``n`` text blocks of one delta each."""
    blocks: list[Chunk] = []
    for i in range(n):
        blocks += [
            {"type": "content_block_start", "index": i,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": i,
             "delta": {"type": "text_delta", "text": f"w{i} "}},
            {"type": "content_block_stop", "index": i},
        ]  # fmt: skip
    return _anthropic(blocks)


def anthropic_signature(n: int, initial: str = "") -> list[Chunk]:
    """One thinking block whose signature comes in ``n`` deltas of 64 characters."""
    blocks: list[Chunk] = [
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": initial}},
        *({"type": "content_block_delta", "index": 0,
           "delta": {"type": "signature_delta", "signature": "s" * 64}} for _ in range(n)),
        {"type": "content_block_stop", "index": 0},
    ]  # fmt: skip
    return _anthropic(blocks)


def anthropic_usage(n: int) -> list[Chunk]:
    """``n`` ``message_delta`` events, each with one more ``usage`` key."""
    usage = [{"type": "message_delta", "delta": {}, "usage": {f"k{i}": i}} for i in range(n)]
    return _anthropic([], usage)


def responses_annotations(n: int) -> list[Chunk]:
    """One output text part that gets ``n`` annotations."""
    where = {"output_index": 0, "content_index": 0, "item_id": "m1"}
    item = {"id": "m1", "type": "message", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    note = {"type": "url_citation", "start_index": 0, "end_index": 1, "title": "t"}
    response = {"id": "r1", "object": "response", "status": "in_progress", "output": []}
    return [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **where, "part": part},
        {"type": "response.output_text.delta", **where, "delta": "hi"},
        *({"type": "response.output_text.annotation.added", **where,
           "annotation_index": i,
           "annotation": {**note, "url": f"https://example.org/{i}"}} for i in range(n)),
        {"type": "response.completed", "response": {**response, "status": "completed"}},
    ]  # fmt: skip
