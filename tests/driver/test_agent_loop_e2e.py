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
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
import pytest

import callgate
from callgate import Tool, Turn
from callgate.testing.builders import split
from callgate.testing.wires import WireCall
from loopback import (
    SEARCH,
    TEXT,
    WEATHER,
    Cut,
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
from provider_rules import validate_anthropic, validate_openai

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
    return driver.tool_specs("openai")


def anthropic_tools(driver: callgate.Driver) -> list[Any]:
    return driver.tool_specs("anthropic")


def converse_openai(
    server: LoopbackServer,
    driver: callgate.Driver,
    max_turns: int = MAX_TURNS,
    *,
    helper: bool = False,
) -> list[Turn]:
    """Turns until one calls nothing: each request is the previous one plus its history.

    ``helper`` streams with ``client.chat.completions.stream(...)`` and its events.
    """
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    with openai_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < max_turns, "the agent loop did not end"
            options: dict[str, Any] = {
                "model": "gpt-4.1",
                "messages": messages,
                "tools": openai_tools(driver),
            }
            stream: Any = (
                client.chat.completions.stream(**options)
                if helper
                else client.chat.completions.create(**options, stream=True)
            )
            with stream as events:
                turns.append(callgate.run_turn(events, driver, buffer))
            messages = messages + list(turns[-1].history)
    return turns


def converse_anthropic(
    server: LoopbackServer, driver: callgate.Driver, max_turns: int = MAX_TURNS
) -> list[Turn]:
    """Turns until one calls nothing: each request is the previous one plus its history."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    with anthropic_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < max_turns, "the agent loop did not end"
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


async def aconverse_openai(
    server: LoopbackServer, driver: callgate.Driver, max_turns: int = MAX_TURNS
) -> list[Turn]:
    """:func:`converse_openai` with ``AsyncOpenAI`` and ``arun_turn``."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    async with async_openai_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < max_turns, "the agent loop did not end"
            stream = await client.chat.completions.create(
                model="gpt-4.1", messages=messages, tools=openai_tools(driver), stream=True
            )
            async with stream:
                turns.append(await callgate.arun_turn(stream, driver, buffer))
            messages = messages + list(turns[-1].history)
    return turns


async def aconverse_anthropic(
    server: LoopbackServer, driver: callgate.Driver, max_turns: int = MAX_TURNS
) -> list[Turn]:
    """:func:`converse_anthropic` with ``AsyncAnthropic`` and ``arun_turn``."""
    buffer = driver.new_stream_buffer()
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns: list[Turn] = []
    async with async_anthropic_client(server) as client:
        while not turns or turns[-1].called:
            assert len(turns) < max_turns, "the agent loop did not end"
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
    """The messages of each request, after checking there were ``count`` streaming ones,
    each valid for the SDK's request param types and the provider's tool-call rules."""
    assert [(p, body.get("stream")) for p, body in server.requests] == [(path, True)] * count
    assert server.writes > 100
    requests = [body["messages"] for _, body in server.requests]
    for messages in requests:
        (validate_openai if path == OPENAI_PATH else validate_anthropic)(messages)
    return requests


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
    assert turns[0].status == "pass" and turns[0].called
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
    # The recorded answer, under a stand-in id: Anthropic refuses a repeated tool_use id.
    (repeat,) = turns[1].results
    assert repeat.content == turns[0].results[0].content == FORECAST_CONTENT
    assert repeat.call.id == "callgate_1"
    third = requests_to(loopback, ANTHROPIC_PATH, 3)[2]
    assert third[-2]["content"][1]["id"] == "callgate_1"
    assert third[-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "callgate_1", "content": FORECAST_CONTENT}
        ],
    }


# -- a troubled conversation: nobody's call, a reused id, a raising tool, a cut stream -----

MAIL = {"to": "ops@example.com"}
ROME = {"city": "Roma", "days": [3]}
PARIS = {"city": "Paris", "days": [1]}
CUT_AT = 7
"""The third turn's stream stops after this many characters of its call's arguments."""


