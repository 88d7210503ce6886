"""Differential tests: LLMStreamBuffer against the openai SDK's Responses stream accumulator.

Hypothesis draws one Responses turn (an optional reasoning item, 0-4 function calls whose
arguments are ``json.dumps`` of generated JSON objects with unicode text, cut at random
points, and an optional message item before, between or after the calls), builds the
realistic ``response.*`` event sequence, validates every event through the SDK's
``ResponseStreamEvent`` type, and feeds the same events to the SDK's
``ResponseStreamState`` (what ``client.responses.stream`` folds events with) and to
callgate. The SDK is the reference for what the stream=false Response is; callgate must
rebuild the same Response from the same stream.

The OpenAI API streams output items one after another: an item's
``response.output_item.done`` comes before the next item's ``response.output_item.added``,
parallel function calls included (a recorded gpt-4o stream with two parallel calls closes
the first before adding the second; no recorded stream interleaves argument deltas across
items). The generated streams keep that order; callgate's handling of interleaved argument
deltas is covered by its own fixtures, not here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import omit
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from callgate import LLMStreamBuffer
from callgate.testing import argument_texts
from wire_common import fragments_of

SETTINGS = settings(max_examples=150, deadline=None)
EVENT: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
Event = dict[str, Any]

# -- generated turns -----------------------------------------------------------------------

TOOL_NAMES = ("get_weather", "get_time", "search", "send_message")
NAMES = st.sampled_from(TOOL_NAMES)
ID_TAILS = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=24
)
HEX_TAILS = st.text("0123456789abcdef", min_size=16, max_size=48)

RESPONSE_ID = "resp_68b1c2f0a4e88190b7f2d3c41e5a6b7c0d8e9f1a2b3c4d5e"


@dataclass(frozen=True)
class FunctionCall:
    """A ``function_call`` output item: item id, call id, name and argument fragments."""

    item_id: str
    call_id: str
    name: str
    fragments: tuple[str, ...]

    @property
    def arguments(self) -> str:
        """The complete argument text."""
        return "".join(self.fragments)


@dataclass(frozen=True)
class Message:
    """An assistant ``message`` output item with one ``output_text`` part."""

    item_id: str
    fragments: tuple[str, ...]

    @property
    def text(self) -> str:
        """The complete text."""
        return "".join(self.fragments)


@dataclass(frozen=True)
class Reasoning:
    """A ``reasoning`` output item whose summary parts stream as text fragments."""

    item_id: str
    summaries: tuple[tuple[str, ...], ...]


Item = FunctionCall | Message | Reasoning


@dataclass(frozen=True)
class ResponsesTurn:
    items: list[Item]
    events: list[Event]

    @property
    def calls(self) -> list[FunctionCall]:
        """The function calls, in output order."""
        return [item for item in self.items if isinstance(item, FunctionCall)]


@st.composite
def responses_turns(draw: st.DrawFn) -> ResponsesTurn:
    """An optional reasoning item first, 0-4 calls, an optional message anywhere among them."""
    ids = draw(
        st.lists(
            st.tuples(HEX_TAILS, ID_TAILS),
            max_size=4,
            unique_by=(lambda pair: pair[0], lambda pair: pair[1]),
        )
    )
    items: list[Item] = [
        FunctionCall(
            f"fc_{item_tail}",
            f"call_{call_tail}",
            draw(NAMES),
            draw(fragments_of(draw(argument_texts()))),
        )
        for item_tail, call_tail in ids
    ]
    if draw(st.booleans()):
        message = Message(f"msg_{draw(HEX_TAILS)}", draw(fragments_of(draw(st.text(max_size=40)))))
        items.insert(draw(st.integers(0, len(items))), message)
    if draw(st.booleans()):
        summaries = draw(st.lists(st.text(min_size=1, max_size=30), max_size=2))
        summary_cuts = tuple(draw(fragments_of(summary)) for summary in summaries)
        items.insert(0, Reasoning(f"rs_{draw(HEX_TAILS)}", summary_cuts))
    return ResponsesTurn(items, responses_events(items))


# -- the event builder ---------------------------------------------------------------------


def _envelope(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    """The Response object the lifecycle events carry."""
    completed = status == "completed"
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1756371440,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [
            {
                "type": "function",
                "name": name,
                "description": f"The {name} tool.",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            }
            for name in TOOL_NAMES
        ],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": (
            {
                "input_tokens": 291,
                "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
                "output_tokens": 58,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 349,
            }
            if completed
            else None
        ),
        "user": None,
        "metadata": {},
        **({"completed_at": 1756371442} if completed else {}),
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _call_events(call: FunctionCall, index: int) -> tuple[list[Event], dict[str, Any]]:
    """A function call's events, and its finished item."""
    opened = {
        "id": call.item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": call.call_id,
        "name": call.name,
    }
    done = {**opened, "status": "completed", "arguments": call.arguments}
    where = {"item_id": call.item_id, "output_index": index}
    events: list[Event] = [
        {"type": "response.output_item.added", "output_index": index, "item": opened}
    ]
    events += [
        {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        for piece in call.fragments
    ]
    events.append(
        {"type": "response.function_call_arguments.done", **where, "arguments": call.arguments}
    )
    events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    return events, done


def _message_events(message: Message, index: int) -> tuple[list[Event], dict[str, Any]]:
    """A message's events (one output_text part), and its finished item."""
    opened = {
        "id": message.item_id,
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    done = {**opened, "status": "completed", "content": [_text_part(message.text)]}
    where = {"item_id": message.item_id, "output_index": index, "content_index": 0}
    events: list[Event] = [
        {"type": "response.output_item.added", "output_index": index, "item": opened},
        {"type": "response.content_part.added", **where, "part": _text_part("")},
    ]
    events += [
        {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
        for piece in message.fragments
    ]
    events += [
        {"type": "response.output_text.done", **where, "text": message.text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": _text_part(message.text)},
        {"type": "response.output_item.done", "output_index": index, "item": done},
    ]
    return events, done


def _reasoning_events(reasoning: Reasoning, index: int) -> tuple[list[Event], dict[str, Any]]:
    """A reasoning item's events (its summary parts streamed), and its finished item."""
    opened = {"id": reasoning.item_id, "type": "reasoning", "summary": []}
    texts = ["".join(fragments) for fragments in reasoning.summaries]
    done = {**opened, "summary": [{"type": "summary_text", "text": text} for text in texts]}
    events: list[Event] = [
        {"type": "response.output_item.added", "output_index": index, "item": opened}
    ]
    for number, (fragments, text) in enumerate(zip(reasoning.summaries, texts, strict=True)):
        where = {"item_id": reasoning.item_id, "output_index": index, "summary_index": number}
        events.append(
            {
                "type": "response.reasoning_summary_part.added",
                **where,
                "part": {"type": "summary_text", "text": ""},
            }
        )
        events += [
            {"type": "response.reasoning_summary_text.delta", **where, "delta": piece}
            for piece in fragments
        ]
        events += [
            {"type": "response.reasoning_summary_text.done", **where, "text": text},
            {
                "type": "response.reasoning_summary_part.done",
                **where,
                "part": {"type": "summary_text", "text": text},
            },
        ]
    events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    return events, done


def responses_events(items: Sequence[Item]) -> list[Event]:
    """The Responses stream events of one turn, items one after another by output_index.

    ``response.created`` and ``response.in_progress`` (status ``in_progress``, no output),
    each item's events, then ``response.completed`` carrying the full response with every
    finished item; ``sequence_number`` counts up from 0.
    """
    events: list[Event] = [
        {"type": "response.created", "response": _envelope("in_progress", [])},
        {"type": "response.in_progress", "response": _envelope("in_progress", [])},
    ]
    output: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if isinstance(item, FunctionCall):
            item_events, done = _call_events(item, index)
        elif isinstance(item, Message):
            item_events, done = _message_events(item, index)
        else:
            item_events, done = _reasoning_events(item, index)
        events += item_events
        output.append(done)
    events.append({"type": "response.completed", "response": _envelope("completed", output)})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


# -- the two sides -------------------------------------------------------------------------


def fed(events: Iterable[object]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer()
    for event in events:
        buffer.add(event)
    buffer.end()
    return buffer


@dataclass
class SdkRun:
    """What ``ResponseStreamState`` made of a stream."""

    response: dict[str, Any] | None
    """The final ``response.completed`` ParsedResponse, normalised (see :func:`sdk_dict`)."""
    output_text: str | None
    """The final response's ``output_text`` property."""
    arguments: dict[int, str]
    """Per output index, the last ``snapshot`` of its function_call_arguments.delta events."""
    texts: dict[int, str]
    """Per output index, the last ``snapshot`` of its output_text.delta events."""


def sdk_dict(response: Any) -> dict[str, Any]:
    """The SDK's ParsedResponse as wire data, without the two fields the SDK adds itself.

    ``to_dict()`` keeps only the fields that were set, so the optional fields the model
    declares but the stream never sent do not appear. ``parse_response`` sets two more on
    every item it rebuilds: ``parsed_arguments`` on each function call (None: no strict
    input tool was given to parse with) and ``parsed`` on each output_text part (None: no
    text_format). Both are asserted None, then dropped; nothing else is touched.
    """
    data: dict[str, Any] = response.to_dict()
    for item in data["output"]:
        if item["type"] == "function_call":
            assert item.pop("parsed_arguments") is None
        elif item["type"] == "message":
            for part in item["content"]:
                if part["type"] == "output_text":
                    assert part.pop("parsed") is None
    return data


def run_side_by_side(events: Sequence[Event]) -> tuple[SdkRun, LLMStreamBuffer]:
    """Feed each validated event to the SDK's state and to callgate, comparing as they go.

    After every argument or text delta, callgate's Response under construction must carry
    exactly the ``snapshot`` the SDK attaches to the event it fires for that delta (the
    arguments or text the SDK has folded so far). Each side gets its own validated event
    object, so neither can see the other's mutations.
    """
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    buffer = LLMStreamBuffer()
    run = SdkRun(None, None, {}, {})
    for event in events:
        buffer.add(EVENT.validate_python(event))
        for fired in state.handle_event(EVENT.validate_python(event)):
            if fired.type == "response.function_call_arguments.delta":
                item = buffer.as_dict()["output"][fired.output_index]
                assert item["arguments"] == fired.snapshot
                run.arguments[fired.output_index] = fired.snapshot
            elif fired.type == "response.output_text.delta":
                item = buffer.as_dict()["output"][fired.output_index]
                assert item["content"][fired.content_index]["text"] == fired.snapshot
                run.texts[fired.output_index] = fired.snapshot
            elif fired.type == "response.completed":
                run.response = sdk_dict(fired.response)
                run.output_text = fired.response.output_text
    buffer.end()
    return run, buffer


CALL_FIELDS = ("type", "id", "call_id", "name", "arguments", "status")


def call_fields(item: dict[str, Any]) -> tuple[Any, ...]:
    """What a function call item is compared by: type, ids, name, arguments, status."""
    return tuple(item.get(field) for field in CALL_FIELDS)


def summary(output: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each output item reduced to what identifies it (a message: its type, id and text)."""
    rows: list[tuple[Any, ...]] = []
    for item in output:
        if item["type"] == "function_call":
            rows.append(call_fields(item))
        elif item["type"] == "message":
            text = "".join(part["text"] for part in item["content"])
            rows.append(("message", item["id"], text))
        else:
            rows.append((item["type"], item["id"]))
    return rows


def expected_summary(items: Sequence[Item]) -> list[tuple[Any, ...]]:
    """The generated turn's items, in the shape :func:`summary` gives."""
    rows: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, FunctionCall):
            rows.append(
                (
                    "function_call",
                    item.item_id,
                    item.call_id,
                    item.name,
                    item.arguments,
                    "completed",
                )
            )
        elif isinstance(item, Message):
            rows.append(("message", item.item_id, item.text))
        else:
            rows.append(("reasoning", item.item_id))
    return rows


def assert_clean_turn(buffer: LLMStreamBuffer, calls: Sequence[FunctionCall]) -> None:
    """A well-formed turn: executable with exactly its calls, not_applicable without."""
    assert buffer.is_finished()
    assert buffer.turn_state == ("executable" if calls else "not_applicable")
    assert buffer.executable == bool(calls)
    assert [f.code for f in buffer.findings if f.severity == "error"] == []
    assert [(slot.id, slot.name, slot.arguments) for slot in buffer.slots] == [
        (call.call_id, call.name, json.loads(call.arguments)) for call in calls
    ]


# -- the tests -----------------------------------------------------------------------------


@SETTINGS
@given(turn=responses_turns())
def test_responses_message_equals_the_sdk_stream_state_response(turn: ResponsesTurn) -> None:
    """callgate's stream=false Response equals ``ResponseStreamState``'s final response.

    Every event is validated through the SDK's ``ResponseStreamEvent`` type; the validated
    objects go to ``ResponseStreamState.handle_event`` and to callgate, and the plain dicts
    to a second buffer, which must build the identical Response.

    Compared exactly:

    * every output item in output order, as a whole: function calls (type, id, call_id,
      name, the raw arguments text, status), the message (id, status, role, its
      output_text part with text, annotations and logprobs), the reasoning item (id and
      summary parts); first as a readable summary against the generated turn, then item by
      item against the SDK;
    * the rest of the Response (id, status, model, usage, completed_at, tools, ...);
    * the display text: callgate's content equals the SDK response's ``output_text``;
    * while streaming, after every argument or text delta, callgate's item equals the
      ``snapshot`` the SDK fires with that delta (the deltas folded so far): this compares
      the two accumulations of the deltas themselves, since the SDK's final response is
      the one ``response.completed`` carries.

    Normalised on the SDK side, and nothing else: the final response is dumped with
    ``to_dict()`` (the fields the stream set, no declared-but-unsent optional fields), and
    the two None-valued fields the SDK's ``parse_response`` adds to what it rebuilds are
    dropped after asserting they are None: ``parsed_arguments`` on each function call and
    ``parsed`` on each output_text part. callgate must also be executable with exactly the
    generated calls (call_id, name, parsed arguments), no error findings.
    """
    sdk, from_objects = run_side_by_side(turn.events)
    from_dicts = fed(turn.events)

    assert sdk.response is not None
    message = from_objects.as_dict()
    assert summary(sdk.response["output"]) == expected_summary(turn.items)
    assert summary(message["output"]) == expected_summary(turn.items)
    for mine, theirs in zip(message["output"], sdk.response["output"], strict=True):
        assert mine == theirs
    assert message == sdk.response
    assert from_dicts.as_dict() == message

    assert sdk.arguments == {
        index: item.arguments
        for index, item in enumerate(turn.items)
        if isinstance(item, FunctionCall)
    }
    assert sdk.texts == {
        index: item.text
        for index, item in enumerate(turn.items)
        if isinstance(item, Message) and item.fragments
    }
    assert from_objects.get_content() == from_dicts.get_content() == sdk.output_text

    assert_clean_turn(from_objects, turn.calls)
    assert_clean_turn(from_dicts, turn.calls)


DELTAS = ('{"ci', 'ty":', '"Par', 'is"}')
STREAMED = "".join(DELTAS)
RESTATED = '{"city":"Rome"}'


@pytest.mark.parametrize(
    ("restated_by", "sdk_takes"),
    [
        pytest.param(
            {"arguments.done", "output_item.done", "completed"}, RESTATED, id="every-restatement"
        ),
        pytest.param({"arguments.done"}, STREAMED, id="arguments-done-only"),
        pytest.param({"output_item.done"}, STREAMED, id="output-item-done-only"),
        pytest.param({"completed"}, RESTATED, id="completed-only"),
    ],
)
def test_restated_arguments_unlike_the_deltas_are_blocked_while_the_sdk_takes_completed(
    restated_by: set[str], sdk_takes: str
) -> None:
    """A restatement that differs from the deltas blocks the call; the SDK raises nothing.

    The deltas build ``{"city":"Paris"}``; the events named in ``restated_by`` restate
    ``{"city":"Rome"}`` instead (the others restate the deltas' text). callgate refuses
    the turn with ``args_mismatch`` whichever restatement differs, and its Response keeps
    what the deltas built. ``ResponseStreamState`` never compares and raises nothing: its
    delta snapshots are the deltas' text; it passes ``function_call_arguments.done`` through
    without reading it; it keeps the done item only as a fallback for a
    ``response.completed`` without ``output``; and its final response (what
    ``get_final_response()`` returns) is ``response.completed``'s own output. So the SDK
    silently returns Rome exactly when ``response.completed`` says Rome, and Paris when only
    ``function_call_arguments.done`` or ``output_item.done`` differs.
    """
    call = FunctionCall(
        "fc_68b1c2f2e7d48190a1b2c3d4e5f6a7b800", "call_X1mmIIssMMaattCC", "get_weather", DELTAS
    )
    events = responses_events([call])
    for event in events:
        kind = event["type"]
        if kind == "response.function_call_arguments.done" and "arguments.done" in restated_by:
            event["arguments"] = RESTATED
        elif kind == "response.output_item.done" and "output_item.done" in restated_by:
            event["item"] = {**event["item"], "arguments": RESTATED}
        elif kind == "response.completed" and "completed" in restated_by:
            output = [{**item, "arguments": RESTATED} for item in event["response"]["output"]]
            event["response"] = {**event["response"], "output": output}

    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    snapshots: list[str] = []
    final: Any = None
    for event in events:
        for fired in state.handle_event(EVENT.validate_python(event)):
            if fired.type == "response.function_call_arguments.delta":
                snapshots.append(fired.snapshot)
            elif fired.type == "response.completed":
                final = fired.response
    assert final is not None
    assert snapshots[-1] == STREAMED
    assert final.output[0].type == "function_call"
    assert final.output[0].arguments == sdk_takes

    for buffer in (fed(EVENT.validate_python(event) for event in events), fed(events)):
        assert [f.code for f in buffer.findings if f.severity == "error"] == ["args_mismatch"]
        assert not buffer.executable
        assert buffer.turn_state == "blocked"
        assert buffer.releasable() == []
        assert buffer.as_dict()["output"][0]["arguments"] == STREAMED
