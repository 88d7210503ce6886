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
from collections.abc import Callable, Mapping
from typing import Any, cast

from attrs import Attribute, field, frozen

from callgate.driver.tooldefs import description_of, schema_from_function
from callgate.ledger import Ledger
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
    ``tool_timeout`` when None) is enforced by the async loop: a call past it is answered
    with an error. The sync loop cannot stop a running function; there, the tool itself
    must bound its time.
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
    """Run ``job`` here and now; it is in the ledger before the function is called.

    An ``async def`` tool cannot run here: a :class:`TypeError` says to use ``arun_turn``
    (nothing is recorded, nothing ran).
    """
    call, function = job.call, cast("Callable[..., Any]", job.tool.function)
    if job.tool.is_async:
        raise TypeError(_ASYNC_IN_SYNC.format(name=job.tool.name))
    ledger.start(call)
    try:
        value = function(**call.arguments)
        if inspect.isawaitable(value):
            _close(value)
            raise TypeError(_ASYNC_IN_SYNC.format(name=job.tool.name))
    except Exception as exc:  # the tool's own failure is the model's answer
        return _finish(ledger, _failed(call, exc))
    return _finish(ledger, _serialised(call, value))


async def arun_job(job: Job, ledger: Ledger, timeout: float | None) -> ToolResult:
    """Run ``job`` under the async loop: await it, within ``timeout`` seconds (None: no bound)."""
    call, tool = job.call, job.tool
    function = cast("Callable[..., Any]", tool.function)
    ledger.start(call)
    try:
        if tool.in_thread and not tool.is_async:
            value = await asyncio.wait_for(asyncio.to_thread(function, **call.arguments), timeout)
        else:
            value = function(**call.arguments)
            if inspect.isawaitable(value):
                value = await asyncio.wait_for(value, timeout)
    except TimeoutError:
        content = f"The call to {call.name} timed out after {timeout:g} s and was stopped."
        return _finish(ledger, ToolResult(call, content, is_error=True))
    except Exception as exc:  # the tool's own failure is the model's answer
        return _finish(ledger, _failed(call, exc))
    return _finish(ledger, _serialised(call, value))


_ASYNC_IN_SYNC = (
    "{name} is an async function: play the turn with arun_turn (or "
    "await driver.aprocess_llm_response(buffer)), which awaits it"
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
