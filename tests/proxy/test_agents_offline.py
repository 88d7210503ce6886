"""Real agent CLIs, offline: Claude Code through ``callgate proxy``, and both CLIs' loops.

Claude Code (npm ``@anthropic-ai/claude-code``) runs ``claude -p … --output-format
stream-json`` with ``ANTHROPIC_BASE_URL`` at a ``callgate proxy`` process, in front of a
scripted Anthropic Messages server that first writes a call leaked into its text, then a
native ``tool_use``, then its answer: the CLI runs both shell commands and finishes with
the answer. Codex (npm ``@openai/codex``) runs ``codex exec`` against a scripted
Responses server: it runs the shell call it is given and finishes (the gated
``/v1/responses`` path is the proxy's to come; the CLI's loop is checked here so its
harness stays alive). See tests/agent_clients.py for how each CLI is run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_clients import (
    MARK,
    anthropic_turn,
    final_texts,
    responses_turn,
    run_claude,
    run_codex,
    tool_results,
)
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script
from proxy_cases import proxy_process

SECOND = "callgate-native"
"""What the second, native, shell call prints."""
LEAKED = (
    "I will run it.<tool_call>"
    + json.dumps({"name": "Bash", "arguments": {"command": f"echo {MARK}"}})
    + "</tool_call>"
)


def claude_model(path: str, body: Mapping[str, Any]) -> Script:
    """A leaked call, then a native one, then the answer (Anthropic Messages)."""
    names = [t.get("name") for t in body.get("tools") or ()]
    done = tool_results(path, body)
    if "Bash" not in names or done >= 2:
        return anthropic_turn(f"Both ran: {MARK} and {SECOND}.")
    if done == 0:
        return anthropic_turn(LEAKED)
    call = ("toolu_native1", "Bash", {"command": f"echo {SECOND}", "description": "Print"})
    return anthropic_turn("And another.", call)


def results_of(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (tool_use id, output) of every tool result in a Messages request's history."""
    found = []
    for message in body.get("messages") or ():
        for part in message.get("content") if isinstance(message.get("content"), list) else ():
            if isinstance(part, Mapping) and part.get("type") == "tool_result":
                content = part.get("content")
                if isinstance(content, list):
                    content = "".join(str(c.get("text", "")) for c in content)
                found.append((str(part.get("tool_use_id")), str(content)))
    return found


def test_claude_code_runs_a_leaked_and_a_native_call_through_the_proxy(tmp_path: Path) -> None:
    upstream = ReplayUpstream(claude_model)
    with (
        ServerThread(upstream) as server,
        proxy_process(
            ["--upstream", server.url, "--text-formats", "tool_call_tag", "--on-blocked", "notice"]
        ) as (_, url, _),
    ):
        events = run_claude(url, f"Run `echo {MARK}` in the shell.", tmp_path)
    turns = [body for path, body, _ in upstream.requests if path.endswith("/messages")]
    assert len(turns) == 3, [results_of(b) for b in turns]
    first, second = results_of(turns[1]), results_of(turns[2])
    assert [output.strip() for _, output in first] == [MARK]
    leaked_id = first[0][0]
    assert leaked_id.startswith("toolu_") and leaked_id != "toolu_native1"
    assert second[-1] == ("toolu_native1", second[-1][1])
    assert second[-1][1].strip() == SECOND
    assistant = [m for m in turns[1]["messages"] if m.get("role") == "assistant"][-1]
    kinds = [part["type"] for part in assistant["content"]]
    assert kinds == ["text", "tool_use"], assistant
    assert assistant["content"][0]["text"] == "I will run it."
    assert final_texts(events) == [f"Both ran: {MARK} and {SECOND}."]


def codex_model(path: str, body: Mapping[str, Any]) -> Script:
    """A shell call, then the answer once its output came back (Responses)."""
    if tool_results(path, body):
        return responses_turn(f"It printed {MARK}.")
    return responses_turn("", ("call_shell1", "exec_command", {"cmd": f"echo {MARK}"}))


def test_codex_runs_a_shell_call_of_a_responses_server_offline(tmp_path: Path) -> None:
    upstream = ReplayUpstream(codex_model)
    with ServerThread(upstream) as server:
        events = run_codex(server.url, f"Run `echo {MARK}`.", tmp_path)
    turns = [body for path, body, _ in upstream.requests if path.endswith("/responses")]
    assert len(turns) == 2
    outputs = [i for i in turns[1]["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_shell1"]
    assert MARK in outputs[0]["output"]
    assert final_texts(events) == [f"It printed {MARK}."]
