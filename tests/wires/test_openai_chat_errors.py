"""A provider's error inside an OpenAI Chat stream: the answer every other wire gives.

OpenRouter reports a failure after streaming began as one more ``chat.completion.chunk``
that carries a top-level ``error`` object (``code``, ``message``) beside a choice whose
``finish_reason`` is ``"error"`` (its docs, "Streaming Error Formats", Mid-Stream Errors:
``{"id": …, "object": "chat.completion.chunk", "provider": …, "error": {"code": …,
"message": …}, "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason":
"error"}]}``; https://openrouter.ai/docs/api_reference/streaming says errors after the
stream began "still arrive as regular data: events with an error field", and
https://openrouter.ai/docs/api/reference/errors-and-debugging gives the shape). Such a turn
is what Anthropic's ``error`` event, Responses' ``response.failed`` and ``error``,
Gemini's error and a bare ``{"error": {...}}`` frame give: ``fail``, a ``provider_error``
finding first, nothing run, and nothing received lost.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.cli.check import check_stream
from callgate.cli.replay import replay

TOOLS = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}
TEXT = ("The weather in ", "Par")
SHOWN = "".join(TEXT)


def chat(
    delta: dict[str, Any], finish: str | None = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` of OpenRouter's, with one choice."""
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    return {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "openai/gpt-4o",
        "provider": "OpenAI",
        **extra,
        "choices": [choice],
    }


OPENROUTER_ERROR = chat(
    {"content": ""}, "error", error={"code": 502, "message": "Provider disconnected"}
)
"""OpenRouter's mid-stream error chunk, as its docs show it."""
FINISH_ERROR = chat({}, "error")
"""A choice that ends with finish_reason ``error`` and no error object."""
CHOICE_ERROR = {
    "id": "gen-1",
    "object": "chat.completion.chunk",
    "choices": [
        {
            "index": 0,
            "delta": {},
            "finish_reason": "error",
            "error": {"code": 429, "message": "Rate limit exceeded"},
        }
    ],
}
"""The error object inside the choice (OpenRouter's in-band error on a choice)."""
USAGE = {
    "id": "gen-1",
    "object": "chat.completion.chunk",
    "choices": [],
    "usage": {"total_tokens": 1},
}
"""OpenRouter's usage chunk, which may still follow."""
ERROR_FRAME = {"error": {"code": "server_error", "message": "Provider disconnected"}}
"""The bare error frame (Groq, api.openai.com): already a provider_error."""

OPENAI_ENDINGS = {
    "openrouter": [OPENROUTER_ERROR],
    "openrouter, then usage": [OPENROUTER_ERROR, USAGE],
    "finish_reason error": [FINISH_ERROR],
    "error in the choice": [CHOICE_ERROR],
    "error frame": [ERROR_FRAME],
}
NAMED = {
    "openrouter": "502: Provider disconnected",
    "openrouter, then usage": "502: Provider disconnected",
    "finish_reason error": "finish_reason 'error': the choice failed mid-stream",
    "error in the choice": "429: Rate limit exceeded",
    "error frame": "server_error: Provider disconnected",
}


def openai_text() -> list[dict[str, Any]]:
    return [chat({"role": "assistant", "content": TEXT[0]}), chat({"content": TEXT[1]})]


def openai_call() -> list[dict[str, Any]]:
    opened = {"index": 0, "id": "call_1", "type": "function"}
    opened["function"] = {"name": "get_weather", "arguments": '{"city": "Par'}
    rest = {"index": 0, "function": {"arguments": 'is"}'}}
    return [
        chat({"role": "assistant", "content": None, "tool_calls": [opened]}),
        chat({"tool_calls": [rest]}),
    ]


