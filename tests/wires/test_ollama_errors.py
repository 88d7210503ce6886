"""A provider's error inside an Ollama /api/chat stream: the answer every other wire gives.

Once a stream began, Ollama reports a failure as one more NDJSON line holding only an
``error`` string, with no ``done``, and the stream stops there (Ollama's API docs,
"Errors that occur while streaming", https://docs.ollama.com/api/errors: the line
``{"error":"an error was encountered while running the model"}``; the server's
``streamResponse`` in server/routes.go writes ``{"error": e}`` and returns; ollama-python's
client raises ``ResponseError`` on a line with ``error``). Such a turn is what Gemini's
error or Anthropic's ``error`` event gives: ``fail``, one ``provider_error`` finding
first, nothing run, nothing received lost.
"""

from __future__ import annotations

from typing import Any

from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.cli.check import check_stream
from callgate.cli.replay import replay
from wire_common import provider_error_only

Chunk = dict[str, Any]

TOOLS = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}
TEXT = ("The weather in ", "Par")
SHOWN = "".join(TEXT)
THINKING = "The user wants the weather."
ERROR_TEXT = "an error was encountered while running the model"
ERROR_LINE = {"error": ERROR_TEXT}
"""The line Ollama sends when the model fails mid-stream, as its docs show it."""
CALL = {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}


def line(n: int, message: Chunk) -> Chunk:
    """One ``done: false`` line of the stream."""
    return {
        "model": "qwen3:8b",
        "created_at": f"2025-10-14T09:21:0{n}.000000000Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": False,
    }


def text_lines() -> list[Chunk]:
    return [
        line(1, {"thinking": THINKING}),
        line(2, {"content": TEXT[0]}),
        line(3, {"content": TEXT[1]}),
    ]


def test_a_text_turn_cut_by_the_error_line_fails_with_one_provider_error() -> None:
    assert ERROR_TEXT in provider_error_only(
        check_stream([*text_lines(), ERROR_LINE], TOOLS, "ollama")
    )


def test_a_call_cut_by_the_error_line_is_blocked_by_the_provider_error_first() -> None:
    """The error is the turn's one finding; the call, which only the done line closes,
    misses its terminal too (as a Gemini call cut by Gemini's error does)."""
    report = check_stream([line(1, {"tool_calls": [CALL]}), ERROR_LINE], TOOLS, "ollama")
    assert (report["status"], report["applicable"], report["executable"]) == (
        "fail",
        True,
        False,
    )
    assert [(f["code"], f["slot"]) for f in report["findings"]] == [
        ("provider_error", None),
        ("missing_terminal", 0),
    ]
    assert [c["state"] for c in report["calls"]] == ["blocked"]


def test_nothing_received_before_the_error_line_is_lost() -> None:
    """The text is shown and kept; thinking, the call and the envelope stay in the message."""
    stream = [*text_lines(), line(4, {"tool_calls": [CALL]}), ERROR_LINE]
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    shown = []
    for chunk in stream:
        buffer.add(chunk)
        shown.append(buffer.text())
    buffer.end()
    shown.append(buffer.text())
    assert "".join(shown) == buffer.get_content() == SHOWN
    assert buffer.as_dict() == {
        "model": "qwen3:8b",
        "created_at": "2025-10-14T09:21:04.000000000Z",
        "message": {
            "role": "assistant",
            "content": SHOWN,
            "thinking": THINKING,
            "tool_calls": [CALL],
        },
        "done": False,
    }
    assert replay(stream, TOOLS)["display"] == SHOWN


def test_the_loop_runs_nothing_of_a_turn_the_error_line_cuts() -> None:
    ran: list[dict[str, Any]] = []
    driver = Driver([Tool("get_weather", TOOLS["get_weather"], lambda **a: ran.append(a) or "")])
    stream = [line(1, {"tool_calls": [CALL]}), ERROR_LINE]
    turn = run_turn(stream, driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert all(r.refused for r in turn.results)
