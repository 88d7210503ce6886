"""The worked example of docs/testing.md, continued: AdapterMachine against the frameworks.

LangChain's chat models stream ``AIMessageChunk`` objects that an agent adds up
(``full = full + chunk``); ``AIMessageChunk.__add__`` merges ``tool_call_chunks`` by
``index`` and every chunk re-parses its calls' arguments with a partial-JSON parser into
``.tool_calls``. langchain-openai turns Chat Completions chunks into those messages,
langchain-anthropic the Messages events. Each machine below is that path as an adapter
(convert each chunk as the chat model does, add it to the running message, run
``.tool_calls`` once the stream has ended, as a LangChain agent does) and lets Hypothesis
look for a stream where LangChain and callgate part ways; where a fault shows, the shrunk
stream is also served over a mock HTTP transport to the public ``ChatOpenAI.stream``.
LiteLLM's ``stream_chunk_builder`` is searched the same way where LiteLLM is installed
(it is not a test dependency). The streams shown in docs/testing.md are these tests' own
output.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, cast

import httpx
import pytest
from hypothesis.stateful import run_state_machine_as_test
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessageChunk
from langchain_core.messages import ai as langchain_ai
from langchain_core.utils.json import parse_partial_json
from langchain_openai import ChatOpenAI

from callgate.testing import AdapterMachine
from test_testing_sdks import BOUNDED, chunks_in, found

SSE = {"content-type": "text/event-stream"}
OPENAI = ChatOpenAI(model="gpt-4.1", api_key="sk-callgate-test")  # type: ignore[arg-type]
ANTHROPIC = ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-callgate-test")  # type: ignore[arg-type,call-arg]


class LangChainAdapter(AdapterMachine):
    """A LangChain chat model's chunks added up; ``.tool_calls`` run when the stream ends."""

    text = False
    calls_per_turn: ClassVar[int | tuple[int, int]] = (1, 2)
    faults = False
    parsed: ClassVar[list[int]] = [0]
    """Characters of arguments LangChain's partial JSON parser has read (see ``counting``)."""

    def convert(self, chunk: Any) -> AIMessageChunk | None:
        """The message chunk the chat model yields for one provider chunk, if any."""
        raise NotImplementedError

    def feed(self, chunk: Any) -> None:
        if not hasattr(self, "message"):
            self.message: AIMessageChunk | None = None
            self.over = False
            self.start = self.parsed[0]
        piece = self.convert(chunk)
        if piece is not None:
            self.message = piece if self.message is None else self.message + piece

    def end(self) -> None:
        self.over = True

    def calls(self) -> Sequence[Any]:
        if not getattr(self, "over", False) or self.message is None:
            return []
        return [(c["id"], c["name"], c["args"]) for c in self.message.tool_calls]


class LangChainOpenAI(LangChainAdapter):
    """langchain-openai: ``ChatOpenAI`` converting the SDK's typed chunks, dumped as it does."""

    wire = "openai"
    form = "sdk"

    def convert(self, chunk: Any) -> AIMessageChunk | None:
        generation = OPENAI._convert_chunk_to_generation_chunk(
            chunk.model_dump(), AIMessageChunk, {}
        )
        return None if generation is None else generation.message  # type: ignore[return-value]


class LangChainAnthropic(LangChainAdapter):
    """langchain-anthropic: ``ChatAnthropic`` converting the SDK's typed events."""

    wire = "anthropic"
    form = "sdk"

    def convert(self, chunk: Any) -> AIMessageChunk | None:
        if chunk.type == "ping":  # the SDK's stream drops pings before the model sees them
            return None
        if not hasattr(self, "started"):
            self.started: Any = None
        piece, self.started = ANTHROPIC._make_message_chunk_from_anthropic_event(
            chunk, coerce_content_to_string=False, block_start_event=self.started
        )
        return piece


class LangChainOpenAIGrowth(LangChainOpenAI):
    """langchain-openai with its parsing work counted: characters parsed per one received."""

    quirks = False
    calls_per_turn = 1

    def work(self) -> int | None:
        return self.parsed[0] - self.start if hasattr(self, "start") else None


