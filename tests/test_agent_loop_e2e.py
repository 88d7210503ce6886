"""End to end: an agent loop with the real OpenAI and Anthropic SDK clients over loopback.

The loopback server scripts a conversation: turn 1 streams prose and two parallel tool
calls (interleaved fragments, unicode arguments), turn 2 the final answer. ``run_turn``
(``arun_turn``) plays each SDK stream through one buffer, runs the tools and hands back
the history the client appends for the next request, so the tests check what the server
received, what ran, and what the user saw, exactly as a client would meet them.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import callgate
from callgate import Tool, Turn
from loopback import (
    SEARCH,
    TEXT,
    WEATHER,
    LoopbackServer,
    anthropic_client,
    anthropic_sse,
    async_anthropic_client,
    async_openai_client,
    openai_client,
    openai_sse,
    recorded_anthropic,
    recorded_openai,
    serve,
    two_calls,
)

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
PROMPT = "Wetter in Zürich? Et un café ?"
FINAL = "In Zürich regnet es ☔ (12 °C); le café « Le Nemours » 🥐 est près du Louvre."
AGAIN = "Je revérifie la météo 🌧️. "
MAX_TURNS = 4
"""A loop that has not ended after this many turns is a failure, not a hang."""

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "note": {"type": "string"},
        "days": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {"type": "integer", "minimum": 1},
    },
    "required": ["query"],
    "additionalProperties": False,
}
FORECAST = {"city": "Zürich", "forecast": ["☔ 12 °C", "🌤️ 15 °C"]}
HITS = "1. Café « Le Nemours » — 2 Pl. Colette, 75001 Paris"
FORECAST_CONTENT = json.dumps(FORECAST, ensure_ascii=False)
"""What the model gets back from get_weather: callgate serialises a non-string output."""


class Tools:
    """The tools' functions: each records its arguments and returns a fixed unicode output."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def get_weather(self, city: str, days: list[int], note: str = "") -> dict[str, Any]:
        self.calls.append(("get_weather", {"city": city, "note": note, "days": days}))
        return FORECAST

    def search(self, query: str, tags: Sequence[str] = (), limit: int = 10) -> str:
        self.calls.append(("search", {"query": query, "tags": tags, "limit": limit}))
        return HITS

    def driver(self) -> callgate.Driver:
        return callgate.Driver(
            [
                Tool("get_weather", WEATHER_SCHEMA, self.get_weather),
                Tool("search", SEARCH_SCHEMA, self.search),
            ]
        )

    def counts(self) -> Counter[str]:
        return Counter(name for name, _ in self.calls)


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    with serve() as server:
        yield server


# -- the clients' loop ---------------------------------------------------------------------


def openai_tools(driver: callgate.Driver) -> list[Any]:
    return [
        {"type": "function", "function": {"name": t.name, "parameters": dict(t.schema)}}
        for t in driver.tools.values()
    ]


def anthropic_tools(driver: callgate.Driver) -> list[Any]:
    return [{"name": t.name, "input_schema": dict(t.schema)} for t in driver.tools.values()]


def converse_openai(server: LoopbackServer, driver: callgate.Driver) -> list[Turn]:
    """Turns until one calls nothing: each request is the previous one plus its history."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    with openai_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < MAX_TURNS, "the agent loop did not end"
            stream = client.chat.completions.create(
                model="gpt-4.1", messages=messages, tools=openai_tools(driver), stream=True
            )
            with stream:
                turns.append(callgate.run_turn(stream, driver, buffer))
            messages = messages + list(turns[-1].history)
    return turns


def converse_anthropic(server: LoopbackServer, driver: callgate.Driver) -> list[Turn]:
    """Turns until one calls nothing: each request is the previous one plus its history."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    with anthropic_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < MAX_TURNS, "the agent loop did not end"
            stream = client.messages.create(
                model="claude-loopback-test",
                max_tokens=256,
                messages=messages,
                tools=anthropic_tools(driver),
                stream=True,
            )
            with stream:
                turns.append(callgate.run_turn(stream, driver, buffer))
            messages = messages + list(turns[-1].history)
    return turns


