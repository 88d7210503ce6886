"""Claude Code and Codex CLI, run offline against loopback servers: shared by the agent tests.

Both CLIs come from npm (tests/node_agents: ``npm ci`` there; CI runs it) with their
binaries inside the package. Each run gets a fresh home and working directory, so no
login, settings or history of the machine's user reach it; Claude Code reads
``ANTHROPIC_BASE_URL`` and Codex a model provider given by ``-c`` overrides whose
``base_url`` is the server under test. The scripted models here answer on each CLI's own
wire: a call (leaked into the text or native) while no tool result is in the history,
then a closing text once one is. Without Node or the ``npm ci`` the tests skip, unless
``CALLGATE_REQUIRE_NODE=1`` (CI) fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from callgate.proxy.sse import encode
from callgate.proxy.upstream import Script

AGENTS = Path(__file__).resolve().parent / "node_agents"
BIN = AGENTS / "node_modules" / ".bin"
CLAUDE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
MARK = "callgate-ok"
"""What the scripted shell command prints, and the closing answer repeats."""


def cli(name: str) -> str:
    """The path of an installed CLI (``claude`` or ``codex``), or skip (fail under CI)."""
    program = BIN / name
    if shutil.which("node") is None or not program.exists():
        message = f"needs node and 'npm ci' in tests/node_agents ({name})"
        if os.environ.get("CALLGATE_REQUIRE_NODE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return str(program)


def _clean_env(home: Path) -> dict[str, str]:
    """The environment of a CLI run: no key, setting or proxy of the machine's user."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(home)
    return env


def run_claude(base_url: str, prompt: str, root: Path, timeout: float = 120) -> list[Any]:
    """``claude -p PROMPT --output-format stream-json`` at ``base_url``: its events.

    Only Bash is allowed without asking; nonessential traffic (updates, telemetry) is off.
    """
    home, work = root / "home", root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    env = _clean_env(home)
    env.update(
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="sk-ant-offline",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    command = [
        cli("claude"),
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "Bash",
    ]
    return _events(command, env, work, timeout)


def run_codex(
    base_url: str, prompt: str, root: Path, wire_api: str = "responses", timeout: float = 120
) -> list[Any]:
    """``codex exec --json PROMPT`` with a model provider whose ``base_url`` is given."""
    home, work = root / "home", root / "work"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    env = _clean_env(home)
    env["CODEX_HOME"] = str(codex_home)
    provider = f'{{name="loopback",base_url="{base_url}/v1",wire_api="{wire_api}"}}'
    command = [
        cli("codex"),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",
        "-c",
        "model_provider=loopback",
        "-c",
        f"model_providers.loopback={provider}",
        "-c",
        "model=gpt-5-codex",
        prompt,
    ]
    return _events(command, env, work, timeout)


def _events(command: list[str], env: dict[str, str], cwd: Path, timeout: float) -> list[Any]:
    done = subprocess.run(
        command,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


# -- the scripted models --------------------------------------------------------------------


def tool_results(path: str, body: Mapping[str, Any]) -> int:
    """How many tool results the request's history holds (either wire)."""
    if path.rstrip("/").endswith("/responses"):
        items = body.get("input")
        kinds = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
        return sum(1 for i in items or () if isinstance(i, Mapping) and i.get("type") in kinds)
    count = 0
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            count += sum(
                1 for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"
            )
        if isinstance(message, Mapping) and message.get("role") == "tool":
            count += 1
    return count


def anthropic_turn(
    text: str = "", call: tuple[str, str, Mapping[str, Any]] | None = None, model: str = "m"
) -> Script:
    """A Messages stream: a text block, then a native ``tool_use`` (id, name, input)."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_loop",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 1},
            },
        }
    ]
    index = 0
    if text:
        events += [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        index = 1
    if call is not None:
        call_id, name, arguments = call
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        events += [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    stop = "tool_use" if call is not None else "end_turn"
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
    ]
    return Script(b"".join(encode(e, e["type"]) for e in events))


def responses_turn(
    text: str = "", call: tuple[str, str, Mapping[str, Any]] | None = None, model: str = "m"
) -> Script:
    """A Responses stream: a message item, then a ``function_call`` (call_id, name, args)."""
    response = {"id": "resp_loop", "object": "response", "model": model, "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}}
    ]
    output: list[dict[str, Any]] = []
    if text:
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"type": "message", "id": "msg_loop", "role": "assistant", "status": "completed"}
        where = {"output_index": 0, "item_id": "msg_loop", "content_index": 0}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **where, "delta": text},
            {"type": "response.output_text.done", **where, "text": text},
            {"type": "response.content_part.done", **where, "part": part},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "content": [part]},
            },
        ]
        output.append({**item, "content": [part]})
    if call is not None:
        call_id, name, arguments = call
        at = len(output)
        raw = json.dumps(arguments)
        item = {"type": "function_call", "id": "fc_loop", "call_id": call_id, "name": name}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": at,
                "item": {**item, "arguments": "", "status": "in_progress"},
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": at,
                "item_id": "fc_loop",
                "delta": raw,
            },
            {
                "type": "response.function_call_arguments.done",
                "output_index": at,
                "item_id": "fc_loop",
                "arguments": raw,
            },
            {
                "type": "response.output_item.done",
                "output_index": at,
                "item": {**item, "arguments": raw, "status": "completed"},
            },
        ]
        output.append({**item, "arguments": raw, "status": "completed"})
    usage = {
        "input_tokens": 12,
        "output_tokens": 7,
        "total_tokens": 19,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    done = {**response, "status": "completed", "output": output, "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return Script(b"".join(encode(e, e["type"]) for e in events))


def final_texts(events: Sequence[Any]) -> list[str]:
    """The closing answers a CLI printed: Claude Code's ``result``, Codex's agent messages."""
    out = []
    for event in events:
        if event.get("type") == "result":
            out.append(str(event.get("result")))
        item = event.get("item") if event.get("type") == "item.completed" else None
        if isinstance(item, Mapping) and item.get("type") == "agent_message":
            out.append(str(item.get("text")))
    return out
