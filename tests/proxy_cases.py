"""Streams and expectations shared by the proxy's tests (tests/test_proxy*.py).

Each case is one OpenAI Chat Completions turn (a list of chunk dicts) with the request
the proxy sees (its ``tools`` and ``model``) and the options it runs under. The expected
outcome is what callgate's own buffer and dry-run driver give for the same chunks
(:func:`callgate.cli.replay.replay`), never a number written here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import openai
import pytest

from callgate.cli.capture import Capture, load_capture
from callgate.cli.replay import replay
from callgate.proxy.app import Proxy, ProxyConfig, create_app
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.strategies.text.defaults import default_text_formats
from callgate.strategies.text.formats import END_FORMATS
from callgate.testing.builders import openai_chunks
from corpus.peer_text import CASES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOT_RUN = re.compile(
    r"\n\n(?:(?:A call to .+ was|Calls to .+ were) not run: [^\n]+"
    r"|[^\n]+: the answer is incomplete and nothing was run\.)$"
)
"""A notice after a turn's own text: the one line a person reads (proxy/notices.py's)."""
MANIFEST: list[dict[str, Any]] = json.loads(
    (HERE / "captures" / "manifest.json").read_text(encoding="utf-8")
)


@dataclass
class StreamCase:
    """One upstream turn, the request around it, and the proxy's options."""

    id: str
    chunks: list[dict[str, Any]]
    schemas: dict[str, Any]
    formats: tuple[str, ...] | None = None
    model: str = "gpt-4.1"
    extra: dict[str, Any] = field(default_factory=dict)
    ended: bool = False
    """The recording holds the server's own end ([DONE]): a turn without a finish reason
    ended cleanly (TGI's streams)."""

    @property
    def request(self) -> dict[str, Any]:
        tools = openai_tools(self.schemas)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": "go"}],
            "stream": True,
            **self.extra,
        }
        if tools:
            body["tools"] = tools
        return body

    @property
    def create_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of an openai client's create() for this case.

        ``metadata.case`` names the case, so a replaying upstream can pick its stream.
        """
        request = self.request
        return {
            "model": request["model"],
            "messages": request["messages"],
            **({"tools": request["tools"]} if "tools" in request else {}),
            **({"tool_choice": request["tool_choice"]} if "tool_choice" in request else {}),
            "metadata": {"case": self.id},
        }

    @property
    def options(self) -> Options:
        """The formats asked for; a blocked call ends the turn with a notice (no re-ask)."""
        return Options(on_blocked="notice", text_formats=self.formats)

    def expected(self) -> dict[str, Any]:
        """What callgate's buffer and driver give: the display and the calls that run."""
        if self.extra.get("tool_choice") == "none":
            result = replay(self.chunks, {}, text_formats=(), clean_end=self.ended)
        else:
            formats = self.formats  # else, as the proxy does, those of the request's model
            if formats is None:
                formats = default_text_formats("openai", self.model)
            result = replay(self.chunks, self.schemas, text_formats=formats, clean_end=self.ended)
        runs = result["status"] == "pass"
        calls = [(c["name"], c["arguments"]) for c in result["calls"] if runs]
        return {"display": result["display"], "calls": calls, "status": result["status"]}


def _capture_chunks(entry: dict[str, Any]) -> Capture:
    return load_capture((HERE / "captures" / entry["file"]).read_bytes())


def capture_cases() -> list[StreamCase]:
    """Every recorded OpenAI-wire stream of tests/captures, with its calls' tools declared."""
    cases = []
    for entry in MANIFEST:
        if entry["wire"] != "openai" or "profile" in entry:
            continue
        chunks = _capture_chunks(entry)
        names = [c["name"] for c in entry["expect"]["calls"]]
        schemas = {name: {"type": "object"} for name in names}
        model = next((c["model"] for c in chunks if isinstance(c.get("model"), str)), "gpt-4.1")
        cases.append(StreamCase(entry["file"], chunks, schemas, model=model, ended=chunks.ended))
    return cases


def text_turn(content: list[str], finish: str = "stop") -> list[dict[str, Any]]:
    """An OpenAI turn whose content arrives in these pieces, finishing with ``finish``."""
    chunks = openai_chunks([], [], text=content)
    chunks[-1]["choices"][0]["finish_reason"] = finish
    return chunks


