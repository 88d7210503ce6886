"""Details of the gateway a client or an operator can tell apart, driven through the engine.

A request's tools that are not objects or have no name, a text format or a wire the engine
does not know, and a Messages body on the Chat path are refused with words that say so; a
client's ``max_tokens`` reaches a Messages upstream; a Responses upstream cut at its output
limit ends a Chat client's turn ``length``; every event played through
:meth:`~callgate.proxy.engine.Engine.play` counts its time; under ``--stream-args`` only a
declared tool's text call streams its arguments, the calls after an undeclared one too; a
native call sent beside a set-aside text call comes with the notice; a forming call finishes
on its sent text only when that text is its arguments; a repair's answer that repeats the
text shown and goes on in the same chunk shows the rest.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from callgate.proxy.engine import Engine, GatedMessages, GatedTurn, Options, RequestError
from callgate.proxy.sse import SSEReader
from callgate.proxy.upstream import sse_body
from callgate.proxy.wires.forming import HeldClose, remainder
from callgate.testing.builders import anthropic_events, openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import chat_chunk, text_turn
from test_gateway_behaviours import CALL
from test_gateway_corners import REQUESTS, pieces, sent_arguments
from test_gateway_edges import TAG, leaked
from test_gateway_turn_ends import responses_stream
from test_proxy_engine import _invalid_call_turn, rebuilt


def test_a_tool_that_is_not_an_object_and_an_unknown_wire_are_refused_by_name() -> None:
    with pytest.raises(RequestError, match=r"^each tool must be an object$"):
        GatedTurn({**REQUESTS["chat"], "tools": ["get_weather"]}, Options())
    with pytest.raises(ValueError, match=r"^unknown wire 'grpc'; one of: chat, messages, resp"):
        Engine(REQUESTS["chat"], Options(), client="chat", upstream="grpc")


def test_a_nameless_tool_an_unknown_format_and_a_foreign_body_are_refused_by_name() -> None:
    nameless = [{"type": "function", "function": {"parameters": {"type": "object"}}}]
    with pytest.raises(RequestError, match=r"^each tool needs a name$"):
        GatedTurn({**REQUESTS["chat"], "tools": nameless}, Options())
    with pytest.raises(ValueError, match=r"^unknown text format 'hermes'; one of: tool_call_tag, "):
        Options(text_formats=("hermes",))
    used = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    body = {"model": "m", "messages": [{"role": "assistant", "content": [used]}]}
    with pytest.raises(RequestError, match=r"^this body is a request of the Anthropic Messages"):
        GatedTurn(body, Options())
    null = {"model": "m", "messages": [{"role": "user", "content": None}]}
    assert GatedMessages(null, Options()).client_request == null  # a null content tells none


def test_a_clients_max_tokens_reaches_a_messages_upstream() -> None:
    request = {**REQUESTS["chat"], "max_tokens": 77}
    engine = Engine(request, Options(), client="chat", upstream="messages")
    assert engine.request["max_tokens"] == 77


def test_a_responses_upstream_cut_at_its_output_limit_ends_a_chat_turn_length() -> None:
    events = responses_stream("Mild in Par")
    ended = events[-1]["response"]
    events[-1] = {
        "type": "response.incomplete",
        "response": {
            **ended,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        },
    }
    engine = Engine(REQUESTS["chat"], Options(), client="chat", upstream="responses")
    out: list[dict[str, Any]] = []
    for event in events:
        out += engine.feed(event)
    assert engine.cut and engine.finish_kind == "length"
    assert out[-1]["choices"][0]["finish_reason"] == "length"


def test_every_event_played_counts_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each event through ``play`` adds its time to the turn's (a clock that ticks 1 µs
    a reading): the time never falls back to one event's."""
    ticks = iter(range(0, 10**12, 1000))
    monkeypatch.setattr("callgate.proxy.engine.time.perf_counter_ns", lambda: next(ticks))
    engine = Engine(REQUESTS["chat"], Options(), client="chat", upstream="chat")
    spent = [engine.cpu_ns]
    for event in SSEReader().events(sse_body(text_turn(pieces("Mild in Paris, and dry.")))):
        engine.play(event)
        spent.append(engine.cpu_ns)
    assert all(later > earlier for earlier, later in pairwise(spent[:-1]))


