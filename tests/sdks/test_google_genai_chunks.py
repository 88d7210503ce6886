"""google-genai's typed GenerateContentResponse chunks go straight into the buffer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types

from callgate import LLMStreamBuffer
from callgate.cli.fixtures import examples

FIXTURES = {name: json.loads(text) for name, text in examples() if name.startswith("gemini_")}


def typed(chunks: list[dict[str, Any]]) -> list[types.GenerateContentResponse] | None:
    try:
        return [types.GenerateContentResponse.model_validate(c) for c in chunks]
    except ValueError:
        return None


SDK_VALID = sorted(name for name, data in FIXTURES.items() if typed(data["chunks"]) is not None)


def test_only_the_deliberately_malformed_fixture_is_refused_by_the_sdk() -> None:
    assert set(FIXTURES) - set(SDK_VALID) == {"gemini_non_object_arguments.json"}


@pytest.mark.parametrize("name", SDK_VALID)
def test_sdk_objects_and_plain_dicts_give_the_same_turn(name: str) -> None:
    data = FIXTURES[name]
    objects = typed(data["chunks"])
    assert objects is not None
    by_sdk = LLMStreamBuffer(tool_schemas=data["tool_schemas"])
    by_dict = LLMStreamBuffer(tool_schemas=data["tool_schemas"])
    for obj, chunk in zip(objects, data["chunks"], strict=True):
        by_sdk.add(obj)
        by_dict.add(chunk)
    by_sdk.end()
    by_dict.end()
    assert by_sdk.turn_state == by_dict.turn_state
    assert [(s.key, s.id, s.name, s.arguments) for s in by_sdk.slots] == [
        (s.key, s.id, s.name, s.arguments) for s in by_dict.slots
    ]
    message = json.dumps(by_sdk.as_dict())
    if "snake_case" in name:
        assert '"functionCall"' in message and '"function_call"' not in message
    else:
        assert by_sdk.as_dict() == by_dict.as_dict()
