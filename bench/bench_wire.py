"""Per-chunk cost, side by side in one run: callgate, a bare accumulator, the official SDKs.

Run: ``python bench/bench_wire.py [--quick]``. The same logical streams are encoded as
OpenAI Chat Completions chunks and as Anthropic Messages events; each encoding is fed to
a bare hand-written dict accumulator (index-keyed, fragment lists, ``json.loads`` at the
end), to callgate's full path (slot and turn machines, identity checks, terminal gate,
strict JSON and schema check at the end), and to the SDK's own accumulator
(``openai.lib.streaming.chat.ChatCompletionStreamState``;
``anthropic.lib.streaming._messages.accumulate_event``). The SDK objects are built before
timing: only accumulation is measured. An SDK run whose size would take longer than the
budget, judged from its growth between the two smaller sizes, is not run and says so.

A second table measures callgate as a user meets it: a default ``LLMStreamBuffer()`` built
for each turn, against source document 002's index-keyed loop (``+=`` on strings), over
the same dict chunks.

The tool schemas are checked and compiled once (:class:`~callgate.schema.ToolSchemas`), as
a driver does for all its turns; that one-time cost is printed on its own line. Times are
the best CPU time of several rounds, each round running the bare loop and callgate in
turn, so that their ratio is taken under the same load. A third table gives each turn's
peak of traced memory (``tracemalloc``, run apart from the timed rounds), per chunk.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from callgate import LLMStreamBuffer
from callgate.gate import schema as schema_module
from callgate.gate.schema import ToolSchemas

Chunk = dict[str, Any]
SCHEMA = {"type": "object", "properties": {"blob": {"type": "string"}}, "required": ["blob"]}
TOOLS = ToolSchemas({"store": SCHEMA})
"""Checked against the metaschema and compiled once, as a driver holds them."""
BUDGET_S = 30.0


def split(text: str, rng: random.Random, low: int, high: int) -> list[str]:
    """``text`` in fragments of ``low``..``high`` characters."""
    parts, i = [], 0
    while i < len(text):
        n = rng.randint(low, high)
        parts.append(text[i : i + n])
        i += n
    return parts


def calls(count: int, size: int, low: int, high: int, seed: int = 7) -> list[list[str]]:
    """``count`` argument texts of ``size`` bytes, each split into fragments."""
    rng = random.Random(seed)
    return [split(json.dumps({"blob": "y" * (size - 12)}), rng, low, high) for _ in range(count)]


def interleave(lanes: list[list[Any]], seed: int = 11) -> list[tuple[int, Any]]:
    """Per-lane order kept, lanes interleaved at random."""
    rng = random.Random(seed)
    pending = [list(enumerate(lane)) for lane in lanes]
    out = []
    while any(pending):
        index = rng.choice([i for i, p in enumerate(pending) if p])
        out.append((index, pending[index].pop(0)[1]))
    return out


def openai_stream(fragments: list[list[str]]) -> list[Chunk]:
    """Chat Completions chunks: each call's id/name first, interleaved fragments, finish."""

    def chunk(call: dict[str, Any], finish: str | None = None) -> Chunk:
        delta = {"tool_calls": [call]} if call else {}
        return {
            "id": "chatcmpl-b",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [
        chunk(
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "store", "arguments": ""},
            }
        )
        for i in range(len(fragments))
    ]
    for index, text in interleave(fragments):
        out.append(chunk({"index": index, "function": {"arguments": text}}))
    out.append(chunk({}, "tool_calls"))
    return out


def anthropic_stream(fragments: list[list[str]]) -> list[Chunk]:
    """Messages events: message_start, a tool_use block per call, interleaved deltas."""
    out: list[Chunk] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_b",
                "type": "message",
                "role": "assistant",
                "model": "bench",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
    ]
    for i in range(len(fragments)):
        out.append(
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "store",
                    "input": {},
                },
            }
        )
    for index, text in interleave(fragments):
        out.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": text},
            }
        )
    out += [{"type": "content_block_stop", "index": i} for i in range(len(fragments))]
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 9},
        }
    )
    out.append({"type": "message_stop"})
    return out


