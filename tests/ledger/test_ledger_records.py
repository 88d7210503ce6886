"""The ledger's records as a user meets them: what it holds, answers, refuses and keeps.

Each test drives a :class:`~callgate.Ledger` through its public methods (start, record,
forget, turns) on a memory store, a store that fails, or a real SQLite file, and checks
what the ledger says about a call and what a second ledger on the same store says.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from callgate import Driver, Ledger, Tool, run_turn
from callgate.ledger import LedgerUnavailable, MemoryStore, Record, call_key, stream_identity
from callgate.ledger.sqlite import SQLiteStore
from callgate.strategies.base import ExtractedCall, ToolResult
from callgate.testing.builders import anthropic_events
from callgate.testing.wires import WireCall
from ledger_turns import one_call
from redis_server import need_client, redis_url  # noqa: F401 (a fixture)

CALL = ExtractedCall("call_1", "get_weather", {"city": "Lima"}, 0)


def ledger_on(store: Any, owner: str = "w1", at: float = 1000.0) -> Ledger:
    ledger = Ledger(store, conversation="chat-1", owner=owner)
    ledger.clock = lambda: at
    return ledger


# -- a running call -----------------------------------------------------------------------------


def test_a_started_call_is_held_by_id_counted_and_answered_as_still_running() -> None:
    ledger = ledger_on(MemoryStore())
    assert "call_1" not in ledger and len(ledger) == 0
    assert ledger.start(CALL) is None
    assert "call_1" in ledger, "docs: the ledger holds a started call's id"
    assert len(ledger) == 1
    running = ledger.get(CALL)
    assert running is not None and running.is_error and running.replayed
    assert running.content == (
        "The call to get_weather is still running, started at 1970-01-01T00:16:40Z; it was "
        "not run again, and its outcome is not known yet."
    )
    assert ledger.start(CALL) == running


def test_an_id_less_call_is_held_by_its_turn_not_by_an_id() -> None:
    ledger = ledger_on(MemoryStore())
    nameless = ExtractedCall(None, "get_weather", {"city": "Lima"}, 0)
    assert ledger.start(nameless) is None
    assert None not in ledger and "" not in ledger
    assert len(ledger) == 1


def test_an_answer_is_recorded_replayed_and_read_by_another_ledger_on_the_store() -> None:
    store = MemoryStore()
    ledger = ledger_on(store)
    ledger.start(CALL)
    ledger.record(ToolResult(CALL, "21 C", is_error=False))
    again = ExtractedCall("call_1", "get_weather", {"city": "Lima"}, 3)
    answer = ledger.get(again)
    assert answer is not None
    assert (answer.content, answer.replayed, answer.call.slot) == ("21 C", True, 3)
    other = ledger_on(store, owner="w2")
    assert other.get(CALL) is None, "another ledger knows nothing until it asks the store"
    replayed = other.start(CALL)
    assert replayed is not None and (replayed.content, replayed.replayed) == ("21 C", True)
    assert other.get(CALL) == replayed, "once read, the answer is known without the store"
    assert len(store) == 1


def test_a_refused_error_answer_keeps_both_marks_across_ledgers() -> None:
    store = MemoryStore()
    ledger_on(store).start(CALL)
    ledger_on(store).record(ToolResult(CALL, "no", is_error=True, refused=True))
    answer = ledger_on(store, owner="w9").start(CALL)
    assert answer is not None and (answer.is_error, answer.refused) == (True, True)


@pytest.mark.parametrize(
    ("age", "says"),
    [
        (299.0, "is running in another worker (w2), started at"),
        (300.0, "started earlier but its result was lost"),
        (1000.0, "started earlier but its result was lost"),
    ],
)
def test_a_call_another_worker_started_is_running_until_the_expiry_then_lost(
    age: float, says: str
) -> None:
    store = MemoryStore()
    ledger_on(store, owner="w2", at=1000.0).start(CALL)
    answer = ledger_on(store, owner="w1", at=1000.0 + age).start(CALL)
    assert answer is not None and answer.is_error and answer.replayed
    assert says in answer.content


def test_a_start_record_of_this_owner_from_an_earlier_process_is_lost_not_running() -> None:
    store = MemoryStore()
    ledger_on(store, owner="w1").start(CALL)
    restarted = ledger_on(store, owner="w1", at=1001.0)
    answer = restarted.start(CALL)
    assert answer is not None and "its result was lost" in answer.content


def test_forgetting_a_start_lets_the_call_run_and_keeps_a_done_record() -> None:
    store = MemoryStore()
    ledger = ledger_on(store)
    ledger.start(CALL)
    ledger.forget(CALL)
    assert ledger.get(CALL) is None and len(store) == 0
    assert ledger.start(CALL) is None
    ledger.record(ToolResult(CALL, "ran"))
    ledger.forget(CALL)
    assert len(store) == 1
    other = ledger_on(store, owner="w2").start(CALL)
    assert other is not None and other.content == "ran"


def test_another_owners_start_record_is_not_taken_back() -> None:
    store = MemoryStore()
    ledger_on(store, owner="w2").start(CALL)
    ledger_on(store, owner="w1").forget(CALL)
    assert len(store) == 1


# -- a store that fails -------------------------------------------------------------------------


class Failing(MemoryStore):
    """A store whose every write raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        raise self.error

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        raise self.error

    def finish(self, conversation: str, key: str, record: Record) -> None:
        raise self.error

    def forget(self, conversation: str, key: str, owner: str) -> None:
        raise self.error


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_a_store_error_on_start_is_ledger_unavailable_and_nothing_is_held(loop: str) -> None:
    ledger = ledger_on(Failing(OSError("disk full")))
    with pytest.raises(LedgerUnavailable, match=r"^OSError: disk full$") as raised:
        if loop == "sync":
            ledger.start(CALL)
        else:
            asyncio.run(ledger.astart(CALL))
    assert isinstance(raised.value.__cause__, OSError)
    assert "call_1" not in ledger and len(ledger) == 0


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_the_stores_own_unavailable_error_passes_as_it_is(loop: str) -> None:
    error = LedgerUnavailable("the ledger file x.db: locked")
    ledger = ledger_on(Failing(error))
    with pytest.raises(LedgerUnavailable) as raised:
        if loop == "sync":
            ledger.start(CALL)
        else:
            asyncio.run(ledger.astart(CALL))
    assert raised.value is error


