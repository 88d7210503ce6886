"""``callgate ext-proc``: its flags, its errors (one line, exit 2) and a clean stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import httpx
import pytest

from callgate.cli import main
from envoy_front import require_envoy
from proxy_cases import ROOT


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--on-blocked", "repair", "2"], "cannot make: use notice or pass"),
        (["--on-blocked", "maybe"], "--on-blocked must be notice, repair N or pass"),
        (["--listen", "nowhere"], "--listen must be HOST:PORT"),
        (["--listen", "127.0.0.1:99999"], "--listen must be HOST:PORT"),
        (["--text-formats", "nope"], "unknown format 'nope'"),
        (["--upstream-wire", "gemini"], "--upstream-wire must be chat, messages or responses"),
    ],
)
def test_a_flag_that_cannot_be_used_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ext-proc", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_the_processor_starts_says_where_serves_metrics_and_stops_on_sigterm() -> None:
    require_envoy()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        metrics = sock.getsockname()[1]
    argv = ["ext-proc", "--listen", "127.0.0.1:0", "--drain", "1", "--metrics-port", str(metrics)]
    process = subprocess.Popen(
        [sys.executable, "-m", "callgate", *argv], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("callgate ext-proc: listening on 127.0.0.1:")
        assert int(line.rsplit(":", 1)[1]) > 0
        page = httpx.get(f"http://127.0.0.1:{metrics}/metrics", timeout=10).text
        assert "callgate_proxy_turns" in page
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_upstream_wire_flag_reaches_the_processors_config() -> None:
    require_envoy()
    from callgate.cli.commands import build_parser
    from callgate.cli.extproc import extproc_config

    args = build_parser().parse_args(["ext-proc", "--upstream-wire", "chat"])
    assert extproc_config(args).upstream_wire == "chat"
    args = build_parser().parse_args(["ext-proc"])
    assert extproc_config(args).upstream_wire is None
