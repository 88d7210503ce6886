"""Tools defined once: ``Tool.from_function`` and ``driver.tool_specs(wire)``.

The specs are validated against each provider's own request types where an SDK is
installed (openai Chat and Responses, anthropic, google-genai, botocore's Bedrock
Converse model); Cohere v2, Ollama and Mistral take the Chat Completions shape.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import botocore.session
import pytest
from anthropic.types import ToolParam
from botocore.validate import ParamValidator
from google.genai import types as genai
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import TypeAdapter

from callgate import Driver, Tool, run_turn
from callgate.driver.tooldefs import description_of, parameter_docs, schema_from_function
from callgate.gate.schema import ToolSchemas
from callgate.strategies import WIRE_RECORDS
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall


class Unit(enum.Enum):
    CELSIUS = "C"
    FAHRENHEIT = "F"


def get_weather(
    city: str,
    days: list[int],
    *,
    unit: Unit = Unit.CELSIUS,
    detail: Literal["short", "long"] = "short",
    at: tuple[float, float] | None = None,
    tags: Mapping[str, str] | None = None,
    note: Annotated[str, "a free note"] = "",
) -> str:
    """Look up the weather of a city.

    Uses the nearest station.

    Args:
        city: The city's name, in any language.
        days (list[int]): Days ahead, 0 for today.
    """
    return f"{city} {days} {unit} {detail} {at} {tags} {note}"


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city's name, in any language."},
        "days": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "Days ahead, 0 for today.",
        },
        "unit": {"enum": ["C", "F"]},
        "detail": {"enum": ["short", "long"]},
        "at": {
            "anyOf": [
                {
                    "type": "array",
                    "prefixItems": [{"type": "number"}, {"type": "number"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                {"type": "null"},
            ]
        },
        "tags": {
            "anyOf": [
                {"type": "object", "additionalProperties": {"type": "string"}},
                {"type": "null"},
            ]
        },
        "note": {"type": "string", "description": "a free note"},
    },
    "additionalProperties": False,
    "required": ["city", "days"],
}


def test_a_tool_from_a_function_takes_its_schema_from_the_signature_and_hints() -> None:
    tool = Tool.from_function(get_weather)

    assert tool.name == "get_weather"
    assert tool.description == "Look up the weather of a city."
    assert tool.schema == WEATHER_SCHEMA
    assert tool.function is get_weather


def test_the_generated_schema_checks_calls_and_the_function_runs_with_them() -> None:
    tool = Tool.from_function(get_weather)
    schemas = ToolSchemas({tool.name: tool.schema})
    driver = Driver([tool])
    good = '{"city": "Oslo", "days": [0, 1], "at": [59.9, 10.7]}'
    bad = '{"city": "Oslo", "days": ["today"]}'

    assert schemas.check("get_weather", {"city": "Oslo", "days": [1]}) is None
    ran = run_turn(
        openai_chunks([WireCall("c1", "get_weather", (good,))], [0, 0]),
        driver,
        driver.new_stream_buffer(),
    )
    refused = run_turn(
        openai_chunks([WireCall("c2", "get_weather", (bad,))], [0, 0]),
        driver,
        driver.new_stream_buffer(),
    )

    assert ran.results[0].content == "Oslo [0, 1] Unit.CELSIUS short [59.9, 10.7] None "
    assert refused.results[0].refused and "schema_invalid" in refused.results[0].content


def test_name_and_description_can_be_given() -> None:
    tool = Tool.from_function(get_weather, name="weather", description="Weather.")

    assert (tool.name, tool.description) == ("weather", "Weather.")


@pytest.mark.parametrize(
    "function",
    [
        lambda *cities: cities,
        lambda **options: options,
    ],
)
def test_variadic_parameters_are_refused(function: Any) -> None:
    with pytest.raises(TypeError, match="named"):
        Tool.from_function(function)


def test_a_hint_without_a_json_schema_is_refused_naming_the_parameter() -> None:
    def fetch(url: str, session: object) -> str:
        return url

    with pytest.raises(TypeError, match=r"fetch\(session\).*give the schema"):
        Tool.from_function(fetch)


def test_dict_keys_must_be_strings() -> None:
    def count(by_id: dict[int, int]) -> int:
        return len(by_id)

    with pytest.raises(TypeError, match="keys are strings"):
        Tool.from_function(count)


def test_parameters_without_hints_take_any_value_and_bare_containers_any_items() -> None:
    def anything(value, items: list, table: dict, pair: tuple, rest: Sequence[str] = ()):  # type: ignore[no-untyped-def,type-arg]
        return value

    assert schema_from_function(anything)["properties"] == {
        "value": {},
        "items": {"type": "array"},
        "table": {"type": "object"},
        "pair": {"type": "array"},
        "rest": {"type": "array", "items": {"type": "string"}},
    }


def test_docstrings_give_parameter_notes_in_google_and_sphinx_styles() -> None:
    google = (
        "Do it.\n\nArgs:\n    a: first.\n    b (int): second.\n\nReturns:\n    x: not a parameter."
    )
    sphinx = "Do it.\n\n:param a: first.\n:param int b: second.\n:returns: nothing."

    assert parameter_docs(google) == {"a": "first.", "b": "second."}
    assert parameter_docs(sphinx) == {"a": "first.", "b": "second."}
    assert description_of(lambda: None) == ""


# -- every provider's spec -----------------------------------------------------------------


def weather_driver() -> Driver:
    return Driver([Tool.from_function(get_weather), Tool("ping", description="Ping.")])


def test_chat_completions_specs_are_openai_tool_params() -> None:
    specs = weather_driver().tool_specs("openai")

    for spec in specs:
        TypeAdapter(ChatCompletionToolParam).validate_python(spec)
    assert specs[0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Look up the weather of a city.",
            "parameters": WEATHER_SCHEMA,
        },
    }


@pytest.mark.parametrize("wire", ["cohere", "ollama", "mistral"])
def test_cohere_ollama_and_mistral_take_the_chat_completions_shape(wire: str) -> None:
    driver = weather_driver()

    assert driver.tool_specs(wire) == driver.tool_specs("openai")


def test_responses_specs_are_function_tool_params() -> None:
    specs = weather_driver().tool_specs("openai-responses")

    for spec in specs:
        TypeAdapter(FunctionToolParam).validate_python({**spec, "strict": False})
    assert specs[1] == {
        "type": "function",
        "name": "ping",
        "description": "Ping.",
        "parameters": {"type": "object"},
    }


def test_anthropic_specs_are_tool_params() -> None:
    specs = weather_driver().tool_specs("anthropic")

    for spec in specs:
        TypeAdapter(ToolParam).validate_python(spec)
    assert specs[0]["input_schema"] == WEATHER_SCHEMA


def test_bedrock_specs_are_a_valid_converse_tool_config() -> None:
    specs = weather_driver().tool_specs("bedrock")
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    request = {
        "modelId": "anthropic.claude-3-haiku",
        "messages": [{"role": "user", "content": [{"text": "Weather?"}]}],
        "toolConfig": {"tools": specs},
    }

    report = ParamValidator().validate(request, model.operation_model("ConverseStream").input_shape)

    assert not report.has_errors(), report.generate_report()
    assert specs[0]["toolSpec"]["inputSchema"]["json"] == WEATHER_SCHEMA


def test_gemini_specs_are_one_tool_of_function_declarations() -> None:
    (spec,) = weather_driver().tool_specs("gemini")

    tool = genai.Tool.model_validate(spec)

    declarations = tool.function_declarations or []
    assert [d.name for d in declarations] == ["get_weather", "ping"]
    assert declarations[0].parameters_json_schema == WEATHER_SCHEMA


SDK_CHECKED = {
    "openai": test_chat_completions_specs_are_openai_tool_params,
    "cohere": test_cohere_ollama_and_mistral_take_the_chat_completions_shape,
    "ollama": test_cohere_ollama_and_mistral_take_the_chat_completions_shape,
    "mistral": test_cohere_ollama_and_mistral_take_the_chat_completions_shape,
    "openai-responses": test_responses_specs_are_function_tool_params,
    "anthropic": test_anthropic_specs_are_tool_params,
    "bedrock": test_bedrock_specs_are_a_valid_converse_tool_config,
    "gemini": test_gemini_specs_are_one_tool_of_function_declarations,
}
"""The test above that checks each wire's specs against its provider's SDK request type."""


def test_every_wire_record_has_its_specs_checked_against_its_sdk_here() -> None:
    assert set(SDK_CHECKED) == set(WIRE_RECORDS)


def test_an_unknown_wire_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: openai"):
        weather_driver().tool_specs("grpc")
