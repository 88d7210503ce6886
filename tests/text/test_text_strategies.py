"""Text strategies in the chain, format memory by model name, and replay --text-formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callgate import ExtractedCall, ExtractionChain, LLMStreamBuffer, UnrecognizedStreamError
from callgate.cli.commands import main
from callgate.cli.replay import replay
from callgate.strategies import MessageReader, StreamReader, default_strategies
from callgate.strategies.text.formats import FORMATS, formats_for_model
from callgate.strategies.text.strategy import TEXT_STRATEGIES, claiming_format

HERMES = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
QWEN_XML = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>"
)
GLM = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"


def test_every_text_format_has_a_strategy_named_by_its_contract_name() -> None:
    assert set(TEXT_STRATEGIES) == set(FORMATS)
    assert {s.name for s in default_strategies()} >= set(FORMATS)


@pytest.mark.parametrize(
    ("content", "owner"),
    [(HERMES, "tool_call_tag"), (QWEN_XML, "qwen3_coder_xml"), (GLM, "glm45")],
)
def test_one_tool_call_tag_three_payloads_the_payload_decides(content: str, owner: str) -> None:
    message = {"role": "assistant", "content": f"Let me check. {content}"}
    assert claiming_format(message["content"]) == owner
    claims = [s.name for s in default_strategies() if s.recognizes(message)]
    assert claims == [owner]
    [strategy] = [s for s in default_strategies() if s.name == owner]
    assert strategy.extract(message) == [ExtractedCall(None, "get_weather", {"city": "Paris"}, 0)]


def test_chain_order_never_changes_which_text_strategy_claims() -> None:
    messages = [
        {"content": HERMES},
        {"content": QWEN_XML},
        {"content": GLM},
        {"content": '{"name": "f", "arguments": {}}'},
    ]
    forward = ExtractionChain(default_strategies())
    backward = ExtractionChain(list(reversed(default_strategies())))
    for _ in range(2):
        for message in messages:
            a, b = forward.resolve(message), backward.resolve(message)
            assert a is not None and b is not None and a.name == b.name


def test_text_strategies_never_claim_a_native_message_or_a_chunk() -> None:
    native = {"role": "assistant", "content": HERMES, "tool_calls": None}
    chunk = {"choices": [{"index": 0, "delta": {"content": HERMES}}]}
    for strategy in TEXT_STRATEGIES.values():
        assert not strategy().recognizes(native)
        assert not strategy().recognizes(chunk)


def test_a_text_strategy_reads_messages_and_has_no_stream_part() -> None:
    for cls in TEXT_STRATEGIES.values():
        strategy = cls()
        assert isinstance(strategy, MessageReader)
        assert not isinstance(strategy, StreamReader)
        assert not hasattr(strategy, "accumulate") and not hasattr(strategy, "new_accumulator")


def test_a_text_message_given_as_a_chunk_is_no_stream_and_leaves_the_buffer_unstarted() -> None:
    """Only wire strategies take a stream's first chunk; text strategies read messages."""
    buffer = LLMStreamBuffer()
    with pytest.raises(UnrecognizedStreamError, match="no strategy"):
        buffer.add({"role": "assistant", "content": HERMES})
    assert buffer.strategy is None and buffer.gate is None
    buffer.add({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]})
    assert buffer.strategy is not None and buffer.strategy.name == "openai"


def test_buffer_default_chain_still_resolves_wire_chunks() -> None:
    buffer = LLMStreamBuffer()
    buffer.add({"choices": [{"index": 0, "delta": {"content": HERMES}, "finish_reason": None}]})
    assert buffer.strategy is not None and buffer.strategy.name == "openai"


@pytest.mark.parametrize(
    ("model", "first"),
    [
        ("gemma-4-27b-it", "gemma_special"),
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3_coder_xml"),
        ("qwen2.5-7b-instruct", "tool_call_tag"),
        ("mistral-small-2506", "bracket_tool_calls"),
        ("meta-llama/Llama-3.2-3B-Instruct", "pythonic"),
        ("llama-3.1-8b", "python_tag"),
        ("deepseek-v3.1", "deepseek"),
        ("command-r7b-12-2024", "command_r"),
        ("zai-org/GLM-4.5-Air", "glm45"),
        ("granite-3.0-8b-instruct", "granite"),
        ("gpt-4.1", None),
    ],
)
def test_model_names_suggest_a_format(model: str, first: str | None) -> None:
    names = formats_for_model(model)
    assert (names[0] if names else None) == first


def test_replay_with_text_formats_hides_the_markup_and_lists_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"Checking the weather. {HERMES} Done."
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": text[i : i + 5]}, "finish_reason": None}]}
        for i in range(0, len(text), 5)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    tools = {
        "get_weather": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    }
    result = replay(chunks, tools, text_formats=["tool_call_tag"])
    assert result["display"] == "Checking the weather.  Done."
    assert [
        (c["format"], c["name"], c["arguments"], c["finding"]) for c in result["text_calls"]
    ] == [("tool_call_tag", "get_weather", {"city": "Paris"}, None)]
    assert result["status"] == "pass"
    assert replay(chunks, tools)["display"] == text

    capture = tmp_path / "c.json"
    capture.write_text(json.dumps(chunks), encoding="utf-8")
    assert main(["replay", str(capture), "--text-formats", "default", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text_calls"][0]["name"] == "get_weather"
    assert main(["replay", str(capture), "--text-formats", "nope"]) == 2
    assert "unknown text format" in capsys.readouterr().err


HARMONY_MESSAGES = [
    (
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>',
        "harmony",
    ),
    (
        "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant "
        'to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}',
        "harmony_role",
    ),
]


@pytest.mark.parametrize(("content", "fmt"), HARMONY_MESSAGES)
def test_a_whole_harmony_message_is_claimed_by_the_delimiter_whose_block_is_a_call(
    content: str, fmt: str
) -> None:
    assert claiming_format(content) == fmt
    strategy = ExtractionChain([TEXT_STRATEGIES[fmt]()]).resolve({"content": content})
    assert strategy is not None
    calls = strategy.extract({"content": content})
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Paris"})]
    other = "harmony" if fmt == "harmony_role" else "harmony_role"
    assert ExtractionChain([TEXT_STRATEGIES[other]()]).resolve({"content": content}) is None
