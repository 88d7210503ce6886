"""Tools a client declares in a form other than a function, checked over HTTP on loopback.

Codex declares ``local_shell`` and freeform ``custom`` tools; a Chat-only upstream sees them
as functions, and the proxy writes each call back in the form the client declared. An
upstream's own ``shell`` and ``apply_patch`` call items are gated like any call. Every test
drives a real proxy (uvicorn on loopback) in front of a scripted upstream with the openai
SDK as the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.sse import encode
from callgate.proxy.upstream import Script, sse_body, whole_body
from proxy_cases import ScriptedUpstream as Scripted
from proxy_cases import scripted_upstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Scripted, str]]:
    with scripted_upstream() as running:
        yield running


def chat_calls(*calls: tuple[str, str, dict[str, Any]], stream: bool = True) -> Script:
    """A Chat Completions answer (a stream, or whole) of native calls (id, name, arguments)."""
    envelope = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    deltas = [
        {
            "index": n,
            "id": i,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(a)},
        }
        for n, (i, name, a) in enumerate(calls)
    ]
    chunks = [
        {
            **envelope,
            "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": deltas}}],
        },
        {**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    if not stream:
        message = {"role": "assistant", "content": None, "tool_calls": deltas}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        whole = {**envelope, "object": "chat.completion", "choices": [choice]}
        return Script(whole_body(whole), content_type="application/json")
    return Script(sse_body(chunks))


@pytest.mark.parametrize("stream", [True, False])
def test_a_declared_local_shell_and_custom_tool_are_called_back_in_their_own_form(
    upstream: tuple[Scripted, str], stream: bool
) -> None:
    """Codex's ``local_shell`` and a freeform ``custom`` tool go to a Chat-only upstream as
    functions; their gated calls come back as ``local_shell_call`` and ``custom_tool_call``
    items, which the openai SDK rebuilds."""
    import openai

    scripted, url = upstream
    scripted.script = chat_calls(
        ("call_sh", "local_shell", {"command": ["echo", "hi"], "timeout_ms": 500}),
        ("call_patch", "apply_patch", {"input": "*** Begin Patch\n*** End Patch"}),
        stream=stream,
    )
    tools = [
        {"type": "local_shell"},
        {"type": "custom", "name": "apply_patch", "description": "Patch files."},
    ]
    config = ProxyConfig(url, Options(), upstream_wire="chat")
    with ServerThread(create_app(config)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        request: dict[str, Any] = {"model": "m", "input": "list files", "tools": tools}
        if stream:
            with client.responses.stream(**request) as answer:
                response = answer.get_final_response()
        else:
            response = client.responses.create(**request)
    shell, patch = (item.model_dump(exclude_none=True) for item in response.output)
    assert shell["type"] == "local_shell_call" and shell["call_id"] == "call_sh"
    assert shell["action"] == {
        "type": "exec",
        "command": ["echo", "hi"],
        "timeout_ms": 500,
        "env": {},
    }
    assert (patch["type"], patch["call_id"], patch["name"]) == (
        "custom_tool_call",
        "call_patch",
        "apply_patch",
    )
    assert patch["input"] == "*** Begin Patch\n*** End Patch"


def responses_items(*items: dict[str, Any]) -> Script:
    """A Responses stream whose output is ``items``, each added then done as it is."""
    head = {"id": "resp_up", "object": "response", "model": "m", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**head, "status": "in_progress"}}
    ]
    for n, item in enumerate(items):
        events += [
            {"type": "response.output_item.added", "output_index": n, "item": item},
            {"type": "response.output_item.done", "output_index": n, "item": item},
        ]
    done = {**head, "status": "completed", "output": list(items)}
    events.append({"type": "response.completed", "response": done})
    return Script(b"".join(encode(e, e["type"]) for e in events))


SHELL_ACTION = {"type": "exec", "command": ["ls"], "env": {}, "timeout_ms": 900}


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        (
            {
                "type": "local_shell_call",
                "id": "lsh_1",
                "call_id": "call_a",
                "action": SHELL_ACTION,
            },
            True,
        ),
        (
            {
                "type": "local_shell_call",
                "id": "lsh_2",
                "call_id": "call_b",
                "action": {"type": "exec"},
            },
            False,
        ),
        (
            {
                "type": "shell_call",
                "id": "sh_1",
                "call_id": "call_c",
                "action": {"commands": ["ls"]},
            },
            False,
        ),
        (
            {
                "type": "apply_patch_call",
                "id": "ap_1",
                "call_id": "call_d",
                "operation": {"type": "delete_file", "path": "/etc/passwd"},
            },
            False,
        ),
    ],
    ids=["local-shell", "local-shell-no-command", "shell-undeclared", "apply-patch-undeclared"],
)
def test_an_upstreams_shell_and_patch_call_items_are_gated(
    upstream: tuple[Scripted, str], item: dict[str, Any], kept: bool
) -> None:
    """A ``local_shell_call``, ``shell_call`` or ``apply_patch_call`` item of a Responses
    upstream is checked like any call: a valid call of the declared ``local_shell`` reaches
    the client as its ``local_shell_call``; a call without its command, or of a tool the
    client did not declare, is withheld with its finding, never forwarded."""
    import openai

    scripted, url = upstream
    scripted.script = responses_items({**item, "status": "completed"})
    with ServerThread(create_app(ProxyConfig(url, Options(on_blocked="notice")))) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        request = {"model": "m", "input": "list files", "tools": [{"type": "local_shell"}]}
        with client.responses.stream(**request) as answer:
            response = answer.get_final_response()
    kinds = [i.type for i in response.output]
    if kept:
        (call,) = response.output
        got = call.model_dump(exclude_none=True)
        assert (got["type"], got["call_id"]) == ("local_shell_call", item["call_id"])
        assert got["action"] == SHELL_ACTION
    else:
        assert set(kinds) <= {"message"}, kinds
        assert item["call_id"] not in json.dumps(response.model_dump())
        codes = [f["code"] for f in response.model_dump()["callgate"]["findings"]]
        assert codes == ["schema_invalid" if item["type"] == "local_shell_call" else "unknown_tool"]