class TroubledTools:
    """get_weather answers; search raises. ``asynchronous`` makes both ``async def``."""

    def __init__(self, asynchronous: bool) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.asynchronous = asynchronous

    def weather(self, city: str, days: list[int], note: str = "") -> str:
        self.calls.append(("get_weather", {"city": city, "days": days}))
        return f"{city}: ☔ 12 °C"

    def search(self, query: str, tags: Sequence[str] = (), limit: int = 10) -> str:
        self.calls.append(("search", {"query": query}))
        raise RuntimeError("the index is offline")

    def driver(self) -> callgate.Driver:
        weather, search = self.weather, self.search
        if self.asynchronous:

            async def aweather(**arguments: Any) -> str:
                await asyncio.sleep(0)
                return weather(**arguments)

            async def asearch(**arguments: Any) -> str:
                await asyncio.sleep(0)
                return search(**arguments)

            return callgate.Driver(
                [
                    Tool("get_weather", WEATHER_SCHEMA, aweather),
                    Tool("search", SEARCH_SCHEMA, asearch),
                ]
            )
        return callgate.Driver(
            [Tool("get_weather", WEATHER_SCHEMA, weather), Tool("search", SEARCH_SCHEMA, search)]
        )


def troubled_calls(prefix: str) -> list[list[WireCall]]:
    """Per turn: a call nobody owns; a reused id and a raising tool; a call cut short."""
    return [
        [
            WireCall(f"{prefix}0", "get_weather", split(json.dumps(PARIS), (5,))),
            WireCall(f"{prefix}1", "send_mail", split(json.dumps(MAIL), (6,))),
        ],
        [
            WireCall(f"{prefix}0", "get_weather", split(json.dumps(ROME), (4,))),
            WireCall(f"{prefix}1", "search", split(json.dumps({"query": "café"}), (3,))),
        ],
        [WireCall(f"{prefix}2", "get_weather", split(json.dumps(PARIS)[:CUT_AT], (3,)))],
    ]


def script_troubled(server: LoopbackServer, wire: str) -> None:
    first, second, third = troubled_calls("call_" if wire == "openai" else "toolu_")
    if wire == "openai":
        cut = recorded_openai(third, AGAIN)[:-1]  # no finish_reason chunk, no [DONE]
        server.scripts[OPENAI_PATH] = [
            openai_sse(recorded_openai(first)),
            openai_sse(recorded_openai(second)),
            "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in cut).encode(),
            openai_sse(recorded_openai([], FINAL)),
        ]
    else:
        events = recorded_anthropic(third, AGAIN)
        cut = [e for e in events if e["type"] != "content_block_stop" or e["index"] == 0][:-2]
        server.scripts[ANTHROPIC_PATH] = [
            anthropic_sse(recorded_anthropic(first)),
            anthropic_sse(recorded_anthropic(second)),
            anthropic_sse(cut),
            anthropic_sse(recorded_anthropic([], FINAL)),
        ]


CONVERSE = {
    ("openai", False): lambda s, d: converse_openai(s, d, max_turns=5),
    ("anthropic", False): lambda s, d: converse_anthropic(s, d, max_turns=5),
    ("openai", True): lambda s, d: asyncio.run(aconverse_openai(s, d, max_turns=5)),
    ("anthropic", True): lambda s, d: asyncio.run(aconverse_anthropic(s, d, max_turns=5)),
}


@pytest.mark.parametrize(("wire", "asynchronous"), list(CONVERSE))
def test_a_troubled_conversation_reaches_its_end_with_every_call_answered(
    loopback: LoopbackServer, wire: str, asynchronous: bool
) -> None:
    """Every request keeps the provider's rules; each problem is told to the model."""
    tools = TroubledTools(asynchronous)
    script_troubled(loopback, wire)
    loopback.write_sizes = (29, 67, 41)  # the SSE splits are the first tests' concern

    turns = CONVERSE[wire, asynchronous](loopback, tools.driver())

    assert loopback.refused == []
    path = OPENAI_PATH if wire == "openai" else ANTHROPIC_PATH
    requests_to(loopback, path, 4)
    assert [t.text for t in turns] == [TEXT, TEXT, AGAIN, FINAL]
    assert [t.status for t in turns] == ["fail", "pass", "fail", "not_applicable"]
    prefix = "call_" if wire == "openai" else "toolu_"
    first, second, third = (answered(t) for t in turns[:3])
    assert [(i, name, error) for i, name, _, _, error in first] == [
        (f"{prefix}0", "get_weather", True),
        (f"{prefix}1", "send_mail", True),
    ]
    assert "send_mail is not available here" in first[1][3]
    slot = 1 if wire == "openai" else 2  # Anthropic's content block 0 is the text
    assert f"blocked with its turn: the call in slot {slot} names an unknown tool" in first[0][3]
    # Turn 2 reuses turn 1's ids; Anthropic refuses a repeated tool_use id: stand-ins.
    again = [f"{prefix}0", f"{prefix}1"] if wire == "openai" else ["callgate_1", "callgate_2"]
    assert second == [
        (again[0], "get_weather", ROME, "Roma: ☔ 12 °C", False),
        (again[1], "search", {"query": "café"}, "RuntimeError: the index is offline", True),
    ]
    ((call_id, name, _, content, error),) = third
    assert (call_id, name, error) == (f"{prefix}2", "get_weather", True)
    assert "missing_terminal" in content and json.dumps(PARIS)[:CUT_AT] in content
    assert tools.calls == [("get_weather", ROME), ("search", {"query": "café"})]


