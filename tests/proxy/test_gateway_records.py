"""The audit record's and the metrics' fields of a turn, after ``[DONE]`` and on a broken upstream.

A real proxy on loopback with an audit directory, in front of a scripted upstream: the
one record a turn writes and the ``/metrics`` page it leaves say what the client saw
(the calls, the verdict, the findings, the chunks before ``[DONE]``), what the upstream
sent (its bytes, as they came) and what it cost.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.audit import AUDIT_FILE, load_records
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from test_gateway_behaviours import CALL
from test_gateway_behaviours import CHAT as REQUEST
from test_gateway_behaviours import chat as chunk

TURN = [
    chunk({"role": "assistant", "content": "Checking."}),
    chunk({"tool_calls": [CALL]}),
    chunk({}, "tool_calls"),
]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[list[Script], str, Path]]:
    """A proxy (``notice``, audited into tmp_path) and the scripts its upstream plays."""
    scripts: list[Script] = []
    upstream = ReplayUpstream(lambda path, body: scripts.pop(0))
    with (
        ServerThread(upstream) as up,
        ServerThread(
            create_app(ProxyConfig(up.url, Options(on_blocked="notice"), audit_dir=tmp_path))
        ) as proxy,
    ):
        yield scripts, proxy.url, tmp_path


def metrics(url: str) -> dict[str, float]:
    """The proxy's metric samples by name and labels (``name{a="b"}`` as written)."""
    text = httpx.get(url + "/metrics", timeout=10).text
    found = {}
    for line in text.splitlines():
        match = re.fullmatch(r"(callgate_\S+) (\S+)", line)
        if match:
            found[match[1]] = float(match[2])
    return found


def records(directory: Path, count: int = 1) -> list[dict[str, Any]]:
    """The audit records, once ``count`` are written (a record follows the stream's end)."""
    deadline = time.monotonic() + 10
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        path = directory / AUDIT_FILE
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        found = [dict(r) for r in load_records(text)]
        if len(found) >= count:
            break
        time.sleep(0.02)
    return found


def test_after_done_the_record_and_metrics_count_the_turn_the_client_saw(
    served: tuple[list[Script], str, Path],
) -> None:
    scripts, url, directory = served
    late = sse_body([chunk({"content": "after the end"}), chunk({}, "stop")], done=False)
    raw = sse_body(TURN) + late
    scripts.append(Script(raw, write_sizes=(7, 5)))
    text = httpx.post(url + "/v1/chat/completions", json=REQUEST, timeout=30).text
    assert "after the end" not in text
    assert text.endswith("data: [DONE]\n\n") and text.count("[DONE]") == 1
    (record,) = records(directory)
    assert record["served"] == "streamed"
    assert record["stream"] == raw.decode() and record["stream_encoding"] == "utf-8"
    assert record["request"] == {k: REQUEST[k] for k in ("model", "tools", "stream")}
    assert record["options"]["on_blocked"] == "notice"
    turn = record["turn"]
    assert turn["wire"] == "openai"
    assert (turn["status"], turn["findings"], turn["upstream_finish"]) == ("pass", [], "tool_calls")
    assert turn["chunks"] == len(TURN)
    assert turn["calls"] == [
        {
            "id": "call_up",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
            "source": "native",
        }
    ]
    assert (turn["withheld"], turn["passed"], turn["attempt"]) == ([], False, 0)
    assert turn["cpu_us"] > 0
    timings = record["timings"]
    assert 0 < timings["first_byte_s"] <= timings["total_s"]
    found = metrics(url)
    assert found['callgate_proxy_turns_total{status="pass",wire="openai"}'] == 1
    assert found['callgate_proxy_calls_total{format="native"}'] == 1
    assert found["callgate_proxy_added_seconds_count"] == 1
    assert found["callgate_proxy_added_seconds_per_chunk_count"] == 1
    assert found["callgate_proxy_added_seconds_sum"] == pytest.approx(turn["cpu_us"] / 1e6)
    assert not any(k.startswith("callgate_proxy_blocked_total{") for k in found)
    assert not any(k.startswith("callgate_proxy_upstream_errors_total{") for k in found)


def test_a_broken_upstream_is_a_failed_turn_in_the_record_and_the_metrics(
    served: tuple[list[Script], str, Path],
) -> None:
    scripts, url, directory = served
    raw = sse_body(TURN)
    cut = raw.index(b'"tool_calls":[') + 20  # inside the call's chunk
    scripts.append(Script(raw, cut_at=cut))
    text = httpx.post(url + "/v1/chat/completions", json=REQUEST, timeout=30).text
    assert text.endswith("data: [DONE]\n\n")
    final = json.loads(text.split("\n\n")[-3].removeprefix("data: "))
    assert final["choices"][0]["finish_reason"] == "error"  # a broken turn ends in error
    (record,) = records(directory)
    assert record["stream"] == raw[:cut].decode()
    turn = record["turn"]
    assert (turn["status"], turn["calls"], turn["upstream_finish"]) == ("fail", [], None)
    assert turn["chunks"] == 1
    broke = [f for f in turn["findings"] if f["code"] == "malformed_chunk"]
    assert [f["message"] for f in broke] == ["the upstream stream broke: RemoteProtocolError"]
    assert final["callgate"]["status"] == "fail"
    found = metrics(url)
    assert found['callgate_proxy_turns_total{status="fail",wire="openai"}'] == 1
    assert found['callgate_proxy_upstream_errors_total{kind="RemoteProtocolError"}'] == 1
    assert found['callgate_proxy_blocked_total{code="malformed_chunk"}'] == 1
    assert not any(k.startswith("callgate_proxy_calls_total{") for k in found)
    assert found["callgate_proxy_added_seconds_count"] == 1


def test_an_upstream_http_error_is_counted_and_leaves_no_turn(
    served: tuple[list[Script], str, Path],
) -> None:
    scripts, url, directory = served
    scripts.append(Script(b'{"error": "overloaded"}', status=503, content_type="application/json"))
    answer = httpx.post(url + "/v1/chat/completions", json=REQUEST, timeout=30)
    assert (answer.status_code, answer.json()) == (503, {"error": "overloaded"})
    assert records(directory, count=0) == []
    found = metrics(url)
    assert found['callgate_proxy_upstream_errors_total{kind="http_503"}'] == 1
    assert not any(k.startswith("callgate_proxy_turns_total{") for k in found)
