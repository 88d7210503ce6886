"""Instructions per pass of the outside harness's streams, for a count that the load cannot move.

Run under cachegrind, once with no pass and once with some, and take the difference::

    PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        python bench/peers_instructions.py ../shared/bench/peers.py STREAM PEER PASSES

``STREAM`` is a short name (``oa2k``, ``an2k``, ``oa20k``, ``oa4c``, ``an20k``, ``oa200k``,
``an200k``), ``PEER`` is ``bare`` (the harness's list-and-join loop) or ``callgate`` (its
``CallgateBuffer``: a buffer per stream with its ``tool_schemas``, chunks fed in batches of 256).
Each run makes the stream as the harness does, writes ``"type": "function"`` into its OpenAI
entries as another peer in the harness's process does, runs the peer once to warm it, then
``PASSES`` timed-alike passes with the collector off (``PEERS_GC=on`` leaves it on, as the
harness has it, at the price of counts that move by about 1 % with where a collection falls);
``(Ir with N passes - Ir with 0) / N`` is one pass. Without valgrind it prints each pass's CPU
time.

A turn's own cost, apart from its chunks: ``PEER@PHASE`` stops each pass after ``PHASE``
(``callgate``: ``build`` the buffer, its ``first`` chunk, the ``rest`` of the chunks, ``end()``;
``bare``: ``start``, ``feed``), so that the difference of two phases' counts is the later one's
instructions (the last phase, ``as_dict()`` or the bare loop's ``finish``, is the whole pass's
count minus ``end``'s or ``feed``'s). A buffer left before ``end()`` keeps its hooks, a cycle
the collector (off) never frees, so the passes of such a phase run on fresh memory: compare
a phase's counts before and after a change, and take many passes (200; a run's count moves
by some 300 k instructions). ``PEER`` ``phases`` times both peers' phases with
``perf_counter`` instead, passes alternating, and prints each phase's median as a share of
the bare loop's whole pass.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

STREAMS = {
    "oa2k": ("openai", "S1 openai-parallel 3x2KB", 1, [2000] * 3, 1, 8),
    "an2k": ("anthropic", "S2 anthropic-parallel 3x2KB+text", 2, [2000] * 3, 1, 8),
    "oa20k": ("openai", "S1-20KB (3 calls)", 30, [20_000 // 3] * 3, 1, 8),
    "oa200k": ("openai", "S1-200KB (3 calls)", 210, [200_000 // 3] * 3, 1, 8),
    "oa4c": ("openai", "S1-long 1x20KB 4-char frags", 3, [20_000], 4, 4),
    "an20k": ("anthropic", "S2-20KB (3 calls)", 40, [20_000 // 3] * 3, 1, 8),
    "an200k": ("anthropic", "S2-200KB (3 calls)", 220, [200_000 // 3] * 3, 1, 8),
}


PHASES = {
    "callgate": ("build", "first", "rest", "end", "as_dict"),
    "bare": ("start", "feed", "finish"),
}
"""Each peer's phases of a pass, in order (``PEER@PHASE`` stops after one of them)."""


def phased(peer: Any, inputs: list[Any], batch: int, who: str) -> Callable[[str], list[float]]:
    """A pass of ``peer`` that stops after a phase and returns each phase's perf_counter time."""
    clock = time.perf_counter

    def run(stop: str) -> list[float]:
        marks = [clock()]
        if who == "bare":
            state = peer.start()
            marks.append(clock())
            if stop != "start":
                for i in range(0, len(inputs), batch):
                    peer.feed(state, inputs[i : i + batch])
                marks.append(clock())
                if stop != "feed":
                    peer.finish(state)
                    marks.append(clock())
        else:
            state = peer.start()
            marks.append(clock())
            if stop != "build":
                peer.feed(state, inputs[:1])
                marks.append(clock())
                if stop != "first":
                    for i in range(1, len(inputs), batch):
                        peer.feed(state, inputs[i : i + batch])
                    marks.append(clock())
                    if stop != "rest":
                        state.end()
                        marks.append(clock())
                        if stop != "end":
                            state.as_dict()
                            marks.append(clock())
        return [b - a for a, b in itertools.pairwise(marks)]

    return run