# -- the SDKs' stream helpers, and a connection that drops mid-turn ------------------------


def test_openai_stream_helper_events_play_the_same_loop(loopback: LoopbackServer) -> None:
    """``client.chat.completions.stream(...)`` yields helper events; the turn is the same."""
    tools = Tools()
    script_openai(loopback, (two_calls("call_"), TEXT), ([], FINAL))

    turns = converse_openai(loopback, tools.driver(), helper=True)

    assert_openai_loop(loopback, tools, turns)


def test_async_anthropic_stream_helper_events_play_the_same_loop(
    loopback: LoopbackServer,
) -> None:
    """``client.messages.stream(...)`` adds its own events; the turn is the same."""
    tools = Tools()
    driver = tools.driver()
    script_anthropic(loopback, (two_calls("toolu_"), TEXT), ([], FINAL))

    async def converse() -> list[Turn]:
        buffer = driver.new_stream_buffer()
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        turns: list[Turn] = []
        async with async_anthropic_client(loopback) as client:
            while not turns or turns[-1].called:
                assert len(turns) < MAX_TURNS, "the agent loop did not end"
                async with client.messages.stream(
                    model="claude-loopback-test",
                    max_tokens=256,
                    messages=messages,
                    tools=anthropic_tools(driver),
                ) as stream:
                    turns.append(await callgate.arun_turn(stream, driver, buffer))
                messages = messages + list(turns[-1].history)
        return turns

    assert_anthropic_loop(loopback, tools, asyncio.run(converse()))


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_connection_dropped_mid_turn_keeps_the_partial_turn_and_the_loop_goes_on(
    loopback: LoopbackServer, asynchronous: bool
) -> None:
    """The SDK raises mid-stream; TurnError holds the turn, whose history the API accepts."""
    tools = Tools()
    driver = tools.driver()
    body = openai_sse(recorded_openai(two_calls("call_"), TEXT))
    loopback.scripts[OPENAI_PATH] = [
        Cut(body, len(body) * 2 // 3),
        openai_sse(recorded_openai([], FINAL)),
    ]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    buffer = driver.new_stream_buffer()

    def once(client: Any) -> Turn:
        stream = client.chat.completions.create(
            model="gpt-4.1", messages=messages, tools=openai_tools(driver), stream=True
        )
        with stream:
            return callgate.run_turn(stream, driver, buffer)

    async def aonce(client: Any) -> Turn:
        stream = await client.chat.completions.create(
            model="gpt-4.1", messages=messages, tools=openai_tools(driver), stream=True
        )
        async with stream:
            return await callgate.arun_turn(stream, driver, buffer)

    async def play_async() -> Turn:
        async with async_openai_client(loopback) as client:
            with pytest.raises(callgate.TurnError) as caught:
                await aonce(client)
            messages.extend(caught.value.turn.history)
            return await aonce(client)

    if asynchronous:
        final = asyncio.run(play_async())
    else:
        with openai_client(loopback) as client:
            with pytest.raises(callgate.TurnError) as caught:
                once(client)
            messages.extend(caught.value.turn.history)
            final = once(client)

    assert tools.calls == []
    assert loopback.refused == []
    second = requests_to(loopback, OPENAI_PATH, 2)[1]
    validate_openai(second)
    assert [m["role"] for m in second[1:]] == ["assistant", "tool", "tool"]
    assert all("was not run" in m["content"] for m in second[2:])
    assert final.text == FINAL


# -- a server that ends its calls with finish_reason "stop" --------------------------------

RETRY = re.compile(r"(?<!do not )\b(send the call again|call again)\b", re.IGNORECASE)
"""What a model reads as "your call was wrong, make it again"."""


def stop_ending_model(request: dict[str, Any]) -> bytes:
    """A model behind a server that ends calls with ``stop`` (api.openai.com under a named
    ``tool_choice``, vLLM): it calls get_weather, answers once the tool answered, and
    makes the same call again whenever the answer asks it to."""
    last = request["messages"][-1]
    if last["role"] == "tool" and not RETRY.search(last["content"]):
        return openai_sse(recorded_openai([], FINAL))
    chunks = recorded_openai(two_calls("call_")[:1])
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    return openai_sse(chunks)


STOP_LOOPS = {
    "sync": converse_openai,
    "async": lambda s, d: asyncio.run(aconverse_openai(s, d)),
}


@pytest.mark.parametrize("loop", list(STOP_LOOPS))
def test_the_readme_loop_converges_against_a_server_that_ends_calls_with_stop(
    loopback: LoopbackServer, loop: str
) -> None:
    """By default a complete, valid call ended by ``stop`` runs: two requests, one run."""
    tools = Tools()
    loopback.responders[OPENAI_PATH] = stop_ending_model

    turns = STOP_LOOPS[loop](loopback, tools.driver())

    assert loopback.refused == []
    requests_to(loopback, OPENAI_PATH, 2)
    assert tools.calls == [("get_weather", WEATHER)]
    assert [t.status for t in turns] == ["pass", "not_applicable"]
    assert [f.code for f in turns[0].findings] == ["stop_finish_reason"]
    assert turns[0].results[0].content == FORECAST_CONTENT
    assert turns[-1].text == FINAL


@pytest.mark.parametrize("loop", list(STOP_LOOPS))
def test_under_strict_finish_the_loop_ends_with_an_answer_that_does_not_ask_for_a_retry(
    loopback: LoopbackServer, loop: str
) -> None:
    """The seed's rule refuses the call; the answer says the server ended the turn, and the
    model, not told its call was wrong, does not make it again."""
    tools = Tools()
    loopback.responders[OPENAI_PATH] = stop_ending_model
    strict = callgate.Driver(list(tools.driver().tools.values()), strict_finish=True)

    turns = STOP_LOOPS[loop](loopback, strict)

    assert loopback.refused == []
    second = requests_to(loopback, OPENAI_PATH, 2)[1]
    assert tools.calls == []
    assert [t.status for t in turns] == ["fail", "not_applicable"]
    [answer] = turns[0].results
    assert answer.is_error and answer.refused
    assert "wrong_terminal_reason" in answer.content and "reason 'stop'" in answer.content
    assert "The server ended the turn" in answer.content and "not at fault" in answer.content
    assert not RETRY.search(answer.content)
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_W7gK2pXq",
        "content": answer.content,
    }
    assert turns[-1].text == FINAL