def bare_openai(chunks: list[Chunk]) -> object:
    """The hand-written Chat Completions accumulator."""
    acc: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for choice in c["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                entry = acc.setdefault(tc["index"], {"id": None, "name": None, "args": []})
                if tc.get("id"):
                    entry["id"] = tc["id"]
                function = tc.get("function") or {}
                if function.get("name"):
                    entry["name"] = function["name"]
                if function.get("arguments"):
                    entry["args"].append(function["arguments"])
    return [json.loads("".join(e["args"])) for _, e in sorted(acc.items())]


def bare_anthropic(events: list[Chunk]) -> object:
    """The hand-written Messages accumulator."""
    blocks: dict[int, dict[str, Any]] = {}
    for e in events:
        kind = e["type"]
        if kind == "content_block_start" and e["content_block"]["type"] == "tool_use":
            block = e["content_block"]
            blocks[e["index"]] = {"id": block["id"], "name": block["name"], "args": []}
        elif kind == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            blocks[e["index"]]["args"].append(e["delta"]["partial_json"])
    return [json.loads("".join(b["args"]) or "{}") for _, b in sorted(blocks.items())]


def seed_openai(chunks: list[Chunk]) -> object:
    """Source document 002's Chat Completions loop (index-keyed, ``+=``), over dicts."""
    found: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for tc in chunk["choices"][0]["delta"].get("tool_calls") or []:
            e = found.setdefault(tc["index"], {"id": None, "name": None, "args": ""})
            if tc.get("id"):
                e["id"] = tc["id"]
            function = tc.get("function")
            if function and function.get("name"):
                e["name"] = function["name"]
            if function and function.get("arguments"):
                e["args"] += function["arguments"]
    return [
        {"id": v["id"], "name": v["name"], "args": json.loads(v["args"])}
        for _, v in sorted(found.items())
    ]


def seed_anthropic(events: list[Chunk]) -> object:
    """Source document 002's Messages loop (block-index-keyed, ``+=``), over dicts."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        kind = event["type"]
        if kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
            block = event["content_block"]
            blocks[event["index"]] = {
                "id": block["id"],
                "name": block["name"],
                "args": "",
                "done": False,
            }
        elif kind == "content_block_delta" and event["index"] in blocks:
            if event["delta"].get("type") == "input_json_delta":
                blocks[event["index"]]["args"] += event["delta"]["partial_json"]
        elif kind == "content_block_stop" and event["index"] in blocks:
            blocks[event["index"]]["done"] = True
            blocks[event["index"]]["args"] = json.loads(blocks[event["index"]]["args"] or "{}")
    return blocks


def callgate_default(chunks: list[Chunk]) -> object:
    """A default ``LLMStreamBuffer()`` built for the turn: callgate as a user meets it."""
    buffer = LLMStreamBuffer()
    for c in chunks:
        buffer.add(c)
    buffer.end()
    if not buffer.executable:
        raise AssertionError(buffer.findings)
    return buffer.as_dict()


def callgate_full(chunks: list[Chunk]) -> object:
    """callgate: buffer, slot and turn machines, strict JSON and schema at terminal."""
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    for c in chunks:
        buffer.add(c)
    buffer.end()
    if not buffer.executable:
        raise AssertionError(buffer.findings)
    return buffer.as_dict()


def sdk_openai(objects: list[Any]) -> object:
    """The openai package's chat-completion stream state."""
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    for obj in objects:
        state.handle_chunk(obj)
    return state.get_final_completion()


def sdk_anthropic(objects: list[Any]) -> object:
    """The anthropic package's event accumulator."""
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    bufs: dict[int, bytes] = {}
    for obj in objects:
        snapshot = accumulate_event(event=obj, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def typed_openai(chunks: list[Chunk]) -> list[Any]:
    """The chunks as the openai SDK hands them over."""
    from openai.types.chat import ChatCompletionChunk

    return [ChatCompletionChunk.model_validate(c) for c in chunks]


def typed_anthropic(events: list[Chunk]) -> list[Any]:
    """The events as the anthropic SDK hands them over."""
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    return [adapter.validate_python(e) for e in events]


def best(fn: Callable[[Any], object], data: Any, repeat: int) -> float:
    """Best CPU time of ``repeat`` runs, in seconds."""
    return alternating([fn], data, repeat)[0]


def alternating(fns: list[Callable[[Any], object]], data: Any, repeat: int) -> list[float]:
    """Each function's best CPU time over ``repeat`` rounds, in seconds.

    A round runs every function once, in turn, so that the ratios between them are taken
    under the same load (CPU time leaves out the time other processes had the core).
    """
    results = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.process_time()
            fn(data)
            results[i] = min(results[i], time.process_time() - start)
    return results


def peak_bytes(fns: list[Callable[[Any], object]], data: list[Chunk]) -> list[float]:
    """Each function's peak of traced memory over one turn, in bytes per chunk.

    Read with ``tracemalloc`` beside the time (not during it: tracing slows every
    allocation): the most a turn holds at once, its message and arguments included, over
    what was held before it; each function runs once untraced first, so that a first
    call's caches and imports are not counted.
    """
    peaks = []
    for fn in fns:
        fn(data)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            fn(data)
            peaks.append((tracemalloc.get_traced_memory()[1] - before) / len(data))
        finally:
            tracemalloc.stop()
    return peaks


def set_up(chunks: list[Chunk], bare: Callable[[list[Chunk]], object]) -> tuple[float, ...]:
    """The fixed cost of a turn, in microseconds: callgate's (two ways) and the bare loop's.

    callgate's is a buffer built with the turn's tools reading the stream's first chunk:
    the tools given as a compiled ``ToolSchemas`` (as a driver holds them), then as the
    plain mapping of schemas a user writes (the same mapping each turn). The bare loop's
    is the loop run on no chunk. Each is the best CPU time of rounds of 200 turns.
    """
    first = chunks[0]
    mapping = {"store": SCHEMA}

    def compiled(_: object) -> None:
        for _ in range(200):
            LLMStreamBuffer(tool_schemas=TOOLS).add(first)

    def plain(_: object) -> None:
        for _ in range(200):
            LLMStreamBuffer(tool_schemas=mapping).add(first)

    def theirs(_: object) -> None:
        for _ in range(200):
            bare([])

    return tuple(t / 200 * 1e6 for t in alternating([compiled, plain, theirs], None, 25))


def main() -> None:
    """Print the side-by-side table for both wires."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="drop the 2 MB stream")
    args = parser.parse_args()
    shapes = [
        ("3 x 2 KB, 1-8 chars, interleaved", calls(3, 2048, 1, 8), 40),
        ("1 x 20 KB, 4 chars", calls(1, 20_000, 4, 4), 12),
        ("1 x 200 KB, 4 chars", calls(1, 200_000, 4, 4), 8),
    ]
    if not args.quick:
        shapes.append(("1 x 2 MB, 4 chars", calls(1, 2_000_000, 4, 4), 5))
    wires = [
        ("openai", openai_stream, bare_openai, sdk_openai, typed_openai, seed_openai),
        ("anthropic", anthropic_stream, bare_anthropic, sdk_anthropic, typed_anthropic,
         seed_anthropic),
    ]  # fmt: skip

    def first_time(_: object) -> object:
        schema_module._COMPILED.clear()  # as in a fresh process: nothing compiled yet
        schema_module._TOOLS.clear()
        return ToolSchemas({"store": SCHEMA})

    once = best(first_time, None, 20) * 1e6
    again = best(lambda _: ToolSchemas({"store": SCHEMA}), None, 20) * 1e6
    print(
        f"checking and compiling the tool schema, once per schema: {once:.0f} us; "
        f"a buffer's tools for a schema already compiled: {again:.0f} us"
    )
    for wire, encode, bare, *_ in wires:
        compiled_us, plain_us, loop_us = set_up(encode(calls(3, 64, 8, 8)), bare)
        print(
            f"{wire}: a turn's set-up (a buffer built with its tools, its first chunk read): "
            f"{compiled_us:.1f} us with a ToolSchemas, {plain_us:.1f} us with a dict of "
            f"schemas; the bare loop's: {loop_us:.1f} us"
        )
    head = ("wire", "stream", "chunks", "bare us", "callgate us", "SDK us", "cg/bare", "SDK/cg")
    print("{:<10}{:<34}{:>8}{:>9}{:>12}{:>10}{:>9}{:>8}".format(*head))
    for wire, encode, bare, sdk, typed, _ in wires:
        sdk_seconds: list[float] = []
        for label, fragments, repeat in shapes:
            chunks = encode(fragments)
            n = len(chunks)
            base, ours = (t / n * 1e6 for t in alternating([bare, callgate_full], chunks, repeat))
            projected = (
                sdk_seconds[-1] * (sdk_seconds[-1] / sdk_seconds[-2])
                if len(sdk_seconds) >= 3
                else 0.0
            )
            if projected > BUDGET_S:
                theirs_text, ratio_text = f"~{projected:.0f} s", "skip"
                print(
                    f"{wire:<10}{label:<34}{n:>8}{base:>9.2f}{ours:>12.2f}"
                    f"{theirs_text:>10}{ours / base:>9.2f}{ratio_text:>8}"
                )
                continue
            objects = typed(chunks)
            seconds = best(sdk, objects, 3 if n < 10_000 else 1)
            sdk_seconds.append(seconds)
            theirs = seconds / n * 1e6
            print(
                f"{wire:<10}{label:<34}{n:>8}{base:>9.2f}{ours:>12.2f}{theirs:>10.2f}"
                f"{ours / base:>9.2f}{theirs / ours:>8.1f}"
            )
    print()
    print("memory: each turn's peak of traced memory (tracemalloc), bytes per chunk")
    head = ("wire", "stream", "chunks", "bare B", "callgate B", "cg/bare")
    print("{:<10}{:<34}{:>8}{:>9}{:>12}{:>9}".format(*head))
    for wire, encode, bare, *_ in wires:
        for label, fragments, _ in shapes:
            chunks = encode(fragments)
            base, ours = peak_bytes([bare, callgate_full], chunks)
            print(
                f"{wire:<10}{label:<34}{len(chunks):>8}{base:>9.1f}{ours:>12.1f}{ours / base:>9.2f}"
            )
    print()
    print("as a user meets it: a default LLMStreamBuffer() per turn against source 002's loop")
    head = ("wire", "stream", "chunks", "seed us", "callgate us", "cg/seed")
    print("{:<10}{:<34}{:>8}{:>9}{:>12}{:>9}".format(*head))
    for wire, encode, _, _, _, seed in wires:
        for label, fragments, repeat in shapes:
            chunks = encode(fragments)
            n = len(chunks)
            theirs, ours = (
                t / n * 1e6 for t in alternating([seed, callgate_default], chunks, repeat)
            )
            print(f"{wire:<10}{label:<34}{n:>8}{theirs:>9.2f}{ours:>12.2f}{ours / theirs:>9.2f}")


if __name__ == "__main__":
    main()
