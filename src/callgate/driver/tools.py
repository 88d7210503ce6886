"""Tools: a name, the JSON Schema of its arguments and the caller's function; running one.

A :class:`Tool` is what a driver owns; a :class:`Job` is a call that passed every check and
is to run with its tool's function. The helpers at the end turn what a function returned
(or raised) into the :class:`~callgate.strategies.base.ToolResult` the model reads.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, cast

from attrs import Attribute, field, frozen

from callgate.driver.tooldefs import description_of, schema_from_function
from callgate.ledger import Ledger, LedgerUnavailable, interrupted, unavailable
from callgate.strategies.base import ExtractedCall, ToolResult

logger = logging.getLogger("callgate")
"""Tool failures are logged here, with their traceback, besides being answered."""


def _non_negative(_: object, attribute: Attribute[Any], value: float | None) -> None:
    if value is not None and not value >= 0:
        raise ValueError(f"a tool's {attribute.name} must be seconds >= 0, not {value!r}")


def _a_name(_: object, attribute: Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"a tool's name must be a non-empty string, not {value!r}")


def is_async(function: Callable[..., Any] | None) -> bool:
    """Whether calling ``function`` gives a coroutine (``async def``, or an async ``__call__``)."""
    if function is None:
        return False
    call = type(function).__call__ if not inspect.isroutine(function) else None
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


@frozen
class Tool:
    """A tool a driver owns: its name, the JSON Schema of its arguments, and its function.

    ``function`` is the caller's; callgate runs nothing else. Without one the call is
    answered with a note that it was not run (a dry run, as in ``callgate replay``).
    An ``async def`` function is awaited by :func:`~callgate.driver.loop.arun_turn` (the sync
    loop refuses it); ``in_thread`` runs a sync function in a worker thread there, so a
    slow tool does not block the event loop. ``timeout`` (seconds; the driver's
    ``tool_timeout`` when None) is enforced by the async loop: a coroutine past it is
    cancelled, a sync function runs in a worker thread and is no longer waited for, and
    the answer says which. The sync loop cannot stop a running function, so it refuses a
    tool with a timeout before reading the stream, as it refuses an ``async def`` one.
    """

    name: str = field(validator=_a_name)
    schema: Mapping[str, Any] = field(factory=lambda: {"type": "object"})
    function: Callable[..., Any] | None = None
    description: str = ""
    timeout: float | None = field(default=None, validator=_non_negative)
    in_thread: bool = False

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (it must be awaited)."""
        return is_async(self.function)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        in_thread: bool = False,
    ) -> Tool:
        """A tool defined by ``function`` alone: its name, schema and description.

        The schema comes from the signature and type hints
        (:func:`~callgate.driver.tooldefs.schema_from_function`), the description from the
        docstring's first paragraph; ``name`` and ``description`` override them.
        """
        return cls(
            name if name is not None else function.__name__,
            schema_from_function(function),
            function,
            description if description is not None else description_of(function),
            timeout,
            in_thread,
        )


@frozen
class Job:
    """A call that passed every check and is to run with its tool's function."""

    call: ExtractedCall
    tool: Tool


Answer = ToolResult | Job
"""What a driver decided for one call: a result already known, or a run to make."""


def run_job(job: Job, ledger: Ledger) -> ToolResult:
    """Run ``job`` here and now; its start is recorded before the function is called.

    An ``async def`` tool, or one with a ``timeout`` (which nothing here can enforce),
    cannot run here: a :class:`TypeError` says to use ``arun_turn`` (nothing is recorded,
    nothing ran). A call the ledger already holds gets the ledger's answer; a ledger that
    cannot record the start leaves the call unrun (:func:`~callgate.ledger.unavailable`).
    """
    call, tool = job.call, job.tool
    function = cast("Callable[..., Any]", tool.function)
    if tool.is_async:
        raise TypeError(_ASYNC_IN_SYNC.format(name=tool.name))
    if tool.timeout is not None:
        raise TypeError(_TIMEOUT_IN_SYNC.format(name=tool.name))
    try:
        known = ledger.start(call)
    except LedgerUnavailable as exc:
        return unavailable(call, exc)
    if known is not None:
        return known
    try:
        value = function(**call.arguments)
    except Exception as exc:  # the tool's own failure is the model's answer
        return _finish(ledger, _failed(call, exc))
    except BaseException as exc:  # KeyboardInterrupt, SystemExit: answered, then passed on
        ledger.record(interrupted(call, f"interrupted ({type(exc).__name__})"))
        raise
    if inspect.isawaitable(value):
        _close(value)
        ledger.forget(call)
        raise TypeError(_ASYNC_IN_SYNC.format(name=tool.name))
    return _finish(ledger, _serialised(call, value))


