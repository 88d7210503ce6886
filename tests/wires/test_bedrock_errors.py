"""A provider's error inside a Bedrock ConverseStream: the answer every other wire gives.

ConverseStream's output is a union of event members, five of which are exceptions that
arrive inside the stream once it began: ``internalServerException``,
``modelStreamErrorException``, ``validationException``, ``throttlingException`` and
``serviceUnavailableException`` (Amazon Bedrock API Reference, "ConverseStreamOutput",
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html;
botocore's service model ``bedrock-runtime`` gives each a ``message``, and
``modelStreamErrorException`` also ``originalStatusCode`` and ``originalMessage``). An event
is the member's name over its body, ``{"modelStreamErrorException": {"message": …}}``, as
the other events are; boto3 raises it instead (``EventStreamError``, test_bedrock.py). Such
a turn is what Anthropic's ``error`` event or Gemini's error gives: ``fail``, one
``provider_error`` finding first, nothing run, nothing received lost.
"""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest

from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.cli.check import check_stream
from callgate.cli.replay import replay
from callgate.strategies.bedrock import EXCEPTIONS
from wire_common import provider_error_only

Event = dict[str, Any]

TOOLS = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}
TEXT = ("The weather in ", "Par")
SHOWN = "".join(TEXT)
REASONING = {"text": "The user wants the weather.", "signature": "ErUBCkgI"}
MESSAGE_START: Event = {"messageStart": {"role": "assistant"}}

ERRORS: dict[str, Event] = {
    "internalServerException": {
        "message": "An internal server error occurred. Retry your request."
    },
    "modelStreamErrorException": {
        "message": "The model stream was interrupted.",
        "originalStatusCode": 500,
        "originalMessage": "Internal server error",
    },
    "validationException": {"message": "Input validation failed."},
    "throttlingException": {"message": "Too many tokens, please wait before trying again."},
    "serviceUnavailableException": {"message": "The service isn't currently available."},
}
"""Each exception event of ConverseStreamOutput, with the fields its shape has."""


def text_events() -> list[Event]:
    """A reasoning block, then a text block the error cuts (no contentBlockStop)."""
    return [
        MESSAGE_START,
        {"contentBlockDelta": {"delta": {"reasoningContent": REASONING}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": TEXT[0]}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"text": TEXT[1]}, "contentBlockIndex": 1}},
    ]


def call_events(close: bool, index: int = 0) -> list[Event]:
    """A call at block ``index`` whose arguments came whole, closed or not yet."""
    start = {"toolUse": {"toolUseId": "tooluse_E1xCePtIoNaBcDeFgHiJ", "name": "get_weather"}}
    events: list[Event] = [
        {"contentBlockStart": {"start": start, "contentBlockIndex": index}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city": "Par'}},
                               "contentBlockIndex": index}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": 'is"}'}},
                               "contentBlockIndex": index}},
    ]  # fmt: skip
    return [*events, {"contentBlockStop": {"contentBlockIndex": index}}] if close else events


def error(name: str) -> Event:
    return {name: dict(ERRORS[name])}


def test_the_exceptions_read_are_those_of_botocores_converse_stream_shape() -> None:
    """The strategy's exception names and the fields given here are the service model's."""
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    stream = model.operation_model("ConverseStream").output_shape.members["stream"]
    exceptions = {
        name: set(shape.members)
        for name, shape in stream.members.items()
        if shape.metadata.get("exception")
    }
    assert set(exceptions) == EXCEPTIONS == set(ERRORS)
    assert all(set(ERRORS[name]) == fields for name, fields in exceptions.items())


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_a_text_turn_cut_by_an_exception_fails_with_one_provider_error(name: str) -> None:
    message = provider_error_only(check_stream([*text_events(), error(name)], TOOLS, "bedrock"))
    assert name in message
    assert ERRORS[name]["message"] in message


CUT = {False: [("missing_terminal", 0)], True: []}
"""The call's own finding beside the error: only a call the error cut before its close has one."""


@pytest.mark.parametrize("close", [False, True], ids=["open call", "closed call"])
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_a_call_cut_by_an_exception_is_blocked_by_the_provider_error_first(
    name: str, close: bool
) -> None:
    """The error is the turn's one finding; a call it cut open also misses its own close."""
    report = check_stream([MESSAGE_START, *call_events(close), error(name)], TOOLS, "bedrock")
    assert (report["status"], report["applicable"], report["executable"]) == (
        "fail",
        True,
        False,
    )
    assert [(f["code"], f["slot"]) for f in report["findings"]] == [
        ("provider_error", None),
        *CUT[close],
    ]
    assert [c["state"] for c in report["calls"]] == ["blocked"]


def test_the_model_stream_error_names_the_models_own_status_and_message() -> None:
    report = check_stream(
        [MESSAGE_START, *call_events(True), error("modelStreamErrorException")], TOOLS
    )
    message = report["findings"][0]["message"]
    assert "modelStreamErrorException: The model stream was interrupted." in message
    assert "500" in message and "Internal server error" in message


def test_an_exception_whose_body_is_not_an_object_is_still_the_providers_error() -> None:
    report = check_stream([*text_events(), {"throttlingException": "slow down"}], TOOLS)
    assert [f["code"] for f in report["findings"]] == ["provider_error"]
    assert "throttlingException" in report["findings"][0]["message"]


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_nothing_received_before_the_exception_is_lost(name: str) -> None:
    """The text is shown and kept, the reasoning and the call's input stay in the message."""
    stream = [*text_events(), *call_events(False, index=2), error(name)]
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    shown = []
    for event in stream:
        buffer.add(json.loads(json.dumps(event)))
        shown.append(buffer.text())
    buffer.end()
    shown.append(buffer.text())
    assert "".join(shown) == buffer.get_content() == SHOWN
    assert buffer.as_dict() == {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": REASONING}},
                    {"text": SHOWN},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_E1xCePtIoNaBcDeFgHiJ",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            }
        }
    }
    assert replay(stream, TOOLS)["display"] == SHOWN


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_the_loop_runs_nothing_of_a_turn_an_exception_cuts(name: str) -> None:
    ran: list[dict[str, Any]] = []
    driver = Driver([Tool("get_weather", TOOLS["get_weather"], lambda **a: ran.append(a) or "")])
    stream = [MESSAGE_START, *call_events(True), error(name)]
    turn = run_turn(stream, driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert all(r.refused for r in turn.results)
