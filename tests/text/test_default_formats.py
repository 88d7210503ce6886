"""Default text formats: chosen from the model named in the stream, never from prose.

A ``Driver`` without ``text_formats`` (and ``callgate replay`` without
``--text-formats``) listens for the formats the stream's model writes
(``formats_for_model``) plus those documented for the wire; fenced JSON, bare JSON and
pythonic lists are opt-in only, because prose quotes them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate import Driver, Tool, Turn, run_turn
from callgate.cli.replay import replay
from callgate.strategies.text.defaults import OPT_IN_FORMATS, default_text_formats, model_name
from callgate.testing.builders import WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CALL = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
FENCED_PROSE = f"To call the tool yourself, send: ```json\n{CALL}\n``` and wait."
HERMES_PROSE = f"Hermes writes <tool_call>{CALL}</tool_call> for that."


class Weather:
    def __init__(self) -> None:
        self.runs: list[str] = []

    def __call__(self, city: str) -> str:
        self.runs.append(city)
        return f"18 C in {city}"


def openai_turn(text: str, model: str) -> list[Chunk]:
    chunks = openai_chunks([], [], text=split(text, [5]))
    return [{**chunk, "model": model} for chunk in chunks]


def anthropic_turn(text: str, model: str = "claude-sonnet-4-5") -> list[Chunk]:
    block = WireText(split(text, [5]))
    events = anthropic_events([block], [0] * (2 + len(block.fragments)))
    events[0]["message"]["model"] = model
    return events


def play(chunks: list[Chunk], **options: Any) -> tuple[Turn, Weather]:
    weather = Weather()
    driver = Driver([Tool("get_weather", CITY, weather)], **options)
    return run_turn(chunks, driver, driver.new_stream_buffer()), weather


@pytest.mark.parametrize("text", [FENCED_PROSE, HERMES_PROSE])
def test_prose_quoting_a_call_on_anthropic_runs_nothing_and_is_shown_unchanged(text: str) -> None:
    turn, weather = play(anthropic_turn(text))

    assert weather.runs == []
    assert turn.text == text and not turn.called


@pytest.mark.parametrize("text", [FENCED_PROSE, HERMES_PROSE])
def test_prose_quoting_a_call_on_gpt_runs_nothing_and_is_shown_unchanged(text: str) -> None:
    turn, weather = play(openai_turn(text, "gpt-4.1"))

    assert weather.runs == []
    assert turn.text == text


def test_a_qwen_model_behind_an_openai_server_gets_its_tool_call_tag_read() -> None:
    turn, weather = play(openai_turn(f"Checking. <tool_call>{CALL}</tool_call>", "Qwen/Qwen3-8B"))

    assert weather.runs == ["Paris"]
    assert turn.text == "Checking. "


def test_fenced_json_is_opt_in_even_for_a_model_that_writes_it() -> None:
    chunks = openai_turn(FENCED_PROSE, "Qwen/Qwen3-8B")

    default, default_runs = play(chunks)
    _, opted_runs = play(chunks, text_formats=["fenced_json"])

    assert default_runs.runs == [] and default.text == FENCED_PROSE
    assert opted_runs.runs == ["Paris"]


def test_a_mistral_model_gets_bracket_tool_calls() -> None:
    text = f"[TOOL_CALLS][{CALL}]"

    turn, weather = play(openai_turn(text, "mistral-large-latest"))

    assert weather.runs == ["Paris"] and turn.text == ""


def test_empty_text_formats_switch_text_calls_off_for_any_model() -> None:
    turn, weather = play(
        openai_turn(f"<tool_call>{CALL}</tool_call>", "Qwen/Qwen3-8B"), text_formats=()
    )

    assert weather.runs == [] and turn.text == f"<tool_call>{CALL}</tool_call>"


@pytest.mark.parametrize(
    ("wire", "model", "expected"),
    [
        ("openai", "gpt-4.1", ()),
        ("anthropic", "claude-sonnet-4-5", ()),
        ("openai", "Qwen/Qwen3-8B", ("tool_call_tag",)),
        ("openai", "meta-llama/Llama-3.2-3B-Instruct", ("python_tag",)),
        ("ollama", "qwen3-coder:30b", ("qwen3_coder_xml",)),
        ("cohere", None, ("command_r",)),
        ("bedrock", None, ()),
    ],
)
def test_defaults_are_the_models_formats_and_the_wires_leaks_minus_opt_in_ones(
    wire: str, model: str | None, expected: tuple[str, ...]
) -> None:
    chosen = default_text_formats(wire, model)

    assert chosen == expected
    assert not set(chosen) & set(OPT_IN_FORMATS)


@pytest.mark.parametrize(
    ("chunk", "name"),
    [
        ({"object": "chat.completion.chunk", "model": "gpt-4.1", "choices": []}, "gpt-4.1"),
        ({"type": "message_start", "message": {"model": "claude-x"}}, "claude-x"),
        ({"type": "response.created", "response": {"model": "gpt-5"}}, "gpt-5"),
        ({"candidates": [], "modelVersion": "gemini-2.5-flash"}, "gemini-2.5-flash"),
        ({"model": "llama3.2", "message": {"role": "assistant"}}, "llama3.2"),
        ({"contentBlockDelta": {}}, None),
        ({"model": 7}, None),
    ],
)
def test_the_model_name_is_read_where_each_wire_puts_it(
    chunk: dict[str, Any], name: str | None
) -> None:
    assert model_name(chunk) == name


def test_replay_uses_the_same_defaults_as_a_driver() -> None:
    qwen = replay(openai_turn(f"Checking. <tool_call>{CALL}</tool_call>", "Qwen/Qwen3-8B"))
    gpt = replay(openai_turn(HERMES_PROSE, "gpt-4.1"))

    assert [c["name"] for c in qwen["text_calls"]] == ["get_weather"]
    assert qwen["display"] == "Checking. " and qwen["text_formats"] == ["tool_call_tag"]
    assert gpt["text_calls"] == [] and gpt["display"] == HERMES_PROSE
