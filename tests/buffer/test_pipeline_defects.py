"""One call pipeline: the defects of two pipelines (native and text), each pinned.

A call written into the text enters the turn's gate as a whole call once its block
closes; one verdict is read by ``check``, ``replay``, the buffer and the loop. Each test
here failed before the text calls went through the gate.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Orchestrator, Tool, run_turn
from callgate.audit.trace import Recorder
from callgate.cli.check import check_stream
from callgate.cli.replay import replay
from callgate.proxy.engine import GatedTurn, Options
from callgate.testing.builders import _openai_chunk, openai_chunks

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
SEARCH = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "additionalProperties": False,
}
FORMATS = ("tool_call_tag",)


def tag(*calls: tuple[str, dict[str, Any]]) -> str:
    """One ``<tool_call>`` block holding ``calls`` (a list when there are several)."""
    payload: Any = [{"name": n, "arguments": a} for n, a in calls]
    if len(calls) == 1:
        payload = payload[0]
    return f"<tool_call>{json.dumps(payload)}</tool_call>"


def cut(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def weather(ran: list[str]) -> Tool:
    def run(city: str) -> str:
        ran.append(city)
        return f"sunny in {city}"

    return Tool("get_weather", WEATHER, run)


NATIVE = {
    "index": 0,
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
}


# -- a text call whose name nobody owns is text, at every split and from every entry ----


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_an_unowned_text_call_is_text_in_replay_and_the_loop_at_every_split(size: int) -> None:
    text = "Hi " + tag(("nobody", {})) + " bye"
    chunks = openai_chunks([], [], text=cut(text, size))
    replayed = replay(chunks, {"get_weather": WEATHER}, text_formats=FORMATS)
    assert replayed["status"] == "not_applicable"
    assert replayed["display"] == text
    assert [c for c in replayed["calls"] if c["source"] != "native"] == []
    ran: list[str] = []
    driver = Driver([weather(ran)], text_formats=FORMATS)
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    assert (turn.status, turn.text, turn.results) == ("not_applicable", text, ())


# -- check gives the loop's verdict for a turn whose only calls are text calls ----------


def test_check_passes_a_turn_whose_only_calls_are_text_calls() -> None:
    text = "Looking. " + tag(("get_weather", {"city": "Paris"}))
    chunks = openai_chunks([], [], text=cut(text, 7))
    checked = check_stream(chunks, {"get_weather": WEATHER}, text_formats=FORMATS)
    assert checked["status"] == "pass"
    assert checked["executable"] is True
    assert [(c["name"], c["arguments"], c["source"]) for c in checked["calls"]] == [
        ("get_weather", {"city": "Paris"}, "tool_call_tag")
    ]
    replayed = replay(chunks, {"get_weather": WEATHER}, text_formats=FORMATS)
    assert replayed["status"] == checked["status"]


def test_check_of_text_calls_fails_the_way_the_loop_refuses_them() -> None:
    text = tag(("get_weather", {"town": "Paris"}))
    chunks = openai_chunks([], [], text=cut(text, 5))
    checked = check_stream(chunks, {"get_weather": WEATHER}, text_formats=FORMATS)
    driver = Driver([weather([])], text_formats=FORMATS)
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    assert checked["status"] == turn.status == "fail"
    assert [f["code"] for f in checked["findings"]] == ["schema_invalid"]


# -- an unowned call in a block with an owned one is answered, as a native one is -------


def test_an_unowned_call_beside_an_owned_one_in_a_block_is_answered_not_available() -> None:
    text = tag(("get_weather", {"city": "Paris"}), ("nobody", {}))
    ran: list[str] = []
    driver = Driver([weather(ran)], text_formats=FORMATS)
    turn = run_turn(openai_chunks([], [], text=cut(text, 9)), driver, driver.new_stream_buffer())
    assert turn.text == ""  # the block is a call block: its markup is never shown
    answers = {r.call.name: r for r in turn.results}
    assert set(answers) == {"get_weather", "nobody"}
    assert "nobody is not available here" in answers["nobody"].content
    assert answers["nobody"].is_error
    # the whole turn is atomic, as with an unknown native tool: the sibling is refused too
    assert ran == []
    assert answers["get_weather"].refused
    assert turn.status == "fail"
    spoken = " ".join(m["content"] for m in turn.history if m["role"] == "user")
    assert "nobody is not available here" in spoken


def test_the_native_equivalent_of_that_block_is_answered_alike() -> None:
    unknown = {
        **NATIVE,
        "index": 1,
        "id": "call_2",
        "function": {"name": "nobody", "arguments": "{}"},
    }
    chunks = [_openai_chunk({"role": "assistant"}), _openai_chunk({"tool_calls": [NATIVE]})]
    chunks += [_openai_chunk({"tool_calls": [unknown]}), _openai_chunk({}, "tool_calls")]
    ran: list[str] = []
    driver = Driver([weather(ran)], text_formats=FORMATS)
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    answers = {r.call.name: r for r in turn.results}
    assert "nobody is not available here" in answers["nobody"].content
    assert ran == [] and answers["get_weather"].refused and turn.status == "fail"


# -- a text call beside native calls never vanishes, before or after them ----------------


def _native_turn(text_first: bool) -> list[dict[str, Any]]:
    text = [
        _openai_chunk({"content": piece})
        for piece in cut("Sure. " + tag(("get_weather", {"city": "Paris"})), 6)
    ]
    native = [_openai_chunk({"tool_calls": [NATIVE]})]
    body = text + native if text_first else native + text
    return [_openai_chunk({"role": "assistant"}), *body, _openai_chunk({}, "tool_calls")]


@pytest.mark.parametrize("text_first", [True, False], ids=["text-first", "native-first"])
def test_a_text_call_beside_native_calls_is_set_aside_answered_and_reported(
    text_first: bool,
) -> None:
    chunks = _native_turn(text_first)
    ran: list[str] = []
    driver = Driver([weather(ran)], text_formats=FORMATS)
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    assert ran == ["Oslo"]  # the native call is authoritative: it runs, the text one not
    assert turn.status == "pass"
    assert turn.text == "Sure. "  # the call's markup is hidden in both orders
    text_answers = [r for r in turn.results if not isinstance(r.call.slot, int)]
    assert [(r.call.name, r.call.arguments) for r in text_answers] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert text_answers[0].refused and "native" in text_answers[0].content
    assert [f.code for f in turn.findings] == ["text_call_set_aside"]
    replayed = replay(chunks, {"get_weather": WEATHER}, text_formats=FORMATS)
    assert replayed["status"] == "pass"
    assert [(c["source"], c["state"]) for c in replayed["calls"]] == [
        ("native", "validated"),
        ("tool_call_tag", "set_aside"),
    ]
    assert [f["code"] for f in replayed["findings"]] == ["text_call_set_aside"]
    checked = check_stream(chunks, {"get_weather": WEATHER}, text_formats=FORMATS)
    assert (checked["status"], [c["state"] for c in checked["calls"]]) == (
        "pass",
        ["validated", "set_aside"],
    )


# -- all-or-nothing covers the whole turn, text calls of every driver included -----------


def test_one_refused_text_call_refuses_every_driver_s_text_calls() -> None:
    ran: list[str] = []
    both = Orchestrator(
        [
            Driver([weather(ran)], name="weather", text_formats=FORMATS),
            Driver([Tool("search", SEARCH, lambda q: q)], name="finder", text_formats=FORMATS),
        ]
    )
    text = tag(("get_weather", {"city": "Paris"})) + tag(("search", {"query": "x"}))
    turn = run_turn(openai_chunks([], [], text=cut(text, 11)), both, both.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert all(r.refused for r in turn.results) and len(turn.results) == 2


# -- text calls are traced like native ones ---------------------------------------------


def test_a_text_call_is_recorded_through_the_slot_and_release_machines() -> None:
    recorder = Recorder()
    driver = Driver([weather([])], text_formats=FORMATS)
    buffer = driver.new_stream_buffer(recorder=recorder)
    text = tag(("get_weather", {"city": "Paris"}))
    run_turn(openai_chunks([], [], text=cut(text, 4)), driver, buffer)
    slots = {s.instance for s in recorder.of("slot")}
    releases = [(s.instance, s.event, s.target) for s in recorder.of("release")]
    assert slots == {"slot text-0.0"}
    assert releases == [
        ("call text-0.0", "turn", "at_turn_end"),
        ("call text-0.0", "turn_pass", "released"),
    ]


def test_the_bare_buffer_reads_the_same_verdict_as_the_loop() -> None:
    text = "Ok. " + tag(("get_weather", {"city": "Paris"}))
    chunks = openai_chunks([], [], text=cut(text, 2))
    buffer = LLMStreamBuffer(tool_schemas={"get_weather": WEATHER}, text_formats=FORMATS)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    assert buffer.verdict == "pass"
    assert [(c.name, c.arguments) for c in buffer.calls] == [("get_weather", {"city": "Paris"})]
    assert buffer.text() == "Ok. "


def test_a_deepseek_v3_call_cut_one_character_per_delta_is_a_call_at_every_split() -> None:
    """Found by the one-verdict property: the early name read ``function`` (or ``g``)."""
    from callgate.strategies.text.markup_payloads import (
        CALL_BEGIN,
        CALL_END,
        CALLS_BEGIN,
        CALLS_END,
        SEP,
    )

    text = (
        f'{CALLS_BEGIN}{CALL_BEGIN}function{SEP}get_weather\n```json\n{{"city": "Paris"}}\n```'
        f"{CALL_END}{CALLS_END}"
    )
    for size in (1, 2, len(text)):
        chunks = openai_chunks([], [], text=cut(text, size))
        replayed = replay(chunks, {"get_weather": WEATHER}, text_formats=("deepseek",))
        assert (replayed["status"], replayed["display"]) == ("pass", ""), size


# -- a stream cut before its turn's end runs no text call, from any entry point --------


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_text_call_of_a_stream_cut_before_its_end_runs_nowhere(size: int) -> None:
    """The connection drops after the block closed: no ``finish_reason`` ever came."""
    text = "Looking. " + tag(("get_weather", {"city": "Paris"}))
    chunks = openai_chunks([], [], text=cut(text, size))
    chunks = [c for c in chunks if not c["choices"][0]["finish_reason"]]
    tools = {"get_weather": WEATHER}
    checked = check_stream(chunks, tools, text_formats=FORMATS)
    replayed = replay(chunks, tools, text_formats=FORMATS)
    buffer = LLMStreamBuffer(tool_schemas=tools, text_formats=FORMATS)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    ran: list[str] = []
    driver = Driver([weather(ran)], text_formats=FORMATS)
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    gated = GatedTurn(
        {"model": "m", "tools": [{"type": "function", "function": {"name": "get_weather"}}]},
        Options(on_blocked="notice", text_formats=FORMATS),
    )
    for chunk in chunks:
        gated.feed(chunk)
    gated.finish()

    assert checked["status"] == replayed["status"] == buffer.verdict == turn.status == "fail"
    assert gated.status == "fail" and gated.calls == []
    assert ran == [] and buffer.calls == [] and not buffer.is_finished()
    assert [f["code"] for f in checked["findings"]] == ["missing_terminal"]
    assert [c["state"] for c in checked["calls"]] == ["blocked"]
    assert turn.text == replayed["display"] == "Looking. "  # nothing lost, no markup shown
    (answer,) = turn.results
    assert answer.refused and answer.is_error