# -- Anthropic's request rules: no whitespace-only text block, no repeated tool_use id -----


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_whitespace_text_block_is_left_out_of_the_next_anthropic_request(
    loopback: LoopbackServer, asynchronous: bool
) -> None:
    """Claude often opens a call's turn with "\\n\\n" as its text; the API refuses that block
    in a request ("text content blocks must contain non-whitespace text")."""
    tools = Tools()
    script_anthropic(loopback, (two_calls("toolu_")[:1], "\n\n"), ([], FINAL))

    turns = (
        asyncio.run(aconverse_anthropic(loopback, tools.driver()))
        if asynchronous
        else converse_anthropic(loopback, tools.driver())
    )

    assert loopback.refused == []
    second = requests_to(loopback, ANTHROPIC_PATH, 2)[1]
    assert [b["type"] for b in second[1]["content"]] == ["tool_use"]
    assert tools.calls == [("get_weather", WEATHER)]
    assert [t.text for t in turns] == ["\n\n", FINAL]


def test_the_loopback_server_refuses_what_anthropic_refuses(loopback: LoopbackServer) -> None:
    """The rules the loops above are held to: the server answers such a request with 400."""
    script_anthropic(loopback, ([], FINAL))
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    messages = [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": [{"type": "text", "text": " \n"}, use]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    with anthropic_client(loopback) as client, pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="claude-loopback-test", max_tokens=16, messages=messages, stream=True
        )
    assert "text content blocks must contain non-whitespace text" in str(caught.value)
    assert "tool_use ids must be unique" in str(caught.value)
