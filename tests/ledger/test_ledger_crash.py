"""At most once across crashes and processes: real worker processes, SIGKILL, a restarted Redis.

A worker process (tests/ledger_child.py) plays a conversation whose tool appends to a
file, and sends itself SIGKILL at one point of the call: before the start record, after
it, inside the tool, after the tool before its answer is recorded, after that. A new
process then resumes every conversation from its saved history. In every case the tool
ran at most once, the history answers every call, and the answer says what happened.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate import Ledger, arun_turn, run_turn
from ledger_turns import aiter, counted, one_call
from redis_server import RedisServer, need_client, redis_url  # noqa: F401 (a fixture)

CHILD = Path(__file__).parents[1] / "ledger_child.py"
EXPIRY = 0.3
"""The start records' expiry in these tests (their tool has no timeout)."""

POINTS = {
    "before_start": (1, "18 C in Oslo"),
    "after_start": (0, "its result was lost; it was not run again"),
    "in_tool": (1, "its result was lost; it was not run again"),
    "before_result": (1, "its result was lost; it was not run again"),
    "after_result": (1, "18 C in Oslo"),
}
"""Each kill point: the runs once the conversation is resumed, and what it is told."""


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if request.param == "sqlite":
        return {"backend": "sqlite", "where": str(tmp_path / "ledger.db")}
    url = request.getfixturevalue("redis_url")
    return {"backend": "redis", "where": url, "prefix": f"crash:{time.time_ns()}:"}


def workers(spec: dict[str, Any]) -> list[list[int]]:
    """Run the phases of ``spec`` in worker processes (tests/ledger_child.py): their exits."""
    done = subprocess.run(
        [sys.executable, str(CHILD), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise AssertionError(f"the workers failed ({done.returncode}):\n{done.stderr}")
    exits: list[list[int]] = json.loads(done.stdout.splitlines()[-1])
    return exits


def answers(wire: str, messages: list[Any]) -> tuple[list[Any], list[str]]:
    """The calls of a saved history and the answers it gives them, in order."""
    calls: list[Any] = []
    given: list[str] = []
    for message in messages:
        if wire == "openai":
            calls += [c["id"] for c in message.get("tool_calls") or []]
            if message.get("role") == "tool":
                given.append(message["content"])
        else:
            for part in message.get("parts", []):
                if "functionCall" in part:
                    calls.append(part["functionCall"]["name"])
                if "functionResponse" in part:
                    given.append(json.dumps(part["functionResponse"]["response"]))
    return calls, given


def test_a_worker_killed_at_each_point_of_a_call_never_runs_it_twice(
    backend: dict[str, Any], tmp_path: Path
) -> None:
    conversations = [
        {
            "id": f"{wire}-{point}",
            "wire": wire,
            "kill": point,
            "effects": str(tmp_path / f"{wire}-{point}.effects"),
            "history": str(tmp_path / f"{wire}-{point}.json"),
        }
        for wire in ("openai", "gemini")
        for point in POINTS
    ]
    resumed = [{**c, "kill": None} for c in conversations]
    spec = {**backend, "expiry": EXPIRY, "pause": EXPIRY, "phases": [conversations, resumed]}

    assert workers(spec) == [[-signal.SIGKILL] * len(conversations), [0] * len(conversations)]

    for conversation in conversations:
        point, wire = conversation["kill"], conversation["wire"]
        effects = Path(conversation["effects"])
        ran = effects.read_text().splitlines() if effects.exists() else []
        runs, told = POINTS[point]
        messages = json.loads(Path(conversation["history"]).read_text())
        calls, given = answers(wire, messages)
        where = f"{wire}, killed {point}"
        assert ran == ["Oslo"] * runs, where
        assert len(calls) == len(given) == 1, where
        assert told in given[0], where


def test_two_workers_racing_on_one_call_run_it_exactly_once(
    backend: dict[str, Any], tmp_path: Path
) -> None:
    effects = str(tmp_path / "race.effects")
    racers = [
        {
            "id": "race",
            "wire": "openai",
            "kill": None,
            "effects": effects,
            "history": str(tmp_path / f"race-{n}.json"),
        }
        for n in range(2)
    ]
    spec = {**backend, "expiry": 30, "hold": 0.5, "go": str(tmp_path / "go"), "phases": [racers]}

    assert workers(spec) == [[0, 0]]
    assert Path(effects).read_text().splitlines() == ["Oslo"]
    told = sorted(
        answers("openai", json.loads((tmp_path / f"race-{n}.json").read_text()))[1][0]
        for n in range(2)
    )
    assert told[0] == "18 C in Oslo"
    assert "is running in another worker" in told[1] and "not run again" in told[1]


# -- Redis restarted mid-turn ---------------------------------------------------------------


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own (append-only, fsync always), to stop and restart."""
    need_client()
    server = RedisServer(tmp_path / "redis", appendonly=True).start()
    yield server
    server.stop()


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_a_redis_restarted_mid_turn_never_lets_a_call_run_without_its_start_record(
    own_redis: RedisServer, loop: str
) -> None:
    driver, runs = counted()
    ledger = Ledger.redis(own_redis.url, conversation="restart", socket_connect_timeout=0.5)
    chunks = one_call("call_1", {"city": "Oslo"})

    def stopping_mid_turn() -> Iterator[Any]:
        yield chunks[0]
        own_redis.stop(signal.SIGKILL)
        yield from chunks[1:]

    def play(source: Any) -> Any:
        buffer = driver.new_stream_buffer(ledger=ledger)
        if loop == "sync":
            return run_turn(source, driver, buffer)
        return asyncio.run(arun_turn(aiter(source), driver, buffer))

    down = play(stopping_mid_turn())
    assert runs == []
    assert "the ledger could not record it" in down.results[0].content

    own_redis.start()
    up = play(chunks)
    own_redis.stop(signal.SIGKILL)  # the answer's record is on disk (appendfsync always)
    own_redis.start()
    ledger = Ledger.redis(own_redis.url, conversation="restart")  # another worker
    again = play(chunks)

    assert runs == ["Oslo"]
    assert up.results[0].content == "18 C in Oslo"
    assert (again.results[0].content, again.results[0].replayed) == ("18 C in Oslo", True)
