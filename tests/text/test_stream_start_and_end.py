"""How a stream's start and end decide text calls: held bare JSON, a close as stop sequence.

A driver that names only bare JSON or pythonic lists reads them streamed, holding content
that starts like one until it is clear; a block whose close the server took as its stop
sequence is a call after a normal end, and text after a length cut. Each test streams a
real OpenAI or Anthropic turn (``callgate.testing.builders``) through the driver's own
``new_stream_buffer()``, reads ``text()`` after every chunk as a client does, and checks
which tools ran and what the user saw.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from callgate import Driver, Tool
from callgate.strategies.text.defaults import cut_short
from callgate.strategies.text.markup_payloads import CALL_BEGIN, CALL_END, CALLS_BEGIN, SEP
from callgate.testing.builders import WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk

BARE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
PYTHONIC = "[get_weather(city='Paris')]"


def openai_turn(text: str, size: int) -> list[Chunk]:
    return openai_chunks([], [], text=split(text, [size]))


def anthropic_turn(text: str, size: int) -> list[Chunk]:
    block = WireText(split(text, [size]))
    return anthropic_events([block], [0] * (2 + len(block.fragments)))


WIRES: dict[str, Callable[[str, int], list[Chunk]]] = {
    "openai": openai_turn,
    "anthropic": anthropic_turn,
}


def stream(driver: Driver, chunks: Sequence[Chunk]) -> tuple[list[str], list[str | None]]:
    """Every round's shown text and status: each chunk, then the end."""
    buffer = driver.new_stream_buffer()
    shown: list[str] = []
    statuses: list[str | None] = []
    for chunk in [*chunks, None]:
        if chunk is None:
            buffer.end()
        else:
            buffer.add(chunk)
        statuses.append(driver.process_llm_response(buffer).status)
        shown.append(buffer.text())
    return shown, statuses


def weather_driver(fmt: str, runs: list[dict[str, Any]]) -> Driver:
    def get_weather(**arguments: Any) -> str:
        runs.append(arguments)
        return json.dumps({"sky": "clear"})

    return Driver([Tool("get_weather", {"type": "object"}, get_weather)], text_formats=[fmt])


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize(("fmt", "content"), [("bare_json", BARE), ("pythonic", PYTHONIC)])
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_driver_of_one_end_format_runs_the_streamed_call_once_and_never_shows_it(
    wire: str, fmt: str, content: str, size: int
) -> None:
    runs: list[dict[str, Any]] = []
    driver = weather_driver(fmt, runs)
    shown, statuses = stream(driver, WIRES[wire](content, size))
    assert runs == [{"city": "Paris"}]
    assert statuses[-2:] == ["call_executed", None], "run at the stream's own end"
    assert "".join(shown) == ""


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        ("bare_json", '{"answer": 42} is the JSON you asked for.'),
        ("bare_json", "Plain prose, no call."),
        ("pythonic", "[1] Paris is sunny today."),
        ("pythonic", "[get_weather(city='Paris')] is how you would call it."),
    ],
)
def test_a_driver_of_one_end_format_shows_what_is_no_call_whole_and_runs_nothing(
    wire: str, fmt: str, content: str
) -> None:
    runs: list[dict[str, Any]] = []
    driver = weather_driver(fmt, runs)
    for size in (1, 3, 1000):
        shown, _ = stream(driver, WIRES[wire](content, size))
        assert "".join(shown) == content
    assert runs == []


# -- a close taken as the stop sequence ----------------------------------------------------

HERMES_OPEN = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
DEEPSEEK_OPEN = f'{CALLS_BEGIN}{CALL_BEGIN}get_weather{SEP}{{"city": "Paris"}}{CALL_END}'
HARMONY_OPEN = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
    '<|message|>{"city": "Paris"}'
)
OPEN_BLOCKS = [
    ("tool_call_tag", HERMES_OPEN),
    ("deepseek", DEEPSEEK_OPEN),
    ("harmony_role", HARMONY_OPEN),
]