async def arun_job(job: Job, ledger: Ledger, timeout: float | None) -> ToolResult:
    """Run ``job`` under the async loop: await it, within ``timeout`` seconds (None: no bound).

    A sync tool runs in a worker thread when it asks to (``in_thread``) or has a timeout
    (so the timeout can be kept without blocking the event loop). Each answer says what
    happened: the tool's own ``TimeoutError`` is its failure, not a timeout; a coroutine
    past its timeout was cancelled ("was stopped"); a thread past it cannot be stopped,
    and its answer says it still runs (its result is recorded when it ends).
    """
    call, tool = job.call, job.tool
    try:
        known = await ledger.astart(call)
    except LedgerUnavailable as exc:
        return unavailable(call, exc)
    except BaseException:  # cancelled while the start was written: nothing ran
        ledger.forget(call)
        raise
    if known is not None:
        return known
    if not tool.is_async and (tool.in_thread or timeout is not None):
        return await _in_thread(job, ledger, timeout)
    function = cast("Callable[..., Any]", tool.function)
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            value = function(**call.arguments)
            if inspect.isawaitable(value):
                value = await value
    except TimeoutError as exc:
        if not scope.expired():  # the tool's own TimeoutError (a network client's)
            return await _afinish(ledger, _failed(call, exc))
        content = (
            f"The call to {call.name} timed out after {timeout:g} s and was stopped; "
            "whether it took effect before it was stopped is unknown."
        )
        return await _afinish(ledger, ToolResult(call, content, is_error=True))
    except Exception as exc:  # the tool's own failure is the model's answer
        return await _afinish(ledger, _failed(call, exc))
    except BaseException as exc:  # cancelled mid-run: answered (recorded at once), passed on
        ledger.record(interrupted(call, _how(exc)))
        raise
    return await _afinish(ledger, _serialised(call, value))


class _ThreadRun:
    """A call handed to a worker thread: whether its function began, whether the loop left."""

    __slots__ = ("abandoned", "began", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.began = False
        self.abandoned = False


async def _in_thread(job: Job, ledger: Ledger, timeout: float | None) -> ToolResult:
    """Run a sync tool in a worker thread, within ``timeout``; its start is already recorded.

    A thread cannot be stopped: past the timeout (or on cancellation) the loop stops
    waiting, and the thread records its own result when its function returns. A thread
    that never began (the pool was busy) takes the start record back and never runs.
    """
    call, function = job.call, cast("Callable[..., Any]", job.tool.function)
    run = _ThreadRun()

    def body() -> ToolResult | None:
        with run.lock:
            if run.abandoned:
                return None
            run.began = True
        result = _outcome(call, function)
        with run.lock:
            late = run.abandoned
        if late:
            ledger.record(result)
        return result

    future = asyncio.ensure_future(asyncio.to_thread(body))
    try:
        result = await asyncio.wait_for(asyncio.shield(future), timeout)
    except TimeoutError:
        began = _abandon(run)
        if not began:
            ledger.forget(call)
            content = (
                f"The call to {call.name} was not run: no worker thread was free within "
                f"{timeout:g} s. Nothing ran; the call can be sent again."
            )
            return ToolResult(call, content, is_error=True, refused=True)
        content = (
            f"The call to {call.name} timed out after {timeout:g} s but is still running in "
            "its worker thread (a thread cannot be stopped); it was not run again, and its "
            "outcome is not known yet."
        )
        return ToolResult(call, content, is_error=True)
    except BaseException:  # cancelled: a thread that began records its own result
        if not _abandon(run):
            ledger.forget(call)
        raise
    assert result is not None, "the thread ran the call: the loop was still waiting"
    return await _afinish(ledger, result)


def _abandon(run: _ThreadRun) -> bool:
    """The loop stops waiting for ``run``; whether its function had begun."""
    with run.lock:
        run.abandoned = True
        return run.began


def _outcome(call: ExtractedCall, function: Callable[..., Any]) -> ToolResult:
    """Call a sync tool's function and turn what it returned or raised into the answer."""
    try:
        value = function(**call.arguments)
    except Exception as exc:  # the tool's own failure is the model's answer
        return _failed(call, exc)
    return _serialised(call, value)


def _how(exc: BaseException) -> str:
    """How a run was stopped from outside, in an answer's words."""
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    return f"interrupted ({type(exc).__name__})"


_ASYNC_IN_SYNC = (
    "{name} is an async function: play the turn with arun_turn (or "
    "await driver.aprocess_llm_response(buffer)), which awaits it"
)
_TIMEOUT_IN_SYNC = (
    "{name} has a timeout, which the sync loop cannot enforce (it cannot stop a running "
    "function): play the turn with arun_turn, which does, or give the tool no timeout"
)


def _close(value: object) -> None:
    """Close an awaitable that will never be awaited (no 'never awaited' warning)."""
    close = getattr(value, "close", None)
    if callable(close):
        close()


def _failed(call: ExtractedCall, exc: Exception) -> ToolResult:
    """The answer to a call whose tool raised: the error, logged with its traceback."""
    logger.error("tool %s (call %s) raised", call.name, call.id, exc_info=exc)
    return ToolResult(call, f"{type(exc).__name__}: {exc}", is_error=True)


def _serialised(call: ExtractedCall, value: object) -> ToolResult:
    """The tool's value as the model reads it: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return ToolResult(call, value)
    try:
        return ToolResult(call, json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError) as exc:
        logger.error(
            "the result of tool %s (call %s) could not be serialised",
            call.name,
            call.id,
            exc_info=exc,
        )
        content = f"The call to {call.name} ran, but its result could not be serialised: {exc}"
        return ToolResult(call, content, is_error=True)


def _finish(ledger: Ledger, result: ToolResult) -> ToolResult:
    ledger.record(result)
    return result


async def _afinish(ledger: Ledger, result: ToolResult) -> ToolResult:
    await ledger.arecord(result)
    return result