async def aconverse_openai(server: LoopbackServer, driver: callgate.Driver) -> list[Turn]:
    """:func:`converse_openai` with ``AsyncOpenAI`` and ``arun_turn``."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    async with async_openai_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < MAX_TURNS, "the agent loop did not end"
            stream = await client.chat.completions.create(
                model="gpt-4.1", messages=messages, tools=openai_tools(driver), stream=True
            )
            async with stream:
                turns.append(await callgate.arun_turn(stream, driver, buffer))
            messages = messages + list(turns[-1].history)
    return turns


async def aconverse_anthropic(server: LoopbackServer, driver: callgate.Driver) -> list[Turn]:
    """:func:`converse_anthropic` with ``AsyncAnthropic`` and ``arun_turn``."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    async with async_anthropic_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < MAX_TURNS, "the agent loop did not end"
            stream = await client.messages.create(
                model="claude-loopback-test",
                max_tokens=256,
                messages=messages,
                tools=anthropic_tools(driver),
                stream=True,
            )
            async with stream:
                turns.append(await callgate.arun_turn(stream, driver, buffer))
            messages = messages + list(turns[-1].history)
    return turns


# -- the scripted conversations ------------------------------------------------------------


def script_openai(server: LoopbackServer, *turns: tuple[list[Any], str]) -> None:
    """The server answers successive chat requests with these turns (calls, prose)."""
    server.scripts[OPENAI_PATH] = [openai_sse(recorded_openai(c, text)) for c, text in turns]


def script_anthropic(server: LoopbackServer, *turns: tuple[list[Any], str]) -> None:
    """The server answers successive messages requests with these turns (calls, prose)."""
    server.scripts[ANTHROPIC_PATH] = [
        anthropic_sse(recorded_anthropic(c, text)) for c, text in turns
    ]


def requests_to(server: LoopbackServer, path: str, count: int) -> list[list[Any]]:
    """The messages of each request, after checking there were ``count`` streaming ones."""
    assert [(p, body.get("stream")) for p, body in server.requests] == [(path, True)] * count
    assert server.writes > 100
    return [body["messages"] for _, body in server.requests]


def answered(turn: Turn) -> list[tuple[str | None, str, dict[str, Any], str, bool]]:
    return [
        (r.call.id, r.call.name, dict(r.call.arguments), r.content, r.is_error)
        for r in turn.results
    ]


def assert_two_calls_answered(tools: Tools, turns: list[Turn], prefix: str) -> None:
    """Each tool ran once with its exact arguments; turn 1 answered both, turn 2 ended."""
    assert tools.calls == [("get_weather", WEATHER), ("search", SEARCH)]
    assert answered(turns[0]) == [
        (f"{prefix}W7gK2pXq", "get_weather", WEATHER, FORECAST_CONTENT, False),
        (f"{prefix}S9mB4tZr", "search", SEARCH, HITS, False),
    ]
    assert json.loads(turns[0].results[0].content) == FORECAST
    assert turns[0].status == "executable" and turns[0].called
    assert [t.text for t in turns] == [TEXT, FINAL]
    assert not turns[1].called and turns[1].results == ()


def assert_openai_loop(server: LoopbackServer, tools: Tools, turns: list[Turn]) -> None:
    user = {"role": "user", "content": PROMPT}
    first, second = requests_to(server, OPENAI_PATH, 2)
    assert first == [user]
    assert second[0] == user
    assistant, *results = second[1:]
    assert set(assistant) == {"role", "content", "tool_calls"}
    assert (assistant["role"], assistant["content"]) == ("assistant", TEXT)
    assert [
        (c["id"], c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant["tool_calls"]
    ] == [
        ("call_W7gK2pXq", "function", "get_weather", WEATHER),
        ("call_S9mB4tZr", "function", "search", SEARCH),
    ]
    assert results == [
        {"role": "tool", "tool_call_id": "call_W7gK2pXq", "content": FORECAST_CONTENT},
        {"role": "tool", "tool_call_id": "call_S9mB4tZr", "content": HITS},
    ]
    assert_two_calls_answered(tools, turns, "call_")


def assert_anthropic_loop(server: LoopbackServer, tools: Tools, turns: list[Turn]) -> None:
    user = {"role": "user", "content": PROMPT}
    first, second = requests_to(server, ANTHROPIC_PATH, 2)
    assert first == [user]
    assert second == [
        user,
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": TEXT},
                {
                    "type": "tool_use",
                    "id": "toolu_W7gK2pXq",
                    "name": "get_weather",
                    "input": WEATHER,
                },
                {"type": "tool_use", "id": "toolu_S9mB4tZr", "name": "search", "input": SEARCH},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_W7gK2pXq",
                    "content": FORECAST_CONTENT,
                },
                {"type": "tool_result", "tool_use_id": "toolu_S9mB4tZr", "content": HITS},
            ],
        },
    ]
    assert_two_calls_answered(tools, turns, "toolu_")


