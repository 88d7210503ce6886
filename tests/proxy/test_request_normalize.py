"""Request-side normalization: recorded agent requests accepted by strict servers, named.

The bodies Claude Code and Codex sent (tests/captures/requests) are refused by a strict
validating server of their wire as they are, and accepted once normalized, each change
named; per wire, the rewrites of ids, arguments, unanswered calls, orphan results, roles
and tools; and for any generated history of calls and results, the normalized body is
accepted, keeps every result's text, and normalizing it again changes nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.proxy.normalize import CODES, WIRES, normalize
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream
from request_shapes import anthropic_problems, chat_problems, responses_problems, validating

REQUESTS = Path(__file__).resolve().parents[1] / "captures" / "requests"
RECORDED = {
    path.name: json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(REQUESTS.glob("*.json"))
}
PATHS = {"claude-code": "/v1/messages", "codex": "/v1/responses"}
WIRE_OF = {"/v1/messages": "anthropic", "/v1/responses": "openai-responses"}


def path_of(name: str) -> str:
    return next(p for client, p in PATHS.items() if name.startswith(client))


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with ServerThread(ReplayUpstream(validating)) as up:
        yield up.url


def test_every_recorded_client_and_turn_is_here() -> None:
    assert sorted(RECORDED) == [
        "claude-code-2.1.332.turn1.json",
        "claude-code-2.1.332.turn2.json",
        "codex-0.171.0.turn1.json",
        "codex-0.171.0.turn2.json",
    ]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_recorded_request_is_refused_as_sent_and_accepted_normalized(
    server: str, name: str
) -> None:
    path = path_of(name)
    body = RECORDED[name]
    refused = httpx.post(server + path, json=body, timeout=30)
    assert refused.status_code == 400
    fixed, rewrites = normalize(WIRE_OF[path], body)
    accepted = httpx.post(server + path, json=fixed, timeout=30)
    assert (accepted.status_code, accepted.json()) == (200, {"accepted": True})
    assert rewrites and all(r.code in CODES for r in rewrites)
    assert body == RECORDED[name] == json.loads((REQUESTS / name).read_text(encoding="utf-8"))
    again, more = normalize(WIRE_OF[path], fixed)
    assert (again, more) == (fixed, [])


@pytest.mark.parametrize("name", [n for n in sorted(RECORDED) if n.startswith("claude")])
def test_claude_codes_system_messages_join_the_system_prompt(name: str) -> None:
    body = RECORDED[name]
    inside = [m for m in body["messages"] if m["role"] == "system"]
    assert inside and "role" in anthropic_problems(body)[0]
    fixed, rewrites = normalize("anthropic", body)
    assert [r.code for r in rewrites if r.code == "role_folded"] == ["role_folded"] * len(inside)
    texts = [b["text"] for b in fixed["system"]]
    assert texts[: len(body["system"])] == [b["text"] for b in body["system"]]
    folded = [b["text"] for m in inside for b in _blocks(m["content"])]
    assert texts[len(body["system"]) :] == folded
    kept = [m for m in body["messages"] if m["role"] != "system"]
    assert [m["role"] for m in fixed["messages"]] == [m["role"] for m in kept]
    assert fixed["tools"] == body["tools"]


@pytest.mark.parametrize("name", [n for n in sorted(RECORDED) if n.startswith("codex")])
def test_codex_tools_become_functions_or_are_named_as_dropped(name: str) -> None:
    body = RECORDED[name]
    fixed, rewrites = normalize("openai-responses", body)
    namespace = next(t for t in body["tools"] if t["type"] == "namespace")
    functions = [t for t in body["tools"] if t["type"] == "function"]
    inner = [t["name"] for t in namespace["tools"]]
    assert [t["name"] for t in fixed["tools"]] == [
        *(t["name"] for t in functions[: body["tools"].index(namespace)]),
        *inner,
        *(t["name"] for t in functions[body["tools"].index(namespace) :]),
    ]
    assert all(t["type"] == "function" for t in fixed["tools"])
    dropped = [r.detail for r in rewrites if r.code == "tool_dropped"]
    assert dropped == ["web_search: no function form"]
    mapped = [r.detail for r in rewrites if r.code == "tool_mapped"]
    assert mapped == [f"multi_agent_v1.{n} -> {n}" for n in inner]
    assert fixed["input"] == body["input"]


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


# -- each rewrite, per wire ------------------------------------------------------------------


def chat_call(ident: str, arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    function = {"name": "get_weather", "arguments": arguments}
    return {"id": ident, "type": "function", "function": function}


def test_chat_reused_and_empty_ids_are_renamed_and_their_results_follow() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "assistant", "tool_calls": [chat_call("a"), chat_call("a"), chat_call("")]},
            {"role": "tool", "tool_call_id": "a", "content": "one"},
            {"role": "tool", "tool_call_id": "a", "content": "two"},
            {"role": "tool", "tool_call_id": "", "content": "three"},
        ],
    }
    assert chat_problems(body)
    fixed, rewrites = normalize("openai", body)
    assert chat_problems(fixed) == []
    ids = [c["id"] for c in fixed["messages"][1]["tool_calls"]]
    assert ids[0] == "a" and len(set(ids)) == 3 and all(i.startswith("call_") for i in ids[1:])
    results = [(m["tool_call_id"], m["content"]) for m in fixed["messages"][2:]]
    assert results == list(zip(ids, ["one", "two", "three"], strict=True))
    assert [r.code for r in rewrites] == ["role_renamed", "id_renamed", "id_renamed"]
    assert fixed["messages"][0] == {"role": "system", "content": "Be brief."}
    assert rewrites[0].as_dict() == {
        "code": "role_renamed",
        "where": "messages[0]",
        "detail": "developer -> system",
    }


def test_chat_broken_arguments_unanswered_calls_and_orphans_are_mended() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [chat_call("c1", '{"city": "Par')]},
            {"role": "user", "content": "and?"},
            {"role": "tool", "tool_call_id": "ghost", "content": "late"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "web_search_preview"},
        ],
    }
    fixed, rewrites = normalize("openai", body)
    assert chat_problems(fixed) == []
    assert [r.code for r in rewrites] == [
        "arguments_repaired",
        "call_answered",
        "result_orphaned",
        "schema_fixed",
        "tool_dropped",
    ]
    messages = fixed["messages"]
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == "c1"
    assert "not run" in messages[2]["content"]
    assert messages[4] == {
        "role": "user",
        "content": "[the result of tool call 'ghost', which no call asked for]\nlate",
    }
    assert fixed["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
        }
    ]


def test_anthropic_ids_inputs_answers_and_schemas_are_mended() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "ctx", "content": "context"},
            {"role": "user", "content": "more"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "bad id!", "name": "f", "input": "not json"},
                    {"type": "tool_use", "id": "t2", "name": "f", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "tool_result", "tool_use_id": "bad id!", "content": "r1"},
                ],
            },
        ],
        "tools": [
            {"name": "f", "input_schema": {"properties": {}}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
    }
    problems = anthropic_problems(body)
    assert len(problems) >= 4
    fixed, rewrites = normalize("anthropic", body)
    assert anthropic_problems(fixed) == []
    assert [r.code for r in rewrites] == [
        "role_folded",
        "turns_merged",
        "id_renamed",
        "arguments_repaired",
        "call_answered",
        "schema_fixed",
        "tool_dropped",
    ]
    assert fixed["system"] == [{"type": "text", "text": "context"}]
    assert fixed["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "go"}, {"type": "text", "text": "more"}],
    }
    first = fixed["messages"][1]["content"][0]
    assert first["id"].startswith("toolu_") and first["input"] == {}
    answer = fixed["messages"][2]["content"]
    assert [b["type"] for b in answer] == ["tool_result", "tool_result", "text"]
    assert answer[0] == {"type": "tool_result", "tool_use_id": first["id"], "content": "r1"}
    assert answer[1]["tool_use_id"] == "t2" and answer[1]["is_error"] is True
    assert fixed["tools"] == [{"name": "f", "input_schema": {"type": "object", "properties": {}}}]


def test_responses_local_shell_and_custom_tools_map_to_functions() -> None:
    body = {
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": "go"},
            {
                "type": "local_shell_call",
                "call_id": "ls1",
                "action": {"type": "exec", "command": ["echo", "hi"], "env": {}},
            },
            {"type": "local_shell_call_output", "call_id": "ls1", "output": "hi"},
            {"type": "custom_tool_call", "call_id": "cu1", "name": "apply_patch", "input": "*** x"},
        ],
        "tools": [
            {"type": "local_shell"},
            {"type": "custom", "name": "apply_patch", "description": "Patch files."},
            {"type": "file_search", "vector_store_ids": []},
        ],
    }
    fixed, rewrites = normalize("openai-responses", body)
    assert responses_problems(fixed) == []
    assert [r.code for r in rewrites] == [
        "tool_mapped",
        "tool_mapped",
        "tool_dropped",
        "tool_mapped",
        "tool_mapped",
        "call_answered",
    ]
    assert [t["name"] for t in fixed["tools"]] == ["local_shell", "apply_patch"]
    items = fixed["input"]
    assert items[1] == {
        "type": "function_call",
        "call_id": "ls1",
        "name": "local_shell",
        "arguments": json.dumps({"command": ["echo", "hi"]}),
    }
    assert items[2] == {"type": "function_call_output", "call_id": "ls1", "output": "hi"}
    assert json.loads(items[3]["arguments"]) == {"input": "*** x"}
    assert items[4]["call_id"] == "cu1" and "not run" in items[4]["output"]


def test_an_unknown_wire_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown wire 'gemini'; one of: openai, anthropic"):
        normalize("gemini", {})
    assert WIRES == ("openai", "anthropic", "openai-responses")


# -- any history -------------------------------------------------------------------------------

IDS = st.sampled_from(["", "a", "b", "a b", "call_1"])
TURNS = st.lists(
    st.tuples(
        st.lists(IDS, max_size=3),
        st.lists(st.tuples(IDS, st.text(max_size=5)), max_size=3),
        st.booleans(),
    ),
    max_size=4,
)
"""Turns of a history: the assistant's call ids, then results (id, text), and whether
the call's arguments are broken."""


