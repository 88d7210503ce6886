"""``Turn.history`` is always a request the provider accepts, so corrective results arrive.

Each test plays a broken or partly foreign OpenAI or Anthropic turn through ``run_turn``
and validates the history against the SDKs' own request param types and the providers'
tool-call rules (:mod:`provider_rules`), then checks what the model is told.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import callgate
from callgate import Driver, Tool, Turn, run_turn
from callgate.testing.builders import WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import WIRES as KIT_WIRES
from callgate.testing.wires import Chunk, WireCall, encoder
from provider_rules import (
    validate_anthropic,
    validate_bedrock,
    validate_cohere,
    validate_gemini,
    validate_ollama,
    validate_openai,
    validate_responses,
)

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
USER = {"role": "user", "content": "Weather?"}


def weather_driver() -> Driver:
    return Driver([Tool("get_weather", CITY, lambda city: f"18 C in {city}")])


def play(chunks: list[Chunk]) -> Turn:
    driver = weather_driver()
    return run_turn(chunks, driver, driver.new_stream_buffer())


def call(call_id: str, name: str, arguments: str) -> WireCall:
    return WireCall(call_id, name, (arguments,))


def answers(turn: Turn) -> dict[str, str]:
    """Tool answers of an OpenAI history, by tool_call_id."""
    return {m["tool_call_id"]: m["content"] for m in turn.history if m["role"] == "tool"}


def anthropic_answers(turn: Turn) -> dict[str, dict[str, Any]]:
    return {
        b["tool_use_id"]: b
        for m in turn.history
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "tool_result"
    }


def test_openai_a_call_nobody_owns_is_answered_not_available_here() -> None:
    chunks = openai_chunks(
        [call("call_1", "get_weather", '{"city":"Paris"}'), call("call_2", "send_mail", "{}")],
        [0, 0, 1, 1],
    )

    turn = play(chunks)

    validate_openai([USER, *turn.history])
    answered = answers(turn)
    assert set(answered) == {"call_1", "call_2"}
    assert "send_mail is not available here" in answered["call_2"]
    assert [r.call.id for r in turn.results] == ["call_1", "call_2"]
    assert all(r.is_error for r in turn.results)


def test_anthropic_a_call_nobody_owns_is_answered_not_available_here() -> None:
    blocks = [WireText(("Let me.",)), call("toolu_2", "send_mail", '{"to": "x"}')]
    turn = play(anthropic_events(blocks, [0, 0, 0, 1, 1, 1]))

    validate_anthropic([USER, *turn.history])
    result = anthropic_answers(turn)["toolu_2"]
    assert result["is_error"] is True
    assert "send_mail is not available here" in result["content"]


def test_openai_two_parallel_calls_with_one_constant_id_both_get_an_answer() -> None:
    chunks = openai_chunks(
        [
            call("call_0", "get_weather", '{"city":"Paris"}'),
            call("call_0", "get_weather", '{"city":"Rome"}'),
        ],
        [0, 0, 1, 1],
    )

    turn = play(chunks)

    validate_openai([USER, *turn.history])
    calls = turn.history[0]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_0", "callgate_1"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "unknown_tool"]
    assert set(answers(turn)) == {"call_0", "callgate_1"}
    assert "identity_collision" in answers(turn)["callgate_1"]


def test_anthropic_a_cut_tool_input_goes_back_as_an_object_and_its_text_in_the_answer() -> None:
    events = anthropic_events([call("toolu_1", "get_weather", '{"city": "Pa')], [0, 0, 0])
    cut = [e for e in events if e["type"] != "content_block_stop"][:-2]

    turn = play(cut)

    validate_anthropic([USER, *turn.history])
    assert turn.history[0]["content"][0]["input"] == {}
    result = anthropic_answers(turn)["toolu_1"]
    assert "missing_terminal" in result["content"]
    assert '{"city": "Pa' in result["content"]


def test_openai_unreadable_arguments_go_back_as_an_empty_object() -> None:
    chunks = openai_chunks([call("call_1", "get_weather", '{"city": "Pa')], [0, 0])
    chunks[-1]["choices"][0]["finish_reason"] = "length"

    turn = play(chunks)

    validate_openai([USER, *turn.history])
    assert json.loads(turn.history[0]["tool_calls"][0]["function"]["arguments"]) == {}
    assert '{"city": "Pa' in answers(turn)["call_1"]


def test_openai_a_malformed_chunk_leaves_no_call_without_id_or_name() -> None:
    chunks = openai_chunks([call("call_1", "get_weather", '{"city":"Paris"}')], [0, 0])
    chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"] = "not an object"

    turn = play(chunks)

    validate_openai([USER, *turn.history])
    (entry,) = turn.history[0]["tool_calls"]
    assert entry["id"] == "callgate_0" and entry["function"]["name"]
    assert "malformed_chunk" in answers(turn)["callgate_0"]


def test_a_valid_turn_keeps_its_history_exactly() -> None:
    chunks = openai_chunks([call("call_1", "get_weather", '{"city":"Paris"}')], [0, 0])

    turn = play(chunks)

    validate_openai([USER, *turn.history])
    assert turn.history == (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C in Paris"},
    )


# -- any turn, however broken, leaves a history the provider accepts -----------------------

IDS = st.sampled_from(["call_a", "call_b", "call_a", "", "toolu_x"])
NAMES = st.sampled_from(["get_weather", "send_mail", ""])
ARGUMENTS = st.sampled_from(['{"city": "Oslo"}', '{"town": 1}', '{"city": "Os', "[1]", "", "{}"])


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[WireCall], int | None]:
    calls = [
        WireCall(draw(IDS), draw(NAMES), split(draw(ARGUMENTS), (draw(st.integers(1, 6)),)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    return calls, draw(st.none() | st.integers(0, 12))


def cut(chunks: list[Chunk], at: int | None) -> list[Chunk]:
    return chunks if at is None else chunks[: min(at, len(chunks) - 1)]


@settings(max_examples=60, deadline=None)
@given(turns(), st.sampled_from(["turn", "call"]))
def test_any_openai_turn_leaves_a_valid_history(
    turn: tuple[list[WireCall], int | None], policy: str
) -> None:
    calls, at = turn
    order = [i for i, c in enumerate(calls) for _ in range(1 + len(c.fragments))]
    driver = Driver([Tool("get_weather", CITY, lambda city: city)], policy=policy)

    played = run_turn(cut(openai_chunks(calls, order), at), driver, driver.new_stream_buffer())

    validate_openai([USER, *played.history])


@settings(max_examples=60, deadline=None)
@given(turns(), st.sampled_from(["turn", "call"]))
def test_any_anthropic_turn_leaves_a_valid_history(
    turn: tuple[list[WireCall], int | None], policy: str
) -> None:
    calls, at = turn
    order = [i for i, c in enumerate(calls) for _ in range(2 + len(c.fragments))]
    driver = Driver([Tool("get_weather", CITY, lambda city: city)], policy=policy)
    events = cut(anthropic_events(calls, order), None if at is None else at + 1)

    played = run_turn(events, driver, driver.new_stream_buffer())

    validate_anthropic([USER, *played.history])


# -- every bundled fixture of these wires, played as a turn ---------------------------------

EXAMPLES = Path(callgate.__file__).parent / "examples"
VALIDATORS = {
    "openai": validate_openai,
    "anthropic": validate_anthropic,
    "bedrock": validate_bedrock,
    "responses": validate_responses,
    "cohere": validate_cohere,
    "gemini": validate_gemini,
    "ollama": validate_ollama,
    "mistral": validate_openai,
}
FIRST: dict[str, Any] = {
    "bedrock": {"role": "user", "content": [{"text": "Go."}]},
    "gemini": {"role": "user", "parts": [{"text": "Go."}]},
}
FIXTURES = sorted(p.name for p in EXAMPLES.glob("*.json") if p.name.split("_")[0] in VALIDATORS)


@pytest.mark.parametrize("name", FIXTURES)
def test_every_bundled_fixture_leaves_a_history_the_provider_accepts(name: str) -> None:
    fixture = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    tools = [Tool(n, s, lambda **_: "ok") for n, s in fixture.get("tool_schemas", {}).items()]
    driver = Driver(tools)
    stream = fixture.get("chunks", fixture.get("events"))

    turn = run_turn(stream, driver, driver.new_stream_buffer())

    wire = name.split("_", maxsplit=1)[0]
    VALIDATORS[wire]([FIRST.get(wire, USER), *turn.history])


# -- a turn whose only call is written in its text ------------------------------------------

TEXT_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
ENCODED = {"openai-responses": "responses"}


@pytest.mark.parametrize("wire", [w for w in KIT_WIRES if ENCODED.get(w, w) in VALIDATORS])
def test_a_text_call_s_answer_takes_the_wire_s_own_user_message(wire: str) -> None:
    """Gemini holds a user's text in ``parts`` and Bedrock in blocks: neither takes a
    plain ``content`` string, which is what every wire got before."""
    kit = encoder(wire)
    chunks = [p.chunk for p in kit.prelude(["Let me look. ", TEXT_CALL])]
    stream = kit.finalise([*chunks, *kit.finish([]), *kit.epilogue()])
    driver = Driver(
        [Tool("get_weather", CITY, lambda city: f"18 C in {city}")], text_formats=["tool_call_tag"]
    )

    turn = run_turn(stream, driver, driver.new_stream_buffer())

    assert [r.content for r in turn.results] == ["18 C in Paris"]
    name = ENCODED.get(wire, wire)
    VALIDATORS[name]([FIRST.get(name, USER), *turn.history])
