"""The LiteLLM guardrail hands on a chunk the gate released as it came, the object itself.

Building LiteLLM's ``ModelResponseStream`` again costs more than gating the chunk: plain
text and a call's argument fragments go on as the very objects LiteLLM made; a chunk the
gate changed (the turn's first, which gains the role; markup held back; a leaked call
turned native; the annotated end) is a new chunk with the gate's content.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from integrations_upstream import framework

litellm = framework("litellm")

from litellm.types.utils import ModelResponseStream  # noqa: E402

from callgate.integrations.litellm import CallgateGuardrail  # noqa: E402
from callgate.integrations.released import unchanged  # noqa: E402


def chunk(delta: dict[str, Any], finish: str | None = None) -> ModelResponseStream:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return ModelResponseStream(id="c", created=1, model="m", choices=[choice])


async def _each(items: list[ModelResponseStream]) -> AsyncIterator[ModelResponseStream]:
    for item in items:
        yield item


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def through(items: list[ModelResponseStream], model: str = "m") -> list[ModelResponseStream]:
    guard = CallgateGuardrail()
    request = {"model": model, "tools": TOOLS}

    async def run() -> list[ModelResponseStream]:
        return [c async for c in guard.astream(_each(items), request)]

    return asyncio.run(run())


def test_plain_text_goes_on_as_the_chunks_litellm_made() -> None:
    words = [chunk({"content": w}) for w in ("Hello", " there", ", friend")]
    items = [chunk({"role": "assistant", "content": ""}), *words, chunk({}, "stop")]
    out = through(items)
    assert all(any(o is w for o in out) for w in words)
    assert "".join(o.choices[0].delta.content or "" for o in out if o.choices) == (
        "Hello there, friend"
    )
    assert getattr(out[-1], "callgate", None) is not None  # the end is the gate's own


def test_a_leaked_call_is_rewritten_and_never_the_original_chunk() -> None:
    pieces = ["Sure. ", "<tool_call>", '{"name": "f", "arguments": {}}', "</tool_call>"]
    items = [chunk({"role": "assistant", "content": ""})]
    items += [chunk({"content": p}) for p in pieces] + [chunk({}, "stop")]
    out = through(items, model="Qwen/Qwen2.5-7B-Instruct")
    assert not any(o is items[n] for o in out for n in (2, 3, 4))
    text = "".join(o.choices[0].delta.content or "" for o in out if o.choices)
    assert "<tool_call>" not in text
    calls = [c for o in out if o.choices for c in (o.choices[0].delta.tool_calls or [])]
    assert [c.function.name for c in calls] == ["f"]


def test_unchanged_ignores_none_fields_and_never_an_annotation() -> None:
    dumped = {"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    released = {"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}, "x": None}]}
    assert unchanged(released, dumped)
    assert not unchanged({**released, "callgate": {"status": "pass"}}, dumped)
    other = {"id": "c", "choices": [{"index": 0, "delta": {"content": "b"}}]}
    assert not unchanged(other, dumped)