ANTHROPIC_TEXT = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                          "content": [], "model": "claude", "usage": {}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TEXT[0]}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TEXT[1]}},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
]  # fmt: skip
RESPONSES_TEXT = [
    {"type": "response.created", "sequence_number": 0,
     "response": {"id": "r1", "object": "response", "status": "in_progress", "output": []}},
    {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
     "item": {"type": "message", "id": "m1", "role": "assistant", "content": [],
              "status": "in_progress"}},
    {"type": "response.content_part.added", "sequence_number": 2, "output_index": 0,
     "item_id": "m1", "content_index": 0,
     "part": {"type": "output_text", "text": "", "annotations": []}},
    {"type": "response.output_text.delta", "sequence_number": 3, "output_index": 0,
     "item_id": "m1", "content_index": 0, "delta": SHOWN},
]  # fmt: skip
RESPONSES_FAILED = {
    "type": "response.failed",
    "sequence_number": 4,
    "response": {"id": "r1", "object": "response", "status": "failed", "output": [],
                 "error": {"code": "server_error", "message": "boom"}},
}  # fmt: skip
RESPONSES_ERROR = {"type": "error", "sequence_number": 4, "code": "server_error", "message": "boom"}
GEMINI_TEXT = [
    {"candidates": [{"content": {"role": "model", "parts": [{"text": SHOWN}]}, "index": 0}]},
    {"error": {"code": 500, "status": "INTERNAL", "message": "boom"}},
]
OTHER_WIRES = {
    "anthropic error event": ("anthropic", ANTHROPIC_TEXT),
    "responses response.failed": ("openai-responses", [*RESPONSES_TEXT, RESPONSES_FAILED]),
    "responses error event": ("openai-responses", [*RESPONSES_TEXT, RESPONSES_ERROR]),
    "gemini error": ("gemini", GEMINI_TEXT),
}


def answer(stream: list[dict[str, Any]], profile: str = "openai") -> tuple[Any, ...]:
    """What ``check`` reports of a stream: status, applicable, executable, finding codes."""
    report = check_stream(stream, TOOLS, profile)
    return (
        report["status"],
        report["applicable"],
        report["executable"],
        [f["code"] for f in report["findings"]],
    )


@pytest.mark.parametrize("other", sorted(OTHER_WIRES))
@pytest.mark.parametrize("ending", sorted(OPENAI_ENDINGS))
def test_a_text_turn_cut_by_an_error_fails_as_on_every_other_wire(ending: str, other: str) -> None:
    """Text, then the provider's error: ``fail``, not applicable, one ``provider_error``."""
    profile, stream = OTHER_WIRES[other]
    assert answer(stream, profile) == ("fail", False, False, ["provider_error"])
    assert answer(openai_text() + OPENAI_ENDINGS[ending]) == answer(stream, profile)


@pytest.mark.parametrize("ending", sorted(OPENAI_ENDINGS))
def test_the_provider_error_finding_names_the_error_once(ending: str) -> None:
    report = check_stream(openai_text() + OPENAI_ENDINGS[ending], TOOLS, "openai")
    errors = [f for f in report["findings"] if f["code"] == "provider_error"]
    assert len(errors) == 1
    assert errors[0]["message"] == f"the provider reported {NAMED[ending]}"
    assert errors[0]["severity"] == "error"