def test_an_answer_the_store_cannot_write_is_kept_here_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = ledger_on(Failing(OSError("disk full")))
    with caplog.at_level(logging.ERROR, logger="callgate"):
        ledger.record(ToolResult(CALL, "21 C"))
        ledger.forget(CALL)
    answer = ledger.get(CALL)
    assert answer is not None and answer.content == "21 C"
    assert [r.getMessage() for r in caplog.records] == [
        f"the ledger could not record an answer (call key {ledger.key(CALL)})",
        "the ledger could not take back the start of get_weather",
    ]


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_an_async_start_answers_as_the_sync_one(loop: str) -> None:
    store = MemoryStore()
    ledger_on(store, owner="w2").start(CALL)
    ledger = ledger_on(store, at=1001.0)
    answer = ledger.start(CALL) if loop == "sync" else asyncio.run(ledger.astart(CALL))
    assert answer is not None and "running in another worker (w2)" in answer.content
    fresh = ExtractedCall("call_2", "get_weather", {"city": "Oslo"}, 1)
    assert (ledger.start(fresh) if loop == "sync" else asyncio.run(ledger.astart(fresh))) is None
    assert "call_2" in ledger


# -- which calls are the same call --------------------------------------------------------------


def test_a_calls_key_is_its_id_tool_and_canonical_arguments() -> None:
    one = call_key(ExtractedCall("c", "t", {"a": 1, "b": 2}, 0), "#1")
    assert one == call_key(ExtractedCall("c", "t", {"b": 2, "a": 1}, 5), "#9")
    assert one != call_key(ExtractedCall("c", "t", {"a": 1, "b": 3}, 0), "#1")
    assert one != call_key(ExtractedCall("c", "u", {"a": 1, "b": 2}, 0), "#1")
    assert one != call_key(ExtractedCall("d", "t", {"a": 1, "b": 2}, 0), "#1")
    bare = ExtractedCall(None, "t", {"a": 1}, 0)
    assert call_key(bare, "#1") == call_key(ExtractedCall("", "t", {"a": 1}, 0), "#1")
    assert call_key(bare, "#1") != call_key(bare, "#2")
    assert call_key(bare, "#1") != call_key(ExtractedCall(None, "t", {"a": 1}, 1), "#1")
    assert len(one) == 64 and int(one, 16) >= 0


