"""A whole Chat Completions message, or a whole ``chat.completion``, replayed as its stream.

``OpenAIStrategy.replay`` gives the one chunk a stream of the message would amount to:
each choice's message as its delta (every call with its ``index``), then its
finish_reason (the completion's own, else ``tool_calls`` when the message has calls and
``stop`` when not). Fields are kept as received, so what a stream would refuse is refused
when the chunk is read; a buffer fed the chunk assembles the message back.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, OpenAIStrategy, Tool

WEATHER = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
TIME = {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}


def replayed(message: dict[str, Any]) -> LLMStreamBuffer:
    """A buffer fed the replay of ``message``, ended."""
    buffer = LLMStreamBuffer(strategy=OpenAIStrategy())
    for chunk in OpenAIStrategy().replay(message):
        buffer.add(chunk)
    buffer.end()
    return buffer


def found(buffer: LLMStreamBuffer) -> list[tuple[str, Any, str]]:
    return [(f.code, f.slot, f.message) for f in buffer.findings]


def test_a_message_with_calls_replays_as_one_chunk_ending_in_tool_calls() -> None:
    message = {"role": "assistant", "content": "Let me look.", "tool_calls": [WEATHER, TIME]}
    assert OpenAIStrategy().replay(message) == [
        {
            "object": "chat.completion.chunk",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "content": "Let me look.",
                        "tool_calls": [{"index": 0, **WEATHER}, {"index": 1, **TIME}],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
    ]
    buffer = replayed(message)
    assert buffer.verdict == "pass"
    assert [(c.id, c.name, c.arguments) for c in buffer.calls] == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "get_time", {}),
    ]
    assert buffer.as_dict() == message


@pytest.mark.parametrize(
    ("message", "delta"),
    [
        ({"role": "assistant", "content": "hi"}, {"role": "assistant", "content": "hi"}),
        ({"role": "assistant", "tool_calls": []}, {"role": "assistant", "tool_calls": []}),
        ({"role": "assistant", "tool_calls": None}, {"role": "assistant"}),
    ],
)
def test_a_message_without_calls_ends_with_stop(
    message: dict[str, Any], delta: dict[str, Any]
) -> None:
    (chunk,) = OpenAIStrategy().replay(message)
    assert chunk["choices"] == [{"index": 0, "delta": delta, "finish_reason": "stop"}]
    buffer = replayed(message)
    assert (buffer.verdict, buffer.findings, buffer.is_finished()) == ("not_applicable", [], True)


def test_a_completion_replays_each_choice_with_its_index_and_finish_reason() -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764690000,
        "model": "gpt-4.1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [WEATHER]},
                "finish_reason": "tool_calls",
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": "Paris is"},
                "finish_reason": "length",
            },
        ],
    }
    assert OpenAIStrategy().replay(completion) == [
        {
            "object": "chat.completion.chunk",
            "id": "chatcmpl-1",
            "model": "gpt-4.1",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"index": 0, **WEATHER}],
                    },
                    "finish_reason": "tool_calls",
                },
                {
                    "index": 1,
                    "delta": {"role": "assistant", "content": "Paris is"},
                    "finish_reason": "length",
                },
            ],
        }
    ]
    buffer = replayed(completion)
    assert [(c.index, c.verdict) for c in buffer.choices] == [(0, "pass"), (1, "not_applicable")]
    assert buffer.as_dict() == {k: v for k, v in completion.items() if k != "created"}


def test_a_completions_choice_without_index_reason_or_message_takes_its_defaults() -> None:
    """A choice's position is its index; an object choice is read, anything else skipped."""
    completion = {
        "choices": [
            {"message": {"role": "assistant", "content": "a"}},
            "not a choice",
            {"message": {"role": "assistant", "tool_calls": [WEATHER]}},
            {"index": 7, "message": None, "finish_reason": "content_filter"},
        ]
    }
    (chunk,) = OpenAIStrategy().replay(completion)
    assert chunk == {
        "object": "chat.completion.chunk",
        "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "a"}, "finish_reason": "stop"},
            {
                "index": 2,
                "delta": {"role": "assistant", "tool_calls": [{"index": 0, **WEATHER}]},
                "finish_reason": "tool_calls",
            },
            {"index": 7, "delta": {}, "finish_reason": "content_filter"},
        ],
    }
    buffer = replayed(completion)
    assert [(c.index, c.verdict) for c in buffer.choices] == [
        (0, "not_applicable"),
        (2, "pass"),
        (7, "not_applicable"),
    ]
    assert buffer.choices[1].message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [WEATHER],
    }


def test_a_message_with_tool_calls_is_a_message_even_beside_a_choices_field() -> None:
    message = {"role": "assistant", "tool_calls": [WEATHER], "choices": []}
    (chunk,) = OpenAIStrategy().replay(message)
    assert chunk["choices"] == [
        {
            "index": 0,
            "delta": {"role": "assistant", "choices": [], "tool_calls": [{"index": 0, **WEATHER}]},
            "finish_reason": "tool_calls",
        }
    ]
    assert [c.name for c in replayed(message).calls] == ["get_weather"]


@pytest.mark.parametrize(
    ("message", "delta", "problem"),
    [
        (
            {"role": "assistant", "tool_calls": {"id": "call_1"}},
            {"role": "assistant", "tool_calls": {"id": "call_1"}},
            "tool_calls is not a list: {'id': 'call_1'}",
        ),
        (
            {"role": "assistant", "tool_calls": ["call_1", WEATHER]},
            {"role": "assistant", "tool_calls": ["call_1", {"index": 1, **WEATHER}]},
            "a tool_calls entry is not an object: 'call_1'",
        ),
    ],
)
def test_calls_a_stream_would_refuse_are_kept_as_received_and_refused(
    message: dict[str, Any], delta: dict[str, Any], problem: str
) -> None:
    (chunk,) = OpenAIStrategy().replay(message)
    assert chunk["choices"] == [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]
    buffer = replayed(message)
    assert buffer.verdict == "fail"
    assert ("malformed_chunk", None, problem) in found(buffer)


def test_a_choice_whose_message_is_not_an_object_is_refused() -> None:
    (chunk,) = OpenAIStrategy().replay({"choices": [{"message": "Paris"}]})
    assert chunk["choices"] == [
        {"index": 0, "delta": {"content": None, "tool_calls": "Paris"}, "finish_reason": "stop"}
    ]
    buffer = replayed({"choices": [{"message": "Paris"}]})
    assert found(buffer) == [("malformed_chunk", None, "tool_calls is not a list: 'Paris'")]
    assert buffer.verdict == "fail"


def test_the_driver_runs_a_replayed_message_once_and_answers_it() -> None:
    ran: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "sunny"

    driver = Driver([Tool.from_function(get_weather)])
    response = driver.process_llm_response({"role": "assistant", "tool_calls": [WEATHER]})
    assert ran == ["Paris"]
    assert response.call_executed
    assert [(m["role"], m.get("tool_call_id")) for m in response.messages] == [
        ("assistant", None),
        ("tool", "call_1"),
    ]
