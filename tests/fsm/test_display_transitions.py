"""The display machine of one driver, stepped by real OpenAI content streams.

Each stream is cut where the driver's view must change: before a text call opens, while
its name is unknown, once the name is known, when the block breaks or another forms, and
at the end. After every chunk (and after the end) the test reads the driver's display
state, its status and the text the user was shown, so a transition sent elsewhere shows.
"""

from __future__ import annotations

from typing import Any

from callgate import Driver, Tool
from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.testing.builders import openai_chunks

Round = tuple[str, str | None, str]


def play(pieces: list[str]) -> tuple[list[Round], list[dict[str, Any]]]:
    """Per round (each content delta, then the end): display state, status, text shown."""
    runs: list[dict[str, Any]] = []

    def get_weather(**arguments: Any) -> str:
        runs.append(arguments)
        return "sunny"

    driver = Driver([Tool("get_weather", {"type": "object"}, get_weather)],
                    text_formats=DEFAULT_FORMATS)  # fmt: skip
    buffer = driver.new_stream_buffer()
    chunks = openai_chunks([], [], text=pieces)
    rounds = []
    for position in range(len(chunks) + 1):
        if position < len(chunks):
            buffer.add(chunks[position])
        else:
            buffer.end()
        status = driver.process_llm_response(buffer).status
        rounds.append((buffer.text_queue.view(driver).state, status, buffer.text()))
    return rounds, runs


PENDING = "call_pending"


def test_a_call_of_ours_is_held_while_forming_pending_once_named_and_run_at_the_finish() -> None:
    rounds, runs = play(
        ["Sure. ", "<tool_call>", '{"name": "get_',
         'weather", "arguments": {"city": "Paris"}}', "</tool_call>"]
    )  # fmt: skip
    assert rounds == [
        ("flowing", None, ""),  # the role chunk
        ("flowing", None, "Sure. "),
        ("holding", PENDING, ""),
        ("holding", PENDING, ""),  # still forming: the name is not complete
        ("pending", PENDING, ""),
        ("pending", PENDING, ""),
        ("executed", "call_executed", ""),  # the finish chunk: the stream's end, the turn's
        ("ended", None, ""),
    ]
    assert runs == [{"city": "Paris"}]


def test_a_block_that_is_no_call_is_released_as_text() -> None:
    rounds, runs = play(["Sure. ", "<tool_call>", "not a call"])
    assert rounds == [
        ("flowing", None, ""),
        ("flowing", None, "Sure. "),
        ("holding", PENDING, ""),
        ("released", None, "<tool_call>not a call"),
        ("flowing", None, ""),
        ("ended", None, ""),
    ]
    assert runs == []


def test_our_call_cut_off_by_the_end_is_released_as_text_and_not_run() -> None:
    rounds, runs = play(["Sure. ", "<tool_call>", '{"name": "get_weather", "arg'])
    assert rounds == [
        ("flowing", None, ""),
        ("flowing", None, "Sure. "),
        ("holding", PENDING, ""),
        ("pending", PENDING, ""),
        ("released", None, '<tool_call>{"name": "get_weather", "arg'),  # the finish chunk
        ("ended", None, ""),
    ]
    assert runs == []


def test_our_block_broken_by_another_forming_one_holds_again_then_releases_both() -> None:
    rounds, runs = play(
        ["Sure. ", "<tool_call>", '{"name": "get_weather", "arg', "<tool_call>",
         '{"name": "other"}']
    )  # fmt: skip
    assert rounds == [
        ("flowing", None, ""),
        ("flowing", None, "Sure. "),
        ("holding", PENDING, ""),
        ("pending", PENDING, ""),
        ("holding", PENDING, '<tool_call>{"name": "get_weather", "arg'),
        ("released", None, '<tool_call>{"name": "other"}'),
        ("flowing", None, ""),
        ("ended", None, ""),
    ]
    assert runs == []


def test_our_block_broken_by_a_named_foreign_one_is_released() -> None:
    rounds, runs = play(
        ["Sure. ", "<tool_call>", '{"name": "get_weather", "arg',
         '<tool_call>{"name": "other", "arguments": {}}']
    )  # fmt: skip
    states = [(state, status) for state, status, _ in rounds]
    assert states[3] == ("pending", PENDING)
    assert states[4] == ("released", None)
    assert states[-1] == ("ended", None)
    assert runs == []


def test_after_the_end_the_view_stays_ended_and_answers_nothing() -> None:
    driver = Driver([Tool("get_weather")], text_formats=DEFAULT_FORMATS)
    buffer = driver.new_stream_buffer()
    for chunk in openai_chunks([], [], text=["Hello."]):
        buffer.add(chunk)
    buffer.end()
    assert driver.process_llm_response(buffer).status is None
    assert buffer.text_queue.view(driver).state == "ended"
    again = driver.process_llm_response(buffer)
    assert (again.status, again.results) == (None, ())
    assert buffer.text_queue.view(driver).state == "ended"
