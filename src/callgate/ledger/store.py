"""Where a ledger keeps its records: the storage protocol, the record, the memory backend.

A record is kept under a conversation id and a call key (both strings). It is ``started``
(with who started it and when) before the tool runs, and ``done`` (with the answer) after.
Every backend offers one atomic step, "start if absent": of two workers that start the
same call, exactly one writes its start record and runs the tool; the other reads the
record that is there. The async methods serve ``arun_turn``; a backend without an async
client of its own does the same work synchronously (it never waits on the network).
"""

from __future__ import annotations

import json
import threading
from typing import Literal, Protocol

from attrs import frozen

from callgate.errors import LedgerUnavailable

State = Literal["started", "done"]


@frozen
class Record:
    """One call's record: started by ``owner`` at ``at`` (epoch seconds), or done (the answer)."""

    state: State
    owner: str
    at: float
    content: str = ""
    is_error: bool = False
    refused: bool = False

    def dumps(self) -> str:
        """The record as compact JSON (what the durable backends store)."""
        fields = [self.state, self.owner, self.at, self.content, self.is_error, self.refused]
        return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str | bytes) -> Record:
        """The record :meth:`dumps` wrote; :class:`LedgerUnavailable` for anything else."""
        try:
            state, owner, at, content, is_error, refused = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise LedgerUnavailable(f"a ledger record cannot be read: {text!r:.80}") from exc
        if state not in ("started", "done"):
            raise LedgerUnavailable(f"a ledger record has no known state: {text!r:.80}")
        return cls(state, str(owner), float(at), str(content), bool(is_error), bool(refused))


class LedgerStore(Protocol):
    """The storage protocol every ledger backend implements."""

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        """Write ``record`` unless the key has one (atomically): None if written, else that one."""

    def finish(self, conversation: str, key: str, record: Record) -> None:
        """Write the ``done`` record of a call (over its start record)."""

    def forget(self, conversation: str, key: str, owner: str) -> None:
        """Remove ``owner``'s start record of a call that never ran (a done record stays)."""

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        """:meth:`start` for the async loop."""

    async def afinish(self, conversation: str, key: str, record: Record) -> None:
        """:meth:`finish` for the async loop."""


class MemoryStore:
    """Records in this process's memory: the default, gone with the process."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], Record] = {}
        self._lock = threading.Lock()
        """Worker threads record late results (``in_thread`` tools): starts stay atomic."""

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        """Write ``record`` unless the key has one: None if written, else that one."""
        with self._lock:
            known = self._records.get((conversation, key))
            if known is None:
                self._records[conversation, key] = record
            return known

    def finish(self, conversation: str, key: str, record: Record) -> None:
        """Write the ``done`` record of a call."""
        with self._lock:
            self._records[conversation, key] = record

    def forget(self, conversation: str, key: str, owner: str) -> None:
        """Remove ``owner``'s start record of a call that never ran."""
        with self._lock:
            known = self._records.get((conversation, key))
            if known is not None and known.state == "started" and known.owner == owner:
                del self._records[conversation, key]

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        """:meth:`start` (memory needs no waiting)."""
        return self.start(conversation, key, record)

    async def afinish(self, conversation: str, key: str, record: Record) -> None:
        """:meth:`finish` (memory needs no waiting)."""
        self.finish(conversation, key, record)

    def __len__(self) -> int:
        return len(self._records)