@pytest.mark.parametrize("ending", sorted(OPENAI_ENDINGS))
def test_a_call_cut_by_an_error_never_runs_and_keeps_what_came(ending: str) -> None:
    """The call's arguments stay in the message; the turn fails, the root cause first."""
    stream = openai_call() + OPENAI_ENDINGS[ending]
    report = check_stream(stream, TOOLS, "openai")
    assert (report["status"], report["applicable"], report["executable"]) == (
        "fail",
        True,
        False,
    )
    assert report["findings"][0]["code"] == "provider_error"
    assert [c["state"] for c in report["calls"]] == ["blocked"]
    ran: list[dict[str, Any]] = []
    driver = Driver([Tool("get_weather", TOOLS["get_weather"], lambda **a: ran.append(a) or "")])
    turn = run_turn(stream, driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert all(r.refused for r in turn.results)
    message = replay(stream, TOOLS)["message"]
    assert message["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }


@pytest.mark.parametrize("ending", sorted(OPENAI_ENDINGS))
def test_the_text_before_an_error_is_shown_and_kept_whole(ending: str) -> None:
    """Every character that came before the error is released and kept in the message."""
    stream = openai_text() + OPENAI_ENDINGS[ending]
    replayed = replay(stream, TOOLS)
    assert replayed["display"] == SHOWN
    assert replayed["message"]["content"] == SHOWN
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    shown = ""
    for item in stream:
        buffer.add(item)
        shown += buffer.text()
    buffer.end()
    shown += buffer.text()
    assert shown == SHOWN
    assert buffer.get_content() == SHOWN


@pytest.mark.parametrize(
    ("error", "named"),
    [("overloaded", "'overloaded'"), (["x"], "['x']"), ({}, "an error: None")],
)
def test_an_error_field_of_any_other_value_beside_choices_is_a_provider_error(
    error: Any, named: str
) -> None:
    report = check_stream([*openai_text(), chat({}, "stop", error=error)], TOOLS, "openai")
    assert report["status"] == "fail"
    assert [(f["code"], named in f["message"]) for f in report["findings"]] == [
        ("provider_error", True)
    ]


def test_a_null_error_field_beside_choices_is_no_error() -> None:
    report = check_stream([*openai_text(), chat({}, "stop", error=None)], TOOLS, "openai")
    assert (report["status"], report["findings"][0]["code"]) == ("not_applicable", "no_tool_calls")


def test_a_text_call_before_an_error_never_runs() -> None:
    """A whole call in the text, then the provider fails: the turn fails, nothing runs."""
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    stream = [chat({"role": "assistant", "content": text}), OPENROUTER_ERROR]
    ran: list[dict[str, Any]] = []
    driver = Driver(
        [Tool("get_weather", TOOLS["get_weather"], lambda **a: ran.append(a) or "")],
        text_formats=["tool_call_tag"],
    )
    turn = run_turn(stream, driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert turn.findings[0].code == "provider_error"
    checked = check_stream(stream, TOOLS, "openai", text_formats=["tool_call_tag"])
    assert checked["status"] == "fail"
    assert not checked["executable"]


def test_another_choice_that_ends_in_error_fails_alone() -> None:
    """With ``n > 1`` a choice's own ``finish_reason: error`` blocks that choice only."""
    stream = [
        chat({"role": "assistant", "content": SHOWN}, index=0),
        chat({"role": "assistant", "content": "It is"}, index=1),
        chat({}, "stop", index=0),
        chat({}, "error", index=1),
    ]
    report = check_stream(stream, TOOLS, "openai")
    assert report["status"] == "not_applicable"
    assert [(c["index"], c["status"]) for c in report["choices"]] == [
        (0, "not_applicable"),
        (1, "fail"),
    ]
    assert [f["code"] for f in report["choices"][1]["findings"]] == ["provider_error"]
    assert json.dumps(replay(stream, TOOLS)["message"]["choices"][1]["message"]["content"]) == (
        '"It is"'
    )


@pytest.mark.parametrize("ending", sorted(OPENAI_ENDINGS))
def test_text_held_as_a_possible_call_is_released_when_an_error_ends_the_turn(
    ending: str,
) -> None:
    """A proper prefix of a call marker is held while it could open a call, then shown."""
    held = "Hello <tool_ca"
    stream = [chat({"role": "assistant", "content": held}), *OPENAI_ENDINGS[ending]]
    replayed = replay(stream, TOOLS, text_formats=["tool_call_tag"])
    assert (replayed["status"], replayed["display"]) == ("fail", held)
    assert replayed["message"]["content"] == held


def _inside_the_choice() -> dict[str, Any]:
    choice = chat({"content": "is"})
    choice["choices"][0]["error"] = {"code": 502, "message": "gone"}
    return choice


@pytest.mark.parametrize(
    "errored",
    [
        pytest.param(chat({"content": "is"}, error={"code": 502, "message": "gone"}), id="beside"),
        pytest.param(_inside_the_choice(), id="inside the choice"),
    ],
)
def test_an_error_with_a_content_delta_is_read_with_the_content(errored: dict[str, Any]) -> None:
    """Content with an ``error`` beside its choice or in it: the turn fails, the text counts."""
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    for item in [*openai_text(), errored]:
        buffer.add(item)
    buffer.end()
    assert buffer.verdict == "fail"
    assert [(f.code, f.message) for f in buffer.findings] == [
        ("provider_error", "the provider reported 502: gone")
    ]
    assert buffer.get_content() == SHOWN + "is"
