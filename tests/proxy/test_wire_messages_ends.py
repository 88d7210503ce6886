"""How a Messages client's message ends when the upstream speaks another wire.

A Chat upstream that counts no tokens still gives the client's ``message_delta`` both
counts (zero: the Anthropic SDK requires ``output_tokens`` there); under
``--move-reasoning`` a tail held as a possible ``</think>`` that the stream's end shows was
not one stays in the thinking block it was written in.
"""

from __future__ import annotations

from typing import Any

from callgate.proxy.engine import Engine, Options
from proxy_cases import chat_chunk
from test_gateway_corners import REQUESTS, played
from test_gateway_edges import TAG


def _messages_from_chat(text: str, **options: Any) -> list[dict[str, Any]]:
    engine = Engine(
        REQUESTS["messages"],
        Options(text_formats=TAG, **options),
        client="messages",
        upstream="chat",
    )
    return played(
        engine, [chat_chunk({"role": "assistant", "content": text}), chat_chunk({}, "stop")]
    )


def test_a_chat_upstream_without_usage_gives_both_counts_as_zero() -> None:
    out = _messages_from_chat("Mild in Paris.")
    (delta,) = [e for e in out if e["type"] == "message_delta"]
    assert delta["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert delta["delta"]["stop_reason"] == "end_turn"


def test_a_reasoning_tail_that_was_no_tag_ends_in_the_thinking_block() -> None:
    out = _messages_from_chat("<think>mild, I think </th", move_reasoning=True)
    starts = [e["content_block"]["type"] for e in out if e["type"] == "content_block_start"]
    assert starts == ["thinking"]
    deltas = [e["delta"] for e in out if e["type"] == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "mild, I think </th"
    assert all(d["type"] == "thinking_delta" for d in deltas)
