"""A call leaked into the text is held by the quick step exactly as the full step holds it.

Past its head, a Chat text chunk that only grows an open call block (no close, no breaking
marker, within the size limit) is held by the gate's short step without the buffer's reader,
and a frame of the learned shape is read without being split into events. For every text
format the gateway detects, a call long enough to be held that way (known or not, quoted in
backticks or bare, followed by more prose), cut anywhere, on every client wire, the bytes
sent, the verdict, the calls, the text held at most and every count are the full step's.
"""

from __future__ import annotations

import itertools
import json
from typing import Any
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from callgate.proxy import core
from callgate.proxy.engine import Engine, Options
from callgate.strategies.text.detector import HEAD
from long_calls import LONG_CALLS as CALLS
from test_proxy_plain_text_step import ENVELOPE, REQUEST
from test_proxy_shaped_frames import request_for

assert len({name for name, _ in CALLS}) >= 15, "a sample of most formats names Paris"
WRAPS = ["{}", "`{}`", "```\n{}\n```\n", "{} and then {}"]


def _content(call: str, wrap: str, unknown: bool, before: str, after: str) -> str:
    if unknown:
        call = call.replace("get_weather", "no_such_tool")
    return before + wrap.format(call, call) + after


def _reads(text: str, cuts: list[int], escaped: bool) -> list[bytes]:
    """The Chat stream of ``text`` cut at ``cuts`` (``escaped``: every character as \\uXXXX)."""
    edges = [0, *sorted({c for c in cuts if 0 < c < len(text)}), len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(edges) if b > a]

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {**ENVELOPE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(chunk, ensure_ascii=escaped).encode() + b"\n\n"

    body = [event({"content": piece}) for piece in pieces]
    return [
        event({"role": "assistant", "content": ""}),
        *body,
        event({}, "stop"),
        b"data: [DONE]\n\n",
    ]


def _played(reads: list[bytes], client: str, fmt: str, quick: bool) -> dict[str, Any]:
    ids = iter(range(10**6))
    stepped = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
        monkeypatch.setattr("time.time", lambda: 1700000000.0)
        options = Options(on_blocked="notice", text_formats=(fmt,))
        turn = Engine(request_for(client), options, client=client, upstream="chat")
        turn.plain_path = turn.shape_path = quick
        sent = [turn.play_bytes(read) for read in reads]
        sent.append(turn.close_bytes())
        sent.append(b"".join(turn.encode(c) for c in turn.finish()))
        stepped = turn.chunks
    audit = turn.audit()
    del audit["cpu_us"]
    queue = turn.buffer.text_queue
    gate = turn.buffer.gate
    assert gate is not None
    return {
        "bytes": sent,
        "audit": audit,
        "released": turn.released,
        "counts": (queue.held, queue.declined, gate.text_bytes, stepped),
        "content": turn.buffer.content_parts,
        "message": turn.buffer.message(),
        "history": turn.turn.history if turn.turn is not None else None,
    }


contents = st.tuples(
    st.sampled_from(CALLS),
    st.sampled_from(WRAPS),
    st.booleans(),
    st.sampled_from(["", "Sure. ", "Let me check `<tool_call>` first.\n"]),
    st.sampled_from(["", " Done.", "\n<b>bold</b>", " <tool_call>"]),
)
"""A call of some format (perhaps naming no tool of the turn), wrapped, with prose around it."""

TWO_CALLS = (next(c for c in CALLS if "[ARGS]" in c[1] and "get_time" in c[1]), "{}", True, "", "")
TWO_CALLS_CUT = len(_content(*TWO_CALLS[0][1:], *TWO_CALLS[1:])) - 2
"""Two calls naming no tool of the turn, cut before the second one's arguments: that block
opened inside the first read, and the full step releases it as text at the next read."""


@settings(max_examples=300, deadline=None)
@given(
    contents,
    st.lists(st.integers(0, 600), max_size=40),
    st.sampled_from(["chat", "messages", "responses"]),
    st.booleans(),
)
@example((CALLS[0], "{}", False, "Sure. ", " Done."), list(range(400)), "chat", False)
@example((CALLS[0], "{}", True, "", ""), list(range(400)), "responses", True)
@example(TWO_CALLS, [TWO_CALLS_CUT], "chat", False)
def test_a_held_call_is_held_as_the_full_step_holds_it_at_every_split(
    content: tuple[tuple[str, str], str, bool, str, str],
    cuts: list[int],
    client: str,
    escaped: bool,
) -> None:
    (fmt, markup), wrap, unknown, before, after = content
    reads = _reads(_content(markup, wrap, unknown, before, after), cuts, escaped)
    assert _played(reads, client, fmt, True) == _played(reads, client, fmt, False)


@pytest.mark.parametrize("fmt", sorted({name for name, _ in CALLS}))
@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_every_character_as_its_own_chunk_gives_the_full_steps_turn(fmt: str, client: str) -> None:
    markup = next(m for name, m in CALLS if name == fmt)
    text = "Sure. " + markup + " Done."
    reads = _reads(text, list(range(len(text))), False)
    assert _played(reads, client, fmt, True) == _played(reads, client, fmt, False)


def test_a_long_call_is_held_without_the_full_step() -> None:
    """Past the block's head, its chunks are held without the buffer's reader or a parse."""
    markup = next(m for name, m in CALLS if name == "tool_call_tag")
    reads = _reads(markup, list(range(0, len(markup), 4)), False)
    turn = Engine(REQUEST, Options(on_blocked="notice", text_formats=("tool_call_tag",)))
    with mock.patch.object(Engine, "step", autospec=True, side_effect=Engine.step) as step:
        sent = [turn.play_bytes(read) for read in reads[:-2]]
    assert b"".join(sent[1:]) == b""  # nothing of the call was shown
    head_chunks = HEAD // 4 + 4  # the opener, the head, the close (each read in full)
    assert step.call_count <= 1 + head_chunks < len(reads) // 2
    assert turn.held >= len(markup) - 4  # held whole until its close (the last chunk)
    assert turn.buffer.text_queue.held == 0  # the close dropped the markup