def test_a_calls_key_is_made_once_in_a_turn_however_often_the_ledger_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run asks for the key to look the call up, start it and record it: one hashing."""
    made: list[str] = []

    def counted(call: ExtractedCall, turn: str) -> str:
        made.append(turn)
        return call_key(call, turn)

    monkeypatch.setattr("callgate.ledger.call_key", counted)
    ledger = ledger_on(MemoryStore())
    ledger.next_turn()
    assert ledger.get(CALL) is None and ledger.start(CALL) is None
    ledger.record(ToolResult(CALL, "sunny"))
    assert made == ["#1"]
    assert ledger.key(CALL) == call_key(CALL, "#1")
    twin = ExtractedCall("call_1", "get_weather", {"city": "Lima"}, 0)
    assert ledger.key(twin) == ledger.key(CALL) and made == ["#1", "#1"]
    ledger.next_turn()
    replayed = ledger.start(CALL)
    assert made == ["#1", "#1", "#2"] and replayed is not None and replayed.replayed


@pytest.mark.parametrize(
    ("chunk", "identity"),
    [
        ({"id": "chatcmpl-1", "message": {"id": "msg_1"}}, "id=chatcmpl-1"),
        ({"type": "message_start", "message": {"id": "msg_1"}}, "message.id=msg_1"),
        ({"type": "response.created", "response": {"id": "resp_1"}}, "response.id=resp_1"),
        ({"responseId": "g1"}, "responseId=g1"),
        ({"created_at": "2025-01-01T00:00:00Z"}, "created_at=2025-01-01T00:00:00Z"),
        ({"id": "", "responseId": "g2"}, "responseId=g2"),
        ({"id": 7, "message": "x"}, None),
        ({"contentBlockDelta": {}}, None),
    ],
)
def test_a_streams_identity_is_read_from_its_first_chunk(
    chunk: dict[str, Any], identity: str | None
) -> None:
    assert stream_identity(chunk) == identity


def test_an_id_less_call_is_new_in_each_finished_turn_and_the_same_in_a_retried_one() -> None:
    ledger = ledger_on(MemoryStore())
    bare = ExtractedCall(None, "get_weather", {"city": "Lima"}, 0)
    ledger.next_turn()
    first = ledger.key(bare)
    ledger.repeat_turn()
    ledger.next_turn()
    assert (ledger.turn, ledger.key(bare)) == (1, first)
    ledger.next_turn()
    assert ledger.turn == 2 and ledger.key(bare) != first
    ledger.identify({"id": "chatcmpl-9"})
    ledger.identify({"id": "chatcmpl-other"})
    assert ledger.stream == "id=chatcmpl-9"
    keyed = ledger.key(bare)
    ledger.next_turn()
    assert ledger.stream is None and ledger.key(bare) != keyed
    ledger.identify({"id": "chatcmpl-9"})
    assert ledger.key(bare) == keyed, "a retry of the same stream meets the same call"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (
            {"store": MemoryStore()},
            "^a ledger on a store of its own needs conversation=: the id of the conversation, "
            "the same on every worker and after a restart$",
        ),
        ({"conversation": ""}, "conversation must be a non-empty string"),
        ({"conversation": 5}, "conversation must be a non-empty string"),
        ({"expiry": 0}, "expiry must be a number of seconds > 0"),
        ({"expiry": "5"}, "expiry must be a number of seconds > 0"),
    ],
)
def test_a_ledger_that_cannot_keep_its_promise_is_refused(
    options: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        Ledger(**options)


def test_a_ledger_of_its_own_has_a_conversation_an_owner_and_the_default_expiry() -> None:
    one, two = Ledger(), Ledger()
    assert one.conversation != two.conversation and one.owner != two.owner
    assert one.expiry == 300.0 and isinstance(one.expiry, float)
    assert Ledger(expiry=2).expiry == 2.0
    assert Ledger(expiry=0.5).expiry == 0.5, "any positive number of seconds is an expiry"


def test_a_ledgers_own_owner_names_its_host_its_process_and_the_ledger() -> None:
    host, pid = re.escape(socket.gethostname()), os.getpid()
    assert re.fullmatch(rf"{host}:{pid}:[0-9a-f]{{8}}", Ledger().owner)
    assert Ledger(owner="worker-7").owner == "worker-7"


# -- records and the SQLite file ----------------------------------------------------------------


def test_a_record_reads_back_what_it_wrote_and_refuses_anything_else() -> None:
    record = Record("done", "h:1:ab", 12.5, "résumé \u2603", True, True)
    assert Record.loads(record.dumps()) == record
    assert Record.loads(record.dumps().encode()) == record
    assert record.dumps() == '["done","h:1:ab",12.5,"résumé \u2603",true,true]'
    for text in ("not json", "[1, 2]", '["gone", "o", 1, "", false, false]', "null"):
        with pytest.raises(LedgerUnavailable, match="a ledger record"):
            Record.loads(text)


def test_a_sqlite_ledger_survives_its_process_and_is_shared_by_another(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    first = Ledger.sqlite(path, conversation="chat-1", expiry=60, synchronous="NORMAL")
    assert first.expiry == 60.0
    assert first.start(CALL) is None
    second = Ledger.sqlite(path, conversation="chat-1")
    running = second.start(CALL)
    assert running is not None and "running in another worker" in running.content
    first.record(ToolResult(CALL, "21 C"))
    answer = second.start(CALL)
    assert answer is not None and (answer.content, answer.replayed) == ("21 C", True)
    elsewhere = Ledger.sqlite(path, conversation="chat-2")
    assert elsewhere.start(CALL) is None, "two conversations never share records"
    rows = sqlite3.connect(path).execute(
        "SELECT conversation, state FROM callgate_ledger ORDER BY conversation"
    )
    assert rows.fetchall() == [("chat-1", "done"), ("chat-2", "started")]


def test_a_sqlite_start_taken_back_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    store = SQLiteStore(path)
    mine = Record("started", "w1", 1.0)
    assert store.start("c", "k", mine) is None
    assert store.start("c", "k", Record("started", "w2", 2.0)) == mine
    store.forget("c", "k", "w2")
    assert store.start("c", "k", mine) == mine
    store.forget("c", "k", "w1")
    assert asyncio.run(store.astart("c", "k", Record("started", "w2", 3.0))) is None
    done = Record("done", "w2", 4.0, "ok")
    asyncio.run(store.afinish("c", "k", done))
    store.forget("c", "k", "w2")
    assert store.start("c", "k", mine) == done
    store.close()
    with pytest.raises(LedgerUnavailable, match="the ledger file"):
        store.finish("c", "k", done)


def test_a_sqlite_store_refuses_an_unknown_synchronous_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous must be 'FULL' or 'NORMAL', not 'OFF'"):
        SQLiteStore(tmp_path / "x.db", synchronous="OFF")  # type: ignore[arg-type]
    assert not (tmp_path / "x.db").exists()


def test_a_lost_call_and_an_interrupted_one_are_told_so_in_full() -> None:
    store = MemoryStore()
    ledger_on(store, owner="w2").start(CALL)
    lost = ledger_on(store, owner="w1", at=5000.0).start(CALL)
    assert lost is not None and lost.content == (
        "The call to get_weather started earlier but its result was lost; it was not run "
        "again, and whether it took effect is unknown."
    )
    runs: list[str] = []

    def get_weather(city: str) -> str:
        runs.append(city)
        raise KeyboardInterrupt

    driver = Driver([Tool("get_weather", {"type": "object"}, get_weather)])
    buffer = driver.new_stream_buffer()
    chunks = one_call("call_pay", {"city": "Lima"})
    with pytest.raises(KeyboardInterrupt):
        run_turn(chunks, driver, buffer)
    (result,) = run_turn(chunks, driver, buffer).results
    assert runs == ["Lima"]
    assert result.content == (
        "The call to get_weather was interrupted (KeyboardInterrupt) while it ran; it was not "
        "run again, and whether it took effect is unknown."
    )


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_a_start_answers_from_this_ledger_when_its_store_lost_the_answer(loop: str) -> None:
    ledger = ledger_on(Failing(OSError("disk full")))
    ledger.record(ToolResult(CALL, "21 C"))
    answer = ledger.start(CALL) if loop == "sync" else asyncio.run(ledger.astart(CALL))
    assert answer is not None and (answer.content, answer.replayed) == ("21 C", True)


def test_a_redis_ledger_takes_its_options(request: pytest.FixtureRequest) -> None:
    need_client()
    url = request.getfixturevalue("redis_url")
    ledger = Ledger.redis(url, conversation="opts", expiry=42, prefix="test:opts:", ttl=60)
    assert ledger.expiry == 42.0
    assert ledger.start(CALL) is None
    import redis

    client = redis.Redis.from_url(url)
    assert client.hlen("test:opts:opts") == 1
    assert 0 < client.pttl("test:opts:opts") <= 60_000
    client.delete("test:opts:opts")


def test_a_call_whose_arguments_hold_a_lone_surrogate_is_still_keyed_and_held() -> None:
    odd = ExtractedCall("call_odd", "echo", {"text": "\ud800"}, 0)
    ledger = ledger_on(MemoryStore())
    assert ledger.start(odd) is None and "call_odd" in ledger
    assert call_key(odd, "#1") != call_key(
        ExtractedCall("call_odd", "echo", {"text": "?"}, 0), "#1"
    )


def test_an_async_answer_the_store_cannot_write_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = ledger_on(Failing(OSError("disk full")))
    with caplog.at_level(logging.ERROR, logger="callgate"):
        asyncio.run(ledger.arecord(ToolResult(CALL, "21 C")))
    assert [r.getMessage() for r in caplog.records] == [
        f"the ledger could not record an answer (call key {ledger.key(CALL)})"
    ]
    answer = ledger.get(CALL)
    assert answer is not None and answer.content == "21 C"


def test_an_async_start_holds_the_call_as_running_here() -> None:
    ledger = ledger_on(MemoryStore())
    assert asyncio.run(ledger.astart(CALL)) is None
    running = ledger.get(CALL)
    assert running is not None and "is still running" in running.content
    again = asyncio.run(ledger.astart(CALL))
    assert again is not None and "is still running" in again.content


def test_a_call_answered_without_a_start_here_is_held_by_its_id() -> None:
    ledger = ledger_on(MemoryStore())
    answered = ExtractedCall("call_7", "get_weather", {"city": "Oslo"}, 0)
    ledger.record(ToolResult(answered, "12 C"))
    assert "call_7" in ledger and len(ledger) == 1


def test_id_less_calls_of_two_streams_are_two_calls_from_the_first_turn() -> None:
    store = MemoryStore()
    bare = ExtractedCall(None, "get_weather", {"city": "Lima"}, 0)
    one, two = ledger_on(store, owner="w1"), ledger_on(store, owner="w2")
    one.identify({"id": "chatcmpl-a"})
    two.identify({"id": "chatcmpl-b"})
    assert one.stream == "id=chatcmpl-a" and two.stream == "id=chatcmpl-b"
    assert one.start(bare) is None
    assert two.start(bare) is None, "another stream's call at the same place is another call"


def test_a_done_record_says_who_answered_it(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    ledger = Ledger.sqlite(path, conversation="chat-1")
    ledger.owner = "w9"
    ledger.start(CALL)
    ledger.record(ToolResult(CALL, "21 C"))
    [(text,)] = sqlite3.connect(path).execute("SELECT record FROM callgate_ledger").fetchall()
    assert (Record.loads(text).state, Record.loads(text).owner) == ("done", "w9")


def test_a_sqlite_ledger_passes_its_store_options_on(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous must be 'FULL' or 'NORMAL', not 'OFF'"):
        Ledger.sqlite(tmp_path / "x.db", conversation="c", synchronous="OFF")


def test_a_store_that_cannot_record_a_start_runs_nothing_and_says_the_call_can_be_sent_again() -> (
    None
):
    runs: list[str] = []

    def get_weather(city: str) -> str:
        runs.append(city)
        return "21 C"

    driver = Driver([Tool("get_weather", {"type": "object"}, get_weather)])
    buffer = driver.new_stream_buffer(ledger=ledger_on(Failing(OSError("disk full"))))
    (result,) = run_turn(one_call("call_1", {"city": "Lima"}), driver, buffer).results
    assert runs == []
    assert (result.is_error, result.refused) == (True, True)
    assert result.content == (
        "The call to get_weather was not run: the ledger could not record it (OSError: disk "
        "full). Nothing ran; the call can be sent again."
    )


def test_arguments_json_cannot_write_are_keyed_by_their_repr() -> None:
    raw = ExtractedCall("c", "t", {"data": b"\x00\x01"}, 0)
    assert call_key(raw, "#1") == call_key(ExtractedCall("c", "t", {"data": b"\x00\x01"}, 4), "#2")
    assert call_key(raw, "#1") != call_key(ExtractedCall("c", "t", {"data": "\x00\x01"}, 0), "#1")
    ledger = ledger_on(MemoryStore())
    assert ledger.start(raw) is None and "c" in ledger


def test_an_anthropic_id_a_later_turn_repeats_goes_back_under_a_stand_in() -> None:
    def weather(call_id: str, city: str) -> WireCall:
        return WireCall(call_id, "get_weather", (json.dumps({"city": city}),))

    driver = Driver([Tool("get_weather", {"type": "object"}, lambda city: f"sun in {city}")])
    buffer = driver.new_stream_buffer()
    ids = []
    for city in ("Paris", "Rome"):
        chunks = anthropic_events([weather("toolu_1", city)], [0, 0, 0])
        ids.append(run_turn(chunks, driver, buffer).results[0].call.id)
    assert ids == ["toolu_1", "callgate_0"]


# -- a SQLite file another connection holds -----------------------------------------------------


def test_a_sqlite_file_locked_past_the_timeout_fails_the_start_closed(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    store = SQLiteStore(path, timeout=0.1)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.5, holder.rollback)
    release.start()
    try:
        with pytest.raises(
            LedgerUnavailable, match=r"^the ledger file .*calls\.db: database is locked$"
        ):
            store.start("c", "k", Record("started", "w1", 1.0))
    finally:
        release.join()
    assert store.start("c", "k", Record("started", "w1", 1.0)) is None, "free again: it starts"


class _TakenBackBeforeRead:
    """A store's connection whose first read finds the record gone: another worker took it
    back between the insert that found it and the read (a second connection deletes it)."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db, self.other, self.armed = db, sqlite3.connect(path, isolation_level=None), True

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        if self.armed and sql.lstrip().upper().startswith("SELECT"):
            self.armed = False
            self.other.execute("DELETE FROM callgate_ledger")
        return self.db.execute(sql, parameters)


def test_a_sqlite_start_record_taken_back_before_it_is_read_is_written_afresh(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    ledger_on(SQLiteStore(path), owner="w2").start(CALL)
    store = SQLiteStore(path)
    store._db = _TakenBackBeforeRead(store._db, path)  # type: ignore[assignment]
    ledger = ledger_on(store, owner="w1")
    assert ledger.start(CALL) is None, "the other start was taken back: this one runs"
    rows = sqlite3.connect(path).execute("SELECT conversation, key, record FROM callgate_ledger")
    [(conversation, key, text)] = rows.fetchall()
    assert (conversation, key) == ("chat-1", ledger.key(CALL))
    assert Record.loads(text) == Record("started", "w1", 1000.0)
