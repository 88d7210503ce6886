"""One OpenTelemetry span per turn from ``callgate proxy``, as from the Envoy processor.

The span carries the verdict, the finding codes and the text formats, one event per call
(sent or withheld), and never an argument value unless asked for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

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
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import QWEN_MODEL, WEATHER, openai_tools, qwen_case

SECRET = "Atlantis-Secret"
INVALID = WireCall("call_9", "get_weather", ('{"town": "' + SECRET + '"}',))


def _spans(record_arguments: bool) -> Iterator[tuple[InMemorySpanExporter, str]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    scripts = {
        "invalid": Script(sse_body(openai_chunks([INVALID], [0, 0], text=[]))),
        "qwen": Script(sse_body(qwen_case().chunks)),
    }

    def pick(path: str, body: dict[str, Any]) -> Script:
        return scripts[body["metadata"]["case"]]

    spans = TurnSpans(provider, record_arguments=record_arguments)
    with ServerThread(ReplayUpstream(pick)) as up:
        config = ProxyConfig(upstream=up.url, options=Options(on_blocked="notice"), spans=spans)
        with ServerThread(create_app(config)) as proxy:
            yield exporter, proxy.url


@pytest.fixture
def traced() -> Iterator[tuple[InMemorySpanExporter, str]]:
    yield from _spans(record_arguments=False)


def _finished(exporter: InMemorySpanExporter, count: int) -> list[Any]:
    """The finished spans once ``count`` are there: a turn's span ends after its last byte."""
    deadline = time.monotonic() + 10
    while len(exporter.get_finished_spans()) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(exporter.get_finished_spans())


def _turn(url: str, case: str) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        list(
            client.chat.completions.create(
                model=QWEN_MODEL,
                messages=[{"role": "user", "content": "weather?"}],
                tools=openai_tools(WEATHER),  # type: ignore[arg-type]
                metadata={"case": case},
                stream=True,
            )
        )


def test_each_proxied_turn_has_one_span_with_verdict_findings_and_no_argument_value(
    traced: tuple[InMemorySpanExporter, str],
) -> None:
    exporter, url = traced
    _turn(url, "invalid")
    _turn(url, "qwen")
    failed, passed = _finished(exporter, 2)
    assert failed.name == passed.name == f"chat {QWEN_MODEL}"
    assert failed.attributes is not None and passed.attributes is not None
    assert failed.attributes["callgate.verdict"] == "fail"
    assert "schema_invalid" in failed.attributes["callgate.finding_codes"]  # type: ignore[operator]
    assert failed.attributes["callgate.served_by"] == "proxy"
    assert [e.attributes["callgate.call.outcome"] for e in failed.events] == ["withheld"]  # type: ignore[index]
    assert passed.attributes["callgate.verdict"] == "pass"
    assert [e.attributes["callgate.call.source"] for e in passed.events] == ["tool_call_tag"]  # type: ignore[index]
    everything = repr([(s.attributes, [e.attributes for e in s.events]) for s in (failed, passed)])
    assert SECRET not in everything and "Paris" not in everything


def test_argument_values_go_on_spans_only_when_asked() -> None:
    for exporter, url in _spans(record_arguments=True):
        _turn(url, "qwen")
        (span,) = _finished(exporter, 1)
        assert "Paris" in repr([e.attributes for e in span.events])
