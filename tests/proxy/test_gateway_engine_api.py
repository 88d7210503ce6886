"""The engine's API as a framework drives it (``feed_unchanged``, ``give_up``, ``follow_up``).

A framework holding its own object of each upstream chunk calls
:meth:`~callgate.proxy.engine.Engine.feed_unchanged`: None means "send your chunk as it
is". Read that way, every turn gives the client what :meth:`feed` gives it, on every
wire, in a repair's answer too, and each call counts its time. A repair that cannot be
asked ends with ``give_up()``: the notice, no call; ``follow_up()`` without a repair is
refused by name; an event that cannot be read is a ``malformed_chunk`` quoting why.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from callgate.proxy import core
from callgate.proxy.engine import Engine, GatedTurn, Options
from callgate.proxy.sse import DONE, SSEEvent
from proxy_cases import chat_chunk, rebuilt, text_turn
from test_gateway_behaviours import CALL, start, text_block
from test_gateway_behaviours import end as message_end
from test_gateway_corners import REQUESTS, pieces
from test_gateway_edges import TAG, leaked
from test_gateway_turn_ends import responses_stream
from test_proxy_engine import _invalid_call_turn


@pytest.fixture(autouse=True)
def counted_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """Made ids count from 1 again at each ``restart()``: two engines make the same ones."""
    counter = itertools.count(1)

    def fresh(prefix: str = "call_") -> str:
        return f"{prefix}{next(counter)}"

    def restart() -> None:
        nonlocal counter
        counter = itertools.count(1)

    monkeypatch.setattr(core, "fresh_id", fresh)
    yield restart


def by_feed(engine: Engine, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += engine.feed(copy.deepcopy(chunk))
    return out + engine.finish()


def by_unchanged(engine: Engine, chunks: list[dict[str, Any]]) -> tuple[list[Any], int]:
    """The client's chunks read through ``feed_unchanged``, and how many went as they came.

    A wire whose last event ends the stream (Messages, Responses) is finished by it.
    """
    out: list[dict[str, Any]] = []
    kept = 0
    for chunk in chunks:
        own = copy.deepcopy(chunk)
        got = engine.feed_unchanged(own)
        if got is None:
            kept += 1
            got = [own]
        out += got
    assert engine.finished == (engine.upstream_wire != "chat")
    return out + engine.finish(), kept


def chat_text(text: str, size: int) -> list[dict[str, Any]]:
    """A Chat turn of ``text`` in pieces of ``size``, each chunk only the envelope and delta."""
    said = [chat_chunk({"content": piece}) for piece in pieces(text, size)]
    return [chat_chunk({"role": "assistant", "content": ""}), *said, chat_chunk({}, "stop")]


TURNS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "chat-text": ("chat", chat_text("Mild in Paris, and dry all day.", 4)),
    "chat-held-markup": ("chat", chat_text("Checking. " + leaked("Paris") + " Done.", 6)),
    "chat-native-call": (
        "chat",
        [
            chat_chunk({"role": "assistant", "content": "Sure."}),
            chat_chunk({"content": " One moment."}),
            chat_chunk({"tool_calls": [CALL]}),
            chat_chunk({}, "tool_calls"),
        ],
    ),
    "messages": ("messages", [start(), *text_block(0, "Mild in Paris."), *message_end()]),
    "responses": ("responses", responses_stream("Mild ", "in ", "Paris.")),
}


@pytest.mark.parametrize("name", list(TURNS))
def test_feed_unchanged_gives_the_client_what_feed_gives(
    name: str, counted_ids: Callable[[], None]
) -> None:
    wire, chunks = TURNS[name]
    options = Options(on_blocked="notice", text_formats=TAG)
    fed = by_feed(Engine(REQUESTS[wire], options, client=wire), chunks)
    counted_ids()
    engine = Engine(REQUESTS[wire], options, client=wire)
    unchanged, kept = by_unchanged(engine, chunks)
    assert json.dumps(unchanged) == json.dumps(fed)
    assert engine.finished
    assert engine.feed_unchanged(copy.deepcopy(chunks[0])) == []
    if name == "chat-text":  # every chunk but the final one goes as it came
        assert kept == len(chunks) - 1


BAD_CALL = {**CALL, "function": {"name": "get_weather", "arguments": '{"town": "Paris"}'}}


def test_a_repairs_answer_read_unchanged_does_not_repeat_the_text_shown() -> None:
    """The answer to a repair repeats the text the first attempt showed (its chunks went
    as they came): read through ``feed_unchanged`` that repeat is not sent again, and the
    rest is."""
    first = GatedTurn(REQUESTS["chat"], Options(on_blocked="repair", repairs=1))
    attempt = [
        *chat_text("Checking.", 3)[:-1],
        chat_chunk({"tool_calls": [BAD_CALL]}),
        chat_chunk({}, "tool_calls"),
    ]
    out, kept = by_unchanged(first, attempt)
    assert kept == 4 and first.released == "Checking."
    assert first.repair is not None
    second = first.follow_up()
    answer = [
        chat_chunk({"role": "assistant", "content": "Check"}),
        chat_chunk({"content": "ing."}),
        chat_chunk({"content": " Now."}),
        chat_chunk({"tool_calls": [CALL]}),
        chat_chunk({}, "tool_calls"),
    ]
    more, _ = by_unchanged(second, answer)
    got = rebuilt(out + more)
    assert got["content"] == "Checking. Now."
    assert got["calls"] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("method", ["feed", "feed_unchanged"])
def test_every_chunk_counts_its_time(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """A clock far from zero that ticks 1 µs a reading: each call adds a few ticks."""
    ticks = iter(range(10**15, 10**16, 1000))
    monkeypatch.setattr("callgate.proxy.engine.time.perf_counter_ns", lambda: next(ticks))
    engine = GatedTurn(REQUESTS["chat"], Options())
    spent = [engine.cpu_ns]
    for chunk in chat_text("Mild in Paris, and dry all day.", 4)[:-1]:
        getattr(engine, method)(chunk)
        spent.append(engine.cpu_ns)
    steps = [later - earlier for earlier, later in itertools.pairwise(spent)]
    assert all(0 < step <= 10_000 for step in steps), steps


def test_give_up_ends_a_turn_whose_repair_was_not_asked_with_the_notice() -> None:
    case = _invalid_call_turn()
    engine = GatedTurn(case.request, Options(on_blocked="repair"))
    out = by_feed(engine, case.chunks)
    assert engine.repair is not None
    assert not any(c["choices"][0]["finish_reason"] for c in out if c.get("choices"))
    out += engine.give_up()
    got = rebuilt(out)
    assert engine.repair is None
    assert got["calls"] == [] and got["finish_reason"] == "stop"
    line = "A call to get_weather was not run: its arguments did not match the tool."
    assert got["content"] == "Checking.\n\n" + line
    assert out[-1]["callgate"]["withheld"] == ["get_weather"]


def test_follow_up_without_a_repair_is_refused_by_name() -> None:
    engine = GatedTurn(REQUESTS["chat"], Options())
    by_feed(engine, text_turn(["Hi."]))
    with pytest.raises(ValueError, match=r"^no repair to follow up$"):
        engine.follow_up()


def test_an_unreadable_event_is_a_malformed_chunk_that_says_why() -> None:
    engine = GatedTurn(REQUESTS["chat"], Options())
    engine.feed(chat_chunk({"role": "assistant", "content": "Hi"}))
    engine.feed_unreadable("the bytes are not UTF-8")
    engine.finish()
    found = [(f.code, f.message) for f in engine.findings if f.severity == "error"]
    assert ("malformed_chunk", "the bytes are not UTF-8") in found
    assert engine.status == "fail"


def test_a_repair_pins_the_one_failed_tool_in_the_upstreams_shape() -> None:
    case = _invalid_call_turn()
    engine = GatedTurn(case.request, Options(on_blocked="repair"))
    by_feed(engine, case.chunks)
    assert engine.repair is not None
    assert engine.repair["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


WHOLE_CALL = {k: v for k, v in CALL.items() if k != "index"}


def whole_answer(finish: str | None) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": [WHOLE_CALL]}
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {
        "id": "chatcmpl-w",
        "object": "chat.completion",
        "created": 5,
        "model": "m",
        "service_tier": "flex",
        "choices": [choice],
    }


def test_a_whole_answer_without_a_finish_reason_ended_unless_told_it_was_rebuilt() -> None:
    """The upstream's own stream=false answer with a null finish (TGI's shape) ended: its
    call is sent. One rebuilt from a stream (``clean=False``) may have lost its end: the
    call is withheld."""
    own = GatedTurn(REQUESTS["chat"], Options()).whole(whole_answer(None))
    assert own["choices"][0]["finish_reason"] == "tool_calls"
    assert own["choices"][0]["message"]["tool_calls"][0]["id"] == "call_up"
    engine = GatedTurn(REQUESTS["chat"], Options(on_blocked="notice"))
    rebuilt_answer = engine.whole(whole_answer(None), clean=False)
    assert rebuilt_answer["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in rebuilt_answer["choices"][0]["message"]
    assert engine.status == "fail"


def test_a_whole_answer_on_one_wire_keeps_the_upstreams_other_fields() -> None:
    answer = GatedTurn(REQUESTS["chat"], Options()).whole(whole_answer("tool_calls"))
    assert (answer["id"], answer["created"], answer["service_tier"]) == ("chatcmpl-w", 5, "flex")


def test_a_whole_answer_of_another_shape_is_refused_with_why() -> None:
    engine = GatedTurn(REQUESTS["chat"], Options())
    out = engine.whole_chunks(["not", "an", "answer"])
    assert out[-1]["choices"][0]["finish_reason"] == "stop"
    said = [(f["code"], f["message"]) for f in out[-1]["callgate"]["findings"]]
    assert said == [("malformed_chunk", "the upstream's response is not a chat answer")]
    assert engine.status == "fail"


def test_events_after_done_are_counted_and_unreadable_ones_say_why() -> None:
    engine = GatedTurn(REQUESTS["chat"], Options())
    engine.feed_event(SSEEvent("message", json.dumps(chat_chunk({"content": "Hi"}))))
    late = json.dumps(chat_chunk({"content": "late"}))
    not_json = "x" * 100
    events = [SSEEvent("message", DONE), *[SSEEvent("message", late)] * 3]
    for event in events:
        engine.feed_event(event)
    assert engine.after_done == 3
    broken = GatedTurn(REQUESTS["chat"], Options())
    broken.feed_event(SSEEvent("message", "", "not UTF-8: byte 0xff"))
    broken.feed_event(SSEEvent("message", not_json))
    broken.finish()
    said = [f.message for f in broken.findings if f.code == "malformed_chunk"]
    assert said == ["not UTF-8: byte 0xff", f"an upstream event is not JSON: {'x' * 80!r}"]
