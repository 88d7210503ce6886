"""CallgateModel in pydantic-ai: an Agent on it, wrapping OpenAIChatModel and the fake upstream.

The wrapped model is pydantic-ai's own ``OpenAIChatModel`` pointed at the fake upstream of
:mod:`integrations_upstream` (a real uvicorn server on loopback); the agents run real
tools (Python functions that record each call). Streamed runs go through
``request_stream`` (an ``event_stream_handler`` sees every event), whole ones through
``request``. The same agent on the bare OpenAIChatModel shows what pydantic-ai does alone.
What CallgateModel ends with is compared with what callgate's own buffer and driver give
for the same stream (:meth:`proxy_cases.StreamCase.expected`).

pydantic-ai is an optional framework: without it (or uvicorn) these tests skip, unless
``CALLGATE_REQUIRE_FRAMEWORKS=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterable, Iterator
from typing import Any

import pytest

from integrations_upstream import (
    READ_FILE,
    Upstream,
    chunk,
    framework,
    issue_33678,
    running,
    text_turn,
)
from proxy_cases import NOT_RUN, StreamCase, by_char, capture_cases

framework("pydantic_ai")
framework("uvicorn")

from pydantic_ai import Agent, RunContext, Tool  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartStartEvent,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402

from callgate.integrations.pydantic_ai import CallgateModel  # noqa: E402
from callgate.proxy.engine import Options  # noqa: E402
from corpus.peer_text import CASES  # noqa: E402

QWEN = "Qwen/Qwen2.5-7B-Instruct"
LEAKED = next(c for c in CASES if c.format == "tool_call_tag" and c.calls and not c.differs)
CODER = "Qwen/Qwen3-Coder-30B-A3B-Instruct"
LEAKED_XML = next(c for c in CASES if c.format == "qwen3_coder_xml" and c.calls and not c.differs)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with running() as served:
        yield served


def wrapped(upstream: Upstream, name: str) -> OpenAIChatModel:
    provider = OpenAIProvider(base_url=upstream.base_url, api_key="sk-fake-upstream")
    return OpenAIChatModel(name, provider=provider)


class Tools:
    """Real tools an agent runs; each call is recorded with its arguments."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def agent(self, model: Any, schemas: dict[str, Any]) -> Agent[None, str]:
        """An agent on ``model`` with one recording tool per schema."""
        made = [Tool.from_schema(self._tool(n), n, f"The {n} tool.", s) for n, s in schemas.items()]
        return Agent(model, tools=made, retries=1)

    def _tool(self, name: str) -> Any:
        def run(**arguments: Any) -> str:
            self.ran.append((name, arguments))
            return f"{name} ran"

        return run


def read_file_agent(tools: Tools, model: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model, retries=1)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        tools.ran.append(("read_file", {"path": path}))
        return "fn main() {}"

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        tools.ran.append(("get_weather", {"city": city}))
        return "sunny"

    return agent


def run(agent: Agent[None, str], *, streamed: bool) -> tuple[str, list[Any]]:
    """The agent's output and every event it streamed (none when run whole)."""
    events: list[Any] = []

    async def handler(_: RunContext[None], stream: AsyncIterable[Any]) -> None:
        async for event in stream:
            events.append(event)

    async def go() -> str:
        result = await agent.run("go", event_stream_handler=handler if streamed else None)
        return result.output

    return asyncio.run(go()), events


def shown(events: list[Any]) -> str:
    """All text the streamed events carried (starts and deltas of text parts)."""
    out = []
    for event in events:
        part = getattr(event, "part", None)
        if isinstance(event, PartStartEvent) and isinstance(part, TextPart):
            out.append(part.content)
        delta = getattr(event, "delta", None)
        if delta is not None and hasattr(delta, "content_delta"):
            out.append(delta.content_delta or "")
    return "".join(out)


FINAL = text_turn("All done.", model=QWEN, by_char=False)


# -- the agent ----------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
@pytest.mark.parametrize(
    ("case", "model"), [(LEAKED, QWEN), (LEAKED_XML, CODER)], ids=["hermes", "qwen3-coder"]
)
def test_a_call_leaked_into_text_runs_its_tool(
    case: Any, model: str, streamed: bool, upstream: Upstream
) -> None:
    names = {name: (case.schemas or {}).get(name, {"type": "object"}) for name, _ in case.calls}
    leak = text_turn(case.content, model=model, by_char=streamed)
    tools = Tools()
    upstream.serve(leak, FINAL)
    output, _ = run(tools.agent(wrapped(upstream, model), names), streamed=streamed)
    assert tools.ran == [] and output == case.content  # pydantic-ai alone: the markup is text
    tools = Tools()
    upstream.serve(leak, FINAL)
    output, events = run(
        tools.agent(CallgateModel(wrapped(upstream, model)), names), streamed=streamed
    )
    assert tools.ran == case.calls
    assert output == "All done."
    if streamed:
        assert shown(events) == case.shown + "All done."
    answered = upstream.requests[1]["messages"]
    assert [m["role"] for m in answered][-2:] == ["assistant", "tool"]


