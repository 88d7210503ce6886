"""Records an earlier callgate stored still answer their calls: a call's key kept its form.

A call without an id is keyed by its turn and its reference's report form (the provider's
index, or ``text-B.N``), as the ledger always keyed it; the typed references change nothing
a durable store holds. The records come from ``ledger_before_typed_refs.sql``, the dump of
a SQLite ledger callgate wrote before its call references were typed: loaded into a SQLite
file as they were, and written into a real Redis through the store's own protocol.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from callgate import Driver, ExtractedCall, Ledger, Tool, run_turn
from callgate.gate.turn import CallRef, NativeRef, TextRef
from callgate.ledger import LedgerStore, Record, call_key
from callgate.ledger.sqlite import SQLiteStore
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import Chunk
from ledger_turns import CITY, gemini_call
from redis_server import free_port, need_client, redis_url  # noqa: F401 (a fixture)

DUMP = (Path(__file__).parent / "ledger_before_typed_refs.sql").read_text(encoding="utf-8")
CONVERSATION = "chat-before"
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
TURNS: dict[str, tuple[list[Chunk], str, CallRef]] = {
    "text": (
        [{**chunk, "id": "chatcmpl-before"} for chunk in openai_chunks([], [], text=[CALL])],
        "Oslo",
        TextRef(0, 0),
    ),
    "native": (gemini_call("Rome", "resp-before"), "Rome", NativeRef(0)),
}
"""The two turns the dump's records answered: what was played, the city, the call's ref."""


def stored_rows() -> list[tuple[str, str, str]]:
    """The dump's records: (conversation, key, record JSON)."""
    db = sqlite3.connect(":memory:")
    db.executescript(DUMP)
    rows = db.execute("SELECT conversation, key, record FROM callgate_ledger").fetchall()
    db.close()
    return [(str(c), str(k), str(r)) for c, k, r in rows]


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    """A durable store holding the earlier version's records."""
    if request.param == "sqlite":
        path = tmp_path / "ledger.db"
        db = sqlite3.connect(path)
        db.executescript(DUMP)
        db.close()
        sqlite = SQLiteStore(path)
        yield sqlite
        sqlite.close()
        return
    from callgate.ledger.redis import RedisStore

    url = request.getfixturevalue("redis_url")
    prefix = f"test:{request.node.name}:"
    redis = RedisStore.from_url(url, prefix=prefix)
    for conversation, key, record in stored_rows():
        redis.finish(conversation, key, Record.loads(record))
    yield redis
    redis.client.delete(*redis.client.keys(prefix + "*") or ["none"])
    redis.close()


def weather_driver() -> tuple[Driver, list[str]]:
    """A driver whose get_weather tool records each run, reading tool_call_tag calls too."""
    runs: list[str] = []

    def weather(city: str) -> str:
        runs.append(city)
        return f"18 C in {city}"

    return Driver([Tool("get_weather", CITY, weather)], text_formats=["tool_call_tag"]), runs


@pytest.mark.parametrize("kind", sorted(TURNS))
def test_a_call_an_earlier_version_answered_is_answered_from_its_record_not_run(
    store: LedgerStore, kind: str
) -> None:
    chunks, city, ref = TURNS[kind]
    driver, runs = weather_driver()
    ledger = Ledger(store, conversation=CONVERSATION)

    turn = run_turn(chunks, driver, driver.new_stream_buffer(ledger=ledger))

    assert runs == []
    [result] = turn.results
    assert (result.content, result.replayed) == (f"18 C in {city}", True)
    assert (result.call.ref, result.call.slot) == (ref, ref.slot)


@pytest.mark.parametrize("kind", sorted(TURNS))
def test_the_same_call_in_another_conversation_runs(store: LedgerStore, kind: str) -> None:
    chunks, city, _ = TURNS[kind]
    driver, runs = weather_driver()
    ledger = Ledger(store, conversation="chat-after")

    turn = run_turn(chunks, driver, driver.new_stream_buffer(ledger=ledger))

    assert runs == [city]
    assert [r.replayed for r in turn.results] == [False]


def test_a_call_s_key_hashes_its_reference_as_reports_write_it() -> None:
    keys = {key for _, key, _ in stored_rows()}
    text = ExtractedCall.from_ref(TextRef(0, 0), None, "get_weather", {"city": "Oslo"})
    native = ExtractedCall.from_ref(NativeRef(0), None, "get_weather", {"city": "Rome"})
    assert call_key(text, "id=chatcmpl-before") in keys
    assert call_key(native, "responseId=resp-before") in keys
    moved = ExtractedCall.from_ref(TextRef(0, 1), None, "get_weather", {"city": "Oslo"})
    assert call_key(moved, "id=chatcmpl-before") not in keys
