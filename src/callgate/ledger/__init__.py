"""The conversation's ledger of calls: a call runs at most once, and every call is answered.

Some models repeat a call they already made (the same id, in a later chunk or a later
turn), and a turn may be retried after a failed stream, a cancellation, a crash or on
another worker. The ledger outlives the turns of one conversation: the buffer keeps it
across ``reset()``, and a call already in it is answered from its record instead of
running again (the answer is marked :attr:`~callgate.strategies.base.ToolResult.replayed`).

Identity. A call is the same call only when its conversation, its identity and its
tool and arguments (canonical JSON) all match: servers that number ids per turn
(``call_0`` again for another city) get a new run, never a stale answer. The identity is
the call's id; a call without one (``None`` or ``""``: Gemini, Ollama, text calls) is
known by its turn and its position in it (its slot). Its turn is the stream's own
identity, read from the turn's first chunk (:func:`stream_identity`: the response id, or
Ollama's ``created_at``), so a retry of the same stream meets the same calls, in this
process or another; a stream without one is known by the ledger's turn number, which a
failed or cancelled turn keeps for its retry (:meth:`Ledger.repeat_turn`).

Records. A call is recorded ``started`` (by whom, when) before its tool runs, in the
ledger's :class:`~callgate.ledger.store.LedgerStore` (memory by default; SQLite and Redis
for records that outlive the process or are shared by workers), and ``done`` with its
answer after. A call whose start record is there but no answer is answered as what it is:
still running (here, or in another worker within the ledger's ``expiry``), or, past the
expiry, "its result was lost; it was not run again". A store that cannot be written
fails closed: the call is not run, and its answer says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from callgate.errors import LedgerUnavailable
from callgate.ledger.store import LedgerStore, MemoryStore, Record
from callgate.strategies.base import ExtractedCall, ToolResult

__all__ = [
    "Ledger",
    "LedgerStore",
    "LedgerUnavailable",
    "MemoryStore",
    "Record",
    "call_key",
    "stream_identity",
]

logger = logging.getLogger("callgate")

DEFAULT_EXPIRY = 300.0
"""Seconds after which a start record with no answer is taken as lost (its worker died)."""

_STREAM_IDS = (("id",), ("message", "id"), ("response", "id"), ("responseId",), ("created_at",))
"""Where a first chunk carries its stream's identity: OpenAI and Cohere (``id``), Anthropic
(``message.id``), Responses (``response.id``), Gemini (``responseId``), Ollama (``created_at``)."""


def stream_identity(shape: Mapping[str, Any]) -> str | None:
    """The identity a stream's first chunk gives its turn, or None (Bedrock has none)."""
    for path in _STREAM_IDS:
        value: Any = shape
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, str) and value:
            return f"{'.'.join(path)}={value}"
    return None