def _call(arguments: str, finish: str | None, model: str = "gpt-4.1") -> list[dict[str, Any]]:
    entry = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    chunks = [chunk({"role": "assistant", "content": ""}, model=model)]
    chunks.append(chunk({"tool_calls": [entry]}, model=model))
    if finish is not None:
        chunks.append(chunk({}, finish, model=model))
    return chunks


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
@pytest.mark.parametrize(
    ("why", "turn", "notice"),
    [
        (
            "no finish reason",
            _call('{"city": "Paris"}', None),
            "the model's answer broke off before the call was complete",
        ),
        (
            "finish length",
            _call('{"city": "Paris"}', "length"),
            "the answer was cut off before the call was complete",
        ),
    ],
)
def test_a_truncated_call_never_reaches_its_tool(
    why: str, turn: list[dict[str, Any]], notice: str, streamed: bool, upstream: Upstream
) -> None:
    tools = Tools()
    upstream.serve(turn, FINAL)
    if why == "no finish reason":  # pydantic-ai alone takes the end of the stream for "stop"
        run(read_file_agent(tools, wrapped(upstream, "gpt-4.1")), streamed=streamed)
        assert tools.ran == [("get_weather", {"city": "Paris"})]
    tools = Tools()
    upstream.serve(turn, FINAL)
    agent = read_file_agent(tools, CallgateModel(wrapped(upstream, "gpt-4.1")))
    output, _ = run(agent, streamed=streamed)
    assert tools.ran == []
    assert len(upstream.requests) == 1  # the turn ended without a call: nothing to answer
    assert output == f"\n\nA call to get_weather was not run: {notice}."


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
def test_a_schema_invalid_call_never_reaches_its_tool(streamed: bool, upstream: Upstream) -> None:
    tools = Tools()
    upstream.serve(_call('{"town": "Paris"}', "tool_calls"), FINAL)
    model = CallgateModel(wrapped(upstream, "gpt-4.1"), on_blocked="notice")
    output, _ = run(read_file_agent(tools, model), streamed=streamed)
    assert tools.ran == []
    assert output == "\n\nA call to get_weather was not run: its arguments did not match the tool."
    assert model.last_turn is not None and model.last_turn.status == "fail"


