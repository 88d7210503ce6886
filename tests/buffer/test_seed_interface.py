"""The seeds' interface as its own documents use it: the defects issue 23 found, pinned.

Each test here failed on the code before the fix (see the commit that added it): plain
text through ``process_llm_response``, calls whose ``function.arguments`` is an object,
whole messages read as their stream reads them, and chunks given as attribute objects.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Orchestrator, Tool
from callgate.strategies import (
    AnthropicStrategy,
    CohereStrategy,
    OpenAIStrategy,
    ResponsesStrategy,
)
from callgate.strategies.text.formats import DEFAULT_FORMATS

GREET = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Runs:
    """Tools that record every run, so a test sees exactly what ran."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str, schema: dict[str, Any] | None = None) -> Tool:
        def run(**arguments: Any) -> str:
            self.runs.append((name, arguments))
            return f"{name} ok"

        return Tool(name, schema or {"type": "object"}, run)


def entry(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """One OpenAI ``tool_calls`` entry."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# -- defect 1: plain text is the commonest message ------------------------------------


@pytest.mark.parametrize(
    "formats",
    [None, (), ("tool_call_tag",), ("bare_json",), ("fenced_json", "bare_json"), DEFAULT_FORMATS],
    ids=repr,
)
@pytest.mark.parametrize(
    "message",
    ["Just chatting.", {"role": "assistant", "content": "Just chatting."}, {"content": "Hi"}, {}],
    ids=repr,
)
def test_plain_text_is_an_empty_response_with_any_text_format_choice(
    formats: tuple[str, ...] | None, message: Any
) -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=formats)
    response = driver.process_llm_response(message)
    assert response.status is None and response.results == () and response.messages == ()
    assert runs.runs == []


# -- defect 3: function.arguments as an object -----------------------------------------

OBJECT_ARGUMENTS = {
    "role": "assistant",
    "content": None,
    "tool_calls": [entry("c1", "greet", {"name": "A"})],
}


def test_the_openai_strategy_reads_object_arguments_as_a_refusal_not_a_traceback() -> None:
    strategy = OpenAIStrategy()
    assert strategy.extract(OBJECT_ARGUMENTS) == []
    [(call, problem)] = strategy.unreadable(OBJECT_ARGUMENTS)
    assert (call.id, call.name, problem.code) == ("c1", "greet", "malformed_chunk")
    assert "function.arguments is an object, not a JSON string" in problem.message


def test_a_stream_with_object_arguments_blocks_the_turn_naming_the_call() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    buffer = driver.new_stream_buffer()
    chunk = OpenAIStrategy().replay(OBJECT_ARGUMENTS)[0]
    buffer.add(chunk)
    response = driver.process_llm_response(buffer)
    assert buffer.turn_state == "blocked"
    found = next(f for f in buffer.findings if f.severity == "error")
    assert (found.code, found.slot) == ("malformed_chunk", 0), "the root cause comes first"
    assert "is an object, not a JSON string" in found.message
    assert response.call_failed and runs.runs == []
    assert "is an object, not a JSON string" in response.results[0].content


@pytest.mark.parametrize(
    "message",
    [
        OBJECT_ARGUMENTS,
        {"id": "r", "object": "chat.completion", "choices": [
            {"index": 0, "message": OBJECT_ARGUMENTS, "finish_reason": "tool_calls"}]},
        {"id": "co", "finish_reason": "TOOL_CALL", "message": {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "greet", "arguments": {"name": "A"}}}]}},
        {"object": "response", "status": "completed", "output": [
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "greet",
             "arguments": {"name": "A"}}]},
    ],
    ids=["openai-message", "chat.completion", "cohere", "responses"],
)  # fmt: skip
def test_a_whole_message_with_object_arguments_gets_a_verdict_on_every_wire(
    message: dict[str, Any],
) -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    response = driver.process_llm_response(message)
    assert response.call_failed and runs.runs == []
    [result] = response.results
    assert result.refused and result.call.name == "greet"
    assert response.messages, "the refusal goes back with the assistant message before it"


@pytest.mark.parametrize(
    "strategy",
    [OpenAIStrategy(), CohereStrategy(), ResponsesStrategy()],
    ids=lambda s: s.name,
)
def test_every_json_string_wire_extract_gives_a_verdict_for_odd_arguments(
    strategy: OpenAIStrategy | CohereStrategy | ResponsesStrategy,
) -> None:
    for odd in ({"name": "A"}, ["A"], 7, True):
        if isinstance(strategy, ResponsesStrategy):
            message: dict[str, Any] = {
                "output": [
                    {"type": "function_call", "call_id": "c1", "name": "greet", "arguments": odd}
                ]
            }
        else:
            message = {
                "message": {
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "greet", "arguments": odd},
                        }
                    ]
                },
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "greet", "arguments": odd},
                    }
                ],
            }
        assert strategy.extract(message) == []
        [(_, problem)] = strategy.unreadable(message)
        assert problem.code == "malformed_chunk"  # fmt: skip


# -- defect 5: the whole message is its stream -----------------------------------------


def test_a_chat_completion_response_object_is_read() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    response = driver.process_llm_response(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4.1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "greet", "arguments": '{"name": "Ada"}'},
                            }
                        ],
                    },
                }
            ],
        }
    )
    assert response.call_executed and runs.runs == [("greet", {"name": "Ada"})]
    assistant, answer = response.messages
    assert assistant["tool_calls"][0]["id"] == "call_1" and answer["tool_call_id"] == "call_1"


def anthropic_message(tool_input: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "greet", "input": tool_input}],
        "stop_reason": "tool_use",
    }


def test_an_anthropic_input_given_as_json_text_is_read_as_that_text() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    response = driver.process_llm_response(anthropic_message('{"name": "Ada"}'))
    assert response.call_executed and runs.runs == [("greet", {"name": "Ada"})]


def test_an_anthropic_input_of_null_is_answered_as_its_stream_answers_it() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    response = driver.process_llm_response(anthropic_message(None))
    assert runs.runs == [], "no arguments: the schema's required name is missing"
    [result] = response.results
    assert result.refused and "schema_invalid" in result.content


@pytest.mark.parametrize(
    "message",
    [
        {"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "t1", "name": "greet", "input": '{"name": NaN}'}}]}},
         "stopReason": "tool_use"},
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "greet", "args": '{"name": "Ada"}'}}]},
            "finishReason": "STOP"}]},
        {"model": "llama3", "done": True, "message": {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": "greet", "arguments": '{"name": "Ada"}'}}]}},
    ],
    ids=["bedrock", "gemini", "ollama"],
)  # fmt: skip
def test_inputs_given_as_strings_are_refused_with_an_answer_never_dropped(
    message: dict[str, Any],
) -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    response = driver.process_llm_response(message)
    assert runs.runs == []
    [result] = response.results
    assert result.refused and response.call_failed
    assert response.messages[-1], "the corrective answer goes back to the model"


def refused_stream(wire: str) -> list[dict[str, Any]]:
    """A stream whose only call has NaN and a repeated key in its arguments."""
    text = '{"name": NaN, "name": Infinity}'
    if wire == "anthropic":
        return [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "toolu_1", "name": "greet", "input": {}}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": text}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"},
        ]  # fmt: skip
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0,
                               "start": {"toolUse": {"toolUseId": "t1", "name": "greet"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": text}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]  # fmt: skip


@pytest.mark.parametrize("wire", ["anthropic", "bedrock"])
def test_as_dict_of_a_refused_call_keeps_the_text_and_is_refused_again(wire: str) -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", {"type": "object"})], text_formats=())
    buffer = driver.new_stream_buffer()
    for chunk in refused_stream(wire):
        buffer.add(chunk)
        driver.process_llm_response(buffer)
    buffer.end()
    driver.process_llm_response(buffer)
    assert buffer.turn_state == "blocked"
    message = buffer.as_dict()
    blocks = message["content"] if wire == "anthropic" else message["output"]["message"]["content"]
    held = blocks[0]["input"] if wire == "anthropic" else blocks[0]["toolUse"]["input"]
    assert held == '{"name": NaN, "name": Infinity}', "the text as received, not a lenient read"
    response = Driver([runs.tool("greet", {"type": "object"})]).process_llm_response(message)
    assert runs.runs == [], "handed back, it is refused again: nothing runs with nan or inf"
    assert response.call_failed and "non_finite_number" in response.results[0].content


def two_calls(second: str) -> dict[str, Any]:
    """An assistant message calling greet (as ``a``) and then ``second`` (as ``b``)."""
    calls = [entry("a", "greet", '{"name": "A"}'), entry("b", second, "{}")]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def test_an_unknown_tool_beside_an_owned_one_refuses_both_in_a_whole_message() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    message = two_calls("nuke")
    response = driver.process_llm_response(message)
    assert runs.runs == [] and response.call_failed
    [result] = response.results
    assert "blocked with its turn: the call in slot 1 names an unknown tool" in result.content
    assistant, *answers = response.messages
    assert [c["id"] for c in assistant["tool_calls"]] == ["a", "b"]
    assert [a["tool_call_id"] for a in answers] == ["a", "b"], "every call is answered"


def test_a_buffers_own_as_dict_handed_back_gets_the_streams_answers() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    buffer = driver.new_stream_buffer()
    buffer.add({"type": "message_start", "message": {"role": "assistant", "content": []}})
    for chunk in AnthropicStrategy().replay(anthropic_message({"name": "Ada"}))[1:]:
        buffer.add(chunk)
    streamed = driver.process_llm_response(buffer)
    whole = Driver([runs.tool("greet", GREET)], text_formats=()).process_llm_response(
        buffer.as_dict()
    )
    assert runs.runs == [("greet", {"name": "Ada"})] * 2
    assert whole.status == streamed.status == "call_executed"
    assert whole.messages == streamed.messages


def test_an_orchestrator_reads_a_whole_message_once_with_the_union_of_its_tools() -> None:
    runs = Runs()
    first = Driver([runs.tool("greet", GREET)], text_formats=())
    second = Driver([runs.tool("wave", {"type": "object"})], text_formats=())
    message = two_calls("wave")
    response = Orchestrator([first, second]).process_llm_response(message)
    assert runs.runs == [("greet", {"name": "A"}), ("wave", {})]
    assert [m.get("tool_call_id") for m in response.messages] == [None, "a", "b"]


# -- chunks as attribute objects --------------------------------------------------------


def namespace(value: Any) -> Any:
    """``value`` as nested SimpleNamespace objects (lists stay lists)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [namespace(v) for v in value]
    return value


def test_chunks_given_as_plain_attribute_objects_are_read() -> None:
    runs = Runs()
    driver = Driver([runs.tool("greet", GREET)], text_formats=())
    buffer = driver.new_stream_buffer()
    message = {"role": "assistant", "content": "Hi. ", "tool_calls": [
        entry("c1", "greet", '{"name": "A"}')]}  # fmt: skip
    buffer.add(namespace(OpenAIStrategy().replay(message)[0]))
    response = driver.process_llm_response(buffer)
    assert response.call_executed and runs.runs == [("greet", {"name": "A"})]
    assert buffer.text() == "Hi. "
    assert buffer.as_dict()["tool_calls"][0]["function"]["arguments"] == '{"name": "A"}'


def test_a_tool_that_raises_reports_call_failed_with_its_error_answer() -> None:
    def down(**_: Any) -> str:
        raise RuntimeError("smtp down")

    driver = Driver([Tool("send_mail", {"type": "object"}, down)], text_formats=())
    buffer = driver.new_stream_buffer()
    buffer.add(OpenAIStrategy().replay({"tool_calls": [
        entry("call_9", "send_mail", "{}")]})[0])  # fmt: skip
    response = driver.process_llm_response(buffer)
    assert response.call_failed and not response.call_executed
    assert response.results[0].is_error and not response.results[0].refused
    assert response.messages[1]["tool_call_id"] == "call_9"
    assert "smtp down" in response.messages[1]["content"]


def test_extraction_strategies_is_a_list_and_a_method() -> None:
    driver = Driver([Tool("greet", GREET)])
    as_property = driver.extraction_strategies
    assert [s.name for s in as_property()] == [s.name for s in as_property]
    assert isinstance(as_property, list) and len(LLMStreamBuffer(as_property).chain) > 0
    assert json.dumps([s.name for s in driver.extraction_strategies()])
