"""Record the request bodies Claude Code and Codex CLI send, offline (see README.md here).

    python tests/captures/requests/record.py

Each CLI runs once against a scripted loopback model on its own wire that calls the
shell, then answers in text once the tool's result is in the history; every model
request body is written here as ``<client>-<version>.turn<N>.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from agent_clients import (  # noqa: E402
    CLAUDE_VERSION,
    CODEX_VERSION,
    MARK,
    anthropic_turn,
    responses_turn,
    run_claude,
    run_codex,
    tool_results,
)
from callgate.proxy.serving import ServerThread  # noqa: E402
from callgate.proxy.upstream import ReplayUpstream, Script  # noqa: E402


def model(path: str, body: dict[str, Any]) -> Script:
    """Call the shell first, answer in text once a tool result came back."""
    done = tool_results(path, body) > 0
    if path.rstrip("/").endswith("/responses"):
        call = ("call_rec1", "exec_command", {"cmd": f"echo {MARK}"})
        return responses_turn(f"Done: {MARK}") if done else responses_turn("", call)
    call = ("toolu_rec1", "Bash", {"command": f"echo {MARK}", "description": "Print a word"})
    return anthropic_turn(f"Done: {MARK}") if done else anthropic_turn("Running it.", call)


def record(name: str, run: Any) -> None:
    upstream = ReplayUpstream(model)
    with tempfile.TemporaryDirectory() as scratch, ServerThread(upstream) as server:
        run(server.url, f"Run `echo {MARK}` in the shell, then say what it printed.", Path(scratch))
    turns = [
        body for path, body, _ in upstream.requests if path.endswith(("/messages", "/responses"))
    ]
    for n, body in enumerate(turns, 1):
        out = HERE / f"{name}.turn{n}.json"
        out.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(out.name, len(json.dumps(body)), "bytes")


if __name__ == "__main__":
    record(f"claude-code-{CLAUDE_VERSION}", run_claude)
    record(f"codex-{CODEX_VERSION}", run_codex)