def chat_body(turns: list[Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for calls, results, broken in turns:
        arguments = '{"x": ' if broken else '{"x": 1}'
        messages.append(
            {"role": "assistant", "tool_calls": [chat_call(i, arguments) for i in calls]}
        )
        messages += [{"role": "tool", "tool_call_id": i, "content": t} for i, t in results]
    return {"model": "m", "messages": messages}


def anthropic_body(turns: list[Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for calls, results, broken in turns:
        blocks = [
            {"type": "tool_use", "id": i, "name": "f", "input": "{" if broken else {}}
            for i in calls
        ]
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "."}, *blocks]})
        answers = [{"type": "tool_result", "tool_use_id": i, "content": t} for i, t in results]
        messages.append({"role": "user", "content": [*answers, {"type": "text", "text": "ok"}]})
    return {"model": "m", "max_tokens": 5, "messages": messages}


def responses_body(turns: list[Any]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "go"}]
    for calls, results, broken in turns:
        arguments = "[1]" if broken else "{}"
        items += [
            {"type": "function_call", "call_id": i, "name": "f", "arguments": arguments}
            for i in calls
        ]
        items += [{"type": "function_call_output", "call_id": i, "output": t} for i, t in results]
        items.append({"type": "message", "role": "user", "content": "next"})
    return {"model": "m", "input": items}


