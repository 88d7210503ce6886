"""Schema keys that assert nothing are accepted; keys that could constrain still fail closed.

Frameworks copy OpenAI's function flag ``strict`` into the schema (RubyLLM does, against
Bedrock), and vendors annotate with ``x-`` keys: refusing those refused every call to the
tool. A key that could be a constraint the validator does not enforce is still refused.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate.cli.check import check_fixture
from callgate.cli.fixtures import examples
from callgate.gate.schema import ToolSchemas

ACCEPTED: dict[str, Any] = {
    "strict": True,
    "x-order": ["city"],
    "x-google-enum-descriptions": ["a"],
    "title": "Weather",
    "examples": [{"city": "Paris"}],
    "$comment": "copied from a framework",
    "example": {"city": "Paris"},
    "propertyOrdering": ["city"],
    "contentMediaType": "application/json",
    "contentEncoding": "base64",
    "contentSchema": {"type": "object"},
}
REFUSED: dict[str, Any] = {
    "nullable": True,
    "discriminator": {"propertyName": "city"},
    "strictness": True,
    "xorder": 1,
}


def schema_with(key: str, value: Any) -> dict[str, Any]:
    """A tool schema carrying ``key`` at its root and on its property."""
    city = {"type": "string", key: value}
    return {
        "type": "object",
        "properties": {"city": city},
        "required": ["city"],
        "additionalProperties": False,
        key: value,
    }


@pytest.mark.parametrize("key", sorted(ACCEPTED))
def test_a_key_that_asserts_nothing_is_accepted_and_the_schema_still_enforced(key: str) -> None:
    schemas = ToolSchemas({"get_weather": schema_with(key, ACCEPTED[key])})
    assert schemas.check("get_weather", {"city": "Paris"}) is None
    refused = schemas.check("get_weather", {"city": 7})
    assert refused is not None and refused.code == "schema_invalid"


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_a_key_that_could_be_a_constraint_still_fails_closed(key: str) -> None:
    schemas = ToolSchemas({"get_weather": schema_with(key, REFUSED[key])})
    refused = schemas.check("get_weather", {"city": "Paris"})
    assert refused is not None and refused.code == "unsupported_schema_keyword"
    assert repr(key) in refused.message


def test_strict_as_a_property_name_is_a_property_not_a_keyword() -> None:
    schema = {
        "type": "object",
        "properties": {"strict": {"type": "boolean"}},
        "required": ["strict"],
    }
    schemas = ToolSchemas({"f": schema})
    assert schemas.check("f", {"strict": True}) is None
    refused = schemas.check("f", {"strict": "yes"})
    assert refused is not None and refused.code == "schema_invalid"


def test_the_bundled_fixture_with_annotations_passes() -> None:
    text = dict(examples())["openai_schema_annotations.json"]
    schema = json.loads(text)["tool_schemas"]["get_weather"]
    assert schema["strict"] is True and "x-order" in schema
    result = check_fixture(text)
    assert (result["status"], result["findings"]) == ("pass", [])
