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
    model: Any, wire: str | None, run: Any, tmp_path: Path, *flags: str
) -> tuple[list[Any], ReplayUpstream, str]:
    """The CLI's events through a proxy process, the upstream, and the proxy's metrics."""
    upstream = ReplayUpstream(model)
    args = ["--text-formats", "tool_call_tag", "--on-blocked", "notice", *flags]
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


def test_claude_code_runs_both_calls_shown_as_they_form_on_its_own_wire(tmp_path: Path) -> None:
    """Under ``--stream-args`` both calls' inputs stream to Claude Code as they form, each
    block held open until the gate's verdict: the call written in the text (its block
    stays open across the text after it) and the native one both run."""
    events, upstream, _ = through(messages_model, None, run_claude, tmp_path, "--stream-args")
    assert len(upstream.requests) == 3, [path for path, _, _ in upstream.requests]
    assert final_texts(events) == [ANSWER]
    outputs = json.dumps(upstream.requests[-1][1])
    assert MARK in outputs and SECOND in outputs


def shell_model(marker: Path, pieces: tuple[str, ...]) -> Any:
    """A Messages server whose Bash call's input comes in ``pieces`` (``{marker}`` in them
    is the file a run of the call creates), then, once a tool result came, the answer."""

    def model(path: str, body: Mapping[str, Any]) -> Script:
        if tool_results(path, body):
            return anthropic_turn("Done.")
        call = WireCall("toolu_1", "Bash", tuple(p.format(marker=marker) for p in pieces))
        return Script(sse_body(anthropic_events([call], [0] * (2 + len(pieces))), named=True))

    return model


def test_claude_code_runs_no_call_the_gate_refused_under_stream_args(tmp_path: Path) -> None:
    """Claude Code runs a tool_use block once its stop came and its input parses, whatever
    the stop reason: with ``--stream-args`` it ran a call the gate refused (its command
    given twice) while the block's deltas and stop were forwarded as they came. The block
    now stops after the verdict with its close held back: the CLI reads its input as not
    JSON and runs nothing; an accepted call streamed the same way runs."""
    refused = tmp_path / "refused"
    twice = ('{{"command": "echo SAFE", ', '"command": "touch {marker}"}}')
    flags = ["--on-blocked", "notice", "--stream-args"]
    for marker, pieces in [
        (refused, twice),
        (tmp_path / "accepted", ('{{"command": ', '"touch {marker}"}}')),
    ]:
        upstream = ReplayUpstream(shell_model(marker, pieces))
        with (
            ServerThread(upstream) as server,
            proxy_process(["--upstream", server.url, *flags]) as (_, url, _),
        ):
            events = run_claude(
                url, "Run the command in the shell.", tmp_path / f"{marker.name}-cli"
            )
        uses = [
            block["input"]
            for event in events
            if event.get("type") == "assistant"
            for block in event["message"]["content"]
            if block.get("type") == "tool_use"
        ]
        assert len(uses) == 1 and final_texts(events)[-1] == "Done."
        if marker is refused:
            assert not marker.exists()
            assert "command" not in uses[0]  # the CLI could not read it
            said = json.dumps([event for event in events if event.get("type") == "assistant"])
            assert "A call to Bash was not run" in said
        else:
            assert marker.exists() and uses == [{"command": f"touch {marker}"}]
