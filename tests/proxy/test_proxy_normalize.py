"""Request normalization in the gateway: recorded agent requests reach a strict server.

Claude Code's and Codex's recorded bodies (tests/captures/requests) go through the real
application over HTTP to a loopback upstream that refuses, as strict servers do, what its
wire does not define (tests/request_shapes.py) and otherwise answers a short text turn.
Normalized on the client's wire (and translated after, with an upstream wire), every body
is accepted, each rewrite is counted in ``/metrics`` and listed in the audit record; with
``--no-normalize`` the same body is forwarded as sent and refused.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_clients import anthropic_turn, responses_turn
from callgate.cli.commands import build_parser
from callgate.cli.proxy import turn_options
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.audit import AUDIT_FILE, load_records
from callgate.proxy.engine import Options
from callgate.proxy.normalize import normalize
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.proxy.wires.translate import translate
from request_shapes import VALIDATORS

REQUESTS = Path(__file__).resolve().parents[1] / "captures" / "requests"
CLIENTS = (
    ("claude-code-2.1.332", "/v1/messages", "anthropic", (None, "messages")),
    ("codex-0.171.0", "/v1/responses", "openai-responses", (None, "chat", "messages", "responses")),
)
"""Each recorded client, the path it posts to, the normalizer's wire, and the upstream wires
its bodies are sent on. Claude Code's are not translated to another wire: they carry
``output_config``, a Messages field the translation refuses."""
RECORDED = [(f"{c}.turn{t}", path, wire) for c, path, wire, _ in CLIENTS for t in (1, 2)]
"""Each recorded body's name, the path its client posts to, and the normalizer's wire."""
ROUTES = [
    ((f"{c}.turn{t}", path, wire), upstream)
    for c, path, wire, upstreams in CLIENTS
    for t in (1, 2)
    for upstream in upstreams
]
"""Each recorded body with an upstream wire (None: the client's own)."""

ANSWER = "Done."


def body_of(name: str) -> dict[str, Any]:
    """A recorded request body, as its client sent it."""
    loaded: dict[str, Any] = json.loads((REQUESTS / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def strict(path: str, body: Mapping[str, Any]) -> Script:
    """A strict server of ``path``'s wire: 400 naming what it refuses, else a text turn."""
    where = path.split("?", maxsplit=1)[0].rstrip("/")
    problems = VALIDATORS[where](body)
    if problems:
        error = {"error": {"type": "invalid_request_error", "message": "; ".join(problems)}}
        return Script(json.dumps(error).encode(), status=400, content_type="application/json")
    if where == "/v1/messages":
        return anthropic_turn(ANSWER)
    if where == "/v1/responses":
        return responses_turn(ANSWER)
    envelope = {"id": "chatcmpl-n", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return Script(
        sse_body(
            [
                {
                    **envelope,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": ANSWER},
                            "finish_reason": None,
                        }
                    ],
                },
                {**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
        )
    )


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Any]:
    """A factory: (proxy URL, upstream) of a gateway in front of the strict server."""
    stack: list[Any] = []

    def start(**config: Any) -> tuple[str, ReplayUpstream]:
        upstream = ReplayUpstream(strict)
        server = ServerThread(upstream).__enter__()
        stack.append(server)
        app = create_app(ProxyConfig(upstream=server.url, audit_dir=tmp_path, **config))
        proxy = ServerThread(app).__enter__()
        stack.append(proxy)
        return proxy.url, upstream

    yield start
    for server in reversed(stack):
        server.__exit__(None, None, None)


def rewrites_counted(url: str) -> Counter[str]:
    """``callgate_proxy_rewrites_total`` by code, read from the proxy's ``/metrics``."""
    counted: Counter[str] = Counter()
    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith("callgate_proxy_rewrites_total{"):
            labels, value = line.rsplit(" ", 1)
            counted[labels.split('code="', 1)[1].split('"', 1)[0]] += int(float(value))
    return counted


def streamed_text(text: str) -> str:
    """The answer's text in a streamed reply of any wire (its text deltas joined)."""
    said = []
    for line in text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        delta = event.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            said.append(delta["text"])
        elif event.get("type") == "response.output_text.delta":
            said.append(event["delta"])
        elif event.get("choices"):
            said.append(event["choices"][0]["delta"].get("content") or "")
    return "".join(said)


@pytest.mark.parametrize("route", ROUTES, ids=[f"{r[0][0]}-{r[1]}" for r in ROUTES])
def test_a_recorded_request_reaches_a_strict_server_and_its_rewrites_are_counted_and_audited(
    gateway: Any, tmp_path: Path, route: tuple[tuple[str, str, str], str | None]
) -> None:
    (name, path, wire), upstream_wire = route
    body = body_of(name)
    normalized, expected = normalize(wire, body)
    assert expected, name  # each recording needs a rewrite: the test would prove nothing else
    client_wire = {"openai": "chat", "anthropic": "messages", "openai-responses": "responses"}
    if upstream_wire is not None:  # then the hints the translation leaves out, each logged
        translate(client_wire[wire], upstream_wire, normalized, expected)
    url, upstream = gateway(upstream_wire=upstream_wire)
    reply = httpx.post(url + path, json={**body, "stream": True}, timeout=60)
    assert reply.status_code == 200, reply.text
    assert streamed_text(reply.text) == ANSWER
    assert len(upstream.requests) == 1
    sent_path, sent, _ = upstream.requests[0]
    assert VALIDATORS[sent_path](sent) == []
    assert rewrites_counted(url) == Counter(r.code for r in expected)
    (record,) = load_records((tmp_path / AUDIT_FILE).read_text(encoding="utf-8"))
    assert record["rewrites"] == [r.as_dict() for r in expected]


@pytest.mark.parametrize(("name", "path", "wire"), RECORDED, ids=[r[0] for r in RECORDED])
def test_without_normalization_the_body_is_forwarded_as_sent_and_refused(
    gateway: Any, name: str, path: str, wire: str
) -> None:
    body = {**body_of(name), "stream": True}
    url, upstream = gateway(options=Options(normalize=False))
    reply = httpx.post(url + path, json=body, timeout=60)
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"
    assert upstream.requests[0][1] == body
    assert rewrites_counted(url) == Counter()


def test_a_clean_request_is_forwarded_unchanged_and_counts_nothing(gateway: Any) -> None:
    body = {
        "model": "m",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    url, upstream = gateway()
    reply = httpx.post(url + "/v1/messages", json=body, timeout=60)
    assert reply.status_code == 200 and streamed_text(reply.text) == ANSWER
    assert upstream.requests[0][1] == body
    assert rewrites_counted(url) == Counter()


def test_no_normalize_is_a_flag_and_a_config_key(tmp_path: Path) -> None:
    parser = build_parser()
    assert turn_options(parser.parse_args(["proxy", "--upstream", "http://x"])).normalize
    given = parser.parse_args(["proxy", "--upstream", "http://x", "--no-normalize"])
    assert turn_options(given).normalize is False
    config = tmp_path / "proxy.toml"
    config.write_text('upstream = "http://x"\nnormalize = false\n', encoding="utf-8")
    from_file = parser.parse_args(["proxy", "--config", str(config)])
    assert turn_options(from_file).normalize is False
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('upstream = "http://x"\nnormalize = "no"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="normalize"):
        turn_options(parser.parse_args(["proxy", "--config", str(wrong)]))
