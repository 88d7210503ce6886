"""The proxy's engine (no server): upstream chunks in, gated chunks out.

Every recorded OpenAI stream and every case of the peer text corpus, whole and one
character per chunk, gives the client what callgate's buffer and dry-run driver give
(:func:`callgate.cli.replay.replay`); truncated streams release no call; declared tools
and ``tool_choice`` decide what can be a call; the ``--on-blocked`` modes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.proxy.engine import GatedTurn, Options, RequestError, ThinkSplitter, driver_for
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import (
    CUT_REASONS,
    NEGATIVE,
    QWEN,
    WEATHER,
    StreamCase,
    by_char,
    calls_of,
    capture_cases,
    chat_chunk,
    chat_response,
    corpus_cases,
    cut_at,
    qwen_case,
    rebuilt,
    text_turn,
)

CAPTURES = capture_cases()
CORPUS = corpus_cases()


def play(
    case: StreamCase, options: Options | None = None
) -> tuple[GatedTurn, list[dict[str, Any]]]:
    turn = GatedTurn(case.request, options or case.options)
    out: list[dict[str, Any]] = []
    for chunk in case.chunks:
        out += turn.feed(chunk)
    out += turn.finish(clean=case.ended)
    return turn, out


def check_against_replay(case: StreamCase) -> None:
    turn, out = play(case)
    got = rebuilt(out)
    want = case.expected()
    assert got["content"] == want["display"] + turn.notice(), case.id
    assert got["calls"] == want["calls"], case.id
    assert turn.status == want["status"], case.id
    assert (got["finish_reason"] == "tool_calls") is bool(want["calls"])
    assert len(set(got["ids"])) == len(got["ids"]) and all(got["ids"])
    assert sum(1 for c in out if c.get("choices") and c["choices"][0]["finish_reason"]) == 1


@pytest.mark.parametrize("case", CAPTURES, ids=[c.id for c in CAPTURES])
def test_a_recorded_stream_gives_what_the_buffer_and_driver_give(case: StreamCase) -> None:
    check_against_replay(case)
    check_against_replay(by_char(case))


def test_the_corpus_gives_what_the_buffer_and_driver_give_whole_and_by_character() -> None:
    assert len(CORPUS) >= 250
    converted = 0
    for case in CORPUS:
        check_against_replay(case)
        check_against_replay(by_char(case))
        converted += bool(case.expected()["calls"])
    assert converted >= 150  # the corpus's calls do become native calls


def test_a_leaked_qwen_call_becomes_one_native_call_and_its_markup_never_shows() -> None:
    turn, out = play(qwen_case())
    got = rebuilt(out)
    assert got["content"] == "Let me check."
    assert got["calls"] == [("get_weather", {"city": "Paris"})]
    assert got["finish_reason"] == "tool_calls"
    assert turn.formats == ("tool_call_tag",)
    assert [c.source for c in turn.calls] == ["tool_call_tag"]
    assert all("<tool_call>" not in (c["choices"][0]["delta"].get("content") or "") for c in out)


def _with_calls() -> list[StreamCase]:
    cases = [c for c in CAPTURES if c.schemas]
    qwen = qwen_case()
    return [*cases, qwen]


@pytest.mark.parametrize("case", _with_calls(), ids=[c.id for c in _with_calls()])
def test_a_stream_cut_at_any_chunk_releases_no_call(case: StreamCase) -> None:
    for at in range(len(case.chunks) + 1):
        for reason in (*CUT_REASONS, None):
            chunks = cut_at(case.chunks, at, reason)
            if not chunks and at:
                continue
            cut = StreamCase(case.id, chunks, case.schemas, case.formats, case.model)
            turn, out = play(cut)
            got = rebuilt(out)
            assert got["calls"] == [] and turn.calls == [], (at, reason)
            assert got["finish_reason"] != "tool_calls", (at, reason)
            assert got["finish_reason"] == (reason or "stop")


def test_tool_choice_none_converts_nothing_and_shows_the_markup() -> None:
    case = StreamCase(
        "none",
        text_turn(list(QWEN)),
        WEATHER,
        model="Qwen/Qwen2.5-7B-Instruct",
        extra={"tool_choice": "none"},
    )
    turn, out = play(case)
    assert rebuilt(out) == {"content": QWEN, "calls": [], "ids": [], "finish_reason": "stop"}
    assert turn.status == "not_applicable"


@pytest.mark.parametrize(("why", "model", "content"), NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_the_negative_corpus_converts_nothing_and_loses_nothing(
    why: str, model: str, content: str
) -> None:
    for pieces in ([content], list(content)):
        _turn, out = play(StreamCase(why, text_turn(pieces), WEATHER, model=model))
        got = rebuilt(out)
        assert got["calls"] == [] and got["finish_reason"] == "stop"
        assert got["content"] == content


def test_a_native_call_to_an_undeclared_tool_is_never_forwarded() -> None:
    call = WireCall("call_1", "rm_rf", ('{"path": "/"}',))
    case = StreamCase("undeclared", openai_chunks([call], [0, 0]), WEATHER)
    turn, out = play(case)
    got = rebuilt(out)
    assert got["calls"] == [] and got["finish_reason"] == "stop"
    assert turn.status == "fail"


def _invalid_call_turn() -> StreamCase:
    call = WireCall("call_7", "get_weather", ('{"town": "Paris"}',))
    return StreamCase("invalid", openai_chunks([call], [0, 0], text=["Checking."]), WEATHER)


def test_notice_ends_the_turn_without_the_call_and_says_why() -> None:
    _turn, out = play(_invalid_call_turn(), Options(on_blocked="notice"))
    got = rebuilt(out)
    assert got["calls"] == [] and got["finish_reason"] == "stop"
    line = "A call to get_weather was not run: its arguments did not match the tool."
    assert got["content"] == "Checking.\n\n" + line
    assert "schema_invalid" not in got["content"]
    assert out[-1]["callgate"]["status"] == "fail"
    assert out[-1]["callgate"]["withheld"] == ["get_weather"]
    assert [f["code"] for f in out[-1]["callgate"]["findings"]] == ["schema_invalid"]


def test_pass_forwards_the_refused_call_annotated() -> None:
    _turn, out = play(_invalid_call_turn(), Options(on_blocked="pass"))
    got = rebuilt(out)
    assert got["calls"] == [("get_weather", {"town": "Paris"})]
    assert got["ids"] == ["call_7"] and got["finish_reason"] == "tool_calls"
    assert got["content"] == "Checking."
    assert out[-1]["callgate"]["passed"] is True


def test_pass_never_forwards_a_truncated_call() -> None:
    call = WireCall("call_7", "get_weather", ('{"city": "Pa',))
    chunks = openai_chunks([call], [0, 0])
    chunks[-1]["choices"][0]["finish_reason"] = "length"
    turn, out = play(StreamCase("cut", chunks, WEATHER), Options(on_blocked="pass"))
    assert rebuilt(out)["calls"] == [] and rebuilt(out)["finish_reason"] == "length"
    assert turn.repair is None and not turn.passed


def test_repair_asks_again_with_the_call_and_a_corrective_result_then_continues() -> None:
    first = GatedTurn(_invalid_call_turn().request, Options(on_blocked="repair", repairs=1))
    out: list[dict[str, Any]] = []
    for chunk in _invalid_call_turn().chunks:
        out += first.feed(chunk)
    out += first.finish()
    assert first.repair is not None
    assert not any(c["choices"][0]["finish_reason"] for c in out if c.get("choices"))
    added = first.repair["messages"][1:]
    assert added[0]["role"] == "assistant" and added[0]["tool_calls"][0]["id"] == "call_7"
    assert added[1]["role"] == "tool" and "schema_invalid" in added[1]["content"]
    second = first.follow_up()
    good = WireCall("call_8", "get_weather", ('{"city": "Paris"}',))
    for chunk in openai_chunks([good], [0, 0]):
        out += second.feed(chunk)
    out += second.finish()
    got = rebuilt(out)
    assert got["calls"] == [("get_weather", {"city": "Paris"})]
    assert got["content"] == "Checking." and got["finish_reason"] == "tool_calls"
    assert sum(1 for c in out if c["choices"][0]["delta"].get("role")) == 1
    assert second.repair is None


def test_repair_ends_with_a_notice_once_its_attempts_are_spent() -> None:
    first = GatedTurn(_invalid_call_turn().request, Options(on_blocked="repair", repairs=1))
    for chunk in _invalid_call_turn().chunks:
        first.feed(chunk)
    first.finish()
    second = first.follow_up()
    out: list[dict[str, Any]] = []
    for chunk in _invalid_call_turn().chunks:
        out += second.feed(chunk)
    out += second.finish()
    assert second.repair is None
    assert rebuilt(out)["content"].endswith("was not run: its arguments did not match the tool.")


def test_stream_args_forwards_deltas_and_withholds_the_finish_until_the_gate_passes() -> None:
    good = WireCall("call_1", "get_weather", ('{"ci', 'ty": "Paris"}'))
    case = StreamCase("args", openai_chunks([good], [0, 0, 0]), WEATHER)
    _, out = play(case, Options(on_blocked="notice", stream_args=True))
    streamed = [c for c in out if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert len(streamed) == 4  # three as they came, then the close the gate's acceptance sends
    last = streamed[-1]["choices"][0]["delta"]["tool_calls"]
    assert last == [{"index": 0, "function": {"arguments": "}"}}]
    assert rebuilt(out)["calls"] == [("get_weather", {"city": "Paris"})]
    assert rebuilt(out)["finish_reason"] == "tool_calls"
    bad = WireCall("call_1", "get_weather", ('{"town": "Paris"}',))
    _turn, out = play(
        StreamCase("bad", openai_chunks([bad], [0, 0]), WEATHER),
        Options(on_blocked="notice", stream_args=True),
    )
    assert rebuilt(out)["finish_reason"] == "stop"


def test_whole_gives_the_stream_false_response_the_stream_would_give() -> None:
    case = qwen_case([QWEN])
    usage = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    response = chat_response(case.model, {"role": "assistant", "content": QWEN}, usage=usage)
    body = GatedTurn(case.request, case.options).whole(response)
    message = body["choices"][0]["message"]
    assert message["content"] == "Let me check."
    assert calls_of(message) == [("get_weather", {"city": "Paris"})]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["usage"] == response["usage"] and body["object"] == "chat.completion"


@pytest.mark.parametrize("case", CAPTURES, ids=[c.id for c in CAPTURES])
def test_whole_on_a_recorded_message_matches_the_stream(case: StreamCase) -> None:
    from callgate.cli.replay import replay

    response = chat_response(case.model, replay(case.chunks)["message"])
    body = GatedTurn(case.request, case.options).whole(response)
    got = body["choices"][0]["message"]
    want = case.expected()
    assert (got["content"] or "") == want["display"]
    assert calls_of(got) == want["calls"]


def test_a_stream_that_is_not_this_wire_ends_cleanly_with_a_finding() -> None:
    turn = GatedTurn({"model": "x"})
    assert turn.feed({"what": "is this"}) == []
    out = turn.finish()
    assert out[-1]["choices"][0]["finish_reason"] == "stop"
    assert turn.status == "fail"
    assert out[-1]["callgate"]["findings"][0]["code"] == "malformed_chunk"


def test_a_chunk_that_is_not_an_object_blocks_the_turn() -> None:
    call = WireCall("call_1", "get_weather", ('{"city": "Paris"}',))
    chunks: list[Any] = openai_chunks([call], [0, 0])
    chunks.insert(2, "not json")
    turn = GatedTurn(StreamCase("x", [], WEATHER).request)
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += turn.feed(chunk)
    out += turn.finish()
    assert rebuilt(out)["calls"] == [] and turn.status == "fail"


def test_chunks_after_the_end_are_ignored() -> None:
    turn = GatedTurn({"model": "x"})
    for chunk in text_turn(["hi"]):
        turn.feed(chunk)
    turn.finish()
    assert turn.feed(text_turn(["more"])[1]) == [] and turn.finish() == []


def test_one_driver_per_distinct_tool_set() -> None:
    request = StreamCase("x", [], WEATHER).request
    assert driver_for(request, Options()) is driver_for(json.loads(json.dumps(request)), Options())
    other = {**request, "model": "Qwen/Qwen2.5-7B-Instruct"}
    assert driver_for(other, Options()) is not driver_for(request, Options())


@pytest.mark.parametrize(
    "request_body",
    [
        {"tools": {"not": "a list"}},
        {"tools": [{"type": "function", "function": {"parameters": {}}}]},
        {"tools": [{"type": "function", "function": {"name": "a", "parameters": []}}]},
        {"tools": [{"type": "function", "function": {"name": "a"}}] * 2},
        {"n": 2},
    ],
)
def test_a_request_the_engine_cannot_gate_is_refused_clearly(request_body: dict[str, Any]) -> None:
    with pytest.raises(RequestError):
        GatedTurn(request_body)


def test_reasoning_moves_to_reasoning_content_when_asked() -> None:
    content = "<think>the user wants weather</think>It is sunny."
    case = StreamCase("think", text_turn(list(content)), {})
    _, out = play(case, Options(move_reasoning=True))
    reasoning = "".join(
        c["choices"][0]["delta"].get("reasoning_content", "") for c in out if c["choices"]
    )
    assert reasoning == "the user wants weather"
    assert rebuilt(out)["content"] == "It is sunny."
    _, out = play(case)
    assert rebuilt(out)["content"] == content


@given(st.text(alphabet="<>/thinkab ", max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_the_think_splitter_loses_nothing_at_any_split(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    whole, split = ThinkSplitter(), ThinkSplitter()
    want = [whole.feed(text), whole.flush()]
    got = [split.feed(p) for p in pieces] + [split.flush()]
    assert "".join(r for r, _ in got) == "".join(r for r, _ in want)
    assert "".join(c for _, c in got) == "".join(c for _, c in want)
    if "<think>" not in text:
        assert "".join(c for _, c in got) == text


def test_importing_callgate_and_the_engine_imports_no_web_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys, callgate; assert 'callgate.proxy' not in sys.modules\n"
        "import callgate.proxy, callgate.proxy.engine\n"
        "heavy = [m for m in ('starlette', 'httpx', 'uvicorn', 'prometheus_client') "
        "if m in sys.modules]\n"
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "[]", done.stderr


def test_an_error_frame_after_the_finish_withholds_the_calls() -> None:
    call = WireCall("call_1", "get_weather", ('{"city": "Paris"}',))
    chunks: list[Any] = openai_chunks([call], [0, 0])
    chunks.append({"error": {"message": "the model crashed", "type": "server_error"}})
    turn = GatedTurn(StreamCase("x", [], WEATHER).request)
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += turn.feed(chunk)
    out += turn.finish()
    assert {"error": chunks[-1]["error"]} in out  # relayed as it came
    assert rebuilt(out)["calls"] == [] and rebuilt(out)["finish_reason"] == "stop"
    assert turn.status == "fail"


def test_an_error_beside_choices_is_relayed_alone_and_its_choice_goes_through_the_gate() -> None:
    """OpenRouter's mid-stream error: an ``error`` beside a choice with ``finish_reason: "error"``.

    The choice's text goes through the display and its call delta to the gate (none is
    sent); the error object reaches the client on its own, and one finish ends the turn.
    """
    partial = {"index": 0, "id": "call_1", "type": "function"}
    partial["function"] = {"name": "get_weather", "arguments": '{"ci'}
    chunks: list[Any] = [
        chat_chunk({"role": "assistant", "content": "Hello "}),
        chat_chunk(
            {"content": "world <tool", "tool_calls": [partial]},
            "error",
            error={"code": 502, "message": "Provider disconnected"},
        ),
    ]
    turn = GatedTurn(StreamCase("x", [], WEATHER).request, Options(on_blocked="notice"))
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += turn.feed(chunk)
    out += turn.finish()
    assert {"error": chunks[-1]["error"]} in out
    got = rebuilt(out)
    assert got["content"] == "Hello world <tool" + turn.notice()
    assert got["calls"] == []
    choices = [c for o in out for c in o.get("choices") or []]
    assert [c["finish_reason"] for c in choices if c["finish_reason"]] == ["error"]
    assert turn.status == "fail" and turn.findings[0].code == "provider_error"


def _as_bytes(
    case: StreamCase, options: Options, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> bytes:
    """The bytes a client receives for ``case``: ``play`` per event, or ``feed_event`` encoded."""
    from callgate.proxy import core, engine
    from callgate.proxy.sse import SSEReader
    from callgate.proxy.upstream import sse_body

    ids = iter(range(10**6))
    monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
    monkeypatch.setattr(engine.time, "time", lambda: 1700000000.0)
    turn = GatedTurn(case.request, options)
    reader = SSEReader()
    out = b""
    for event in [*reader.feed(sse_body(case.chunks)), *reader.close()]:
        if fast:
            out += turn.play(event)
        else:
            out += b"".join(turn.encode(c) for c in turn.feed_event(event))
    return out + b"".join(turn.encode(c) for c in turn.finish())


ODD_TEXT = StreamCase(
    "odd text",
    [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": 'é \u2028 " \\'}}]},
        {"choices": [{"index": 0, "delta": {"content": "a lone \ud800 surrogate"}}]},
        {"choices": [{"index": 0, "delta": {"content": "x", "refusal": None, "extra": [1]}}]},
        {"choices": [], "usage": {"prompt_tokens": 1}},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ],
    {},
)
"""No envelope of its own, text the encoder escapes, a lone surrogate, a kept field."""


@pytest.mark.parametrize(
    "options",
    [
        Options(on_blocked="notice"),
        Options(on_blocked="pass", stream_args=True, move_reasoning=True),
    ],
    ids=["notice", "stream-args-reasoning"],
)
def test_play_writes_the_bytes_that_encoding_feed_event_writes(
    options: Options, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [*CAPTURES, *CORPUS[::10], ODD_TEXT]
    for case in [*cases, *(by_char(c) for c in cases)]:
        fast = _as_bytes(case, options, True, monkeypatch)
        assert fast == _as_bytes(case, options, False, monkeypatch), case.id


def _merged(pieces: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    out: list[tuple[bool, str]] = []
    for inside, text in pieces:
        if out and out[-1][0] == inside:
            out[-1] = (inside, out[-1][1] + text)
        else:
            out.append((inside, text))
    return out


@given(st.text(alphabet="<>/thinkab ", max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_the_think_splitter_keeps_the_order_of_reasoning_and_text_at_any_split(
    text: str, cuts: list[int]
) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    whole, split = ThinkSplitter(), ThinkSplitter()
    want = whole.pieces(text)
    got = [piece for part in pieces for piece in split.pieces(part)]
    tail = split.flush()
    want_tail = whole.flush()
    assert all(piece for _, piece in got)
    assert _merged([*got, (True, tail[0]), (False, tail[1])]) == _merged(
        [*want, (True, want_tail[0]), (False, want_tail[1])]
    )
