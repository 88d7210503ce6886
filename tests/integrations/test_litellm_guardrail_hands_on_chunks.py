"""The LiteLLM guardrail hands on a chunk the gate released as it came, the object itself.

Building LiteLLM's ``ModelResponseStream`` again costs more than gating the chunk: plain
text and a call's argument fragments go on as the very objects LiteLLM made; a chunk the
gate changed (the turn's first, which gains the role; markup held back; a leaked call
turned native; the annotated end) is a new chunk with the gate's content.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrations_upstream import framework

litellm = framework("litellm")

import openai  # noqa: E402
from litellm.types.utils import ModelResponseStream  # noqa: E402

import callgate.integrations.litellm as guardrail_module  # noqa: E402
from callgate.integrations.common import as_dict  # noqa: E402
from callgate.integrations.litellm import CallgateGuardrail, lean_chunk  # noqa: E402
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


# -- a plain chunk read off its fields ------------------------------------------------------

PLAIN = st.text(max_size=8)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(st.none(), PLAIN),
        "role": st.sampled_from(["assistant", None]),
        "reasoning_content": PLAIN,
        "refusal": PLAIN,
        "tool_calls": st.just([{"index": 0, "function": {"arguments": "{}"}}]),
        "extra_field": st.one_of(st.integers(), st.just({"a": 1})),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    delta=FIELDS,
    finish=st.sampled_from([None, "stop", "length", "tool_calls"]),
    usage=st.booleans(),
    fingerprint=st.sampled_from([None, "fp_1"]),
    two=st.booleans(),
)
def test_a_chunk_read_off_its_fields_is_what_litellm_dumps(
    delta: dict[str, Any], finish: str | None, usage: bool, fingerprint: str | None, two: bool
) -> None:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body: dict[str, Any] = {"id": "c", "created": 1, "model": "m", "choices": [choice]}
    if two:
        body["choices"] = [choice, {**choice, "index": 1}]
    if usage:
        body["usage"] = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    if fingerprint:
        body["system_fingerprint"] = fingerprint
    made = ModelResponseStream(**body)
    lean = lean_chunk(made)
    if lean is None:
        return
    dumped = as_dict(made)
    dumped["choices"][0].setdefault("finish_reason", None)
    assert lean == dumped


def test_plain_chunks_of_a_real_stream_are_read_off_their_fields() -> None:
    made = litellm_stream(QWEN_TEXT)
    lean = [lean_chunk(c) for c in made]
    assert sum(x is not None for x in lean) >= len(made) - 2  # all but the end's usage
    for chunk_, read in zip(made, lean, strict=True):
        if read is not None:
            dumped = as_dict(chunk_)
            dumped["choices"][0].setdefault("finish_reason", None)
            assert read == dumped


def test_reading_off_the_fields_hands_on_what_dumping_hands_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for text in (QWEN_TEXT, "plain words, " * 20):
        made = litellm_stream(text)
        fast = through(made, model="Qwen/Qwen2.5-7B-Instruct")
        with monkeypatch.context() as patch:
            patch.setattr(guardrail_module, "lean_chunk", lambda chunk: None)
            dumped = through(made, model="Qwen/Qwen2.5-7B-Instruct")
        assert [_shown(c) for c in fast] == [_shown(c) for c in dumped]
        assert [any(c is m for m in made) for c in fast] == [
            any(c is m for m in made) for c in dumped
        ]


def _shown(chunk_: ModelResponseStream) -> Any:
    dumped = as_dict(chunk_)
    for choice in dumped.get("choices", []):
        for call in choice.get("delta", {}).get("tool_calls") or []:
            call.pop("id", None)  # a converted call's id is fresh on each run
    return dumped, getattr(chunk_, "callgate", None)


QWEN_TEXT = 'Let me look.<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'


def litellm_stream(text: str) -> list[ModelResponseStream]:
    """The chunks LiteLLM's SDK makes of an OpenAI stream of ``text`` (4 characters a chunk)."""
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    envelope = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [{**envelope, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    chunks += [{**envelope, "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    chunks.append({**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    body += b"data: [DONE]\n\n"

    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    http = httpx.Client(transport=httpx.MockTransport(reply))
    client = openai.OpenAI(api_key="sk-test", base_url="http://upstream/v1", http_client=http)
    request = {"model": "openai/m", "messages": [{"role": "user", "content": "go"}]}
    return list(litellm.completion(**request, stream=True, client=client))
