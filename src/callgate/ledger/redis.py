"""The Redis backend (extra ``callgate[redis]``): records shared by workers and machines.

A conversation's records are one Redis hash (``prefix`` + conversation id), a field per
call. "Start if absent" is ``HSETNX`` in a ``MULTI`` with the read of the field, so of two
workers exactly one writes the start record; the answer is written over it, in the same
hash. Every write renews the hash's TTL (``ttl`` seconds, None for none): a conversation
idle that long is forgotten. The sync client serves ``run_turn``, the asyncio client
``arun_turn``. What survives a restart or a failover is what Redis itself keeps (see
docs/ledger.md: append-only file with ``appendfsync always`` for at-most-once across a
Redis restart).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio

from callgate.ledger.store import Record

_FORGET = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then
    local record = cjson.decode(value)
    if record[1] == 'started' and record[2] == ARGV[2] then
        return redis.call('HDEL', KEYS[1], ARGV[1])
    end
end
return 0
"""

DEFAULT_TTL = 7 * 24 * 3600.0
"""Seconds a conversation's records outlive its last write (a week)."""


class RedisStore:
    """Records in Redis, through a sync client and an asyncio client of the same server."""

    def __init__(
        self,
        client: redis.Redis,
        aclient: redis.asyncio.Redis | None = None,
        *,
        prefix: str = "callgate:ledger:",
        ttl: float | None = DEFAULT_TTL,
        url: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be seconds > 0 or None, not {ttl!r}")
        self.client = client
        self.prefix = prefix
        self.ttl = ttl
        self._aclient = aclient
        self._url = url
        self._options = options or {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStore:
        """Clients of the Redis at ``url`` (``redis://host:port/db``); ``prefix``, ``ttl`` pass on.

        The other ``options`` go to both clients; connect and read timeouts default to 5 s,
        so a Redis that is down fails the call closed instead of hanging the turn.
        """
        prefix = options.pop("prefix", "callgate:ledger:")
        ttl = options.pop("ttl", DEFAULT_TTL)
        options.setdefault("socket_timeout", 5.0)
        options.setdefault("socket_connect_timeout", 5.0)
        client = redis.Redis.from_url(url, **options)
        return cls(client, prefix=prefix, ttl=ttl, url=url, options=options)

    def _name(self, conversation: str) -> str:
        return self.prefix + conversation

    def _expire(self, pipe: Any, name: str) -> None:
        if self.ttl is not None:
            pipe.pexpire(name, int(self.ttl * 1000))

    # -- sync -------------------------------------------------------------------------

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        """``HSETNX`` the start record: None if written, else the record already there."""
        name = self._name(conversation)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hsetnx(name, key, record.dumps())
            pipe.hget(name, key)
            self._expire(pipe, name)
            written, value, *_ = pipe.execute()
        return None if written else Record.loads(value)

    def finish(self, conversation: str, key: str, record: Record) -> None:
        """``HSET`` the done record over the start record."""
        name = self._name(conversation)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(name, key, record.dumps())
            self._expire(pipe, name)
            pipe.execute()

    def forget(self, conversation: str, key: str, owner: str) -> None:
        """Delete ``owner``'s start record of a call that never ran (a script: atomic)."""
        self.client.eval(_FORGET, 1, self._name(conversation), key, owner)

    # -- async ------------------------------------------------------------------------

    def _async(self) -> redis.asyncio.Redis:
        """The asyncio client for the running event loop (one per loop: they cannot be shared)."""
        loop = asyncio.get_running_loop()
        if self._aclient is None or (self._url is not None and self._loop is not loop):
            if self._url is None:
                raise TypeError("RedisStore needs aclient= (an asyncio client) for arun_turn")
            self._aclient = redis.asyncio.Redis.from_url(self._url, **self._options)
            self._loop = loop
        return self._aclient

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        """:meth:`start` through the asyncio client."""
        name = self._name(conversation)
        async with self._async().pipeline(transaction=True) as pipe:
            pipe.hsetnx(name, key, record.dumps())
            pipe.hget(name, key)
            self._expire(pipe, name)
            written, value, *_ = await pipe.execute()
        return None if written else Record.loads(value)

    async def afinish(self, conversation: str, key: str, record: Record) -> None:
        """:meth:`finish` through the asyncio client."""
        name = self._name(conversation)
        async with self._async().pipeline(transaction=True) as pipe:
            pipe.hset(name, key, record.dumps())
            self._expire(pipe, name)
            await pipe.execute()

    def close(self) -> None:
        """Close the sync client's connections (the asyncio one closes with its loop)."""
        self.client.close()
