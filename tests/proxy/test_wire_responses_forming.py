"""Text calls shown as they form (``--stream-args``) to a Responses client, in process.

Only a call of a declared tool is shown as it forms: an undeclared tool's call before it
gets no item, and does not stop the declared one after it from streaming. Each argument
delta carries new text, and every byte of a shown call's arguments but the brace that
closes them reaches the client as the model writes it; the turn's end adds that brace for
a call the gate accepted, and a call it withheld never gets it (no client parses its
arguments whole). A native call is held for the gate and sent once, never also as a
forming call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate.proxy.engine import Engine, Options
from test_wire_responses_events import REQUEST, chat

OPTIONS = Options(text_formats=("tool_call_tag",), stream_args=True, on_blocked="notice")


def tagged(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def in_pieces(text: str, size: int = 7) -> list[dict[str, Any]]:
    return [chat({"content": text[i : i + size]}) for i in range(0, len(text), size)]


def played(chunks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The client's events while the stream is fed, and those its end adds."""
    engine = Engine(REQUEST, OPTIONS, client="responses", upstream="chat")
    fed: list[dict[str, Any]] = []
    for chunk in [chat({"role": "assistant", "content": ""}), *chunks]:
        fed += engine.feed(chunk)
    return fed, engine.finish(clean=True)


def calls_added(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    ]


def deltas(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]


def test_a_declared_call_after_an_undeclared_one_still_streams_as_it_forms() -> None:
    text = tagged("nope", {"x": 1}) + tagged("get_weather", {"city": "Paris"})
    fed, ended = played([*in_pieces(text), chat({}, "stop")])
    added = calls_added(fed)
    assert [(i["name"], i["status"], i["arguments"]) for i in added] == [
        ("get_weather", "in_progress", "")
    ]
    shown = deltas(fed)
    assert len(shown) > 1 and "".join(shown) == '{"city": "Paris"'
    assert deltas(ended) == ["}"]
    done = [e for e in ended if e["type"] == "response.function_call_arguments.done"]
    assert [e["arguments"] for e in done] == ['{"city": "Paris"}']
    finished = [e["item"] for e in ended if e["type"] == "response.output_item.done"]
    assert finished[-1] == {**added[0], "status": "completed", "arguments": '{"city": "Paris"}'}
    assert added[0]["call_id"].startswith("call_")


def test_each_argument_delta_carries_new_text() -> None:
    text = "Sure. " + tagged("get_weather", {"city": "Paris"}) + " Done."
    fed, ended = played([*in_pieces(text, 5), chat({}, "stop")])
    shown = deltas(fed + ended)
    assert shown and all(shown)
    assert "".join(shown) == '{"city": "Paris"}'


def test_two_calls_shown_as_they_form_are_each_sent_whole_before_the_end() -> None:
    text = tagged("get_weather", {"city": "Paris"}) + tagged("get_weather", {"city": "Rome"})
    fed, ended = played([*in_pieces(text), chat({}, "stop")])
    items = {i["id"]: i for i in calls_added(fed)}
    assert len(items) == 2
    per_item = {
        item_id: "".join(
            e["delta"]
            for e in fed
            if e["type"] == "response.function_call_arguments.delta" and e["item_id"] == item_id
        )
        for item_id in items
    }
    assert sorted(per_item.values()) == ['{"city": "Paris"', '{"city": "Rome"']
    assert deltas(ended) == ["}", "}"]


def test_a_native_call_is_sent_once_and_not_as_a_forming_call() -> None:
    opened = {"index": 0, "id": "call_9", "type": "function", "function": {"name": "get_weather"}}
    chunks = [
        chat({"content": "Sure."}),
        chat({"tool_calls": [{**opened, "function": {"name": "get_weather", "arguments": ""}}]}),
        chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chat({"tool_calls": [{"index": 0, "function": {"arguments": '"Rome"}'}}]}),
        chat({}, "tool_calls"),
    ]
    fed, ended = played(chunks)
    assert calls_added(fed) == []
    added = calls_added(ended)
    assert [(i["call_id"], i["name"]) for i in added] == [("call_9", "get_weather")]
    assert deltas(ended) == ['{"city": "Rome"}']


@pytest.mark.parametrize("cut", ["{", "Rome"])
def test_a_second_call_whose_end_comes_with_its_close_is_shown_as_it_came(cut: str) -> None:
    """The second call's last text arrives with its closing tag: sent then but for its
    close, which the end adds with the gate's acceptance."""
    first = in_pieces(tagged("get_weather", {"city": "Paris"}))
    second = tagged("get_weather", {"city": "Rome"})
    at = second.index(cut)
    pieces = [chat({"content": second[:at]}), chat({"content": second[at:]})]
    fed, ended = played([*first, *pieces, chat({}, "stop")])
    assert len(calls_added(fed)) == 2
    assert "".join(deltas(fed)) == '{"city": "Paris"{"city": "Rome"'
    assert deltas(ended) == ["}", "}"]


def test_a_text_call_beside_a_native_one_is_shown_as_it_forms_and_ends_incomplete() -> None:
    """A turn with native calls sets its text calls aside: the one shown is never finished."""
    native = {
        "index": 0,
        "id": "call_9",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
    }
    text = tagged("get_weather", {"city": "Paris"})
    fed, ended = played([chat({"tool_calls": [native]}), *in_pieces(text), chat({}, "tool_calls")])
    shown = calls_added(fed)
    assert len(shown) == 1 and "".join(deltas(fed)) == '{"city": "Paris"'
    done = {
        e["item"]["id"]: (e["item"]["status"], e["item"]["arguments"])
        for e in ended
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"
    }
    assert done[shown[0]["id"]] == ("incomplete", '{"city": "Paris"')  # never parsed whole
    output = ended[-1]["response"]["output"]
    calls = [(i["call_id"], i["status"]) for i in output if i["type"] == "function_call"]
    assert calls == [("call_9", "completed")]


def test_a_formed_items_ids_are_the_wires_and_its_call_id_the_released_calls() -> None:
    """The item of a call shown as it forms has a ``fc_`` item id and, from its first
    event, the call id the gate releases the call with (the one the audit gives it)."""
    engine = Engine(REQUEST, OPTIONS, client="responses", upstream="chat")
    fed: list[dict[str, Any]] = []
    text = tagged("get_weather", {"city": "Paris"})
    for chunk in [chat({"role": "assistant", "content": ""}), *in_pieces(text), chat({}, "stop")]:
        fed += engine.feed(chunk)
    engine.finish(clean=True)
    (added,) = calls_added(fed)
    assert added["id"].startswith("fc_") and len(added["id"]) > len("fc_")
    assert [c.id for c in engine.calls] == [added["call_id"]]
