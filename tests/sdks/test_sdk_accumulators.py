"""Differential tests: LLMStreamBuffer against the official SDKs' own stream accumulators.

Hypothesis draws one assistant turn (optional text, 0-4 tool calls whose arguments are
``json.dumps`` of generated JSON objects with unicode text, cut at random points), builds
the provider's chunks with :mod:`callgate.testing.builders`, and feeds the very same
chunks to the SDK's accumulator and to callgate. The SDKs are the reference for what the
provider's message is; callgate must rebuild the same message from the same stream.

Both SDK accumulators place a call by its position in a list, not by its key, so the
generated calls open in index order (as both providers send them; the kit's
``interleavings``); their later fragments interleave freely.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter

from callgate import LLMStreamBuffer
from callgate.testing import argument_texts, interleavings
from callgate.testing.builders import Block, WireText, anthropic_events, openai_chunks
from callgate.testing.wires import Chunk, WireCall
from wire_common import fragments_of

SETTINGS = settings(max_examples=200, deadline=None)
EVENT: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)

# -- generated turns -----------------------------------------------------------------------

NAMES = st.sampled_from(["get_weather", "get_time", "search", "send_message"])
ID_TAILS = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=24
)


@st.composite
def calls(draw: st.DrawFn, prefix: str) -> list[WireCall]:
    """0-4 calls with distinct ids, each with its arguments cut into fragments."""
    tails = draw(st.lists(ID_TAILS, max_size=4, unique=True))
    return [
        WireCall(f"{prefix}{tail}", draw(NAMES), draw(fragments_of(draw(argument_texts()))))
        for tail in tails
    ]


@dataclass(frozen=True)
class OpenAITurn:
    calls: list[WireCall]
    chunks: list[Chunk]


@dataclass(frozen=True)
class AnthropicTurn:
    blocks: list[Block]
    events: list[Chunk]


@st.composite
def openai_turns(draw: st.DrawFn) -> OpenAITurn:
    turn_calls = draw(calls("call_"))
    order = draw(interleavings([1 + len(call.fragments) for call in turn_calls]))
    opening = draw(st.sampled_from(["", None, "absent"]))
    chunks = openai_chunks(
        turn_calls,
        order,
        text=draw(fragments_of(draw(st.text(max_size=40)))),
        opening_content=None if opening == "absent" else opening,
        content_key=opening != "absent",
        usage=draw(st.booleans()),
    )
    return OpenAITurn(turn_calls, chunks)


@st.composite
def anthropic_turns(draw: st.DrawFn) -> AnthropicTurn:
    blocks: list[Block] = []
    if draw(st.booleans()):
        blocks.append(WireText(draw(fragments_of(draw(st.text(max_size=12))))))
    for call in draw(calls("toolu_")):
        # Anthropic usually opens a tool_use input with an empty partial_json.
        lead = ("",) if draw(st.booleans()) else ()
        blocks.append(WireCall(call.id, call.name, lead + call.fragments))
    order = draw(interleavings([2 + len(block.fragments) for block in blocks]))
    return AnthropicTurn(blocks, anthropic_events(blocks, order))


# -- the two sides -------------------------------------------------------------------------


def fed(chunks: Iterable[object]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer()
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


def assert_clean_turn(buffer: LLMStreamBuffer, turn_calls: Sequence[WireCall]) -> None:
    """A well-formed turn: executable with exactly its calls, not_applicable without."""
    assert buffer.turn_state == ("executable" if turn_calls else "not_applicable")
    assert [f.code for f in buffer.findings if f.severity == "error"] == []
    assert [(slot.id, slot.name, slot.arguments) for slot in buffer.slots] == [
        (call.id, call.name, json.loads(call.raw)) for call in turn_calls
    ]


def drop_none(data: dict[str, Any]) -> dict[str, Any]:
    """The mapping without its None-valued keys (one level: values are not touched)."""
    return {key: value for key, value in data.items() if value is not None}


def sdk_openai_message(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """``ChatCompletionStreamState``'s final message, without the helper's own fields."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    data = state.get_final_completion().choices[0].message.model_dump()
    content = data.pop("content")
    message = drop_none(data)
    message.pop("parsed", None)
    message["content"] = None if content == "" else content
    if "tool_calls" in message:
        message["tool_calls"] = [_sdk_openai_call(call) for call in message["tool_calls"]]
    return message


