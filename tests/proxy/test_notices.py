"""The notice a person reads when a call was not run: one short line, per reason, plain words.

Every error finding code words a line of at most 200 characters that names no internal
thing (no code, no slot reference, no bracketed prefix); turns played through the engine
get the line for their cause, the call that failed named first.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.gate.findings import CODES
from callgate.proxy.engine import GatedTurn, Options
from callgate.proxy.notices import (
    LIMIT,
    WORDS,
    call_notice,
    reason_of,
    turn_notice,
    upstream_notice,
)
from callgate.proxy.wires import notices as wire_notices
from callgate.testing.builders import openai_chunks
from callgate.testing.wires.base import WireCall

ERRORS = sorted(code for code, (severity, _) in CODES.items() if severity == "error")
WORDED = [*ERRORS, "text_call_set_aside", None]
"""The codes a notice words: every error, the warning that sets a text call aside, and
None (a call refused with its turn)."""
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def plain(line: str) -> None:
    """A line a person reads: short, one line, no finding code, slot or bracketed tag."""
    assert len(line) <= LIMIT, line
    assert "\n" not in line and "[" not in line and "slot" not in line, line
    assert not any(code in line for code in CODES), line


@pytest.mark.parametrize("code", WORDED)
def test_every_reason_is_one_short_plain_line(code: str | None) -> None:
    line = call_notice(["get_weather"], reason_of(code))
    plain(line)
    assert line.startswith("A call to get_weather was not run: ")


def test_every_reason_has_its_own_words() -> None:
    assert len(set(WORDS.values())) == len(WORDS)
    assert {reason_of(code) for code in WORDED} == set(WORDS)


@given(st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=30))
def test_any_tool_names_stay_within_the_limit(names: list[str]) -> None:
    line = call_notice(names, "arguments")
    assert len(line) <= LIMIT
    assert line.endswith(": its arguments did not match the tool.")


def test_many_calls_are_named_and_counted() -> None:
    names = [f"tool_number_{n}" for n in range(20)]
    line = call_notice(names, "arguments")
    plain(line)
    assert line.startswith("Calls to tool_number_0, tool_number_1, ")
    assert " more were not run: its arguments did not match the tool." in line


def played(chunks: list[dict[str, Any]], model: str = "gpt-4.1") -> GatedTurn:
    turn = GatedTurn({"model": model, "tools": TOOLS}, Options(on_blocked="notice"))
    for chunk in chunks:
        turn.feed(chunk)
    turn.finish()
    return turn


def _cut(chunks: list[dict[str, Any]], reason: str) -> list[dict[str, Any]]:
    chunks[-1]["choices"][0]["finish_reason"] = reason
    return chunks


QWEN_TWO = (
    'Hi <tool_call>{"name": "get_weather", "arguments": {"town": "x"}}</tool_call>'
    '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
)
TURNS = [
    (
        "schema and sibling",
        openai_chunks(
            [
                WireCall("c1", "get_weather", ('{"town": "Oslo"}',)),
                WireCall("c2", "get_time", ("{}",)),
            ],
            [0, 0, 1, 1],
        ),
        "gpt-4.1",
        "A call to get_weather was not run: its arguments did not match the tool. "
        "The other call of the answer was not run either.",
    ),
    (
        "text calls, schema and sibling",
        openai_chunks([], [], text=[QWEN_TWO]),
        "Qwen/Qwen2.5-7B-Instruct",
        "A call to get_weather was not run: its arguments did not match the tool. "
        "The other call of the answer was not run either.",
    ),
    (
        "a text call set aside for a native one",
        openai_chunks(
            [WireCall("c1", "get_weather", ('{"city": "Oslo"}',))],
            [0, 0],
            text=['Hi <tool_call>{"name": "get_time", "arguments": {}}</tool_call>'],
        ),
        "Qwen/Qwen2.5-7B-Instruct",
        "A call to get_time was not run: "
        "it was written in the text beside native tool calls, which take its place.",
    ),
    (
        "cut by length",
        _cut(openai_chunks([WireCall("c1", "get_weather", ('{"city": "Os',))], [0, 0]), "length"),
        "gpt-4.1",
        "A call to get_weather was not run: the answer was cut off before the call was complete.",
    ),
    (
        "no end",
        openai_chunks([WireCall("c1", "get_weather", ('{"city": "Oslo"}',))], [0, 0])[:-1],
        "gpt-4.1",
        "A call to get_weather was not run: "
        "the model's answer broke off before the call was complete.",
    ),
    (
        "broken JSON",
        openai_chunks([WireCall("c1", "get_weather", ('{"city": Oslo}',))], [0, 0]),
        "gpt-4.1",
        "A call to get_weather was not run: its arguments were not well-formed JSON.",
    ),
]


@pytest.mark.parametrize(
    ("chunks", "model", "line"), [t[1:] for t in TURNS], ids=[t[0] for t in TURNS]
)
def test_a_played_turn_gets_the_line_of_its_cause(
    chunks: list[dict[str, Any]], model: str, line: str
) -> None:
    turn = played(chunks, model)
    assert turn_notice(turn) == line
    plain(line)
    assert turn.notice() != ""  # the engine's own notice: the model-facing detail
    assert turn_notice(played(openai_chunks([], [], text=["Hello."]))) == ""


@pytest.mark.parametrize("how", ["timeout", "broken", "error"])
def test_an_upstream_end_is_one_plain_line(how: Any) -> None:
    line = upstream_notice(how)
    plain(line)
    assert line.endswith("nothing was run.")


@pytest.mark.parametrize(
    ("why", "how"),
    [
        ("the upstream stream broke: ReadTimeout", "timeout"),
        ("the upstream timed out after 1 s", "timeout"),
        ("the upstream stream broke: RemoteProtocolError", "broken"),
        (None, "broken"),
    ],
)
def test_a_timeout_is_worded_as_one_and_a_drop_as_a_break(why: str | None, how: Any) -> None:
    assert wire_notices.broken_line(why) == upstream_notice(how)
    assert wire_notices.broken(why) == "\n\n" + upstream_notice(how)
    if why is not None:
        error = wire_notices.stream_error(why)
        assert error["message"] == upstream_notice(how)
        assert error["code"] == ("upstream_timeout" if how == "timeout" else "upstream_error")
