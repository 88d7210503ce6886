"""Claude Code through ``callgate proxy`` (real processes, offline): quoted markup, a timeout.

The fake Anthropic upstream answers every request with prose that quotes a Bash call
(``<tool_call>{"name": "Bash", ...}</tool_call>``) in inline code; the proxy reads Hermes
calls in every turn (``--text-formats tool_call_tag``, as a local model behind a
``claude-*`` alias needs). Claude Code, allowed to run Bash without asking, must print the
prose whole and run nothing. Asked again with the upstream slower than ``--timeout``, its
run must end in error (retries off), never as a quiet empty answer. Without Node or the
``npm ci`` of tests/node_agents the tests skip, unless ``CALLGATE_REQUIRE_NODE=1`` fails them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from agent_clients import anthropic_turn, cli
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script
from callgate.proxy.wires import notices
from proxy_cases import proxy_process

QUOTED = (
    "The model emits `<tool_call>"
    + json.dumps({"name": "Bash", "arguments": {"command": "echo ran > ran.txt"}})
    + "</tool_call>` in its output."
)
"""Prose quoting a call to a tool Claude Code has (Bash) in inline code."""
TIMED_OUT = notices.broken_line("ReadTimeout")


class Model:
    """The upstream: the quoted prose, on time or (``slow``) after the proxy's timeout."""

    def __init__(self) -> None:
        self.slow = False
        self.upstream = ReplayUpstream(self.pick)

    def pick(self, path: str, body: dict[str, Any]) -> Script:
        del path, body
        return attrs.evolve(anthropic_turn(text=QUOTED), delay=3.0 if self.slow else 0.0)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Model, str]]:
    model = Model()
    args = ["--timeout", "1", "--text-formats", "tool_call_tag"]
    with (
        ServerThread(model.upstream) as upstream,
        proxy_process(["--upstream", upstream.url, *args]) as (_, url, _first),
    ):
        yield model, url


def claude(url: str, root: Path) -> tuple[int, list[Any]]:
    """``claude -p`` at ``url`` in a fresh home and folder, Bash allowed, retries off."""
    program = cli("claude")
    home, work = root / "home", root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-offline",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    command = [program, "-p", "Explain the format.", "--output-format", "stream-json"]
    command += ["--verbose", "--allowedTools", "Bash"]
    done = subprocess.run(
        command,
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return done.returncode, [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]


def texts(events: list[Any]) -> list[str]:
    """The text blocks of Claude Code's assistant messages, in order."""
    return [
        block["text"]
        for event in events
        if event.get("type") == "assistant"
        for block in event["message"]["content"]
        if block.get("type") == "text"
    ]


def test_claude_code_prints_quoted_markup_whole_and_runs_nothing(
    served: tuple[Model, str], tmp_path: Path
) -> None:
    model, url = served
    model.slow = False
    code, events = claude(url, tmp_path)
    assert code == 0, events[-1:]
    assert texts(events) == [QUOTED]
    assert not (tmp_path / "work" / "ran.txt").exists()
    assert events[-1]["type"] == "result" and events[-1]["result"] == QUOTED
    tools = model.upstream.requests[-1][1]["tools"]
    assert "Bash" in [t["name"] for t in tools]  # the call quoted is a tool it has


def test_claude_code_ends_in_error_when_the_upstream_times_out(
    served: tuple[Model, str], tmp_path: Path
) -> None:
    model, url = served
    model.slow = True
    try:
        code, events = claude(url, tmp_path)
    finally:
        model.slow = False
    assert code != 0
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is True
    assert any(TIMED_OUT in text for text in texts(events))
