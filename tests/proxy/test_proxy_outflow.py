"""The streamed answer's out-flow on every event loop: pieces in order, and a client that
leaves cancels a silent pump (asyncio's own timeout there, anyio's task group on trio).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import anyio
import pytest

from callgate.proxy.outflow import Emit, stream_out

START = {"type": "http.response.start", "status": 200, "headers": []}
NO_TRIO = importlib.util.find_spec("trio") is None
BACKENDS = ["asyncio", pytest.param("trio", marks=pytest.mark.skipif(NO_TRIO, reason="no trio"))]


class Client:
    """One client's ASGI receive and send: it leaves when :attr:`leaves` is set."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.leaves = anyio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.leaves.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(dict(message))


def _bodies(client: Client) -> list[bytes]:
    return [m["body"] for m in client.sent if m["type"] == "http.response.body"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_piece_goes_out_in_order_then_the_end(backend: str) -> None:
    async def main() -> Client:
        client = Client()

        async def pump(emit: Emit) -> None:
            await emit(b"a")
            await emit(b"b")

        with anyio.fail_after(5):
            await stream_out(client.receive, client.send, START, pump)
        return client

    client = anyio.run(main, backend=backend)
    assert client.sent[0] == START
    assert _bodies(client) == [b"a", b"b", b""]
    assert client.sent[-1]["more_body"] is False


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_client_that_leaves_cancels_a_silent_pump(backend: str) -> None:
    async def main() -> tuple[Client, list[str]]:
        client = Client()
        seen: list[str] = []

        async def pump(emit: Emit) -> None:
            await emit(b"a")
            client.leaves.set()
            try:
                await anyio.sleep_forever()
            finally:
                seen.append("cancelled")

        with anyio.fail_after(5):
            await stream_out(client.receive, client.send, START, pump)
        seen.append("returned")
        return client, seen

    client, seen = anyio.run(main, backend=backend)
    assert seen == ["cancelled", "returned"]
    assert _bodies(client) == [b"a"]  # no end of the body: the client is gone


def test_a_write_to_a_client_that_went_away_ends_quietly() -> None:
    async def main() -> list[bytes]:
        client = Client()
        pumped: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            if message.get("body"):
                raise OSError("the client went away")
            await client.send(message)

        async def pump(emit: Emit) -> None:
            await emit(b"a")
            pumped.append(b"never")

        await stream_out(client.receive, send, START, pump)
        return pumped

    assert anyio.run(main, backend="asyncio") == []


def test_a_receive_that_fails_stops_the_pump_and_is_raised() -> None:
    async def main() -> None:
        async def receive() -> dict[str, Any]:
            raise RuntimeError("the server cannot receive")

        async def send(message: dict[str, Any]) -> None:
            del message

        async def pump(emit: Emit) -> None:
            await emit(b"a")
            await anyio.sleep_forever()

        with anyio.fail_after(5):
            await stream_out(receive, send, START, pump)

    with pytest.raises(RuntimeError, match="cannot receive"):
        anyio.run(main, backend="asyncio")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("leaves", [False, True], ids=["whole", "client-left"])
def test_then_is_called_once_however_the_answer_ended(backend: str, leaves: bool) -> None:
    async def main() -> list[str]:
        client = Client()
        calls: list[str] = []

        async def pump(emit: Emit) -> None:
            await emit(b"a")
            if leaves:
                client.leaves.set()
                await anyio.sleep(30)

        with anyio.fail_after(5):
            await stream_out(
                client.receive, client.send, START, pump, then=lambda: calls.append("then")
            )
        return calls

    assert anyio.run(main, backend=backend) == ["then"]
