"""Whether a listening socket's accepted connections write at once (``TCP_NODELAY``), per loop.

A connection without it holds small writes for Nagle's algorithm, which meets the peer's
delayed ACK as a 40 ms stall per request; asyncio sets the option only on sockets that name
their protocol, uvloop always. The proxy's and the integrations' fake upstream's tests ask.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket

LOOPS = ["asyncio"] + (["uvloop"] if importlib.util.find_spec("uvloop") else [])
"""The event loops installed here."""


def new_loop(name: str) -> asyncio.AbstractEventLoop:
    """A fresh event loop of the named kind."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def accepted_nodelay(sock: socket.socket, loop: str) -> list[int]:
    """The ``TCP_NODELAY`` value of one connection ``sock`` accepts on the named loop."""
    events = new_loop(loop)
    accepted: list[int] = []

    class Keep(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            raw = transport.get_extra_info("socket")
            accepted.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        server = await events.create_server(Keep, sock=sock)
        _, writer = await asyncio.open_connection(*sock.getsockname())
        while not accepted:
            await asyncio.sleep(0.01)
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()

    try:
        events.run_until_complete(accept_one())
    finally:
        events.close()
    return accepted