def _sdk_openai_call(call: dict[str, Any]) -> dict[str, Any]:
    call = drop_none(call)
    call.pop("index")
    function = drop_none(call["function"])
    function.pop("parsed_arguments", None)
    return {**call, "function": function}


def sdk_anthropic_message(events: Sequence[Chunk]) -> dict[str, Any]:
    """The message ``accumulate_event`` folds the events into, None-valued extras dropped."""
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    # Newer releases keep each block's partial JSON in a caller-owned dict (json_bufs);
    # older ones keep it on the block itself and take no such argument.
    extra = (
        {"json_bufs": buffers}
        if "json_bufs" in inspect.signature(accumulate_event).parameters
        else {}
    )
    for event in events:
        snapshot = accumulate_event(
            event=EVENT.validate_python(event), current_snapshot=snapshot, **extra
        )
    data = snapshot.model_dump()
    message = {key: data[key] for key in ANTHROPIC_FIELDS}
    message["content"] = [drop_none(block) for block in data["content"]]
    message["usage"] = drop_none(data["usage"])
    return message


ANTHROPIC_FIELDS = (
    "id",
    "type",
    "role",
    "model",
    "content",
    "stop_reason",
    "stop_sequence",
    "usage",
)


# -- the tests -----------------------------------------------------------------------------


@SETTINGS
@given(turn=openai_turns())
def test_openai_message_equals_the_sdk_stream_state_message(turn: OpenAITurn) -> None:
    """callgate's stream=false message equals ``ChatCompletionStreamState``'s, field by field.

    Normalised on the SDK side, and nothing else:

    * the helper's own None-valued fields, which are not part of the wire message, are
      dropped: ``refusal``, ``annotations``, ``audio``, ``function_call``, ``parsed`` on the
      message, ``function.parsed_arguments`` on each call (and ``tool_calls`` itself when the
      turn has none; callgate then leaves the key out);
    * each call's ``index``, which the helper keeps from the deltas, is dropped: the
      stream=false message has no per-call index, its list order is the slot order;
    * ``content`` ``""`` becomes ``None``: the helper keeps the ``""`` of a stream that
      sent only empty content, callgate reports null, the stream=false API's value for a
      message without text.

    Everything else is compared exactly: role, content, and for every call in slot order
    id, type, function.name and the raw function.arguments text. The plain dicts and the
    SDK's typed chunks must give callgate the same message.
    """
    expected = sdk_openai_message(turn.chunks)
    from_objects = fed(ChatCompletionChunk.model_validate(chunk) for chunk in turn.chunks)
    from_dicts = fed(turn.chunks)

    assert from_objects.as_dict() == expected
    assert from_dicts.as_dict() == expected
    assert_clean_turn(from_objects, turn.calls)


@SETTINGS
@given(turn=anthropic_turns())
def test_anthropic_message_equals_the_sdk_accumulated_message(turn: AnthropicTurn) -> None:
    """callgate's message equals the one ``accumulate_event`` folds the same events into.

    Compared exactly: id, type, role, model, stop_reason, stop_sequence, usage, and every content
    block in index order (text: type and text; tool_use: type, id, name and ``input`` as
    an object). Normalised on the SDK side, and nothing else: the SDK model's None-valued
    extras are dropped from each content block (``citations`` on text; on tool_use, fields
    of newer API features such as ``caller``) and from ``usage`` (its optional cache and tier
    counters); the tool inputs themselves are compared untouched, JSON nulls included.
    """
    expected = sdk_anthropic_message(turn.events)
    from_objects = fed(EVENT.validate_python(event) for event in turn.events)
    from_dicts = fed(turn.events)

    for buffer in (from_objects, from_dicts):
        message = buffer.as_dict()
        assert {key: message[key] for key in ANTHROPIC_FIELDS} == expected
    assert_clean_turn(from_objects, [block for block in turn.blocks if isinstance(block, WireCall)])
