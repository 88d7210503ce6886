"""The ledger's backends against real storage: a SQLite file, a real redis-server.

Every backend keeps the storage protocol the same way (start if absent, finish, forget,
sync and async); the durable ones keep their records for another store object on the
same file or server (another process, a restart), and fail closed when they cannot be
reached.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from callgate import Ledger, arun_turn, run_turn
from callgate.ledger import LedgerStore, LedgerUnavailable, MemoryStore, Record
from callgate.ledger.sqlite import SQLiteStore
from callgate.testing.wires import Chunk
from ledger_turns import aiter, counted, gemini_call, one_call
from redis_server import free_port, need_client, redis_url  # noqa: F401 (a fixture)

STARTED = Record("started", "worker-1", 1_700_000_000.0)
DONE = Record("done", "worker-1", 1_700_000_001.0, "18 C in Oslo")

Make = Callable[[], LedgerStore]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """A factory of store objects over one storage (each one: another process's view)."""
    opened: list[Any] = []
    if request.param == "memory":
        store = MemoryStore()
        yield lambda: store
        return
    if request.param == "sqlite":

        def sqlite() -> LedgerStore:
            opened.append(SQLiteStore(tmp_path / "ledger.db"))
            return opened[-1]

        yield sqlite
    else:
        from callgate.ledger.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        prefix = f"test:{request.node.name}:"

        def redis() -> LedgerStore:
            opened.append(RedisStore.from_url(url, prefix=prefix))
            return opened[-1]

        yield redis
        opened[0].client.delete(*opened[0].client.keys(prefix + "*") or ["none"])
    for store in opened:
        store.close()


def test_start_if_absent_finish_and_forget_keep_the_protocol(make: Make) -> None:
    store, other = make(), make()

    assert store.start("c1", "k", STARTED) is None
    assert other.start("c1", "k", Record("started", "worker-2", 2.0)) == STARTED
    assert other.start("c2", "k", STARTED) is None  # another conversation, another record
    other.forget("c1", "k", "worker-2")  # not worker-2's record: it stays
    assert store.start("c1", "k", STARTED) == STARTED
    store.finish("c1", "k", DONE)
    other.forget("c1", "k", "worker-1")  # a done record is never taken back
    assert make().start("c1", "k", STARTED) == DONE
    store.forget("c2", "k", "worker-1")
    assert other.start("c2", "k", DONE) is None


def test_the_async_methods_keep_the_same_records(make: Make) -> None:
    store, other = make(), make()

    async def main() -> tuple[Any, ...]:
        first = await store.astart("c1", "k", STARTED)
        second = await other.astart("c1", "k", STARTED)
        await other.afinish("c1", "k", DONE)
        third = await store.astart("c1", "k", STARTED)
        return first, second, third

    assert asyncio.run(main()) == (None, STARTED, DONE)
    assert make().start("c1", "k", STARTED) == DONE


def test_of_racing_starts_exactly_one_writes(make: Make) -> None:
    stores = [make() for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    won: list[bool] = []

    def race(store: LedgerStore, n: int) -> None:
        barrier.wait()
        won.append(store.start("race", "k", Record("started", f"w{n}", 1.0)) is None)

    threads = [threading.Thread(target=race, args=(s, n)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert sorted(won) == [False] * 5 + [True]


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_a_restarted_worker_answers_a_repeated_call_from_the_durable_ledger(
    make: Make, loop: str
) -> None:
    driver, runs = counted()

    def turn(ledger: Ledger, chunks: list[Chunk]) -> Any:
        buffer = driver.new_stream_buffer(ledger=ledger)
        if loop == "sync":
            return run_turn(chunks, driver, buffer)
        return asyncio.run(arun_turn(aiter(chunks), driver, buffer))

    first = turn(Ledger(make(), conversation="conv-9"), one_call("call_1", {"city": "Oslo"}))
    again = turn(Ledger(make(), conversation="conv-9"), one_call("call_1", {"city": "Oslo"}, "b"))
    idless = turn(Ledger(make(), conversation="conv-9"), gemini_call("Rome", "resp-7"))
    retried = turn(Ledger(make(), conversation="conv-9"), gemini_call("Rome", "resp-7"))
    other = turn(Ledger(make(), conversation="conv-10"), one_call("call_1", {"city": "Oslo"}))

    assert runs == ["Oslo", "Rome", "Oslo"]
    assert [r.replayed for r in first.results + again.results] == [False, True]
    assert [r.replayed for r in idless.results + retried.results] == [False, True]
    assert again.results[0].content == "18 C in Oslo"
    assert retried.results[0].content == "18 C in Rome"
    assert not other.results[0].replayed


def test_the_redis_hash_of_a_conversation_carries_its_ttl(request: pytest.FixtureRequest) -> None:
    from callgate.ledger.redis import RedisStore

    url = request.getfixturevalue("redis_url")
    store = RedisStore.from_url(url, prefix="test:ttl:", ttl=30)
    store.start("conv", "k", STARTED)
    left = store.client.pttl("test:ttl:conv")
    store.finish("conv", "k", DONE)
    renewed = store.client.pttl("test:ttl:conv")
    store.client.delete("test:ttl:conv")
    store.close()

    assert 0 < left <= 30_000 and 0 < renewed <= 30_000


@pytest.mark.parametrize("loop", ["sync", "async"])
def test_a_redis_that_is_down_fails_the_call_closed(loop: str) -> None:
    need_client()
    driver, runs = counted()
    url = f"redis://127.0.0.1:{free_port()}/0"
    ledger = Ledger.redis(url, conversation="down", socket_connect_timeout=0.5)
    buffer = driver.new_stream_buffer(ledger=ledger)
    chunks = one_call("call_1", {"city": "Oslo"})

    if loop == "sync":
        turn = run_turn(chunks, driver, buffer)
    else:
        turn = asyncio.run(arun_turn(aiter(chunks), driver, buffer))

    assert runs == []
    (result,) = turn.results
    assert result.refused and "was not run: the ledger could not record it" in result.content
    assert "ConnectionError" in result.content
    assert turn.history[-1]["tool_call_id"] == "call_1"


def test_a_sqlite_file_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LedgerUnavailable, match="cannot open the ledger file"):
        SQLiteStore(tmp_path / "missing" / "ledger.db")
    with pytest.raises(ValueError, match="synchronous must be"):
        SQLiteStore(tmp_path / "ledger.db", synchronous="OFF")  # type: ignore[arg-type]


def test_a_record_that_is_not_a_ledgers_is_refused_not_guessed() -> None:
    with pytest.raises(LedgerUnavailable, match="cannot be read"):
        Record.loads(b"not json")
    with pytest.raises(LedgerUnavailable, match="no known state"):
        Record.loads('["running", "w", 1, "", false, false]')
    assert Record.loads(DONE.dumps()) == DONE


def test_a_missing_redis_server_skips_outside_ci_and_fails_where_it_is_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from redis_server import REQUIRE, RedisServer

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs redis-server on PATH"):
        RedisServer(tmp_path)
    for name in ("CI", REQUIRE):
        monkeypatch.setenv(name, "1")
        with pytest.raises(pytest.fail.Exception, match=f"{name} set: Redis is required"):
            RedisServer(tmp_path)
        monkeypatch.delenv(name)


class StoreAgainstAModel(RuleBasedStateMachine):
    """Any sequence of starts, answers and take-backs by several workers, on two stores.

    The memory store and a SQLite file get the same operations and must agree with a
    plain dict: a start writes only where nothing is, a take-back removes only its own
    start record, an answer overwrites.
    """

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledger-model-"))
        self.stores: list[Any] = [
            MemoryStore(),
            SQLiteStore(self.directory / "l.db", synchronous="NORMAL"),
        ]
        self.model: dict[tuple[str, str], Record] = {}

    keys = st.tuples(st.sampled_from(["c1", "c2"]), st.sampled_from(["k1", "k2", "k3"]))
    owners = st.sampled_from(["w1", "w2"])

    @rule(where=keys, owner=owners)
    def start(self, where: tuple[str, str], owner: str) -> None:
        record = Record("started", owner, 1.0)
        expected = self.model.get(where)
        for store in self.stores:
            assert store.start(*where, record) == expected
        self.model.setdefault(where, record)

    @rule(where=keys, owner=owners, content=st.text(max_size=8))
    def finish(self, where: tuple[str, str], owner: str, content: str) -> None:
        record = Record("done", owner, 2.0, content, is_error=content == "")
        for store in self.stores:
            store.finish(*where, record)
        self.model[where] = record

    @rule(where=keys, owner=owners)
    def forget(self, where: tuple[str, str], owner: str) -> None:
        for store in self.stores:
            store.forget(*where, owner)
        known = self.model.get(where)
        if known is not None and known.state == "started" and known.owner == owner:
            del self.model[where]

    @invariant()
    def every_store_holds_what_the_model_holds(self) -> None:
        probe = Record("started", "probe", 0.0)
        for where, record in self.model.items():
            for store in self.stores:
                assert store.start(*where, probe) == record

    def teardown(self) -> None:
        self.stores[1].close()
        shutil.rmtree(self.directory, ignore_errors=True)


TestStoreAgainstAModel = StoreAgainstAModel.TestCase
TestStoreAgainstAModel.settings = settings(max_examples=30, stateful_step_count=20)