@pytest.mark.parametrize("streamed", [True, False], ids=["request_stream", "request"])
def test_repair_asks_the_wrapped_model_again_with_a_corrective_prompt(
    streamed: bool, upstream: Upstream
) -> None:
    tools = Tools()
    bad, good = _call('{"town": "Paris"}', "tool_calls"), _call('{"city": "Paris"}', "tool_calls")
    upstream.serve(bad, good, FINAL)
    model = CallgateModel(wrapped(upstream, "gpt-4.1"))  # the default: repair, twice
    output, _ = run(read_file_agent(tools, model), streamed=streamed)
    assert tools.ran == [("get_weather", {"city": "Paris"})]
    assert output == "All done."
    asked = upstream.requests[1]["messages"]
    assert asked[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert asked[-1]["role"] == "tool" and "schema_invalid" in asked[-1]["content"]
    assert len(upstream.requests) == 3


def test_repair_gives_up_with_the_notice_after_its_repairs(upstream: Upstream) -> None:
    tools = Tools()
    bad = _call('{"town": "Paris"}', "tool_calls")
    upstream.serve(bad, bad, FINAL)
    model = CallgateModel(wrapped(upstream, "gpt-4.1"), repairs=1)
    output, _ = run(read_file_agent(tools, model), streamed=True)
    assert tools.ran == [] and len(upstream.requests) == 2
    assert output == "\n\nA call to get_weather was not run: its arguments did not match the tool."


def test_pass_hands_a_schema_invalid_call_to_pydantic_ais_own_retry(upstream: Upstream) -> None:
    tools = Tools()
    good = _call('{"city": "Paris"}', "tool_calls")
    upstream.serve(_call('{"town": "Paris"}', "tool_calls"), good, FINAL)
    model = CallgateModel(wrapped(upstream, "gpt-4.1"), on_blocked="pass")
    output, _ = run(read_file_agent(tools, model), streamed=True)
    assert tools.ran == [("get_weather", {"city": "Paris"})]
    assert output == "All done."
    retry = upstream.requests[1]["messages"][-1]
    assert retry["role"] == "tool" and "city" in retry["content"]


def test_issue_33678_parallel_calls_at_one_index_never_merge_into_a_tool(
    upstream: Upstream,
) -> None:
    turn = issue_33678()
    tools = Tools()
    upstream.serve(turn, FINAL)
    run(read_file_agent(tools, wrapped(upstream, "qwen3-coder:30b")), streamed=True)
    merged = upstream.requests[1]["messages"][1]["tool_calls"]  # pydantic-ai alone: one call
    assert [c["function"]["name"] for c in merged] == ["read_fileread_file"]
    assert '{\\"path\\": \\"a.rs\\"}{\\"path\\": \\"b.rs\\"}' in merged[0]["function"]["arguments"]
    tools = Tools()
    upstream.serve(turn, FINAL)
    model = CallgateModel(wrapped(upstream, "qwen3-coder:30b"), on_blocked="notice")
    output, _ = run(read_file_agent(tools, model), streamed=True)
    assert tools.ran == [] and len(upstream.requests) == 1
    assert output == "\n\nA call to read_file was not run: the model's stream mixed up two calls."
    assert model.last_turn is not None
    assert "identity_collision" in [f.code for f in model.last_turn.findings]
    expected = StreamCase("33678", turn, READ_FILE, model="qwen3-coder:30b").expected()
    assert expected["status"] == "fail" and expected["calls"] == []


def test_findings_are_in_the_responses_provider_details(upstream: Upstream) -> None:
    tools = Tools()
    upstream.serve(_call('{"town": "Paris"}', "tool_calls"), FINAL)

    async def go() -> list[ModelMessage]:
        model = CallgateModel(wrapped(upstream, "gpt-4.1"), on_blocked="notice")
        return (await read_file_agent(tools, model).run("go")).all_messages()

    responses = [m for m in asyncio.run(go()) if isinstance(m, ModelResponse)]
    note = (responses[0].provider_details or {})["callgate"]
    assert note["status"] == "fail" and note["withheld"] == ["get_weather"]
    assert [f["code"] for f in note["findings"]] == ["schema_invalid"]


# -- every recorded stream ----------------------------------------------------------------

CAPTURES = [*capture_cases(), *(by_char(c) for c in capture_cases() if c.schemas)]


def parameters(schemas: dict[str, Any]) -> ModelRequestParameters:
    return ModelRequestParameters(
        function_tools=[
            ToolDefinition(name=name, parameters_json_schema=schema)
            for name, schema in schemas.items()
        ]
    )


def ended(response: ModelResponse) -> tuple[str, list[tuple[str, Any]]]:
    """A response's text and its calls (name, parsed arguments)."""
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = [(p.tool_name, p.args_as_dict()) for p in response.parts if isinstance(p, ToolCallPart)]
    return text, calls


@pytest.mark.parametrize("case", CAPTURES, ids=[c.id for c in CAPTURES])
def test_each_recorded_stream_ends_as_callgate_gives_it(
    case: StreamCase, upstream: Upstream
) -> None:
    model = CallgateModel(wrapped(upstream, case.model))
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("go")])]

    async def both() -> tuple[ModelResponse, ModelResponse]:
        upstream.serve(case.chunks, case.chunks)
        async with model.request_stream(messages, None, parameters(case.schemas)) as stream:
            async for _ in stream:
                pass
        whole = await model.request(messages, None, parameters(case.schemas))
        return stream.get(), whole

    streamed, whole = asyncio.run(both())
    # pydantic-ai's model reads the stream through the SDK, which hides whether [DONE]
    # came: a turn without a finish reason (TGI's) stays cut off here, with its notice.
    expected = dataclasses.replace(case, ended=False).expected()
    want = (expected["display"], [(n, a) for n, a in expected["calls"]])
    cut = case.ended and expected["status"] != case.expected()["status"]
    for response in (streamed, whole):
        text, calls = ended(response)
        assert text.startswith(want[0]) and calls == want[1]
        assert text == want[0] or (cut and NOT_RUN.fullmatch(text[len(want[0]) :]))
    assert streamed.finish_reason == ("tool_call" if expected["calls"] else streamed.finish_reason)


def test_a_bad_configuration_is_refused_with_a_clear_error(upstream: Upstream) -> None:
    inner = wrapped(upstream, "gpt-4.1")
    with pytest.raises(ValueError, match="repairs must be a whole number of 0 or more, not -1"):
        CallgateModel(inner, repairs=-1)
    assert (CallgateModel(inner).options.on_blocked, CallgateModel(inner).options.repairs) == (
        Options().on_blocked,
        Options().repairs,
    )
    with pytest.raises(ValueError, match=r"unknown text format\(s\) hermes"):
        CallgateModel(inner, text_formats=["hermes"])
    assert CallgateModel(wrapped(upstream, CODER)).options.text_formats == ("qwen3_coder_xml",)
    assert json.dumps(CallgateModel(inner).options.text_formats) == "[]"