def corpus_cases() -> list[StreamCase]:
    """The peer text corpus (tests/corpus) as OpenAI streams, its format read."""
    cases = []
    for case in CASES:
        if case.format in END_FORMATS:
            continue
        schemas = dict(case.schemas or {})
        for name, _ in case.calls:
            schemas.setdefault(name, {"type": "object"})
        chunks = text_turn([case.content])
        cases.append(StreamCase(case.id, chunks, schemas, formats=(case.format,)))
    return cases


def by_char(case: StreamCase) -> StreamCase:
    """The same turn with every content delta re-sent one character per chunk.

    A delta's first characters come alone; its last one stays in the chunk as it came
    (with whatever else that chunk carries: a role, calls, a finish reason).
    """
    out: list[dict[str, Any]] = []
    for chunk in case.chunks:
        choices = chunk.get("choices") or []
        delta = choices[0].get("delta") if choices else None
        text = delta.get("content") if isinstance(delta, dict) else None
        if not isinstance(text, str) or len(text) < 2:
            out.append(chunk)
            continue
        for char in text[:-1]:
            single = {"index": 0, "delta": {"content": char}, "finish_reason": None}
            out.append({**chunk, "choices": [single]})
        out.append({**chunk, "choices": [{**choices[0], "delta": {**delta, "content": text[-1]}}]})
    return StreamCase(
        case.id + "/1", out, case.schemas, case.formats, case.model, case.extra, case.ended
    )


def rebuilt(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The client's message from gated chunks: text, calls (name, parsed args), finish."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            for entry in delta.get("tool_calls") or []:
                slot = calls.setdefault(entry["index"], {"id": None, "name": "", "arguments": ""})
                slot["id"] = entry.get("id") or slot["id"]
                function = entry.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "content": "".join(content),
        "calls": [(c["name"], _parsed(c["arguments"])) for _, c in sorted(calls.items())],
        "ids": [c["id"] for _, c in sorted(calls.items())],
        "finish_reason": finish,
    }


def _parsed(arguments: str) -> Any:
    """A call's arguments parsed; text that is not JSON (a cut call) stays as it came."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


QWEN = (
    "Let me check.<tool_call>\n"
    + json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    + "\n</tool_call>"
)
"""A Qwen call leaked into the content, after some text."""
QWEN_MODEL = "Qwen/Qwen2.5-7B-Instruct"
WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}


def openai_tools(schemas: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A request's ``tools`` (OpenAI's shape) declaring ``schemas`` by name."""
    return [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for name, schema in schemas.items()
    ]


def qwen_case(pieces: list[str] | None = None) -> StreamCase:
    """The Qwen leak (:data:`QWEN`) in ``pieces`` (default: a character per chunk)."""
    chunks = text_turn(pieces if pieces is not None else list(QWEN))
    return StreamCase("qwen", chunks, WEATHER, model=QWEN_MODEL)


class ScriptedUpstream:
    """An upstream answering each request with the script a test set last."""

    def __init__(self) -> None:
        self.script = Script(b"")
        self.app = ReplayUpstream(lambda path, body: self.script)


@contextmanager
def scripted_upstream() -> Iterator[tuple[ScriptedUpstream, str]]:
    """A :class:`ScriptedUpstream` served on loopback, and its URL."""
    upstream = ScriptedUpstream()
    with ServerThread(upstream.app) as server:
        yield upstream, server.url


@contextmanager
def scripted_proxy(options: Options | None = None) -> Iterator[tuple[ScriptedUpstream, str]]:
    """A scripted upstream behind a proxy run with ``options``: the upstream, the proxy's URL."""
    upstream = ScriptedUpstream()
    with (
        ServerThread(upstream.app) as up,
        ServerThread(create_app(ProxyConfig(up.url, options or Options()))) as proxy,
    ):
        yield upstream, proxy.url


CHAT_ENVELOPE = {
    "id": "chatcmpl-up",
    "object": "chat.completion.chunk",
    "created": 1_712_345_678,
    "model": "up-model",
    "system_fingerprint": "fp_up",
}
"""The envelope of every :func:`chat_chunk`: an upstream's id, model and fingerprint."""


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk`` of choice 0 (``extra``: top-level keys, as ``usage``)."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {**CHAT_ENVELOPE, "choices": [choice], **extra}