def ending(chunks: list[Chunk], wire: str, reason: str | None) -> list[Chunk]:
    """``chunks`` with the turn's finish reason replaced, or (None) cut off before it."""
    key = "finish_reason" if wire == "openai" else "stop_reason"
    kept = []
    for chunk in chunks:
        holder = chunk["choices"][0] if wire == "openai" else chunk.get("delta", {})
        if key in holder and holder[key] is not None:
            if reason is None:
                break
            changed = json.loads(json.dumps(chunk))
            (changed["choices"][0] if wire == "openai" else changed["delta"])[key] = reason
            kept.append(changed)
        else:
            kept.append(chunk)
    return kept


NORMAL = {"openai": "stop", "anthropic": "end_turn"}
LENGTH = {"openai": "length", "anthropic": "max_tokens"}


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize(("fmt", "content"), OPEN_BLOCKS)
@pytest.mark.parametrize("size", [1, 5, 1000])
def test_a_block_whose_close_was_the_stop_sequence_runs_after_a_normal_end(
    wire: str, fmt: str, content: str, size: int
) -> None:
    runs: list[dict[str, Any]] = []
    chunks = ending(WIRES[wire]("Checking. " + content, size), wire, NORMAL[wire])
    shown, statuses = stream(weather_driver(fmt, runs), chunks)
    assert runs == [{"city": "Paris"}]
    assert statuses[-2:] == ["call_executed", None], "run at the stream's own end"
    assert "".join(shown) == "Checking. "


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize(("fmt", "content"), OPEN_BLOCKS)
@pytest.mark.parametrize("end", ["length", "no terminal"])
def test_a_block_cut_by_the_length_limit_or_a_lost_end_is_withheld_and_nothing_runs(
    wire: str, fmt: str, content: str, end: str
) -> None:
    runs: list[dict[str, Any]] = []
    reason = LENGTH[wire] if end == "length" else None
    for size in (1, 5, 1000):
        chunks = ending(WIRES[wire]("Checking. " + content, size), wire, reason)
        driver = weather_driver(fmt, runs)
        buffer = driver.new_stream_buffer()
        shown = []
        for chunk in chunks:
            buffer.add(chunk)
            driver.process_llm_response(buffer)
            shown.append(buffer.text())
        buffer.end()
        driver.process_llm_response(buffer)
        shown.append(buffer.text())
        assert "".join(shown) == "Checking. ", "the half-written call is not shown"
        cut = buffer.text_queue.cut
        assert cut is not None and cut.name == "get_weather"
        assert content.startswith(cut.markup.rstrip()), "its raw text is kept"
        assert buffer.get_content() == "Checking. " + content
        assert buffer.text_queue.held == 0
    assert runs == []


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_held_bare_json_naming_a_tool_nobody_owns_is_shown_once_its_name_is_known(
    wire: str,
) -> None:
    runs: list[dict[str, Any]] = []
    content = '{"name": "send_email", "arguments": {"to": "x@example.com"}}'
    shown, statuses = stream(weather_driver("bare_json", runs), WIRES[wire](content, 4))
    assert "".join(shown[:-1]) == content, "released before the stream ended"
    assert shown[-1] == ""
    assert runs == []
    assert statuses[-1] is None


@pytest.mark.parametrize(
    ("done", "reason", "cut"),
    [
        (True, "stop", False),
        (True, "end_turn", False),
        (True, None, False),
        (True, "STOP", False),
        (True, "length", True),
        (True, "max_tokens", True),
        (True, "MAX_TOKENS", True),
        (True, "model_context_window_exceeded", True),
        (True, "incomplete: max_output_tokens", True),
        (True, "incomplete", True),
        (True, ["length"], True),
        (True, True, True),
        (False, "stop", True),
        (False, None, True),
    ],
)
def test_cut_short_names_every_wire_length_reason_and_a_reason_of_the_wrong_type(
    done: bool, reason: object, cut: bool
) -> None:
    assert cut_short(done, reason) is cut
