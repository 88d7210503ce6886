"""Tool results in every provider's next-request shape, and corrective results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.cli.fixtures import examples
from callgate.driver.results import corrective_result
from callgate.strategies import WIRE_STRATEGIES
from callgate.strategies.base import ExtractedCall, ToolResult

OK = ToolResult(ExtractedCall("call_1", "get_weather", {"city": "Paris"}, 0), "18 C")
ERR = ToolResult(ExtractedCall("call_2", "get_time", {}, 1), "boom", is_error=True)

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
    ],
    "openai-responses": [
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C"},
        {"type": "function_call_output", "call_id": "call_2", "output": "boom"},
    ],
    "anthropic": [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18 C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "boom",
                    "is_error": True,
                },
            ],
        }
    ],
    "bedrock": [
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "call_1",
                        "content": [{"text": "18 C"}],
                        "status": "success",
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "call_2",
                        "content": [{"text": "boom"}],
                        "status": "error",
                    }
                },
            ],
        }
    ],
    "gemini": [
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "18 C"},
                        "id": "call_1",
                    }
                },
                {
                    "functionResponse": {
                        "name": "get_time",
                        "response": {"error": "boom"},
                        "id": "call_2",
                    }
                },
            ],
        }
    ],
    "cohere": [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": [{"type": "document", "document": {"data": "18 C"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": [{"type": "document", "document": {"data": '{"error": "boom"}'}}],
        },
    ],
    "ollama": [
        {"role": "tool", "content": "18 C", "tool_name": "get_weather", "tool_call_id": "call_1"},
        {"role": "tool", "content": "boom", "tool_name": "get_time", "tool_call_id": "call_2"},
    ],
}
EXPECTED["mistral"] = EXPECTED["openai"]


@pytest.mark.parametrize("profile", sorted(WIRE_STRATEGIES))
def test_results_come_back_in_the_providers_own_shape_in_call_order(profile: str) -> None:
    assert WIRE_STRATEGIES[profile]().result_messages([OK, ERR]) == EXPECTED[profile]
    assert WIRE_STRATEGIES[profile]().result_messages([]) == []


@pytest.mark.parametrize(
    "name",
    ["openai_malformed_json.json", "anthropic_schema_invalid.json", "openai_unknown_tool.json"],
)
def test_a_blocked_call_gets_a_corrective_result_not_an_execution(name: str) -> None:
    data = json.loads(dict(examples())[name])
    buffer = LLMStreamBuffer(tool_schemas=data["tool_schemas"])
    for chunk in data.get("chunks", data.get("events")):
        buffer.add(chunk)
    buffer.end()
    assert not buffer.executable and buffer.releasable() == []
    [slot] = buffer.slots
    [problem] = [f for f in buffer.findings if f.slot == slot.key]
    result = corrective_result(slot, problem)
    assert result.is_error
    assert result.call.id == slot.id and result.call.name == slot.name
    assert problem.code in result.content and "not run" in result.content
    assert buffer.strategy is not None
    shaped = json.dumps(buffer.strategy.result_messages([result]))
    assert json.dumps(result.content) in shaped
    assert json.dumps(slot.id) in shaped