def make_peer(peers: Any, kind: str, who: str, stream: Any) -> tuple[Any, list[Any]]:
    """The harness's peer ``who`` for a stream of ``kind``, and the stream's inputs for it."""
    if who == "bare":
        peer = peers.NaiveListOpenAI() if kind == "openai" else peers.NaiveListAnthropic()
    else:
        import callgate  # noqa: F401  (imported before the passes, as the harness has it)

        peer = peers.CallgateBuffer()
    return peer, peer.prepare(stream)


def report_phases(peers: Any, kind: str, key: str, stream: Any, passes: int) -> None:
    """Each phase's median time of both peers, passes alternating, as shares of a bare pass."""
    runs = {}
    for who in ("callgate", "bare"):
        peer, inputs = make_peer(peers, kind, who, stream)
        runs[who] = phased(peer, inputs, peers.BATCH, who)
        runs[who]("")
    times: dict[str, list[list[float]]] = {"callgate": [], "bare": []}
    for _ in range(passes):
        for who, run in runs.items():
            times[who].append(run(""))
    median = {
        who: [statistics.median(column) for column in zip(*rows, strict=True)]
        for who, rows in times.items()
    }
    bare = sum(median["bare"])
    for who in ("callgate", "bare"):
        cells = "  ".join(
            f"{name} {t * 1e6:.1f} us {t / bare:.3f}"
            for name, t in zip(PHASES[who], median[who], strict=True)
        )
        whole = sum(median[who])
        print(f"{key} {who:<8} pass {whole * 1e6:.1f} us {whole / bare:.2f}  {cells}")
    turn = sum(median["callgate"][i] for i in (0, 1, 3, 4))
    print(
        f"{key} callgate's turn apart from its chunks (build, first, end, as_dict): "
        f"{turn * 1e6:.1f} us, {turn / bare:.3f} of a bare pass; the bare loop's start and "
        f"finish: {(median['bare'][0] + median['bare'][2]) / bare:.3f}"
    )


def main() -> None:
    """Load the harness, make one stream, run one peer PASSES times after a warm pass."""
    path, key, who, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    who, _, stop = who.partition("@")
    spec = importlib.util.spec_from_file_location("peers", path)
    assert spec is not None and spec.loader is not None
    peers: Any = importlib.util.module_from_spec(spec)
    sys.modules["peers"] = peers
    spec.loader.exec_module(peers)
    kind, name, seed, sizes, low, high = STREAMS[key]
    make = peers.openai_stream if kind == "openai" else peers.anthropic_stream
    stream = make(name, seed, sizes, low, high)
    if kind == "openai":
        for chunk in stream.chunks:
            for choice in chunk["choices"]:
                for entry in choice["delta"].get("tool_calls") or ():
                    entry.setdefault("type", "function")
    if who == "phases":
        report_phases(peers, kind, key, stream, passes)
        return
    peer, inputs = make_peer(peers, kind, who, stream)
    batch = peers.BATCH
    if stop and stop not in PHASES[who]:
        raise SystemExit(f"{who}'s phases are {', '.join(PHASES[who])}, not {stop!r}")
    partial = phased(peer, inputs, batch, who)

    def once() -> Any:
        state = peer.start()
        for i in range(0, len(inputs), batch):
            peer.feed(state, inputs[i : i + batch])
        return peer.finish(state)

    assert peer.check(once(), stream)
    gc.collect()
    gc.freeze()
    if os.environ.get("PEERS_GC") != "on":
        gc.disable()  # a count then does not depend on where a collection falls
    for _ in range(passes):
        t0 = time.process_time()
        if stop:
            partial(stop)
        else:
            once()
        print(f"{key} {who} {(time.process_time() - t0) * 1e3:.3f} ms", file=sys.stderr)


if __name__ == "__main__":
    main()
