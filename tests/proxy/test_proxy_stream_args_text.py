"""``callgate proxy --stream-args`` on a call written in the text: its arguments stream as
they form, its finish only when the gate passes it.

A real ``callgate proxy`` process on loopback in front of a replaying upstream (uvicorn),
the real openai client: a 50 KB Qwen3-Coder ``write_file`` call written in the content
reaches the client as tens of ``tool_calls[].function.arguments`` deltas while the block
is still open (a DeepSeek DSML one too); the same call when it breaks its schema, or when
the turn is cut before the block closes, gets its deltas but never
``finish_reason: "tool_calls"``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from callgate.proxy.audit import AUDIT_FILE, load_records
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.proxy.wires.forming import STRANDED
from callgate.strategies.text.invoke_payloads import DSML
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import proxy_process, text_turn

CONTENT = "".join(f"line {n}: print('é\\t{n}')  # \"quoted\"\n" for n in range(1400))
"""About 50 KB of file text, with characters that JSON escapes."""
SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": SCHEMA}}]


def qwen_block(parameters: dict[str, str]) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in parameters.items())
    return f"I'll write it.\n<tool_call>\n<function=write_file>\n{body}</function>\n</tool_call>"


def pieces(text: str, size: int = 40) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class Upstream:
    """Answers every request with the chunks a test set last."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, Any]] = []
        self.app = ReplayUpstream(lambda path, body: Script(sse_body(self.chunks)))


def serve(formats: str) -> Iterator[tuple[Upstream, openai.OpenAI]]:
    """A proxy reading ``formats`` in the text, with ``--stream-args``, and its client."""
    upstream = Upstream()
    args = ["--text-formats", formats, "--stream-args", "--on-blocked", "notice"]
    with (
        ServerThread(upstream.app) as server,
        proxy_process(["--upstream", server.url, *args]) as (_, url, _),
    ):
        yield upstream, openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)


@pytest.fixture(scope="module")
def proxy() -> Iterator[tuple[Upstream, openai.OpenAI]]:
    yield from serve("qwen3_coder_xml")


