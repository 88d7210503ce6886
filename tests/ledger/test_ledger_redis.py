"""The Redis store as a user configures it, against a real redis-server.

Where its records live by default, which TTLs it takes, the clients it makes (their
timeouts and the user's options, the asyncio one per event loop), and that each write
reaches the server as one ``MULTI``/``EXEC`` transaction (the server's command counts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from callgate.ledger import Record
from redis_server import need_client, redis_url  # noqa: F401 (a fixture)

STARTED = Record("started", "worker-1", 1_700_000_000.0)
DONE = Record("done", "worker-1", 1_700_000_001.0, "18 C in Oslo")
WEEK_MS = 7 * 24 * 3600 * 1000


OURS = "callgate:ledger:redis-test-*"
"""The default prefix and this file's conversations (each test deletes what it wrote)."""


@pytest.fixture
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The module's server, without this file's records before and after each test."""
    need_client()
    address: str = request.getfixturevalue("redis_url")
    client = plain(address)
    client.delete(*client.keys(OURS) or ["none"])
    yield address
    client.delete(*client.keys(OURS) or ["none"])


def plain(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url)


def test_records_live_under_callgate_ledger_and_the_conversation_by_default(url: str) -> None:
    from callgate.ledger.redis import RedisStore

    RedisStore.from_url(url).start("redis-test-1", "k", STARTED)
    RedisStore(plain(url)).start("redis-test-2", "k", STARTED)
    names = sorted(name.decode() for name in plain(url).keys(OURS))
    assert names == ["callgate:ledger:redis-test-1", "callgate:ledger:redis-test-2"]


def test_a_conversation_is_kept_a_week_by_default_and_forever_with_ttl_none(url: str) -> None:
    from callgate.ledger.redis import RedisStore

    RedisStore.from_url(url).start("redis-test-week", "k", STARTED)
    RedisStore.from_url(url, ttl=None).start("redis-test-kept", "k", STARTED)
    RedisStore(plain(url), ttl=0.5).start("redis-test-short", "k", STARTED)
    client = plain(url)
    assert WEEK_MS - 60_000 < client.pttl("callgate:ledger:redis-test-week") <= WEEK_MS
    assert client.pttl("callgate:ledger:redis-test-kept") == -1, "no expiry at all"
    assert 0 < client.pttl("callgate:ledger:redis-test-short") <= 500


@pytest.mark.parametrize("ttl", [0, -1, 0.0])
def test_a_ttl_that_is_not_positive_seconds_is_refused(url: str, ttl: float) -> None:
    from callgate.ledger.redis import RedisStore

    with pytest.raises(ValueError, match=rf"^ttl must be seconds > 0 or None, not {ttl!r}$"):
        RedisStore(plain(url), ttl=ttl)


def test_both_clients_time_out_after_five_seconds_unless_told_otherwise(url: str) -> None:
    from callgate.ledger.redis import RedisStore

    async def async_options(store: RedisStore) -> dict[str, Any]:
        await store.astart("redis-test-c", "k", STARTED)
        return dict(store._async().connection_pool.connection_kwargs)

    default = RedisStore.from_url(url)
    told = RedisStore.from_url(url, socket_timeout=2.5)
    for store, read, connect in ((default, 5.0, 5.0), (told, 2.5, 5.0)):
        for options in (
            store.client.connection_pool.connection_kwargs,
            asyncio.run(async_options(store)),
        ):
            assert (options["socket_timeout"], options["socket_connect_timeout"]) == (
                read,
                connect,
            )


def test_the_asyncio_client_is_made_anew_for_each_event_loop(url: str) -> None:
    from callgate.ledger.redis import RedisStore

    store = RedisStore.from_url(url)
    assert asyncio.run(store.astart("redis-test-c", "k", STARTED)) is None
    assert asyncio.run(store.astart("redis-test-c", "k", STARTED)) == STARTED, (
        "a second loop works too"
    )
    asyncio.run(store.afinish("redis-test-c", "k", DONE))
    assert store.start("redis-test-c", "k", STARTED) == DONE


def test_a_store_given_its_asyncio_client_uses_it(url: str) -> None:
    import redis.asyncio

    from callgate.ledger.redis import RedisStore

    async def play() -> tuple[Record | None, Record | None]:
        store = RedisStore(plain(url), redis.asyncio.Redis.from_url(url))
        first = await store.astart("redis-test-c", "k", STARTED)
        await store.afinish("redis-test-c", "k", DONE)
        return first, await store.astart("redis-test-c", "k", STARTED)

    assert asyncio.run(play()) == (None, DONE)


def test_a_store_without_an_asyncio_client_or_a_url_says_so_in_the_async_loop(url: str) -> None:
    from callgate.ledger.redis import RedisStore

    store = RedisStore(plain(url))
    with pytest.raises(
        TypeError, match=r"^RedisStore needs aclient= \(an asyncio client\) for arun_turn$"
    ):
        asyncio.run(store.astart("redis-test-c", "k", STARTED))


def test_each_write_is_one_transaction_on_the_server(url: str) -> None:
    from callgate.ledger.redis import RedisStore

    client = plain(url)

    def transactions() -> int:
        stats = client.info("commandstats")
        return int(stats.get("cmdstat_exec", {}).get("calls", 0))

    store = RedisStore.from_url(url)
    before = transactions()
    store.start("redis-test-c", "k", STARTED)
    store.finish("redis-test-c", "k", DONE)
    asyncio.run(store.astart("redis-test-c", "k2", STARTED))
    asyncio.run(store.afinish("redis-test-c", "k2", DONE))
    assert transactions() - before == 4