class LangChainAnthropicGrowth(LangChainAnthropic):
    """langchain-anthropic with its parsing work counted."""

    quirks = False

    def work(self) -> int | None:
        return self.parsed[0] - self.start if hasattr(self, "start") else None


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the characters each message chunk hands to LangChain's partial JSON parser."""
    parsed = LangChainAdapter.parsed
    parsed[0] = 0

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        parsed[0] += len(text)
        return parse_partial_json(text, *args, **kwargs)

    monkeypatch.setattr(langchain_ai, "parse_partial_json", counted)
    yield parsed


def openai_entries(report: str) -> list[dict[str, Any]]:
    """The ``tool_calls`` entries of a reported Chat Completions stream, in order."""
    return [
        entry
        for chunk in chunks_in(report)
        for choice in chunk["choices"]
        for entry in choice["delta"].get("tool_calls") or []
    ]


class LiteLLMChunkBuilder(AdapterMachine):
    """LiteLLM: the stream's chunks kept, then ``litellm.stream_chunk_builder`` at its end.

    That is how LiteLLM's documentation rebuilds a streamed response; the chunks are
    LiteLLM's own ``ModelResponseStream``, which a Chat Completions chunk is.
    """

    wire = "openai"
    text = False
    calls_per_turn = (1, 2)
    faults = False

    def feed(self, chunk: Any) -> None:
        from litellm.types.utils import ModelResponseStream

        if not hasattr(self, "chunks"):
            self.chunks: list[Any] = []
            self.over = False
        self.chunks.append(ModelResponseStream(**chunk))

    def end(self) -> None:
        self.over = True

    def calls(self) -> Sequence[Any]:
        import litellm

        if not getattr(self, "over", False):
            return []
        built: Any = litellm.stream_chunk_builder(self.chunks)
        message = built.choices[0].message
        return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]


def with_(machine: type[AdapterMachine], **attributes: Any) -> type[AdapterMachine]:
    """``machine`` drawing other streams (``quirks``, ``faults``: see AdapterMachine)."""
    return type(machine.__name__, (machine,), attributes)


@pytest.mark.parametrize("machine", [LangChainOpenAI, LangChainAnthropic])
def test_langchain_reassembles_interleaved_calls_as_callgate_does(
    machine: type[LangChainAdapter],
) -> None:
    # Clean streams with any of the providers' quirks (whole calls without an index
    # included), calls interleaved and cut anywhere: no difference within the bound.
    run_state_machine_as_test(machine, settings=BOUNDED)


def serving(chunks: list[dict[str, Any]]) -> httpx.Client:
    """An HTTP client whose server answers any request with ``chunks`` as SSE."""
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)

    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body + b"data: [DONE]\n\n", headers=SSE)

    return httpx.Client(transport=httpx.MockTransport(serve))


def chat_openai_stream(chunks: list[dict[str, Any]]) -> AIMessageChunk:
    """What ``ChatOpenAI.stream`` adds up from a server that sends ``chunks`` as SSE."""
    model = ChatOpenAI(
        model="gpt-4.1",
        api_key="sk-callgate-test",  # type: ignore[arg-type]
        http_client=serving(chunks),
    )
    message: Any = None
    for piece in model.stream("What is the weather?"):
        message = piece if message is None else message + piece
    return cast(AIMessageChunk, message)


@pytest.mark.parametrize("machine", [LangChainOpenAI, LangChainAnthropic])
def test_langchain_runs_both_calls_of_a_reused_index(machine: type[LangChainAdapter]) -> None:
    report = found(with_(machine, quirks=False, faults=("index_reuse",)))
    assert "that callgate blocks (['identity_collision'])" in report, report
    first_line = report.splitlines()[0]
    assert "_reused0', 'get_weather', '{}')" in first_line, report  # the second gets nothing
    if machine is LangChainOpenAI:  # the public path, ChatOpenAI.stream, runs the same two
        ran = chat_openai_stream(chunks_in(report)).tool_calls
        assert [(c["id"], c["args"]) for c in ran] == [
            ("call_0000", {"city": ""}),
            ("call_reused0", {}),
        ], report