def run(proxy: tuple[Upstream, openai.OpenAI], chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Stream through the proxy: every arguments delta in order, the finish, the content."""
    upstream, client = proxy
    upstream.chunks = chunks
    stream = client.chat.completions.create(
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        messages=[{"role": "user", "content": "Write app.py."}],
        tools=TOOLS,  # type: ignore[arg-type]
        stream=True,
    )
    deltas: list[tuple[int, str | None, str]] = []
    finish, content, ids = None, "", set()
    for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                if call.id:
                    ids.add(call.id)
                function = call.function
                name = function.name if function is not None else None
                deltas.append((call.index, name, (function.arguments if function else "") or ""))
            finish = choice.finish_reason or finish
    return {"deltas": deltas, "finish": finish, "content": content, "ids": ids}


def forming(deltas: list[tuple[int, str | None, str]]) -> int:
    """How many argument deltas came while the arguments were not yet whole JSON."""
    text, count = "", 0
    for _, _, piece in deltas:
        text += piece
        try:
            json.loads(text)
        except ValueError:
            count += bool(piece)
    return count


def test_a_50_kb_qwen3_coder_call_streams_its_arguments_while_it_forms(
    proxy: tuple[Upstream, openai.OpenAI],
) -> None:
    arguments = {"path": "app.py", "content": CONTENT.rstrip("\n")}
    got = run(proxy, text_turn(pieces(qwen_block(arguments))))
    assert len(CONTENT) > 50_000
    assert got["finish"] == "tool_calls"
    assert forming(got["deltas"]) >= 30  # tens of deltas before the block closed
    assert {index for index, _, _ in got["deltas"]} == {0} and len(got["ids"]) == 1
    assert got["deltas"][0][1] == "write_file"
    assert json.loads("".join(piece for _, _, piece in got["deltas"])) == arguments
    assert got["content"] == "I'll write it.\n"


def test_a_schema_invalid_call_streams_but_never_finishes_as_a_call(
    proxy: tuple[Upstream, openai.OpenAI],
) -> None:
    arguments = {"path": "app.py", "content": CONTENT, "mode": "0644"}  # mode: not declared
    got = run(proxy, text_turn(pieces(qwen_block(arguments))))
    assert forming(got["deltas"]) >= 30
    assert got["finish"] != "tool_calls"
    assert "write_file" in got["content"]  # the notice says why it was not run


def test_a_call_cut_before_its_block_closes_never_finishes_as_a_call(
    proxy: tuple[Upstream, openai.OpenAI],
) -> None:
    text = qwen_block({"path": "app.py", "content": CONTENT})
    got = run(proxy, text_turn(pieces(text[: len(text) // 2]), finish="length"))
    assert forming(got["deltas"]) >= 30
    assert got["finish"] == "length"
    streamed = "".join(piece for _, _, piece in got["deltas"])
    with pytest.raises(ValueError):
        json.loads(streamed)  # what came is only the start of the arguments
    assert streamed.startswith('{"path": "app.py", "content": "line 0')


def test_a_withheld_streamed_call_never_comes_with_tool_calls_beside_a_passed_one(
    proxy: tuple[Upstream, openai.OpenAI],
) -> None:
    """A text call set aside for the native call after it: its entry is in the client's
    message, so the turn sends no call and does not end ``tool_calls``; the two calls'
    entries keep indices of their own."""
    written = {"path": "a.py", "content": "x"}
    native = {"path": "n.py", "content": "z"}
    call = WireCall("call_n", "write_file", (json.dumps(native),), arguments=native)
    got = run(proxy, openai_chunks([call], [0, 0], text=pieces(qwen_block(written))))
    by_index: dict[int, str] = {}
    for index, _, piece in got["deltas"]:
        by_index[index] = by_index.get(index, "") + piece
    # each entry lacks the brace that closes its arguments: sent only with calls that go
    assert by_index == {0: json.dumps(written)[:-1], 1: json.dumps(native)[:-1]}
    assert got["finish"] == "stop" and got["content"].endswith(STRANDED)


# -- DeepSeek's DSML: the same, with every tag prefixed ----------------------------------------


def dsml_block(parameters: dict[str, str]) -> str:
    body = "".join(
        f'<{DSML}parameter name="{k}" string="true">{v}</{DSML}parameter>\n'
        for k, v in parameters.items()
    )
    invoke = f'<{DSML}invoke name="write_file">\n{body}</{DSML}invoke>\n'
    return f"I'll write it.\n\n<{DSML}function_calls>\n{invoke}</{DSML}function_calls>"


@pytest.fixture(scope="module")
def dsml_proxy() -> Iterator[tuple[Upstream, openai.OpenAI]]:
    yield from serve("deepseek_v32")


def test_a_50_kb_dsml_call_streams_its_arguments_while_it_forms_and_finishes_only_if_valid(
    dsml_proxy: tuple[Upstream, openai.OpenAI],
) -> None:
    """A DeepSeek V3.2 call: tens of argument deltas before its block closes; the finish
    only for the valid call, never for one that breaks its schema or is cut."""
    arguments = {"path": "app.py", "content": CONTENT}
    got = run(dsml_proxy, text_turn(pieces(dsml_block(arguments))))
    assert forming(got["deltas"]) >= 30
    assert got["finish"] == "tool_calls" and got["deltas"][0][1] == "write_file"
    assert json.loads("".join(piece for _, _, piece in got["deltas"])) == arguments
    bad = run(dsml_proxy, text_turn(pieces(dsml_block({**arguments, "mode": "0644"}))))
    assert forming(bad["deltas"]) >= 30
    assert bad["finish"] != "tool_calls" and "write_file" in bad["content"]
    text = dsml_block(arguments)
    cut = run(dsml_proxy, text_turn(pieces(text[: len(text) // 2]), finish="length"))
    assert forming(cut["deltas"]) >= 30 and cut["finish"] == "length"
    streamed = "".join(piece for _, _, piece in cut["deltas"])
    with pytest.raises(ValueError):
        json.loads(streamed)
    assert streamed.startswith('{"path": "app.py", "content": "line 0')


# -- the Messages and Responses clients, the upstream on Chat Completions ------------------


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit")


@pytest.fixture(scope="module")
def translated(audit_dir: Path) -> Iterator[tuple[Upstream, str]]:
    upstream = Upstream()
    args = ["--text-formats", "qwen3_coder_xml", "--stream-args", "--on-blocked", "notice"]
    args += ["--audit", str(audit_dir)]
    with (
        ServerThread(upstream.app) as server,
        proxy_process(["--upstream", server.url, "--upstream-wire", "chat", *args]) as (_, url, _),
    ):
        yield upstream, url


def audited_ids(audit_dir: Path, turns: int) -> list[str]:
    """The ids of the calls the proxy's engine sent in its ``turns``-th recorded turn
    (written once the response ended: waited for)."""
    deadline = time.monotonic() + 10
    while True:
        path = audit_dir / AUDIT_FILE
        records = load_records(path.read_text(encoding="utf-8")) if path.exists() else []
        if len(records) >= turns or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    record = records[turns - 1]
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            calls = value.get("calls")
            if isinstance(calls, list) and all(isinstance(c, dict) and "id" in c for c in calls):
                found.extend(c["id"] for c in calls)
            for item in value.values():
                walk(item)

    walk(record)
    return found


def messages_run(translated: tuple[Upstream, str], chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Through the proxy to the anthropic client: tool_use deltas, the stop reason."""
    upstream, url = translated
    upstream.chunks = chunks
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    tools = [{"name": "write_file", "description": "Write a file.", "input_schema": SCHEMA}]
    deltas: list[str] = []
    blocks: list[str] = []
    with client.messages.stream(
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        max_tokens=8192,
        messages=[{"role": "user", "content": "Write app.py."}],
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        for event in stream:
            if event.type == "content_block_start":
                blocks.append(event.content_block.type)
            elif event.type == "input_json":
                deltas.append(event.partial_json)
        final = stream.get_final_message()
    uses = [b for b in final.content if b.type == "tool_use"]
    text = "".join(b.text for b in final.content if b.type == "text")
    stop = final.stop_reason
    return {"deltas": deltas, "stop": stop, "uses": uses, "blocks": blocks, "text": text}


def responses_run(translated: tuple[Upstream, str], chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Through the proxy to the openai Responses client: argument deltas, the final output."""
    upstream, url = translated
    upstream.chunks = chunks
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    tools = [{"type": "function", "name": "write_file", "parameters": SCHEMA, "strict": False}]
    deltas: list[str] = []
    end, output = "", []
    with client.responses.stream(
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        input="Write app.py.",
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        for event in stream:
            if event.type == "response.function_call_arguments.delta":
                deltas.append(event.delta)
            elif event.type in ("response.completed", "response.incomplete"):
                end, output = event.type, event.response.output
    calls = [item for item in output if item.type == "function_call"]
    return {"deltas": deltas, "calls": calls, "end": end}


def test_the_messages_client_gets_input_json_deltas_and_tool_use_only_when_passed(
    translated: tuple[Upstream, str],
) -> None:
    """The input streams as it forms, the close of its object held until the gate accepts:
    a withheld or cut call's block ends with an input no JSON parser reads whole."""
    arguments = {"path": "app.py", "content": CONTENT.rstrip("\n")}
    got = messages_run(translated, text_turn(pieces(qwen_block(arguments))))
    assert forming([(0, None, d) for d in got["deltas"]]) >= 30
    assert got["stop"] == "tool_use" and [u.input for u in got["uses"]] == [arguments]
    assert got["blocks"] == ["text", "tool_use"]
    assert json.loads("".join(got["deltas"])) == arguments
    bad = {"path": "app.py", "content": CONTENT, "mode": "0644"}
    got = messages_run(translated, text_turn(pieces(qwen_block(bad))))
    assert forming([(0, None, d) for d in got["deltas"]]) >= 30
    assert got["stop"] != "tool_use"
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(got["deltas"]))
    text = qwen_block({"path": "app.py", "content": CONTENT})
    got = messages_run(translated, text_turn(pieces(text[: len(text) // 2]), finish="length"))
    assert forming([(0, None, d) for d in got["deltas"]]) >= 30
    assert got["stop"] == "max_tokens"
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(got["deltas"]))


def test_the_responses_client_gets_argument_deltas_and_the_call_only_when_passed(
    translated: tuple[Upstream, str],
) -> None:
    arguments = {"path": "app.py", "content": CONTENT.rstrip("\n")}
    got = responses_run(translated, text_turn(pieces(qwen_block(arguments))))
    assert forming([(0, None, d) for d in got["deltas"]]) >= 30
    assert [json.loads(c.arguments) for c in got["calls"]] == [arguments]
    assert got["end"] == "response.completed"
    bad = {"path": "app.py", "content": CONTENT, "mode": "0644"}
    got = responses_run(translated, text_turn(pieces(qwen_block(bad))))
    assert forming([(0, None, d) for d in got["deltas"]]) >= 30
    assert got["calls"] == []
    text = qwen_block({"path": "app.py", "content": CONTENT})
    got = responses_run(translated, text_turn(pieces(text[: len(text) // 2]), finish="length"))
    assert forming([(0, None, d) for d in got["deltas"]]) >= 30
    assert got["calls"] == [] and got["end"] == "response.incomplete"


# -- one id: the deltas', the call's, the engine's ------------------------------------------


def test_a_streamed_text_call_keeps_one_id_on_every_client_wire(
    translated: tuple[Upstream, str], audit_dir: Path
) -> None:
    """The id the forming deltas carry is the released call's and the engine's own."""
    upstream, url = translated
    path = audit_dir / AUDIT_FILE
    before = len(load_records(path.read_text(encoding="utf-8"))) if path.exists() else 0
    arguments = {"path": "app.py", "content": CONTENT[:4000].rstrip("\n")}
    upstream.chunks = text_turn(pieces(qwen_block(arguments)))
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    ids: set[str] = set()
    with client.chat.completions.stream(
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        messages=[{"role": "user", "content": "Write app.py."}],
        tools=TOOLS,  # type: ignore[arg-type]
    ) as stream:
        for event in stream:
            if event.type == "chunk":
                for choice in event.chunk.choices:
                    ids.update(c.id for c in choice.delta.tool_calls or () if c.id)
        final = stream.get_final_completion().choices[0].message.tool_calls or []
    assert len(ids) == 1
    assert [c.id for c in final] == list(ids) == audited_ids(audit_dir, before + 1)

    anthropic_client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    tools = [{"name": "write_file", "description": "Write a file.", "input_schema": SCHEMA}]
    started: list[str] = []
    with anthropic_client.messages.stream(
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        max_tokens=8192,
        messages=[{"role": "user", "content": "Write app.py."}],
        tools=tools,  # type: ignore[arg-type]
    ) as events:
        for event in events:
            if event.type == "content_block_start" and event.content_block.type == "tool_use":
                started.append(event.content_block.id)
        uses = [b for b in events.get_final_message().content if b.type == "tool_use"]
    assert started[0].startswith("toolu_")
    assert [u.id for u in uses] == started == audited_ids(audit_dir, before + 2)

    items: set[tuple[str, str]] = set()
    with client.responses.stream(
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        input="Write app.py.",
        tools=[{"type": "function", "name": "write_file", "parameters": SCHEMA, "strict": False}],
    ) as responses:
        for event in responses:
            if event.type == "response.output_item.added" and event.item.type == "function_call":
                items.add((event.item.id or "", event.item.call_id))
            elif event.type == "response.function_call_arguments.delta":
                assert event.item_id in {item for item, _ in items}
        output = responses.get_final_response().output
    calls = [(c.id or "", c.call_id) for c in output if c.type == "function_call"]
    assert len(items) == 1 and calls == list(items)
    assert [call_id for _, call_id in calls] == audited_ids(audit_dir, before + 3)


def test_a_withheld_streamed_block_never_comes_with_tool_use_beside_a_passed_call(
    translated: tuple[Upstream, str],
) -> None:
    """On Messages too: the set-aside text call's tool_use block is in the message the
    anthropic SDK rebuilds, so the turn sends no call and does not stop ``tool_use``."""
    written = {"path": "a.py", "content": "x"}
    native = {"path": "n.py", "content": "z"}
    call = WireCall("call_n", "write_file", (json.dumps(native),), arguments=native)
    got = messages_run(translated, openai_chunks([call], [0, 0], text=pieces(qwen_block(written))))
    assert got["stop"] == "end_turn"
    # the SDK reads what was shown as partial JSON; its close never came
    assert [u.input for u in got["uses"]] == [written]
    assert got["text"].endswith(STRANDED)
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(got["deltas"]))
    got = responses_run(translated, openai_chunks([call], [0, 0], text=pieces(qwen_block(written))))
    assert [json.loads(c.arguments) for c in got["calls"]] == [native]  # its item ended incomplete
