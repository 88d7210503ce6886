"""A streamed answer to the client: its start, then what a pump emits, until the client leaves.

:func:`stream_out` sends the response's start, then every piece the pump emits, then the
body's end with the piece the pump returns (a pump that knows its last piece sends it with
the end: one write to the client, not two). A watcher waits for ``http.disconnect`` beside
the pump, so an upstream that is silent is still cancelled the moment its client goes away.
On asyncio (uvloop included) the watcher is one plain task that expires an
:func:`asyncio.timeout` around the pump: anyio's task group, which any other event loop
(trio) takes, costs about 0.3 ms of CPU per request.
A pump that says when it is about to wait (``lazy``) gets the watcher from then on only:
a one-chunk answer already in when it starts is sent without one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

import anyio

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Emit = Callable[[bytes], Awaitable[None]]
"""Sends one piece of the response body to the client."""


class Outlet(Protocol):
    """What a pump is given: :data:`Emit` (call it), ``watch()``, ``writing`` and ``send``."""

    writing: bool
    """Whether a piece is being sent now (set while a call's write is under way, and left
    set by a write that failed): a failure then is the write's, not the pump's."""
    send: Send
    """The ASGI send: a pump that writes a body message itself (one coroutine fewer than
    a call) sets ``writing`` around it as a call does."""

    async def __call__(self, piece: bytes) -> None:
        """Send one piece of the response body to the client."""

    def watch(self) -> None:
        """Watch for the client's leaving from now on (a pump about to wait says so)."""


Pump = Callable[[Outlet], Awaitable[bytes | None]]
"""Emits the body's pieces; returns the last one, sent with the body's end (None: nothing)."""

__all__ = ["Emit", "Outlet", "stream_out"]


class _Outlet:
    """The :class:`Outlet` of one response."""

    __slots__ = ("send", "watch", "writing")

    def __init__(self, send: Send, watch: Callable[[], None]) -> None:
        self.send = send
        self.watch = watch
        self.writing = False

    async def __call__(self, piece: bytes) -> None:
        self.writing = True
        await self.send({"type": "http.response.body", "body": piece, "more_body": True})
        self.writing = False


def _unwatched() -> None:
    """A watcher that already runs: nothing to start."""


async def stream_out(
    receive: Receive,
    send: Send,
    start: Message,
    pump: Pump,
    *,
    lazy: bool = False,
    then: Callable[[], None] | None = None,
) -> None:
    """Send ``start``, then what ``pump`` emits and returns; a client that disconnects cancels it.

    ``lazy``: the watcher starts when the pump first calls ``watch()``, which it does before
    every wait that is not a write (a pump that never waits never needs one: while it runs,
    nothing could stop it; a write to a client that left returns at once). ``then`` is
    called once it is over, however it ended (a caller that returns this coroutine to be
    awaited, rather than awaiting it inside a ``finally``, is one coroutine fewer per read).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop: anyio's task group
        try:
            await _stream_out_anyio(receive, send, start, pump)
        finally:
            if then is not None:
                then()
        return
    pumping = True
    scope = asyncio.timeout(None)
    listener: asyncio.Task[None] | None = None

    async def listen() -> None:
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:  # the client left (or receiving failed): stop the pump
            if pumping:
                scope.reschedule(loop.time())

    def watch() -> None:
        nonlocal listener
        if listener is None and pumping:
            listener = loop.create_task(listen())

    try:
        async with scope:
            if not lazy:
                watch()
            try:  # _answer's steps, not a call: one coroutine layer fewer on every read
                await send(start)
                last = await pump(_Outlet(send, watch))
                await send({"type": "http.response.body", "body": last or b"", "more_body": False})
            except OSError:  # the client went away while we wrote
                pass
            finally:
                pumping = False
                if listener is not None:
                    listener.cancel()
                if then is not None:
                    then()
    except TimeoutError:  # the client left: the pump was cancelled (its own are OSErrors)
        pass
    if listener is not None and listener.done() and not listener.cancelled():
        error = listener.exception()
        if error is not None:
            raise error


async def _answer(send: Send, start: Message, pump: Pump, outlet: Outlet) -> None:
    try:
        await send(start)
        last = await pump(outlet)
        await send({"type": "http.response.body", "body": last or b"", "more_body": False})
    except OSError:  # the client went away while we wrote
        pass


async def _stream_out_anyio(receive: Receive, send: Send, start: Message, pump: Pump) -> None:
    async with anyio.create_task_group() as group:

        async def listen() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    group.cancel_scope.cancel()
                    return

        group.start_soon(listen)
        await _answer(send, start, pump, _Outlet(send, _unwatched))
        group.cancel_scope.cancel()
