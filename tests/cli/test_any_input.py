"""Any input gets a verdict: ``check`` and ``replay`` exit 0, 1 or 2, never with a traceback.

The command line's contract is that exit 1 means a conformance failure, so a crash (which
also exits 1) would read as a verdict in a CI gate. These properties feed the CLI's
``main`` (in-process) arbitrary bytes, arbitrary JSON values, fixtures and captures whose
chunks are built from every wire's field names and event types, and bundled fixtures
with one chunk or one value corrupted, and require an exit code of 0, 1 or 2 within a
time bound that grows with the input's size. Output goes to a strict UTF-8 stream, as
a terminal's would, so text that cannot be printed is caught too.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callgate.cli.commands import main
from callgate.cli.fixtures import examples
from callgate.strategies import default_strategies

SECONDS_BASE = 10.0
SECONDS_PER_KB = 0.05
"""The time bound per input: generous, so a loaded two-core machine does not flake."""

WIRES = sorted({s.name for s in default_strategies()} | {"mistral", "auto"})
KEYS = [
    # OpenAI Chat Completions, Ollama, Cohere
    "choices", "index", "delta", "content", "tool_calls", "id", "type", "function", "name",
    "arguments", "finish_reason", "role", "reasoning_content", "message", "done",
    "done_reason", "thinking", "tool_call_id", "tool_plan",
    # Anthropic
    "content_block", "partial_json", "text", "signature", "stop_reason", "usage", "input",
    # Responses
    "response", "output_index", "item", "call_id", "content_index", "part", "annotation",
    "output", "status",
    # Bedrock
    "messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
    "messageStop", "metadata", "contentBlockIndex", "start", "toolUse", "toolUseId",
    "stopReason", "reasoningContent",
    # Gemini
    "candidates", "parts", "functionCall", "args", "finishReason", "thought",
]  # fmt: skip
TYPES = [
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping", "error", "text_delta", "input_json_delta",
    "thinking_delta", "signature_delta", "tool_use", "text", "thinking", "function",
    "response.created", "response.output_item.added", "response.output_text.delta",
    "response.function_call_arguments.delta", "response.function_call_arguments.done",
    "response.output_item.done", "response.completed", "function_call", "message",
    "message-start", "content-delta", "tool-call-start", "tool-call-delta", "tool-call-end",
    "message-end", "tool_calls", "stop", "STOP", "tool_use", "end_turn", "f", "{", '{"a": 1}',
]  # fmt: skip


def json_values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """JSON values whose object keys come from ``keys``; strings include wire vocabulary."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-2, 5)
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from(TYPES)
        | st.text(max_size=12)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
        max_leaves=24,
    )


ANY_JSON = json_values(st.text(max_size=8))
WIRE_JSON = json_values(st.sampled_from(KEYS) | st.text(max_size=4))
CHUNKS = st.lists(st.dictionaries(st.sampled_from(KEYS), WIRE_JSON, max_size=5), max_size=10)
SCHEMAS = st.sampled_from(
    [
        {"type": "object"},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}},
        {"type": "object", "properties": {"n": {"multipleOf": 0.01}}, "required": ["n"]},
        {"type": "object", "additionalProperties": False},
    ]
)
FIXTURES = st.fixed_dictionaries(
    {
        "profile": st.sampled_from([*WIRES, None]) | st.text(max_size=5),
        "tool_schemas": st.dictionaries(st.sampled_from(["f", "g", ""]), SCHEMAS, max_size=2),
        "chunks": CHUNKS,
    }
)


@st.composite
def corrupted_examples(draw: st.DrawFn) -> dict[str, Any]:
    """A bundled fixture with one chunk replaced, dropped or doubled, or one value replaced."""
    _, text = draw(st.sampled_from(examples()))
    fixture = json.loads(text)
    key = "chunks" if "chunks" in fixture else "events"
    chunks = list(fixture.get(key) or [])
    if not chunks:
        return fixture
    at = draw(st.integers(0, len(chunks) - 1))
    how = draw(st.sampled_from(["replace", "drop", "double", "leaf"]))
    if how == "replace":
        chunks[at] = draw(WIRE_JSON)
    elif how == "drop":
        del chunks[at]
    elif how == "double":
        chunks.insert(at, chunks[at])
    else:
        for _ in range(draw(st.integers(1, 3))):
            chunks[at] = replaced_leaf(draw, chunks[at])
    fixture[key] = chunks
    return fixture


