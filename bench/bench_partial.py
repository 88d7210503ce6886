"""A forming call's arguments after every delta, side by side: callgate, jiter, partial-json-parser.

Run: ``python bench/bench_partial.py`` (``--quick``: 2 KB and 20 KB instead of 20 KB and
200 KB; ``--rounds N``: the best of N rounds, default three). One Anthropic stream per
size: a ``write_file`` call whose arguments ``{"path": ..., "content": ...}`` hold one
long string and arrive in 4-character ``input_json_delta`` events. Per delta:

- **callgate**: ``LLMStreamBuffer.add(event)`` then ``partial_calls()`` (the records,
  nothing read from them);
- **callgate + text**: the same, and each record's new argument text
  (``record.text(sent)``), as a writer of argument deltas reads it;
- **callgate + value**: the same, and each record's ``arguments`` read as plain data too
  (the open string is joined when read, so this read is O(size));
- **sdk accumulator**: anthropic-python's own ``accumulate_event`` (what its
  ``MessageStream`` runs on every event, before making the events it hands on) on the
  SDK's event objects, built beforehand as its stream builds them from the server's
  events, over every event of the stream as callgate runs: it appends the delta to the
  call's bytes buffer, runs ``jiter.from_json(buffer, partial_mode=True)`` and sets the
  block's ``input``;
- **sdk (jiter)**: the bare core of that: the bytes append and the ``jiter`` call
  (which drops a string still open);
- **jiter trailing-strings**: the same with ``partial_mode="trailing-strings"`` (the open
  string kept, as callgate shows it);
- **partial-json-parser**: ``partial_json_parser.loads(text so far)`` on each delta.

callgate and the SDK's accumulator run over every delta, timed as a whole. The bare
parsers re-read the whole buffer on every delta, so they are timed at 400 evenly spaced
deltas of the same stream (their cost grows with the position; the mean over evenly
spaced positions is their mean per delta). Times are the
best of the rounds' CPU time, in microseconds per delta; ``200K/20K`` is each one's cost
at the large size over the small (linear work per stream, constant work per delta: about
1.0x), and ``x callgate`` how many times callgate's per-delta cost each one takes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from callgate import LLMStreamBuffer

try:  # optional: main() names what is missing instead of a traceback
    import jiter
    import partial_json_parser
    from anthropic._models import construct_type
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent
except ImportError as missing:  # pragma: no cover - depends on the environment
    jiter = partial_json_parser = None
    MISSING = missing.name
else:
    MISSING = None

DELTA = 4
SAMPLES = 400
SCHEMAS = {"write_file": {"type": "object"}}


def arguments_text(size: int) -> str:
    """``{"path", "content"}`` whose content string makes the text about ``size`` characters."""
    line = "def f(x):\n    return x * 2  # \u00e9\n"
    content = (line * (size // len(line) + 1))[:size]
    return json.dumps({"path": "src/app.py", "content": content}, ensure_ascii=False)


def events(text: str) -> list[dict[str, Any]]:
    """One Anthropic tool-use turn whose arguments are ``text`` in 4-character deltas."""
    head: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
         "role": "assistant", "model": "claude", "content": [], "stop_reason": None,
         "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
         "id": "toolu_1", "name": "write_file", "input": {}}},
    ]  # fmt: skip
    deltas = [
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": text[i : i + DELTA]}}
        for i in range(0, len(text), DELTA)
    ]  # fmt: skip
    tail: list[dict[str, Any]] = [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return head + deltas + tail


def run_callgate(stream: list[dict[str, Any]], read: str) -> tuple[float, int]:
    """CPU seconds for the whole stream (``read``: ``records``, ``text`` or ``value``)."""
    buffer = LLMStreamBuffer(tool_schemas=SCHEMAS)
    sent: dict[object, int] = {}
    start = time.process_time()
    if read == "records":
        for event in stream:
            buffer.add(event)
            buffer.partial_calls()
    else:
        for event in stream:
            buffer.add(event)
            for record in buffer.partial_calls():
                new = record.text(sent.get(record.ref, 0))
                sent[record.ref] = record.text_length
                if read == "value":
                    record.arguments.get("content")
                del new
    elapsed = time.process_time() - start
    buffer.end()
    assert buffer.calls and buffer.partial_calls()[0].complete, "the call did not pass"
    return elapsed, len(stream)


def sampled(text: str, parse: Callable[[bytes, str], object]) -> float:
    """Mean CPU seconds per delta of a whole-buffer parser, at evenly spaced deltas."""
    positions = list(range(0, len(text), DELTA))
    step = max(1, len(positions) // SAMPLES)
    chosen = positions[::step]
    total = 0.0
    for at in chosen:
        before = text[:at].encode("utf-8")
        delta = text[at : at + DELTA]
        prefix = text[: at + DELTA]
        start = time.process_time()
        buffer = before + bytes(delta, "utf-8")
        parse(buffer, prefix)
        total += time.process_time() - start
    return total / len(chosen)


def run_sdk(stream: list[dict[str, Any]]) -> float:
    """CPU seconds per delta of the SDK's ``accumulate_event`` over every delta of the stream.

    Its event objects are built beforehand (its stream builds them from the server's
    events before accumulating); then each event is accumulated in turn, the snapshot and
    the call's bytes buffer carried from one to the next as its ``MessageStream`` carries
    them, and the whole run is timed like callgate's.
    """
    objects = [construct_type(type_=RawMessageStreamEvent, value=event) for event in stream]
    json_bufs: dict[int, bytes] = {}
    snapshot = None
    start = time.process_time()
    for event in objects:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    elapsed = time.process_time() - start
    whole = json.loads("".join(e["delta"]["partial_json"] for e in stream[2:-3]))
    read = getattr(snapshot.content[0], "input", None) if snapshot is not None else None
    assert read == whole, "the SDK's accumulator did not read the call"
    return elapsed / len(stream)


def sdk(buffer: bytes, _: str) -> object:
    return jiter.from_json(buffer, partial_mode=True)


def trailing(buffer: bytes, _: str) -> object:
    return jiter.from_json(buffer, partial_mode="trailing-strings")


def pjp(_: bytes, text: str) -> object:
    return partial_json_parser.loads(text)


def measure(size: int, rounds: int) -> dict[str, float]:
    """Best-of-rounds microseconds per delta of each reader, for arguments of ``size``."""
    text = arguments_text(size)
    stream = events(text)
    best: dict[str, float] = {}
    for _ in range(rounds):
        times = {}
        for name, read in (("callgate", "records"), ("callgate + text", "text")):
            seconds, count = run_callgate(stream, read)
            times[name] = seconds / count
        seconds, count = run_callgate(stream, "value")
        times["callgate + value"] = seconds / count
        times["sdk accumulator"] = run_sdk(stream)
        times["sdk (jiter)"] = sampled(text, sdk)
        times["jiter trailing-strings"] = sampled(text, trailing)
        times["partial-json-parser"] = sampled(text, pjp)
        for name, value in times.items():
            best[name] = min(best.get(name, value), value)
    return {name: value * 1e6 for name, value in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_partial.py", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 KB and 20 KB instead")
    parser.add_argument("--rounds", type=int, default=3, help="best of N rounds (default 3)")
    args = parser.parse_args(argv)
    if MISSING is not None:
        print(
            f"bench_partial: needs {MISSING} (pip install jiter partial-json-parser)",
            file=sys.stderr,
        )
        return 2
    small, large = (2_000, 20_000) if args.quick else (20_000, 200_000)
    low, high = measure(small, args.rounds), measure(large, args.rounds)
    label = f"{large // 1000}K/{small // 1000}K"
    print(f"{'reader':<24}{small // 1000:>8} KB{large // 1000:>10} KB{label:>11}{'x callgate':>12}")
    for name in low:
        ratio = high[name] / low[name]
        times = high[name] / high["callgate"]
        print(f"{name:<24}{low[name]:>11.2f}{high[name]:>13.2f}{ratio:>10.2f}x{times:>11.1f}x")
    print("(microseconds per 4-character delta, best CPU time of the rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
