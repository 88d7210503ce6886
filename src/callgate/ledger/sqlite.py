"""The SQLite backend: one file, write-ahead log, the start record committed before the run.

Every worker on one machine may open the same file: "start if absent" is one
``INSERT ... ON CONFLICT DO NOTHING`` in its own transaction, so of two processes that
start the same call exactly one inserts. With ``synchronous="FULL"`` (the default) a
committed start survives a power cut, not only a crash; ``"NORMAL"`` keeps it across a
crash of the process and is cheaper. SQLite's own locking serialises the writers
(``timeout`` seconds of waiting before an error, which fails closed).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Literal

from callgate.errors import LedgerUnavailable
from callgate.ledger.store import Record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS callgate_ledger (
    conversation TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation, key)
) WITHOUT ROWID
"""


class SQLiteStore:
    """Records in the SQLite file at ``path`` (created if missing), shared by its processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', not {synchronous!r}")
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        """One connection serves the loop and the worker threads that record late results."""
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise LedgerUnavailable(f"cannot open the ledger file {self.path}: {exc}") from exc

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        """Insert ``record`` unless the call has one: None if inserted, else the one there."""
        with self._lock:
            try:
                inserted = self._db.execute(
                    "INSERT INTO callgate_ledger VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (conversation, key) DO NOTHING",
                    (conversation, key, record.state, record.dumps()),
                ).rowcount
                if inserted == 1:
                    return None
                row = self._db.execute(
                    "SELECT record FROM callgate_ledger WHERE conversation = ? AND key = ?",
                    (conversation, key),
                ).fetchone()
            except sqlite3.Error as exc:
                raise LedgerUnavailable(f"the ledger file {self.path}: {exc}") from exc
        if row is None:  # taken back between the two statements: it never ran
            return self.start(conversation, key, record)
        return Record.loads(row[0])

    def finish(self, conversation: str, key: str, record: Record) -> None:
        """Write the ``done`` record of a call."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO callgate_ledger VALUES (?, ?, ?, ?) ON CONFLICT "
                    "(conversation, key) DO UPDATE SET state = excluded.state, "
                    "record = excluded.record",
                    (conversation, key, record.state, record.dumps()),
                )
            except sqlite3.Error as exc:
                raise LedgerUnavailable(f"the ledger file {self.path}: {exc}") from exc

    def forget(self, conversation: str, key: str, owner: str) -> None:
        """Delete ``owner``'s start record of a call that never ran."""
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM callgate_ledger WHERE conversation = ? AND key = ? "
                "AND state = 'started'",
                (conversation, key),
            ).fetchall()
            if rows and Record.loads(rows[0][0]).owner == owner:
                self._db.execute(
                    "DELETE FROM callgate_ledger WHERE conversation = ? AND key = ? "
                    "AND state = 'started' AND record = ?",
                    (conversation, key, rows[0][0]),
                )

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        """:meth:`start` (a local file: done in place)."""
        return self.start(conversation, key, record)

    async def afinish(self, conversation: str, key: str, record: Record) -> None:
        """:meth:`finish` (a local file: done in place)."""
        self.finish(conversation, key, record)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()