def test_only_a_declared_tools_text_call_streams_and_the_next_one_still_does() -> None:
    """Under ``--stream-args``: a text call of an undeclared tool streams no argument
    delta, and the declared tool's call after it streams its own before the turn ends."""
    options = Options(on_blocked="notice", text_formats=TAG, stream_args=True)
    engine = Engine(REQUESTS["chat"], options, client="chat", upstream="chat")
    unknown = leaked("Paris").replace("get_weather", "delete_files")
    out: list[dict[str, Any]] = []
    for chunk in text_turn(pieces("Both. " + unknown + leaked("Oslo"), 7))[:-1]:
        out += engine.feed(chunk)
    names = [
        call["function"].get("name")
        for chunk in out
        for call in chunk["choices"][0]["delta"].get("tool_calls") or ()
    ]
    assert [n for n in names if n] == ["get_weather"]
    (streamed,) = sent_arguments("chat", out).values()
    assert streamed == '{"city": "Oslo"'  # its close waits for the gate's acceptance


def test_a_native_call_sent_beside_a_set_aside_text_call_comes_with_the_notice() -> None:
    engine = GatedTurn(REQUESTS["chat"], Options(on_blocked="notice", text_formats=TAG))
    out: list[dict[str, Any]] = []
    for chunk in [
        chat_chunk({"role": "assistant", "content": "Both. " + leaked("Oslo")}),
        chat_chunk({"tool_calls": [CALL]}),
        chat_chunk({}, "tool_calls"),
    ]:
        out += engine.feed(chunk)
    out += engine.finish(clean=True)
    deltas = [c["choices"][0]["delta"] for c in out if c.get("choices")]
    calls = [call for d in deltas for call in d.get("tool_calls") or ()]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [
        ("call_up", '{"city": "Paris"}')
    ]
    assert engine.notice() and deltas[-2]["content"] == engine.notice()
    assert out[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_call_finishes_on_its_sent_text_only_when_that_text_is_its_arguments() -> None:
    assert remainder('{"a": 1, "b": 2}', ['{"a": 1', ", "]) == '"b": 2}'
    assert remainder('{"a": 1}', ['{"a":1}']) == ""  # the model's spelling, the same value
    assert remainder('{"a": 1}', ['{"a":2}']) is None
    assert remainder('{"a": 1}', ['{"a" :']) is None  # neither its start nor whole
    held = HeldClose()
    sent = [held.send('{"a":1'), held.send("}"), held.send(" ")]
    assert remainder('{"a": 1}', sent, held) == "} "  # the model's spelling, its close held
    assert remainder('{"a": 2}', sent, held) is None


def test_a_repairs_answer_that_repeats_the_text_shown_and_goes_on_shows_the_rest() -> None:
    first = GatedTurn(_invalid_call_turn().request, Options(on_blocked="repair", repairs=1))
    out: list[dict[str, Any]] = []
    for chunk in _invalid_call_turn().chunks:
        out += first.feed(chunk)
    out += first.finish()
    second = first.follow_up()
    good = WireCall("call_8", "get_weather", ('{"city": "Paris"}',))
    for chunk in openai_chunks([good], [0, 0], text=["Checking. Now for Paris."]):
        out += second.feed(chunk)
    out += second.finish()
    got = rebuilt(out)
    assert got["content"] == "Checking. Now for Paris."
    assert got["calls"] == [("get_weather", {"city": "Paris"})]


def test_calls_a_chat_client_gets_at_the_end_are_numbered_in_order_and_typed() -> None:
    """Two calls of a Messages upstream reach a Chat client after the gate decided: one entry
    each, numbered 0 and 1, each a ``function`` with its id, name and whole arguments."""
    calls = [
        WireCall("toolu_a", "get_weather", ('{"city": ', '"Paris"}')),
        WireCall("toolu_b", "get_weather", ('{"city": "Oslo"}',)),
    ]
    engine = Engine(REQUESTS["chat"], Options(), client="chat", upstream="messages")
    out: list[dict[str, Any]] = []
    for event in anthropic_events(calls, [0, 0, 0, 0, 1, 1, 1]):
        out += engine.feed(event)
    out += engine.finish()
    entries = [
        entry
        for chunk in out
        if chunk.get("choices")
        for entry in chunk["choices"][0]["delta"].get("tool_calls") or ()
    ]
    assert entries == [
        {
            "index": 0,
            "id": "toolu_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {
            "index": 1,
            "id": "toolu_b",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
    ]
    assert [c["choices"][0]["finish_reason"] for c in out if c.get("choices")][-1] == "tool_calls"


def entries_of(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every ``tool_calls`` entry a Chat client got, in order."""
    return [
        entry
        for chunk in out
        if chunk.get("choices")
        for entry in chunk["choices"][0]["delta"].get("tool_calls") or ()
    ]


def test_native_calls_streamed_to_a_chat_client_get_their_braces_with_the_finish() -> None:
    """Under ``--stream-args`` each native call's entries carry the client's own index (the
    upstream's 2, 5 and 7 become 0, 1 and 2) and its arguments as they came but for the
    closing brace; the braces come at the end, in the calls' order, then ``tool_calls``."""
    cities = ("Paris", "Oslo", "Rome")
    calls = [
        WireCall(f"call_{n}", "get_weather", ('{"city": ', f'"{city}"}}'))
        for n, city in enumerate(cities)
    ]
    chunks = openai_chunks(calls, [0, 1, 2] * 3)
    upstream_index = {0: 2, 1: 5, 2: 7}
    for chunk in chunks:
        for entry in chunk["choices"][0]["delta"].get("tool_calls") or ():
            entry["index"] = upstream_index[entry["index"]]
    options = Options(on_blocked="notice", stream_args=True)
    engine = Engine(REQUESTS["chat"], options, client="chat", upstream="chat")
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += engine.feed(chunk)
    ended = engine.finish()
    entries = entries_of(out + ended)
    opened = [e for e in entries if "id" in e]
    assert [(e["index"], e["id"], e["type"], e["function"]["name"]) for e in opened] == [
        (n, f"call_{n}", "function", "get_weather") for n in range(3)
    ]
    pieces = [(e["index"], e["function"].get("arguments", "")) for e in entries]
    assert pieces[-3:] == [(0, "}"), (1, "}"), (2, "}")]
    assert ["".join(text for index, text in pieces[:-3] if index == n) for n in range(3)] == [
        f'{{"city": "{city}"' for city in cities
    ]
    assert [c["choices"][0]["finish_reason"] for c in ended if c.get("choices")][-1] == "tool_calls"


def test_two_text_calls_streamed_to_a_chat_client_each_keep_their_own_entry() -> None:
    """Two calls written in the text, both declared: each opens its own entry (index, id,
    type and name first), streams its JSON but for the brace, and gets the brace at the end."""
    options = Options(on_blocked="notice", text_formats=TAG, stream_args=True)
    engine = Engine(REQUESTS["chat"], options, client="chat", upstream="chat")
    out: list[dict[str, Any]] = []
    for chunk in text_turn(pieces("Both. " + leaked("Paris") + leaked("Oslo"), 7)):
        out += engine.feed(chunk)
    ended = engine.finish()
    entries = entries_of(out + ended)
    opened = [e for e in entries if "id" in e]
    assert [(e["index"], e["type"], e["function"]["name"]) for e in opened] == [
        (0, "function", "get_weather"),
        (1, "function", "get_weather"),
    ]
    ids = [e["id"] for e in opened]
    assert all(isinstance(i, str) and i.startswith("call_") for i in ids) and len(set(ids)) == 2
    assert [c.id for c in engine.calls] == ids
    assert all(e["function"]["arguments"] for e in entries if "id" not in e)  # none empty
    streamed = sent_arguments("chat", out)
    assert streamed == {0: '{"city": "Paris"', 1: '{"city": "Oslo"'}
    assert sent_arguments("chat", out + ended) == {0: '{"city": "Paris"}', 1: '{"city": "Oslo"}'}
    assert [c["choices"][0]["finish_reason"] for c in ended if c.get("choices")][-1] == "tool_calls"
