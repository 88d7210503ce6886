"""Codex and Claude Code through the gated gateway, on their own wire and translated.

The scripted models write a call leaked into the text first, then a native call, then
the answer; each CLI must run both shell commands and finish with the answer, its request
normalized (Codex's non-function tools declared as functions) and, with
``--upstream-wire``, translated: Codex in front of a Chat-only and a Messages-only
server, Claude Code in front of a Chat-only and a Responses-only one (its
``output_config.effort`` carried as the upstream's effort, its hints left out and counted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

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
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.testing.builders import anthropic_events
from callgate.testing.wires import WireCall
from proxy_cases import proxy_process

SECOND = "callgate-native"
ANSWER = f"Both ran: {MARK} and {SECOND}."
SHELLS = {"Bash": "command", "exec_command": "cmd"}
"""Each CLI's shell tool and the argument holding the command."""


def shell_of(names: list[Any]) -> tuple[str, str]:
    name = next(n for n in names if n in SHELLS)
    return name, SHELLS[name]


def leaked(name: str, key: str) -> str:
    call = {"name": name, "arguments": {key: f"echo {MARK}"}}
    return "I will run it.<tool_call>" + json.dumps(call) + "</tool_call>"


def chat_model(path: str, body: Mapping[str, Any]) -> Script:
    """An OpenAI-Chat-only server: a leaked call, a native call, then the answer."""
    assert path.endswith("/chat/completions"), path
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or ()]
    done = tool_results(path, body)
    envelope = {
        "id": "chatcmpl-loop",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if not any(n in SHELLS for n in names) or done >= 2:
        chunks = [chunk({"role": "assistant", "content": ANSWER}), chunk({}, "stop")]
    elif done == 0:
        name, key = shell_of(names)
        chunks = [chunk({"role": "assistant", "content": leaked(name, key)}), chunk({}, "stop")]
    else:
        name, key = shell_of(names)
        call = {
            "index": 0,
            "id": "call_native1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({key: f"echo {SECOND}"})},
        }
        chunks = [
            chunk({"role": "assistant", "content": "And another."}),
            chunk({"tool_calls": [call]}),
            chunk({}, "tool_calls"),
        ]
    return Script(sse_body(chunks))


def responses_model(path: str, body: Mapping[str, Any]) -> Script:
    """A Responses server: a leaked call, a native call, then the answer."""
    names = [t.get("name") for t in body.get("tools") or ()]
    done = tool_results(path, body)
    if done >= 2:
        return responses_turn(ANSWER)
    name, key = shell_of(names)
    if done == 0:
        return responses_turn(leaked(name, key))
    return responses_turn("And another.", ("call_native1", name, {key: f"echo {SECOND}"}))


def messages_model(path: str, body: Mapping[str, Any]) -> Script:
    """A Messages-only server: a leaked call, a native call, then the answer."""
    assert path.endswith("/messages"), path
    names = [t.get("name") for t in body.get("tools") or ()]
    done = tool_results(path, body)
    if not any(n in SHELLS for n in names) or done >= 2:
        return anthropic_turn(ANSWER)
    name, key = shell_of(names)
    if done == 0:
        return anthropic_turn(leaked(name, key))
    return anthropic_turn("And another.", ("toolu_native1", name, {key: f"echo {SECOND}"}))


def through(
    model: Any, wire: str | None, run: Any, tmp_path: Path
) -> tuple[list[Any], ReplayUpstream, str]:
    """The CLI's events through a proxy process, the upstream, and the proxy's metrics."""
    upstream = ReplayUpstream(model)
    args = ["--text-formats", "tool_call_tag", "--on-blocked", "notice"]
    if wire is not None:
        args += ["--upstream-wire", wire]
    with (
        ServerThread(upstream) as server,
        proxy_process(["--upstream", server.url, *args]) as (_, url, _),
    ):
        events = run(url, f"Run `echo {MARK}` in the shell.", tmp_path)
        metrics = httpx.get(url + "/metrics", timeout=10).text
    return events, upstream, metrics


@pytest.mark.parametrize(
    ("wire", "model"),
    [(None, responses_model), ("chat", chat_model), ("messages", messages_model)],
)
def test_codex_runs_a_leaked_and_a_native_call_through_the_gateway(
    tmp_path: Path, wire: str | None, model: Any
) -> None:
    events, upstream, _ = through(model, wire, run_codex, tmp_path)
    assert len(upstream.requests) == 3
    assert final_texts(events)[-1] == ANSWER
    outputs = [
        i.get("output", "")
        for i in upstream.requests[-1][1].get("input") or ()
        if i.get("type") == "function_call_output"
    ] or [json.dumps(m) for m in upstream.requests[-1][1].get("messages") or ()]
    assert MARK in " ".join(outputs) and SECOND in " ".join(outputs)


@pytest.mark.parametrize(("wire", "model"), [("chat", chat_model), ("responses", responses_model)])
def test_claude_code_runs_a_leaked_and_a_native_call_across_wires(
    tmp_path: Path, wire: str, model: Any
) -> None:
    events, upstream, metrics = through(model, wire, run_claude, tmp_path)
    assert len(upstream.requests) == 3, [path for path, _, _ in upstream.requests]
    assert final_texts(events) == [ANSWER]
    outputs = json.dumps(upstream.requests[-1][1])
    assert MARK in outputs and SECOND in outputs
    first = upstream.requests[0][1]
    effort = first.get("reasoning_effort") or first.get("reasoning", {}).get("effort")
    assert effort == "medium", first  # the CLI's output_config.effort, carried
    assert "thinking" not in first and "output_config" not in first
    assert 'callgate_proxy_rewrites_total{code="hint_dropped"}' in metrics


def refused_bash(path: str, body: Mapping[str, Any]) -> Script:
    """A Messages server whose Bash call names its command twice (the gate refuses it)."""
    if tool_results(path, body):
        return anthropic_turn("Done.")
    call = WireCall("toolu_1", "Bash", ('{"command": "echo SAFE", ', '"command": "echo PWNED"}'))
    return Script(sse_body(anthropic_events([call], [0, 0, 0, 0]), named=True))


def test_claude_code_runs_no_call_the_gate_refused_under_stream_args(tmp_path: Path) -> None:
    """Claude Code runs a tool_use block whose input parses, whatever the stop reason: with
    ``--stream-args`` it ran ``echo PWNED`` from a call the gate refused while the block's
    deltas were forwarded. A Messages client now gets each call whole once the gate decided."""
    upstream = ReplayUpstream(refused_bash)
    flags = ["--on-blocked", "notice", "--stream-args"]
    with (
        ServerThread(upstream) as server,
        proxy_process(["--upstream", server.url, *flags]) as (_, url, _),
    ):
        events = run_claude(url, "Run `echo SAFE` in the shell.", tmp_path)
    uses = [
        block
        for event in events
        if event.get("type") == "assistant"
        for block in event["message"]["content"]
        if block.get("type") == "tool_use"
    ]
    assert uses == [] and len(upstream.requests) == 1
    assert "A call to Bash was not run" in final_texts(events)[-1]


def set_aside_beside_native(path: str, body: Mapping[str, Any]) -> Script:
    """A Chat-only server: a shell call written in the text, then a native one, one turn."""
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or ()]
    envelope = {"id": "chatcmpl-aside", "object": "chat.completion.chunk", "created": 1}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**envelope, "model": "m", "choices": [choice]}

    if tool_results(path, body) or not any(n in SHELLS for n in names):
        return Script(
            sse_body([chunk({"role": "assistant", "content": "Done."}), chunk({}, "stop")])
        )
    name, key = shell_of(names)
    text = leaked(name, key).replace(MARK, "LEAKED")
    arguments = json.dumps({key: f"echo {SECOND}"})
    call = {"index": 0, "id": "call_n", "type": "function"}
    call["function"] = {"name": name, "arguments": arguments}
    turn = [chunk({"role": "assistant", "content": text}), chunk({"tool_calls": [call]})]
    return Script(sse_body([*turn, chunk({}, "tool_calls")]))


def test_codex_runs_only_the_native_call_when_a_text_call_beside_it_was_shown(
    tmp_path: Path,
) -> None:
    """Under ``--stream-args`` Codex sees the text call's item while it forms; the gate sets
    it aside for the native call, its item ends incomplete without its closing brace, and
    Codex runs the native call alone (with the brace sent, Codex ran the text call too,
    whatever the item's status)."""
    upstream = ReplayUpstream(set_aside_beside_native)
    flags = ["--text-formats", "tool_call_tag", "--on-blocked", "notice", "--stream-args"]
    with (
        ServerThread(upstream) as server,
        proxy_process(["--upstream", server.url, "--upstream-wire", "chat", *flags]) as (
            _,
            url,
            _,
        ),
    ):
        events = run_codex(url, "Run `echo` in the shell.", tmp_path)
    commands = [
        e["item"]["command"]
        for e in events
        if e.get("type") == "item.completed" and e["item"].get("type") == "command_execution"
    ]
    assert len(commands) == 1 and SECOND in commands[0] and "LEAKED" not in commands[0]
    assert len(upstream.requests) == 2