# -- the tests -----------------------------------------------------------------------------


def test_openai_client_agent_loop_runs_both_calls_and_sends_their_results(
    loopback: LoopbackServer,
) -> None:
    """Two parallel calls run once each; the second request carries them in Chat shape."""
    tools = Tools()
    script_openai(loopback, (two_calls("call_"), TEXT), ([], FINAL))

    turns = converse_openai(loopback, tools.driver())

    assert_openai_loop(loopback, tools, turns)


def test_anthropic_client_agent_loop_runs_both_calls_and_sends_their_results(
    loopback: LoopbackServer,
) -> None:
    """Two parallel calls run once each; the second request carries them in Messages shape."""
    tools = Tools()
    script_anthropic(loopback, (two_calls("toolu_"), TEXT), ([], FINAL))

    turns = converse_anthropic(loopback, tools.driver())

    assert_anthropic_loop(loopback, tools, turns)


def test_async_openai_client_agent_loop_runs_both_calls_and_sends_their_results(
    loopback: LoopbackServer,
) -> None:
    """The same loop with AsyncOpenAI and arun_turn reaches the same requests and results."""
    tools = Tools()
    script_openai(loopback, (two_calls("call_"), TEXT), ([], FINAL))

    turns = asyncio.run(aconverse_openai(loopback, tools.driver()))

    assert_openai_loop(loopback, tools, turns)


def test_async_anthropic_client_agent_loop_runs_both_calls_and_sends_their_results(
    loopback: LoopbackServer,
) -> None:
    """The same loop with AsyncAnthropic and arun_turn reaches the same requests and results."""
    tools = Tools()
    script_anthropic(loopback, (two_calls("toolu_"), TEXT), ([], FINAL))

    turns = asyncio.run(aconverse_anthropic(loopback, tools.driver()))

    assert_anthropic_loop(loopback, tools, turns)


def test_openai_client_repeated_call_id_is_answered_from_the_ledger(
    loopback: LoopbackServer,
) -> None:
    """A call id repeated in a later turn gets its recorded result; the tool does not rerun."""
    tools = Tools()
    calls = two_calls("call_")
    script_openai(loopback, (calls, TEXT), (calls[:1], AGAIN), ([], FINAL))

    turns = converse_openai(loopback, tools.driver())

    assert tools.counts() == {"get_weather": 1, "search": 1}
    assert [t.text for t in turns] == [TEXT, AGAIN, FINAL]
    assert turns[1].results == (turns[0].results[0],)
    third = requests_to(loopback, OPENAI_PATH, 3)[2]
    assert third[-2]["tool_calls"][0]["id"] == "call_W7gK2pXq"
    assert third[-1] == {
        "role": "tool",
        "tool_call_id": "call_W7gK2pXq",
        "content": FORECAST_CONTENT,
    }


def test_anthropic_client_repeated_call_id_is_answered_from_the_ledger(
    loopback: LoopbackServer,
) -> None:
    """A call id repeated in a later turn gets its recorded result; the tool does not rerun."""
    tools = Tools()
    calls = two_calls("toolu_")
    script_anthropic(loopback, (calls, TEXT), (calls[:1], AGAIN), ([], FINAL))

    turns = converse_anthropic(loopback, tools.driver())

    assert tools.counts() == {"get_weather": 1, "search": 1}
    assert [t.text for t in turns] == [TEXT, AGAIN, FINAL]
    assert turns[1].results == (turns[0].results[0],)
    third = requests_to(loopback, ANTHROPIC_PATH, 3)[2]
    assert third[-2]["content"][1]["id"] == "toolu_W7gK2pXq"
    assert third[-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_W7gK2pXq", "content": FORECAST_CONTENT}
        ],
    }
