"""A clean end without a finish reason (TGI's shape) runs its calls; a dropped one does not.

TGI's router (``router/src/chat.rs``, ``ChatState``) streams a tool call as deltas of
call ``"0"`` at index 0 and, once the call's JSON closed, buffers every later token, the
one that carries the finish reason included: its tool-call streams end with ``[DONE]``
and no ``finish_reason``. With ``stream_options.include_usage`` a usage chunk with no
choices comes last. callgate takes ``[DONE]`` (or a whole response) as the end, with a
``no_finish_reason`` warning; ``strict_finish`` refuses it; without ``[DONE]`` the stream
was cut off.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.cli.check import check_capture, check_fixture
from callgate.cli.replay import replay

SCHEMAS = {
    "get_weather": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    }
}


def tgi_chunk(delta: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "id": "",
        "created": 1741000000,
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "system_fingerprint": "3.3.5-sha-0000000",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
        "usage": None,
    }


def tgi_delta(name: str | None, arguments: str) -> dict[str, Any]:
    """A delta of TGI's call ``"0"``: its name only in the first one."""
    function = {"name": name, "arguments": arguments}
    entry = {"index": 0, "id": "0", "type": "function", "function": function}
    return {"role": "assistant", "tool_calls": [entry]}


TGI = [
    tgi_chunk(tgi_delta("get_weather", "{")),
    tgi_chunk(tgi_delta(None, '"location"')),
    tgi_chunk(tgi_delta(None, ': "Paris')),
    tgi_chunk(tgi_delta(None, ', France"}')),
    {**tgi_chunk({}), "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 21}},
]
"""A TGI tool-call stream as its router writes it: no chunk carries a finish_reason."""


def sse(chunks: list[dict[str, Any]], done: bool) -> bytes:
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    return ("".join(events) + ("data: [DONE]\n\n" if done else "")).encode()


def fed(chunks: list[dict[str, Any]], *, clean: bool, **options: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=SCHEMAS, **options)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end(clean=clean)
    return buffer


def codes(buffer_or_report: Any) -> list[str]:
    if isinstance(buffer_or_report, dict):
        return [f["code"] for f in buffer_or_report["findings"]]
    return [f.code for f in buffer_or_report.findings]


def test_a_clean_end_without_a_finish_reason_runs_the_call_with_a_warning() -> None:
    buffer = fed(TGI, clean=True)
    assert buffer.verdict == "pass" and buffer.executable
    assert [(c.name, c.arguments) for c in buffer.calls] == [
        ("get_weather", {"location": "Paris, France"})
    ]
    assert codes(buffer) == ["no_finish_reason"]
    assert [(f.severity, f.message) for f in buffer.findings] == [
        (
            "warning",
            "the stream ended cleanly without a finish reason; its calls are checked as "
            "complete (strict_finish refuses them)",
        )
    ]


def test_a_dropped_connection_still_blocks() -> None:
    buffer = fed(TGI, clean=False)
    assert buffer.verdict == "fail" and buffer.calls == []
    assert "missing_terminal" in codes(buffer)


def test_strict_finish_refuses_a_turn_without_a_finish_reason() -> None:
    buffer = fed(TGI, clean=True, strict_finish=True)
    assert buffer.verdict == "fail" and buffer.calls == []
    assert codes(buffer)[0] == "wrong_terminal_reason"


@pytest.mark.parametrize("cut", range(1, 4))
def test_a_clean_end_never_runs_arguments_that_were_cut(cut: int) -> None:
    """``[DONE]`` after a cut call: the call's JSON is incomplete, so it is refused."""
    buffer = fed(TGI[:cut], clean=True)
    assert buffer.verdict == "fail" and buffer.calls == []


def test_a_clean_end_with_usage_at_the_limit_is_still_a_cut() -> None:
    buffer = fed(TGI, clean=True, max_tokens=21)
    assert buffer.verdict == "fail" and buffer.calls == []
    assert codes(buffer)[0] == "token_limit"


def test_check_reads_done_in_an_sse_capture_as_the_clean_end() -> None:
    passed = check_capture(sse(TGI, done=True), tools=SCHEMAS)
    assert passed["status"] == "pass" and codes(passed) == ["no_finish_reason"]
    dropped = check_capture(sse(TGI, done=False), tools=SCHEMAS)
    assert dropped["status"] == "fail" and "missing_terminal" in codes(dropped)
    strict = check_capture(sse(TGI, done=True), tools=SCHEMAS, strict_finish=True)
    assert strict["status"] == "fail"


@pytest.mark.parametrize(
    ("ending", "status"), [(["[DONE]"], "pass"), ([], "fail")], ids=["done", "dropped"]
)
def test_a_fixture_may_end_its_chunks_with_done(ending: list[str], status: str) -> None:
    fixture = {"profile": "openai", "tool_schemas": SCHEMAS, "chunks": [*TGI, *ending]}
    assert check_fixture(json.dumps(fixture))["status"] == status
    lines = "\n".join([*(json.dumps(c) for c in TGI), *ending]).encode()
    assert check_capture(lines, tools=SCHEMAS)["status"] == status


def test_done_anywhere_but_last_is_no_chunk() -> None:
    fixture = {"profile": "openai", "tool_schemas": SCHEMAS, "chunks": ["[DONE]", *TGI]}
    report = check_fixture(json.dumps(fixture))
    assert report["status"] == "invalid" and "chunk 0 is not a JSON object" in str(report)


def test_replay_takes_the_clean_end_as_check_does() -> None:
    result = replay(TGI, SCHEMAS, clean_end=True)
    assert result["status"] == "pass"
    assert [c["released_at"] for c in result["calls"]] == [len(TGI)]
    assert replay(TGI, SCHEMAS)["status"] == "fail"


def test_a_whole_response_with_a_null_finish_reason_is_a_clean_end() -> None:
    from callgate import Driver, Tool

    ran: list[dict[str, Any]] = []
    tool = Tool("get_weather", SCHEMAS["get_weather"], lambda **kw: ran.append(kw) or "sunny")
    response = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": None,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "0",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"location":"Oslo"}'},
                        }
                    ],
                },
            }
        ],
    }
    answered = Driver([tool]).process_llm_response(response)
    assert ran == [{"location": "Oslo"}]
    assert answered.status == "call_executed"