SHAPES = {
    "openai": (chat_body, chat_problems),
    "anthropic": (anthropic_body, anthropic_problems),
    "openai-responses": (responses_body, responses_problems),
}


@pytest.mark.parametrize("wire", WIRES)
@given(turns=TURNS)
def test_any_history_is_accepted_once_normalized_and_keeps_every_result(
    wire: str, turns: list[Any]
) -> None:
    build, problems = SHAPES[wire]
    body = build(turns)
    sent = copy.deepcopy(body)
    fixed, rewrites = normalize(wire, body)
    assert body == sent
    assert problems(fixed) == []
    assert (rewrites == []) == (problems(body) == [])
    text = json.dumps(fixed)
    for _, results, _ in turns:
        for _, result in results:
            assert json.dumps(result)[1:-1] in text
    assert normalize(wire, fixed) == (fixed, [])


IDS = st.sampled_from(["a", "b", "", "c d"])
BLOCKS = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=3)}),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": IDS,
            "name": st.just("f"),
            "input": st.one_of(st.just({"x": [1]}), st.text(max_size=3), st.none()),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_result"),
            "tool_use_id": IDS,
            "content": st.one_of(st.text(max_size=3), st.just([{"type": "text", "text": "r"}])),
        }
    ),
)
CHAT_CALLS = st.fixed_dictionaries(
    {
        "id": IDS,
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.just("f"), "arguments": st.sampled_from(['{"x": 1}', "[1]", "{", ""])}
        ),
    }
)
MESSAGES = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "developer", "tool"]),
        "content": st.one_of(st.text(max_size=3), st.lists(BLOCKS, max_size=3)),
    },
    optional={"tool_calls": st.lists(CHAT_CALLS, max_size=2), "tool_call_id": IDS},
)
SCHEMAS = st.sampled_from([None, {"type": "object", "properties": {}}, {"properties": {}}, []])
TOOLS = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": st.just("f"), "parameters": SCHEMAS}),
        }
    ),
    st.fixed_dictionaries({"name": st.just("g"), "input_schema": SCHEMAS}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function", "custom", "local_shell"]), "name": st.just("h")},
        optional={"parameters": SCHEMAS},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("namespace"),
            "name": st.just("ns"),
            "tools": st.just([{"type": "function", "name": "i", "parameters": {}}]),
        }
    ),
    st.just({"type": "web_search"}),
)
ITEMS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("message"), "role": st.sampled_from(["user", "assistant"])},
        optional={"content": st.text(max_size=3)},
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["function_call", "custom_tool_call", "local_shell_call"]),
            "call_id": IDS,
            "name": st.just("f"),
        },
        optional={
            "arguments": st.sampled_from(["{}", "[1]", ""]),
            "action": st.just({"command": ["ls"]}),
            "input": st.just("x"),
        },
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["function_call_output", "custom_tool_call_output"]),
            "call_id": IDS,
            "output": st.one_of(st.text(max_size=3), st.just([{"type": "input_text"}])),
        }
    ),
    st.just({"type": "reasoning", "summary": []}),
)
BODIES = st.fixed_dictionaries(
    {"model": st.just("m")},
    optional={
        "messages": st.lists(MESSAGES, max_size=6),
        "tools": st.lists(TOOLS, max_size=4),
        "input": st.lists(ITEMS, max_size=6),
        "system": st.one_of(st.text(max_size=3), st.just([{"type": "text", "text": "s"}])),
    },
)
"""Request bodies of every wire's shapes at once: odd roles, ids, arguments, tools, items."""


@pytest.mark.parametrize("wire", WIRES)
@given(body=BODIES)
def test_normalizing_changes_no_part_of_the_body_it_reads(wire: str, body: dict[str, Any]) -> None:
    """The result shares the parts left as they were, and every rewrite copies what it
    changes: the body read is equal to itself before, however much was rewritten."""
    sent = copy.deepcopy(body)
    normalize(wire, body)
    assert body == sent


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_recorded_request_is_left_as_it_was_sent(name: str) -> None:
    body = RECORDED[name]
    sent = copy.deepcopy(body)
    normalize(WIRE_OF[path_of(name)], body)
    assert body == sent
