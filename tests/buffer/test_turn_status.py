"""One status vocabulary: ``Turn.status``, ``callgate replay``'s JSON and its text agree.

The verdict is the conformance contract's: ``pass`` (the turn's calls were complete,
unambiguous and valid), ``fail`` (a call was refused), ``not_applicable`` (no call).
"""

from __future__ import annotations

import pytest

from callgate import Driver, Tool, Turn, run_turn
from callgate.cli.replay import format_replay, replay
from callgate.testing.builders import WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk, WireCall

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TAG = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
BAD_TAG = '<tool_call>{"name": "get_weather", "arguments": {"town": "Oslo"}}</tool_call>'


def native(arguments: str) -> list[Chunk]:
    fragments = split(arguments, (4,))
    return openai_chunks([WireCall("call_1", "get_weather", fragments)], [0] * (1 + len(fragments)))


def leaked(text: str) -> list[Chunk]:
    block = WireText(split(text, (5,)))
    return anthropic_events([block], [0] * (2 + len(block.fragments)))


STREAMS: dict[str, tuple[list[Chunk], str]] = {
    "native call": (native('{"city": "Oslo"}'), "pass"),
    "native call, bad arguments": (native('{"town": "Oslo"}'), "fail"),
    "native call, cut": (native('{"city": "Oslo"}')[:-1], "fail"),
    "text call that ran": (leaked(f"Let me see. {TAG}"), "pass"),
    "text call refused": (leaked(f"Let me see. {BAD_TAG}"), "fail"),
    "prose": (leaked("Sunny, 18 °C."), "not_applicable"),
    "empty stream": ([], "not_applicable"),
}


def played(chunks: list[Chunk]) -> Turn:
    driver = Driver(
        [Tool("get_weather", CITY, lambda city: "18 C")], text_formats=["tool_call_tag"]
    )
    return run_turn(chunks, driver, driver.new_stream_buffer())


@pytest.mark.parametrize("name", list(STREAMS))
def test_turn_status_replay_json_and_replay_text_agree(name: str) -> None:
    chunks, expected = STREAMS[name]

    turn = played(chunks)
    result = replay(chunks, {"get_weather": CITY}, text_formats=["tool_call_tag"])

    assert turn.status == result["status"] == expected
    assert format_replay(result).splitlines()[-1].startswith(f"{expected.upper()}: ")


def test_a_text_call_that_ran_is_a_pass_not_not_applicable() -> None:
    turn = played(leaked(f"Let me see. {TAG}"))

    assert turn.called and turn.status == "pass"


def test_status_is_a_literal_of_the_contract_vocabulary() -> None:
    from typing import get_args, get_type_hints

    from callgate.driver.loop import Verdict

    assert get_type_hints(Turn)["status"] == Verdict
    assert set(get_args(Verdict)) == {"pass", "fail", "not_applicable"}
