"""A turn whose calls the client's writer could not send is recorded as the client got it.

Under ``--stream-args`` a text call's arguments reach the client while it forms. When the
gate then sets that call aside for a native call beside it, a Chat or Messages client
already holds its entry: the writer sends none of the turn's calls and ends it ``stop`` /
``end_turn`` with one line. The audit record, ``/metrics`` and the turn's span must count
what the client received (no call sent, each withheld with why), not what the gate
accepted. A Responses client can drop the unfinished item, so it gets the native call,
and the records say so. A real proxy on loopback in front of a Chat Completions upstream,
the official SDKs' stream helpers as clients.
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
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.telemetry import TurnSpans
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.proxy.wires.forming import STRANDED, STRANDED_WHY
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from test_gateway_records import metrics, records

MODEL = "Qwen/Qwen3-Coder-30B-A3B-Instruct"
SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
WRITTEN = {"path": "a.py", "content": "x"}
NATIVE = {"path": "n.py", "content": "z"}
BLOCK = (
    "I'll write it.\n<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n"
    "<parameter=content>\nx\n</parameter>\n</function>\n</tool_call>"
)
TURN = openai_chunks(
    [WireCall("call_n", "write_file", (json.dumps(NATIVE),), arguments=NATIVE)],
    [0, 0],
    text=[BLOCK[i : i + 20] for i in range(0, len(BLOCK), 20)],
)
"""A text call written in the content (streamed as it forms), then a native call."""


@pytest.fixture(scope="module")
def proxy(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Path, InMemorySpanExporter]]:
    """A proxy (stream-args, notice, audited, traced) in front of a Chat upstream."""
    directory = tmp_path_factory.mktemp("audit")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    options = Options(text_formats=("qwen3_coder_xml",), stream_args=True, on_blocked="notice")
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(TURN)))
    with ServerThread(upstream) as up:
        config = ProxyConfig(
            up.url, options, upstream_wire="chat", audit_dir=directory, spans=TurnSpans(provider)
        )
        with ServerThread(create_app(config)) as served:
            yield served.url, directory, exporter


def chat_client(url: str) -> dict[str, Any]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    tools = [{"type": "function", "function": {"name": "write_file", "parameters": SCHEMA}}]
    with client.chat.completions.stream(
        model=MODEL,
        messages=[{"role": "user", "content": "Write two files."}],
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        choice = stream.get_final_completion().choices[0]
    return {"end": choice.finish_reason, "text": choice.message.content or ""}


def messages_client(url: str) -> dict[str, Any]:
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    tools = [{"name": "write_file", "description": "Write a file.", "input_schema": SCHEMA}]
    with client.messages.stream(
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": "Write two files."}],
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        message = stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    return {"end": message.stop_reason, "text": text}


def responses_client(url: str) -> dict[str, Any]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    tools = [{"type": "function", "name": "write_file", "parameters": SCHEMA, "strict": False}]
    with client.responses.stream(
        model=MODEL,
        input="Write two files.",
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        response = stream.get_final_response()
    calls = [json.loads(i.arguments) for i in response.output if i.type == "function_call"]
    return {"end": response.status, "calls": calls}


def spans(exporter: InMemorySpanExporter, count: int) -> list[Any]:
    """The finished spans once ``count`` are there (a span ends after the turn's last byte)."""
    deadline = time.monotonic() + 10
    while len(exporter.get_finished_spans()) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(exporter.get_finished_spans())


def test_a_stranded_turn_counts_no_call_sent_where_the_client_got_none(
    proxy: tuple[str, Path, InMemorySpanExporter],
) -> None:
    url, directory, exporter = proxy
    got = [chat_client(url), messages_client(url), responses_client(url)]
    assert [g["end"] for g in got] == ["stop", "end_turn", "completed"]
    assert got[0]["text"].endswith(STRANDED) and got[1]["text"].endswith(STRANDED)
    for said in (got[0]["text"], got[1]["text"]):  # the gate's notice, then the stranded line
        assert said.index("A call to write_file was not run") < said.index(STRANDED)
    assert got[2]["calls"] == [NATIVE]  # the formed item ended incomplete, left out

    chat, messages, responses = (r["turn"] for r in records(directory, 3))
    for turn in (chat, messages):
        assert (turn["calls"], turn["passed"]) == ([], False)
        assert f"The call to write_file was not sent: {STRANDED_WHY}" in turn["withheld"]
    assert [json.loads(c["arguments"]) for c in responses["calls"]] == [NATIVE]
    assert [c["source"] for c in responses["calls"]] == ["native"]
    assert not any("was not sent" in w for w in responses["withheld"])
    # the set-aside text call is withheld on every wire, the native call only where stranded
    assert [len(t["withheld"]) for t in (chat, messages, responses)] == [2, 2, 1]

    found = metrics(url)
    assert found['callgate_proxy_calls_total{format="native"}'] == 1  # the Responses turn's
    assert not any(k.startswith('callgate_proxy_calls_total{format="qwen') for k in found)

    attributes = [dict(s.attributes) for s in spans(exporter, 3)]
    assert [a["callgate.calls_sent"] for a in attributes] == [0, 0, 1]
    assert [a["callgate.calls_withheld"] for a in attributes] == [2, 2, 1]
    sent = [
        [e for e in s.events if e.attributes.get("callgate.call.outcome") == "sent"]
        for s in spans(exporter, 3)
    ]
    assert [len(events) for events in sent] == [0, 0, 1]