def test_langchain_runs_a_call_of_a_cut_stream() -> None:
    report = found(with_(LangChainOpenAI, quirks=False, faults=("truncation",)))
    assert "that callgate blocks (['missing_terminal'])" in report, report
    assert not any(c["choices"][0]["finish_reason"] for c in chunks_in(report)), report


def test_langchain_completes_unfinished_json_and_runs_it() -> None:
    report = found(with_(LangChainOpenAI, quirks=False, faults=("malformed_json",)))
    assert "'{\"city\": \"Par\"}')] that callgate blocks (['malformed_json'])" in report, report
    arguments = "".join(e["function"].get("arguments", "") for e in openai_entries(report))
    assert arguments == '{"city": "Par', report  # the model never closed the string


def test_langchain_runs_non_finite_numbers() -> None:
    report = found(with_(LangChainOpenAI, quirks=False, faults=("non_finite_number",)))
    assert "that callgate blocks (['non_finite_number'])" in report, report


def test_langchain_keeps_the_last_of_duplicate_keys() -> None:
    report = found(with_(LangChainOpenAI, quirks=False, faults=("duplicate_key",)))
    assert "'{\"city\": \"Rome\"}')] that callgate blocks (['duplicate_key'])" in report, report


@pytest.mark.parametrize("machine", [LangChainOpenAIGrowth, LangChainAnthropicGrowth])
def test_langchain_reparses_every_call_on_every_chunk(
    machine: type[LangChainAdapter], counting: list[int]
) -> None:
    report = found(machine)
    assert "growth faster than linear" in report, report
    assert len(chunks_in(report)) >= 20, report


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> Any:
    """LiteLLM where it is installed (not a test dependency: ~260 MB, ~4 s to import).

    ``CALLGATE_REQUIRE_FRAMEWORKS=1`` (set by CI, which installs the ``frameworks`` extra)
    makes a missing LiteLLM a failure.
    """
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    if os.environ.get("CALLGATE_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module("litellm")
    return pytest.importorskip(
        "litellm", reason="LiteLLM is an optional framework: pip install litellm"
    )


def test_litellm_reassembles_interleaved_calls_as_callgate_does(litellm: Any) -> None:
    run_state_machine_as_test(with_(LiteLLMChunkBuilder, quirks=False), settings=BOUNDED)


def test_litellm_merges_calls_without_an_index_into_one(litellm: Any) -> None:
    report = found(with_(LiteLLMChunkBuilder, quirks=("no_index",)))
    assert report.startswith("the adapter loses [('call_0000', "), report
    from litellm.types.utils import ModelResponseStream

    sent = [e["function"]["arguments"] for e in openai_entries(report)]
    kept = [ModelResponseStream(**c) for c in chunks_in(report)]
    for chunks in (kept, litellm_stream(litellm, chunks_in(report))):  # litellm.completion too
        calls = litellm.stream_chunk_builder(chunks).choices[0].message.tool_calls
        assert len(sent) == 2 and len(calls) == 1, report  # two calls in, one out
        assert calls[0].function.arguments == "".join(sent), report


def litellm_stream(litellm: Any, chunks: list[dict[str, Any]]) -> list[Any]:
    """The chunks ``litellm.completion(stream=True)`` yields from a server sending ``chunks``."""
    import openai

    http: Any = serving(chunks)
    client = openai.OpenAI(api_key="sk-callgate-test", http_client=http)
    messages = [{"role": "user", "content": "What is the weather?"}]
    return list(litellm.completion("openai/gpt-4.1", messages, stream=True, client=client))


def test_litellm_runs_the_last_id_of_a_reused_index(litellm: Any) -> None:
    report = found(with_(LiteLLMChunkBuilder, quirks=False, faults=("index_reuse",)))
    assert report.startswith("the adapter runs [('call_reused0', 'get_weather', "), report
    assert "that callgate blocks (['identity_collision'])" in report, report