def wire_captures(wire: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """The recorded streams of ``wire`` (the manifest's wire name) as (file, events)."""
    return [
        (e["file"], load_capture((HERE / "captures" / e["file"]).read_bytes()))
        for e in MANIFEST
        if e["wire"] == wire and "profile" not in e
    ]


def anthropic_by_char(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An Anthropic stream with every text delta re-sent one character per event."""
    out = []
    for event in events:
        delta = event.get("delta") if event.get("type") == "content_block_delta" else None
        if isinstance(delta, dict) and delta.get("type") == "text_delta" and len(delta["text"]) > 1:
            out += [{**event, "delta": {**delta, "text": ch}} for ch in delta["text"]]
        else:
            out.append(event)
    return out


def responses_by_char(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Responses stream with every output_text delta re-sent one character per event."""
    out = []
    for event in events:
        text = event.get("delta") if event.get("type") == "response.output_text.delta" else None
        if isinstance(text, str) and len(text) > 1:
            out += [{**event, "delta": ch} for ch in text]
        else:
            out.append(event)
    return out


def anthropic_request(
    events: list[dict[str, Any]], model: str = "claude-sonnet-4-6", **extra: Any
) -> dict[str, Any]:
    """A Messages request for a recorded stream: its calls' tools declared (any object)."""
    calls = replay(events)["calls"]
    tools = {c["name"]: {"name": c["name"], "input_schema": {"type": "object"}} for c in calls}
    return {
        "model": model,
        "max_tokens": 8192,  # above every capture's usage: a turn at the limit is cut
        "messages": [{"role": "user", "content": "go"}],
        **({"tools": list(tools.values())} if tools else {}),
        **extra,
    }


def responses_request(
    events: list[dict[str, Any]], model: str = "gpt-5.1", **extra: Any
) -> dict[str, Any]:
    """A Responses request for a recorded stream: its calls' tools declared (any object)."""
    calls = replay(events)["calls"]
    tools = {
        c["name"]: {"type": "function", "name": c["name"], "parameters": {"type": "object"}}
        for c in calls
    }
    return {
        "model": model,
        "input": "go",
        **({"tools": list(tools.values())} if tools else {}),
        **extra,
    }


def chat_response(model: str, message: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """A stream=false Chat Completions response carrying ``message`` (its finish reason
    ``tool_calls`` when the message has calls, else ``stop``)."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish}],
        **extra,
    }


def calls_of(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A Chat Completions message's calls as (name, parsed arguments)."""
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in message.get("tool_calls") or []
    ]


NEGATIVE = [
    (
        "prose quoting markup",
        "gpt-4.1",
        'Hermes writes <tool_call>{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}</tool_call> for a call.',
    ),
    (
        "a JSON example",
        "Qwen/Qwen2.5-7B-Instruct",
        'Send this:\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n',
    ),
    (
        "an undeclared name",
        "Qwen/Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>',
    ),
    (
        "markup that never closes",
        "Qwen/Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city":',
    ),
]

"""Content that must convert nothing: (why, the request's model, the content)."""

CUT_REASONS = ("length", "content_filter")


def cut_at(chunks: list[dict[str, Any]], at: int, reason: str | None) -> list[dict[str, Any]]:
    """The first ``at`` chunks, then a chunk finishing with ``reason`` (None: just stop).

    Empty when a finish reason came before the cut (that would not be a cut).
    """
    kept = list(chunks[:at])
    for chunk in kept:
        for choice in chunk.get("choices") or []:
            if choice.get("finish_reason"):
                return []
    if reason is not None:
        end = {**chunks[0], "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}
        kept.append(end)
    return kept


# -- the loopback harness -------------------------------------------------------------------


class Router:
    """One proxy per text-format choice, each under ``/f/<formats>``; ``/`` the default."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        notice = Options(on_blocked="notice")
        self.proxies: dict[str, Proxy] = {
            "": create_app(ProxyConfig(upstream=upstream, options=notice))
        }

    def base(self, case: StreamCase) -> str:
        key = ",".join(case.formats) if case.formats is not None else ""
        if key not in self.proxies:
            options = case.options
            self.proxies[key] = create_app(ProxyConfig(upstream=self.upstream, options=options))
        return f"/f/{key}" if key else ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.proxies[""](scope, receive, send)
            return
        path = scope["path"]
        key = ""
        if path.startswith("/f/"):
            key, _, rest = path[3:].partition("/")
            scope = {**scope, "path": "/" + rest}
        await self.proxies[key](scope, receive, send)


class Harness:
    """The upstream's scripts by case id, and the proxy in front of it."""

    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.upstream = ReplayUpstream(self._pick)
        self.servers: list[ServerThread] = []
        self.clients: dict[str, openai.OpenAI] = {}

    def _pick(self, path: str, body: dict[str, Any]) -> Script:
        del path
        case = body.get("metadata", {}).get("case", "")
        return self.scripts[case]

    def start(self) -> None:
        upstream = ServerThread(self.upstream).__enter__()
        self.router = Router(upstream.url)
        proxy = ServerThread(self.router).__enter__()
        self.servers = [upstream, proxy]
        self.url = proxy.url

    def stop(self) -> None:
        for client in self.clients.values():
            client.close()
        for server in reversed(self.servers):
            server.__exit__(None, None, None)

    def add(self, case: StreamCase, sizes: tuple[int, ...] = ()) -> dict[str, Any]:
        """Script ``case`` (written in pieces of ``sizes``, else one event per write); the
        keyword arguments of a client's create() for it."""
        self.scripts[case.id] = Script(sse_body(case.chunks), write_sizes=sizes)
        return case.create_kwargs

    def client(self, case: StreamCase) -> openai.OpenAI:
        """The sync client for the case's proxy (one per proxy, connections kept)."""
        base = self.url + self.router.base(case) + "/v1"
        if base not in self.clients:
            self.clients[base] = openai.OpenAI(base_url=base, api_key="sk-loopback", max_retries=0)
        return self.clients[base]

    def aclient(self, case: StreamCase) -> openai.AsyncOpenAI:
        """A fresh async client (its connections belong to one event loop)."""
        base = self.url + self.router.base(case) + "/v1"
        return openai.AsyncOpenAI(base_url=base, api_key="sk-loopback", max_retries=0)


def closed_url() -> str:
    """The URL of a loopback port nothing listens on (an unreachable upstream)."""
    closed = ServerThread(ReplayUpstream(lambda path, body: Script(b"")))
    port = closed.port
    closed.sock.close()
    return f"http://127.0.0.1:{port}"


@contextmanager
def proxy_process(
    args: list[str],
    *,
    announced_on: Literal["stdout", "stderr"] = "stderr",
    sigint: signal.Handlers = signal.SIG_DFL,
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """``callgate proxy ARGS --port 0`` as a process of this checkout.

    Yields the process, its URL and the first line it printed (on ``announced_on``; it
    names the URL) once the proxy is ready (``/readyz`` 200); the process is killed
    after, if the test left it running. The child starts with SIGINT's disposition set to
    ``sigint`` (default: SIG_DFL, whatever this process inherited, e.g. ignored under nohup).
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        [sys.executable, "-m", "callgate", "proxy", *args, "--port", "0"],
        stdout=subprocess.PIPE if announced_on == "stdout" else None,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),  # noqa: PLW1509
    )
    try:
        stream = process.stdout if announced_on == "stdout" else process.stderr
        assert stream is not None
        first = stream.readline()
        url = next((w for w in first.split() if w.startswith("http://")), "")
        assert url, first
        url = url.rstrip(",").removesuffix("/v1")
        deadline = time.monotonic() + 30
        while httpx.get(url + "/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        yield process, url, first
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def node_for(project: str, package: str) -> str:
    """Node's path once ``npm ci`` ran in tests/``project`` (its ``package`` installed).

    Skips the test without them, unless ``CALLGATE_REQUIRE_NODE=1`` (CI) fails it.
    """
    found = shutil.which("node")
    if found is None or not (HERE / project / "node_modules" / package).is_dir():
        message = f"needs node and 'npm ci' in tests/{project}"
        if os.environ.get("CALLGATE_REQUIRE_NODE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found
