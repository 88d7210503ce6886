"""The worked example of docs/testing.md: AdapterMachine pointed at the SDKs' own helpers.

openai's ``ChatCompletionStreamState`` and anthropic's ``accumulate_event`` are what
people build agent loops on. Each machine below wraps one as an adapter (feed a chunk;
the calls a loop would run once the provider's finish reason has come) and lets
Hypothesis look for a stream where the helper and callgate part ways. Each test pins the
fault found, within a bounded number of examples, and the shrunk stream it reports; the
streams shown in docs/testing.md are these tests' own output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import jiter
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.lib.streaming.chat import _completions as openai_completions

from callgate.testing import TOOLS, AdapterMachine

BOUNDED = settings(
    max_examples=100,
    stateful_step_count=8,
    deadline=None,
    database=None,
    derandomize=True,
    report_multiple_bugs=False,
    phases=[Phase.generate, Phase.shrink],  # no explain phase: it costs more than the search
    suppress_health_check=list(HealthCheck),
)
"""At most 100 generated streams per search, the same ones on every run; one fault each."""


def tools_for_openai(strict: bool) -> list[dict[str, Any]]:
    """The kit's tools as a Chat Completions ``tools`` list."""
    return [
        {"type": "function", "function": {"name": name, "parameters": schema, "strict": strict}}
        for name, schema in TOOLS.items()
    ]


class OpenAIStreamState(AdapterMachine):
    """``ChatCompletionStreamState`` fed the SDK's typed chunks; runs calls at the finish."""

    wire = "openai"
    form = "sdk"
    quirks = False  # the helper needs an index on every tool-call delta
    text = False
    calls_per_turn = (1, 2)
    strict = False

    def feed(self, chunk: Any) -> None:
        if not hasattr(self, "state"):
            self.state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(
                input_tools=tools_for_openai(self.strict)  # type: ignore[arg-type]
            )
            self.finished = False
        self.state.handle_chunk(chunk)
        self.finished |= any(choice.finish_reason for choice in chunk.choices)

    def calls(self) -> Sequence[Any]:
        if not getattr(self, "finished", False):
            return []
        message = self.state.current_completion_snapshot.choices[0].message
        return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]


class StrictOpenAIStreamState(OpenAIStreamState):
    """The same helper told the tools are ``strict`` (its parsed-arguments mode)."""

    strict = True
    faults = False


class OpenAICollisions(OpenAIStreamState):
    """The helper on streams where a second call reuses an index."""

    faults = ("index_reuse",)


class AnthropicAccumulate(AdapterMachine):
    """``accumulate_event`` fed the SDK's typed events; runs tool_use blocks at message_stop."""

    wire = "anthropic"
    form = "sdk"
    text = False
    calls_per_turn = (1, 2)
    faults: ClassVar[bool | Sequence[str]] = False
    parsed: ClassVar[list[int]] = [0]
    """Bytes of partial JSON the helper has parsed (counted by :func:`counting_jiter`)."""

    def feed(self, chunk: Any) -> None:
        if chunk.type == "ping":  # the SDK's stream drops pings before the helper sees them
            return
        if not hasattr(self, "snapshot"):
            self.snapshot: Any = None
            self.buffers: dict[int, bytes] = {}
            self.finished = False
            self.start = self.parsed[0]
        self.snapshot = accumulate_event(
            event=chunk, current_snapshot=self.snapshot, json_bufs=self.buffers
        )
        self.finished |= chunk.type == "message_stop"

    def calls(self) -> Sequence[Any]:
        if not getattr(self, "finished", False):
            return []
        return [(b.id, b.name, b.input) for b in self.snapshot.content if b.type == "tool_use"]


class AnthropicGrowth(AnthropicAccumulate):
    """The same helper with its parsing work counted: bytes parsed per byte received."""

    def work(self) -> int | None:
        return self.parsed[0] - self.start if hasattr(self, "start") else None


class AnthropicCollisions(AnthropicAccumulate):
    """The helper on streams where a second tool_use block reuses an index."""

    faults = ("index_reuse",)


@pytest.fixture
def counting_jiter(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the bytes each helper hands to jiter's partial JSON parser."""
    parsed = AnthropicAccumulate.parsed
    parsed[0] = 0
    real = jiter.from_json

    def counted(data: bytes, *args: Any, **kwargs: Any) -> Any:
        parsed[0] += len(data)
        return real(data, *args, **kwargs)

    monkeypatch.setattr(jiter, "from_json", counted)
    monkeypatch.setattr(openai_completions, "from_json", counted)
    yield parsed


def found(machine: type[AdapterMachine]) -> str:
    """The shrunk failure the machine reports (its first line, then the stream)."""
    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(machine, settings=BOUNDED)
    return str(caught.value)


def chunks_in(report: str) -> list[dict[str, Any]]:
    """The stream a failure report shows, one JSON chunk a line."""
    return [json.loads(line) for line in report.splitlines() if line.startswith("{")]


def test_strict_tools_interleaved_crash_the_openai_helper() -> None:
    report = found(StrictOpenAIStreamState)
    assert "the adapter raised" in report and "on a stream callgate accepts" in report
    indexes = [
        c["choices"][0]["delta"]["tool_calls"][0]["index"]
        for c in chunks_in(report)
        if c["choices"] and c["choices"][0]["delta"].get("tool_calls")
    ]
    assert len(set(indexes)) == 2, report  # two calls whose pieces interleave
    assert indexes != sorted(indexes), report


def test_the_openai_helper_merges_a_reused_index_silently() -> None:
    report = found(OpenAICollisions)
    assert "that callgate blocks (['identity_collision'])" in report, report
    assert "index_reuse" in report


def test_the_anthropic_helper_keeps_a_reused_index_as_another_call() -> None:
    report = found(AnthropicCollisions)
    assert "that callgate blocks (['identity_collision'])" in report, report


def test_the_anthropic_helper_reparses_the_whole_input_on_every_delta(
    counting_jiter: list[int],
) -> None:
    report = found(AnthropicGrowth)
    assert "growth faster than linear" in report, report
    deltas = [c for c in chunks_in(report) if c["type"] == "content_block_delta"]
    assert len(deltas) >= 8, report
