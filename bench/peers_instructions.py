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
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import time
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


def main() -> None:
    """Load the harness, make one stream, run one peer PASSES times after a warm pass."""
    path, key, who, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
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
    if who == "bare":
        peer = peers.NaiveListOpenAI() if kind == "openai" else peers.NaiveListAnthropic()
    else:
        import callgate  # noqa: F401  (imported before the passes, as the harness has it)

        peer = peers.CallgateBuffer()
    inputs = peer.prepare(stream)
    batch = peers.BATCH

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
        once()
        print(f"{key} {who} {(time.process_time() - t0) * 1e3:.3f} ms", file=sys.stderr)


if __name__ == "__main__":
    main()