def call_key(call: ExtractedCall, turn: str) -> str:
    """What makes ``call`` the same call: its id (or ``turn`` and slot), tool and arguments.

    The slot is the call's reference as reports write it (``ExtractedCall.slot``: the
    provider's index, or ``text-B.N``), the form stored records were always keyed by.
    """
    arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=repr)
    where: list[Any] = ["id", call.id] if call.id else ["turn", turn, call.slot]
    text = json.dumps([*where, call.name, arguments], ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def lost(call: ExtractedCall) -> ToolResult:
    """The answer to a call that started earlier and never reported its result."""
    content = (
        f"The call to {call.name} started earlier but its result was lost; "
        "it was not run again, and whether it took effect is unknown."
    )
    return ToolResult(call, content, is_error=True, replayed=True)


def still_running(call: ExtractedCall, record: Record, here: bool) -> ToolResult:
    """The answer to a call whose run has started and not ended yet (here or elsewhere)."""
    where = "is still running" if here else f"is running in another worker ({record.owner})"
    content = (
        f"The call to {call.name} {where}, started at {_when(record.at)}; it was not run "
        "again, and its outcome is not known yet."
    )
    return ToolResult(call, content, is_error=True, replayed=True)


def unavailable(call: ExtractedCall, exc: BaseException) -> ToolResult:
    """The answer to a call whose start could not be recorded: it was not run (fail closed)."""
    content = (
        f"The call to {call.name} was not run: the ledger could not record it ({exc}). "
        "Nothing ran; the call can be sent again."
    )
    return ToolResult(call, content, is_error=True, refused=True)


def interrupted(call: ExtractedCall, what: str) -> ToolResult:
    """The answer to a call whose run was stopped from outside (``what``: how) mid-run."""
    content = (
        f"The call to {call.name} was {what} while it ran; it was not run again, and "
        "whether it took effect is unknown."
    )
    return ToolResult(call, content, is_error=True)


class Ledger:
    """The calls of one conversation, started and answered, in a :class:`LedgerStore`.

    ``store``: where the records live (a :class:`MemoryStore` when None). A store shared
    by processes or workers needs ``conversation``: an id the user gives, the same on
    every worker and after a restart, unique per conversation (a chat's id from the
    application's database, say). ``expiry``: the seconds after which a call started and
    never answered is taken as lost; it must be longer than any tool's timeout.
    """

    __slots__ = (
        "_answers",
        "_conversation",
        "_ids",
        "_keys",
        "_owner",
        "_repeat",
        "_running",
        "carried",
        "clock",
        "expiry",
        "store",
        "stream",
        "turn",
    )

    def __init__(
        self,
        store: LedgerStore | None = None,
        *,
        conversation: str | None = None,
        expiry: float = DEFAULT_EXPIRY,
        owner: str | None = None,
    ) -> None:
        if store is not None and conversation is None:
            raise ValueError(
                "a ledger on a store of its own needs conversation=: the id of the "
                "conversation, the same on every worker and after a restart"
            )
        if conversation is not None and (not isinstance(conversation, str) or not conversation):
            raise ValueError(f"conversation must be a non-empty string, not {conversation!r}")
        if not (isinstance(expiry, (int, float)) and expiry > 0):
            raise ValueError(f"expiry must be a number of seconds > 0, not {expiry!r}")
        self.store: LedgerStore = store if store is not None else MemoryStore()
        self._conversation = conversation
        self.expiry = float(expiry)
        self._owner = owner or None
        self.clock: Callable[[], float] = time.time
        self.turn = 0
        """Counts the conversation's turns here; a retried turn keeps its number."""
        self.stream: str | None = None
        """The current turn's stream identity (:func:`stream_identity`), once read."""
        self._repeat = False
        self._answers: dict[str, ToolResult] = {}
        self._running: dict[str, float] = {}
        """Calls this ledger started that are still running, with when they started."""
        self._ids: set[str] = set()
        self.carried: dict[str, int] = {}
        """The call ids the conversation's histories carried, each with the turn that first
        carried it (a wire whose ids must be unique gives a later repeat a stand-in)."""
        self._keys: dict[tuple[int, str], tuple[ExtractedCall, str]] = {}
        """This turn's call keys by call object and turn identity (each call held, so that
        its ``id()`` stays its own): a key hashes the call's arguments, made once per call."""

    @property
    def conversation(self) -> str:
        """The conversation's id: the one given, else a random one made when first asked."""
        if self._conversation is None:
            self._conversation = uuid.uuid4().hex
        return self._conversation

    @conversation.setter
    def conversation(self, conversation: str) -> None:
        self._conversation = conversation

    @property
    def owner(self) -> str:
        """Who starts calls through this ledger (host, process, ledger): start records say it.

        Made when first asked (a turn that runs nothing never needs it).
        """
        if self._owner is None:
            self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        return self._owner

    @owner.setter
    def owner(self, owner: str) -> None:
        self._owner = owner

    @classmethod
    def sqlite(cls, path: str | os.PathLike[str], *, conversation: str, **options: Any) -> Ledger:
        """A ledger whose records live in the SQLite file at ``path`` (see :mod:`.sqlite`)."""
        from callgate.ledger.sqlite import SQLiteStore

        expiry = options.pop("expiry", DEFAULT_EXPIRY)
        return cls(SQLiteStore(path, **options), conversation=conversation, expiry=expiry)

    @classmethod
    def redis(cls, url: str, *, conversation: str, **options: Any) -> Ledger:
        """A ledger whose records live in the Redis at ``url`` (extra ``callgate[redis]``)."""
        from callgate.ledger.redis import RedisStore

        expiry = options.pop("expiry", DEFAULT_EXPIRY)
        return cls(RedisStore.from_url(url, **options), conversation=conversation, expiry=expiry)

    # -- turns ------------------------------------------------------------------------

    def next_turn(self) -> None:
        """A new turn starts (the buffer calls it on ``reset()``); a retry keeps its number."""
        if self._repeat:
            self._repeat = False
        else:
            self.turn += 1
        self.stream = None
        self._keys.clear()

    def repeat_turn(self) -> None:
        """The turn did not finish (its stream failed, it was cancelled): the next retries it."""
        self._repeat = True

    def identify(self, shape: Mapping[str, Any]) -> None:
        """Read the turn's stream identity from its first chunk (once per turn)."""
        if self.stream is None:
            self.stream = stream_identity(shape)

    def key(self, call: ExtractedCall) -> str:
        """``call``'s key in this conversation (see :func:`call_key`), made once per turn.

        A run asks it several times (look-up, start, answer); each making would encode the
        call's whole arguments twice and hash them.
        """
        where = self.stream if self.stream is not None else f"#{self.turn}"
        known = self._keys.get((id(call), where))
        if known is None:
            known = self._keys[(id(call), where)] = (call, call_key(call, where))
        return known[1]

    # -- reading ----------------------------------------------------------------------

    def get(self, call: ExtractedCall) -> ToolResult | None:
        """What this ledger knows of ``call`` without asking its store, or None.

        The recorded answer (marked replayed), or "still running" for a call running here.
        The store is asked when the call is about to run (:meth:`start`).
        """
        key = self.key(call)
        known = self._answers.get(key)
        if known is not None:
            return _replayed(call, known)
        began = self._running.get(key)
        if began is not None:
            return still_running(call, Record("started", self.owner, began), here=True)
        return None

    # -- writing ----------------------------------------------------------------------

    def start(self, call: ExtractedCall) -> ToolResult | None:
        """Record that ``call`` is about to run: None if it may, else the answer it gets.

        The start record is written (atomically, if absent) before the tool is called;
        a record already there answers the call instead. :class:`LedgerUnavailable` if
        the store cannot be reached: the call must not run.
        """
        key = self.key(call)
        local = self.get(call)
        if local is not None:
            return local
        mine = self._started()
        with _store_errors():
            known = self.store.start(self.conversation, key, mine)
        return self._started_or(call, key, known, mine)

    async def astart(self, call: ExtractedCall) -> ToolResult | None:
        """:meth:`start` for the async loop (the store's async client, where it has one)."""
        key = self.key(call)
        local = self.get(call)
        if local is not None:
            return local
        mine = self._started()
        with _store_errors():
            known = await self.store.astart(self.conversation, key, mine)
        return self._started_or(call, key, known, mine)

    def record(self, result: ToolResult) -> None:
        """Record ``result`` as the answer to its call.

        If the store cannot be written the answer still stands (it is returned to the
        model); the error is logged, and the store keeps the start record, so another
        worker answers the call as lost, never runs it again.
        """
        self._finish_now(self._keep(result), self._done(result))

    async def arecord(self, result: ToolResult) -> None:
        """:meth:`record` for the async loop."""
        key = self._keep(result)
        done = self._done(result)
        try:
            await self.store.afinish(self.conversation, key, done)
        except Exception:
            logger.exception("the ledger could not record an answer (call key %s)", key)
        except BaseException:  # cancelled while writing: the answer is written, then passed on
            self._finish_now(key, done)
            raise

    def forget(self, call: ExtractedCall) -> None:
        """Take back the start record of a call whose tool was never called."""
        key = self.key(call)
        self._running.pop(key, None)
        try:
            self.store.forget(self.conversation, key, self.owner)
        except Exception:
            logger.exception("the ledger could not take back the start of %s", call.name)

    def __contains__(self, call_id: object) -> bool:
        """Whether a call with this id started (or was answered) through this ledger."""
        return call_id in self._ids

    def __len__(self) -> int:
        """How many calls this ledger started or answered."""
        return len(self._answers.keys() | self._running.keys())

    # -- inside -----------------------------------------------------------------------

    def _started(self) -> Record:
        return Record("started", self.owner, self.clock())

    def _done(self, result: ToolResult) -> Record:
        return Record(
            "done", self.owner, self.clock(), result.content, result.is_error, result.refused
        )

    def _finish_now(self, key: str, done: Record) -> None:
        """Write ``done`` through the store's sync client; an error is logged, not raised."""
        try:
            self.store.finish(self.conversation, key, done)
        except Exception:
            logger.exception("the ledger could not record an answer (call key %s)", key)

    def _keep(self, result: ToolResult) -> str:
        key = self.key(result.call)
        self._answers[key] = result
        self._running.pop(key, None)
        if result.call.id:
            self._ids.add(result.call.id)
        return key

    def _started_or(
        self, call: ExtractedCall, key: str, known: Record | None, mine: Record
    ) -> ToolResult | None:
        """None if this ledger wrote its start record ``mine``, else the answer ``known`` gives."""
        if known is None:
            self._running[key] = mine.at
            if call.id:
                self._ids.add(call.id)
            return None
        if known.state == "done":
            answer = ToolResult(call, known.content, known.is_error, known.refused)
            self._answers[key] = answer
            return _replayed(call, answer)
        if known.owner == self.owner and key in self._running:
            return still_running(call, known, here=True)
        if known.owner != self.owner and self.clock() - known.at < self.expiry:
            return still_running(call, known, here=False)
        return lost(call)


@contextmanager
def _store_errors() -> Iterator[None]:
    """A store's error as :class:`LedgerUnavailable` (its own pass as they are): no run."""
    try:
        yield
    except LedgerUnavailable:
        raise
    except Exception as exc:
        raise LedgerUnavailable(f"{type(exc).__name__}: {exc}") from exc


def _replayed(call: ExtractedCall, answer: ToolResult) -> ToolResult:
    """``answer`` given again to ``call`` (its id and slot this time), marked as not run again."""
    return ToolResult(call, answer.content, answer.is_error, answer.refused, replayed=True)