def replaced_leaf(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one nested value (chosen by ``draw``, deep ones more often) replaced."""
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.integers(0, 3)) == 0:
            return {**value, key: draw(WIRE_JSON)}
        return {**value, key: replaced_leaf(draw, value[key])}
    if isinstance(value, list) and value:
        at = draw(st.integers(0, len(value) - 1))
        return [*value[:at], replaced_leaf(draw, value[at]), *value[at + 1 :]]
    return draw(WIRE_JSON)


def as_capture(chunks: list[Any], form: str) -> str:
    """Chunks as ``replay`` reads them: a JSON array, JSON Lines, or SSE text."""
    if form == "array":
        return json.dumps(chunks)
    if form == "lines":
        return "\n".join(json.dumps(c) for c in chunks)
    events = []
    for chunk in chunks:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        head = f"event: {kind}\n" if isinstance(kind, str) else ""
        events.append(f"{head}data: {json.dumps(chunk)}\n\n")
    return "".join(events) + "data: [DONE]\n\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("any_input")


KNOWN_CRASHES: list[tuple[str, str, str, str]] = []
"""Crashes known in code outside these tests' reach: (exception, file and function of the
innermost frame, words of the message). The properties pass over them (they would only
find them again); each is pinned by an example in ``test_known_crash``, marked
xfail(strict=True): when one is fixed, its example passes, the strict xfail fails, and
both entries come out."""

OUTPUT_ERRORS = "strict"
"""How the properties' output stream treats text UTF-8 cannot encode: strictly, as a
terminal's does (the command line prints a lone surrogate as a backslash escape)."""


def verdict(
    folder: Path,
    command: str,
    data: bytes,
    *options: str,
    errors: str = OUTPUT_ERRORS,
    known: bool = True,
) -> int | None:
    """Run ``callgate COMMAND FILE OPTIONS`` in-process; return its exit code.

    Fails on an exception (a traceback), on an exit code other than 0, 1 or 2, and on
    a run longer than the time bound for the input's size. A crash in
    :data:`KNOWN_CRASHES` returns None instead (unless ``known`` is False).
    """
    path = folder / "input"
    path.write_bytes(data)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors)
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([command, str(path), *options])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
        except Exception as error:
            if not known or not is_known(error):
                raise
            return None
        out.flush()
        err.flush()
    elapsed = time.perf_counter() - start
    assert code in (0, 1, 2), f"exit {code}"
    bound = SECONDS_BASE + SECONDS_PER_KB * len(data) / 1024
    assert elapsed < bound, f"{elapsed:.1f} s for {len(data)} bytes (bound {bound:.1f} s)"
    return code


