"""The integration tests' fake upstream answers without Nagle's 40 ms stall, on every loop.

Its listening socket is made by the tests (not by asyncio), so asyncio only sets
``TCP_NODELAY`` on the connections it accepts when the socket names its protocol; the
listener's own option covers a loop that sets neither.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
from collections.abc import Callable

import httpx
import pytest

from callgate.testing.builders import openai_chunks
from integrations_upstream import listening_socket, running

LOOPS = ["asyncio"] + (["uvloop"] if importlib.util.find_spec("uvloop") else [])


def _new_loop(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


@pytest.mark.parametrize("loop", LOOPS)
def test_an_accepted_connection_writes_at_once(loop: str) -> None:
    """A connection the fake upstream's socket accepts has ``TCP_NODELAY`` set."""
    events = _new_loop(loop)()
    sock = listening_socket()
    sock.bind(("127.0.0.1", 0))
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
    assert accepted == [1]


def test_the_fake_upstream_still_streams_a_turn() -> None:
    """The server on that socket answers a streamed request whole, ``[DONE]`` last."""
    with running() as upstream, httpx.Client(timeout=30) as client:
        upstream.serve(always=openai_chunks([], [], text=["Hello."]))
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with client.stream("POST", upstream.base_url + "/chat/completions", json=body) as reply:
            received = b"".join(reply.iter_raw())
    assert b"Hello." in received and received.endswith(b"data: [DONE]\n\n")
