"""The integration tests' fake upstream answers without Nagle's 40 ms stall, on every loop.

Its listening socket is made by the tests (not by asyncio), so asyncio only sets
``TCP_NODELAY`` on the connections it accepts when the socket names its protocol; the
listener's own option covers a loop that sets neither.
"""

from __future__ import annotations

import httpx
import pytest

from callgate.testing.builders import openai_chunks
from integrations_upstream import listening_socket, running
from nodelay import LOOPS, accepted_nodelay


@pytest.mark.parametrize("loop", LOOPS)
def test_an_accepted_connection_writes_at_once(loop: str) -> None:
    """A connection the fake upstream's socket accepts has ``TCP_NODELAY`` set."""
    sock = listening_socket()
    sock.bind(("127.0.0.1", 0))
    assert accepted_nodelay(sock, loop) == [1]


def test_the_fake_upstream_still_streams_a_turn() -> None:
    """The server on that socket answers a streamed request whole, ``[DONE]`` last."""
    with running() as upstream, httpx.Client(timeout=30) as client:
        upstream.serve(always=openai_chunks([], [], text=["Hello."]))
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with client.stream("POST", upstream.base_url + "/chat/completions", json=body) as reply:
            received = b"".join(reply.iter_raw())
    assert b"Hello." in received and received.endswith(b"data: [DONE]\n\n")