def is_known(error: BaseException) -> bool:
    """Whether ``error`` is one of :data:`KNOWN_CRASHES`."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    site = (type(error).__name__, Path(frame.filename).name, frame.name)
    return any(site == known[:3] and known[3] in str(error) for known in KNOWN_CRASHES)


def both(folder: Path, data: bytes) -> None:
    verdict(folder, "check", data, "--report", "json")
    verdict(folder, "check", data)
    verdict(folder, "replay", data, "--json")
    verdict(folder, "replay", data)


FAST = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.binary(max_size=400))
def test_any_bytes(folder: Path, data: bytes) -> None:
    both(folder, data)


@FAST
@given(ANY_JSON)
def test_any_json_value(folder: Path, value: Any) -> None:
    both(folder, json.dumps(value).encode())


@FAST
@given(FIXTURES)
def test_any_fixture_of_wire_shaped_chunks(folder: Path, fixture: dict[str, Any]) -> None:
    verdict(folder, "check", json.dumps(fixture).encode(), "--report", "json")


@FAST
@given(CHUNKS, st.sampled_from(["array", "lines", "sse"]))
def test_any_capture_of_wire_shaped_chunks(folder: Path, chunks: list[Any], form: str) -> None:
    verdict(folder, "replay", as_capture(chunks, form).encode(), "--json")


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted_examples(), st.sampled_from(["array", "lines", "sse"]))
def test_bundled_fixtures_corrupted(folder: Path, fixture: dict[str, Any], form: str) -> None:
    verdict(folder, "check", json.dumps(fixture).encode(), "--report", "json")
    chunks = fixture.get("chunks") or fixture.get("events") or []
    if isinstance(chunks, list):
        verdict(folder, "replay", as_capture(chunks, form).encode(), "--json")


def openai_lines(deltas: list[Any], finish: str = "stop") -> bytes:
    """An OpenAI stream, one chunk per line, each delta a ``content`` or a chunk's delta."""
    chunks = [
        {"choices": [{"index": 0, "delta": d if isinstance(d, dict) else {"content": d}}]}
        for d in deltas
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return "\n".join(json.dumps(c) for c in chunks).encode()


def fixture_of(capture: bytes) -> bytes:
    chunks = [json.loads(line) for line in capture.splitlines()]
    return json.dumps({"profile": "openai", "tool_schemas": {"f": {}}, "chunks": chunks}).encode()


LONG = openai_lines(["word "] * 20_000)
HUGE = openai_lines(["x" * 2_000_000])
MALFORMED = openai_lines([{"tool_calls": [{"index": -1 - i}]} for i in range(5_000)], "tool_calls")


@pytest.mark.parametrize(
    ("capture", "exit_code"),
    [(b"", 2), (LONG, 2), (HUGE, 2), (MALFORMED, 1)],
    ids=["empty", "20000-chunks", "one-2MB-delta", "5000-malformed-chunks"],
)
def test_large_and_degenerate_inputs_in_time(folder: Path, capture: bytes, exit_code: int) -> None:
    assert verdict(folder, "replay", capture, "--json") == exit_code
    assert verdict(folder, "check", fixture_of(capture), "--report", "json") == exit_code


def example_bytes(name: str) -> bytes:
    return dict(examples())[name].encode()


@pytest.mark.parametrize(
    ("command", "data", "options", "errors"),
    [
        pytest.param(
            "replay", b'[{"type": []}]', ("--json",), "strict",
            id="unhashable-type-replay",
        ),
        pytest.param(
            "check", b'{"profile": "auto", "chunks": [{"type": []}]}', (), "strict",
            id="unhashable-type-check",
        ),
        pytest.param(
            "check", b'{"profile": [], "chunks": []}', (), "strict",
            id="profile-list-check",
        ),
        pytest.param(
            "replay", json.dumps([{"choices": [{"index": 0, "delta": {"content": 5}}]}]).encode(),
            ("--json",), "strict",
            id="content-number-replay",
        ),
        pytest.param(
            "replay", openai_lines([{"tool_calls": [{"index": 0, "id": "c",
                                    "function": {"name": "", "arguments": "{}"}}]}],
                                   "tool_calls"),
            ("--json",), "strict",
            id="empty-name-replay",
        ),
        pytest.param(
            "check", b"[" * 100_000, (), "strict",
            id="deep-nesting-check",
        ),
        pytest.param(
            "replay", b"[" * 100_000, (), "strict",
            id="deep-nesting-replay",
        ),
        pytest.param(
            "check", example_bytes("gemini_lone_surrogate.json"), ("--report", "json"), "strict",
            id="lone-surrogate-check",
        ),
        pytest.param(
            "replay", b'data: {"choices": [{"index": 0, "delta": {"content": "\\ud800"}}]}\n\n',
            ("--json",), "strict",
            id="lone-surrogate-replay",
        ),
    ],
)  # fmt: skip
def test_known_crash(
    folder: Path, command: str, data: bytes, options: tuple[str, ...], errors: str
) -> None:
    """Each known crash, pinned: it must become an exit code of 0, 1 or 2."""
    assert verdict(folder, command, data, *options, errors=errors, known=False) in (0, 1, 2)
