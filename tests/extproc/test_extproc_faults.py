"""Envoy fails closed around callgate's processor: killed, down, restarted, too slow.

One Envoy for the module with two listeners: ``killable`` calls ``callgate ext-proc`` run as
a process of this checkout (SIGKILLed mid-stream, then started again on the same port),
``slow`` calls a processor that answers after Envoy's message timeout.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest

from callgate.proxy.upstream import Script, sse_body
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from envoy_front import openai_turn, require_envoy, weather_request
from proxy_cases import ROOT

require_envoy()

CALL = WireCall("call_1", "get_weather", ('{"city": ', '"Paris"}'))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_processor(port: int) -> subprocess.Popen[str]:
    """``callgate ext-proc`` on ``port``, once it says it listens."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        [sys.executable, "-m", "callgate", "ext-proc", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert f"listening on 127.0.0.1:{port}" in line, process.stderr.read() if process.stderr else ""
    return process


class Slow:
    """A processor that answers every message after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def Process(self, requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        from callgate.extproc import wire

        async for request in requests:
            await asyncio.sleep(self.delay)
            if request.WhichOneof("request") == "request_headers":
                yield wire.headers_answer(response=False)


class Faults:
    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.port = _free_port()
        self.processor: subprocess.Popen[str] | None = None


@pytest.fixture(scope="module")
def faults() -> Iterator[Faults]:
    from callgate.extproc.bootstrap import EnvoyProcess, Route, bootstrap
    from callgate.extproc.server import ProcessorThread
    from callgate.proxy.serving import ServerThread
    from callgate.proxy.upstream import ReplayUpstream

    state = Faults()
    upstream_app = ReplayUpstream(lambda path, body: state.scripts[body["metadata"]["case"]])
    state.upstream = upstream_app  # type: ignore[attr-defined]
    state.processor = _start_processor(state.port)
    try:
        with (
            ServerThread(upstream_app) as upstream,
            ProcessorThread(Slow(2.0)) as slow,  # type: ignore[arg-type]
        ):
            config = bootstrap(
                [
                    Route("killable", 0, processor="killable"),
                    Route("slow", 0, processor="slow", message_timeout="0.3s"),
                ],
                ("127.0.0.1", upstream.port),
                {"killable": [("127.0.0.1", state.port)], "slow": [("127.0.0.1", slow.port)]},
                admin_port=0,
            )
            with EnvoyProcess(config) as envoy:
                state.envoy = envoy  # type: ignore[attr-defined]
                yield state
    finally:
        if state.processor is not None and state.processor.poll() is None:
            state.processor.kill()
            state.processor.wait()


def _url(faults: Faults, route: str) -> str:
    return f"http://127.0.0.1:{faults.envoy.ports[route]}"  # type: ignore[attr-defined]


def _slow_call(faults: Faults, key: str) -> None:
    chunks = openai_chunks([CALL], [0, 0, 0], text=["a", "b", "c", "d", "e", "f"])
    faults.scripts[key] = Script(sse_body(chunks), delay=0.15)


def test_a_killed_processor_fails_closed_mid_stream_and_a_restarted_one_serves(
    faults: Faults,
) -> None:
    _slow_call(faults, "killed")
    client = openai.OpenAI(
        base_url=_url(faults, "killable") + "/v1", api_key="k", max_retries=0, timeout=20
    )
    got: list[dict[str, Any]] = []
    with pytest.raises((openai.APIError, httpx.HTTPError)):
        for chunk in client.chat.completions.create(**weather_request("killed"), stream=True):
            got.append(chunk.model_dump())
            if len(got) == 2:
                assert faults.processor is not None
                faults.processor.send_signal(signal.SIGKILL)
                faults.processor.wait()
    assert got, "the stream had started before the processor was killed"
    assert not [c for c in got for ch in c["choices"] if ch["delta"].get("tool_calls")]
    assert "tool_calls" not in [ch["finish_reason"] for c in got for ch in c["choices"]]

    seen = len(faults.upstream.requests)  # type: ignore[attr-defined]
    with pytest.raises(openai.APIStatusError) as down:  # the processor is down: no request
        openai_turn(_url(faults, "killable"), weather_request("killed"))
    assert down.value.status_code >= 500
    assert len(faults.upstream.requests) == seen  # type: ignore[attr-defined]

    faults.processor = _start_processor(faults.port)
    faults.scripts["again"] = Script(sse_body(openai_chunks([CALL], [0, 0, 0], text=["ok"])))
    deadline = time.monotonic() + 15
    while True:
        try:
            got_again = openai_turn(_url(faults, "killable"), weather_request("again"))
            break
        except openai.APIStatusError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert got_again["calls"] == [("get_weather", {"city": "Paris"})]


def test_a_slow_processor_times_out_and_the_client_sees_a_clean_error(faults: Faults) -> None:
    faults.scripts["slow"] = Script(sse_body(openai_chunks([CALL], [0, 0, 0], text=["x"])))
    seen = len(faults.upstream.requests)  # type: ignore[attr-defined]
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as error:
        openai_turn(_url(faults, "slow"), weather_request("slow"))
    assert error.value.status_code >= 500
    assert time.monotonic() - started < 2.0, "Envoy's message timeout, not the processor, ended it"
    assert len(faults.upstream.requests) == seen  # type: ignore[attr-defined]
