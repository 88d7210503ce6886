"""OpenAI streams with several choices (``n > 1``): each choice assembled, gated and decided apart.

A request with ``n`` above 1 streams every choice through the same chunks, each chunk's
choice naming its ``index``; a tool call's ``index`` counts within its choice (source
document 003: indices are scoped per choice). The reference for the assembled completion
is the openai SDK's own ``ChatCompletionStreamState``, fed the very same chunks; the
verdict of each choice is the gate's, and a driver runs the calls of its chosen choice
only (``choice``, 0 by default).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from callgate import Driver, LLMStreamBuffer, Tool, run_turn
from callgate.audit.trace import Recorder
from callgate.cli.check import check_stream
from callgate.cli.commands import main
from callgate.cli.replay import replay
from callgate.testing import argument_texts, interleavings
from callgate.testing.builders import anthropic_events, openai_chunks
from callgate.testing.wires import Chunk, WireCall
from provider_rules import validate_openai
from wire_common import fragments_of

NAMES = st.sampled_from(["get_weather", "get_time", "search"])
USAGE = {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}


@st.composite
def choice_calls(draw: st.DrawFn, choice: int) -> list[WireCall]:
    """0-3 calls of one choice, each with its arguments cut into fragments."""
    count = draw(st.integers(0, 3))
    return [
        WireCall(f"call_{choice}_{n}", draw(NAMES), draw(fragments_of(draw(argument_texts()))))
        for n in range(count)
    ]


def of_choice(chunks: Sequence[Chunk], index: int) -> list[Chunk]:
    """One choice's chunks, each naming ``index`` (a usage chunk has no choice to name)."""
    return [
        {**chunk, "choices": [{**c, "index": index} for c in chunk["choices"]]} for chunk in chunks
    ]


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[list[WireCall]], list[str], list[Chunk]]:
    """``n`` in 1..3 choices' chunks, interleaved at any point (each choice opens in order).

    The openai SDK places a choice by its position in a list, so choice ``i`` first
    appears after choice ``i - 1`` did, as the API sends them.
    """
    n = draw(st.integers(1, 3))
    calls = [draw(choice_calls(i)) for i in range(n)]
    texts = [draw(st.text(max_size=16)) for _ in range(n)]
    per_choice = []
    for i in range(n):
        order = draw(interleavings([1 + len(c.fragments) for c in calls[i]]))
        text = draw(fragments_of(texts[i])) if texts[i] else ()
        per_choice.append(of_choice(openai_chunks(calls[i], order, text=text), i))
    merged = draw(interleavings([len(c) for c in per_choice]))
    taken = [0] * n
    chunks = []
    for i in merged:
        chunks.append(per_choice[i][taken[i]])
        taken[i] += 1
    if draw(st.booleans()):
        chunks.append({**chunks[-1], "choices": [], "usage": USAGE})
    return calls, texts, chunks


def fed(chunks: Sequence[Chunk], **options: Any) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(**options)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


def sdk_choices(chunks: Sequence[Chunk]) -> list[tuple[int, dict[str, Any], str | None]]:
    """Each choice of ``ChatCompletionStreamState``'s final completion, as callgate keeps it.

    The helper's own None-valued fields are dropped, each call's ``index`` (the message has
    none) and ``parsed_arguments`` too, and an empty ``content`` is null (the stream=false
    value for a message without text), as tests/test_sdk_differential.py normalises it.
    """
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    read = []
    for choice in state.get_final_completion().choices:
        data = {k: v for k, v in choice.message.model_dump().items() if v is not None}
        data.pop("parsed", None)
        data["content"] = data.get("content") or None
        if "tool_calls" in data:
            data["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": call["type"],
                    "function": {k: call["function"][k] for k in ("name", "arguments")},
                }
                for call in data["tool_calls"]
            ]
        read.append((choice.index, data, choice.finish_reason))
    return read


@settings(max_examples=150, deadline=None)
@given(drawn=streams())
def test_every_choice_is_assembled_as_the_sdk_assembles_it(
    drawn: tuple[list[list[WireCall]], list[str], list[Chunk]],
) -> None:
    """Each choice's message equals the SDK's, and each choice passes with its own calls."""
    calls, texts, chunks = drawn
    buffer = fed(chunks)
    reference = sdk_choices(chunks)
    assert [(c.index, c.message) for c in buffer.choices] == [(n, m) for n, m, _ in reference]
    if len(calls) > 1:
        completion = buffer.as_dict()
        assert completion["object"] == "chat.completion"
        assert [(c["index"], c["message"], c["finish_reason"]) for c in completion["choices"]] == (
            reference
        )
    else:
        assert buffer.as_dict() == reference[0][1]
    for choice, expected in zip(buffer.choices, calls, strict=True):
        assert choice.verdict == ("pass" if expected else "not_applicable")
        assert [(c.id, c.name, c.arguments, c.slot) for c in choice.calls] == [
            (call.id, call.name, json.loads(call.raw), n) for n, call in enumerate(expected)
        ]
        assert [f for f in choice.findings if f.severity == "error"] == []
    first = buffer.choices[0]
    assert (buffer.verdict, buffer.calls, buffer.findings) == (
        first.verdict,
        list(first.calls),
        list(first.findings),
    )
    assert buffer.get_content() == texts[0]
    assert buffer.message() == first.message


# -- a fixed two-choice stream ------------------------------------------------------------


def two_choices(second_finish: str | None = "tool_calls") -> list[Chunk]:
    """Choice 0 calls ``add`` with ``{"a": 1}``, choice 1 with ``{"a": 2}``, interleaved.

    ``second_finish`` ends choice 1 (None: the stream stops before its end).
    """
    first = of_choice(openai_chunks([WireCall("call_a", "add", ('{"a"', ": 1}"))], [0, 0, 0]), 0)
    second = of_choice(openai_chunks([WireCall("call_b", "add", ('{"a": 2', "}"))], [0, 0, 0]), 1)
    if second_finish is None:
        second = second[:-1]
    else:
        second[-1]["choices"][0]["finish_reason"] = second_finish
    merged = [first[0], second[0], second[1], first[1], second[2], first[2]]
    return [*merged, *first[3:], *second[3:]]


def test_a_truncated_choice_blocks_only_its_own_calls() -> None:
    for cut in ("length", None):
        buffer = fed(two_choices(cut))
        zero, one = buffer.choices
        assert zero.verdict == "pass"
        assert [c.arguments for c in zero.calls] == [{"a": 1}]
        assert one.verdict == "fail"
        assert one.calls == ()
        code = "wrong_terminal_reason" if cut == "length" else "missing_terminal"
        assert code in [f.code for f in one.findings]
        assert buffer.findings == []
        chosen_one = fed(two_choices(cut), choice=1)
        assert chosen_one.verdict == "fail"
        assert chosen_one.calls == []
        assert chosen_one.choices[0].verdict == "pass"


def gate_steps(chunks: Sequence[Chunk]) -> list[tuple[str, str, str, str, str]]:
    """The turn and slot steps a recorded replay of ``chunks`` takes, in order."""
    recorder = Recorder()
    replay(chunks, {"add": {"type": "object"}}, recorder=recorder)
    return [
        (s.machine, s.instance, s.source, s.event, s.target)
        for s in recorder.steps
        if s.machine in ("turn", "slot")
    ]


def test_the_chosen_gate_hears_its_own_finish_once_in_a_recorded_trace() -> None:
    """Another choice's finish, after the chosen one's, adds no step to the trace."""
    chunks = two_choices()
    chosen = [c for c in chunks if c["choices"][0]["index"] == 0]
    assert chunks[-1]["choices"][0]["index"] == 1  # choice 1 ends after choice 0
    assert gate_steps(chunks) == gate_steps(chosen)
    ends = [s for s in gate_steps(chunks) if s[3] in ("stream_end", "end")]
    finish = [
        ("slot", "slot 0", "validated", "stream_end", "validated"),
        ("turn", "turn", "executable", "end", "executable"),
    ]
    assert ends == finish  # the chosen choice's finish; the stream's end adds nothing


def test_the_buffers_end_after_the_streams_own_end_adds_no_step() -> None:
    """``end()`` once the finish_reason was taken, with nothing since, steps no machine."""
    chunks = of_choice(openai_chunks([WireCall("call_a", "add", ('{"a": 1}',))], [0, 0]), 0)
    recorder = Recorder()
    buffer = LLMStreamBuffer(tool_schemas={"add": {"type": "object"}}, recorder=recorder)
    for chunk in chunks:
        buffer.add(chunk)
    before = len(recorder.steps)
    buffer.end()
    assert len(recorder.steps) == before and buffer.verdict == "pass"
    late = LLMStreamBuffer(tool_schemas={"add": {"type": "object"}}, recorder=Recorder())
    opened = copy.deepcopy(chunks[1])
    opened["choices"][0]["delta"]["tool_calls"][0].update(index=1, id="call_b")
    for chunk in [*chunks, opened]:  # a call opened after the finish
        late.add(chunk)
    late.end()  # something happened since the finish: the end settles it
    assert [c.state for c in late.gate.calls()] == ["validated", "blocked"]


def test_a_repeated_finish_of_the_chosen_choice_adds_no_step() -> None:
    """OpenRouter's usage chunk repeats the finish_reason: a warning, and no second finish."""
    chunks = of_choice(openai_chunks([WireCall("call_a", "add", ('{"a": 1}',))], [0, 0]), 0)
    repeated = [*chunks, {**chunks[-1], "usage": USAGE}]
    assert gate_steps(repeated) == gate_steps(chunks)


def adder(ran: list[dict[str, Any]]) -> Tool:
    def add(a: int) -> str:
        ran.append({"a": a})
        return str(a)

    return Tool("add", {"type": "object", "properties": {"a": {"type": "integer"}}}, add)


@pytest.mark.parametrize("choice", [0, 1])
def test_the_driver_runs_only_its_chosen_choice(choice: int) -> None:
    ran: list[dict[str, Any]] = []
    driver = Driver([adder(ran)], choice=choice)
    turn = run_turn(two_choices(), driver, driver.new_stream_buffer())
    assert ran == [{"a": choice + 1}]
    assert turn.status == "pass"
    assert [r.call.id for r in turn.results] == [f"call_{'ab'[choice]}"]
    assert turn.history[0]["tool_calls"][0]["id"] == f"call_{'ab'[choice]}"
    assert [m["role"] for m in turn.history] == ["assistant", "tool"]
    validate_openai(turn.history)


@pytest.mark.parametrize("choice", [0, 1])
def test_a_whole_completion_runs_its_chosen_choice(choice: int) -> None:
    """A ``chat.completion`` of two choices (a buffer's own ``as_dict()``) runs one."""
    completion = fed(two_choices()).as_dict()
    ran: list[dict[str, Any]] = []
    response = Driver([adder(ran)], choice=choice).process_llm_response(completion)
    assert ran == [{"a": choice + 1}]
    assert response.call_executed
    assert response.messages[0] == completion["choices"][choice]["message"]
    validate_openai(response.messages)


def test_a_truncated_chosen_choice_runs_nothing_and_is_answered() -> None:
    ran: list[dict[str, Any]] = []
    driver = Driver([adder(ran)], choice=1)
    turn = run_turn(two_choices("length"), driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert [(r.call.id, r.refused) for r in turn.results] == [("call_b", True)]
    validate_openai(turn.history)


def test_a_choice_the_stream_never_sent_runs_nothing() -> None:
    ran: list[dict[str, Any]] = []
    driver = Driver([adder(ran)], choice=2)
    turn = run_turn(two_choices(), driver, driver.new_stream_buffer())
    assert (ran, turn.results, turn.status) == ([], (), "not_applicable")
    assert [c.index for c in driver.new_stream_buffer().choices] == [2]


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1, "1", 1.0, True, None])
def test_a_choice_that_is_not_an_index_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="choice must be a choice's index"):
        Driver([], choice=bad)
    with pytest.raises(ValueError, match="choice must be a choice's index"):
        LLMStreamBuffer(choice=bad)


@pytest.mark.parametrize(
    ("index", "code"),
    [("1", "malformed_chunk"), (-1, "malformed_chunk"), (10**6, "limit_exceeded")],
)
def test_a_chunk_with_a_bad_choice_index_blocks_the_turn(index: Any, code: str) -> None:
    chunks = two_choices()
    chunks.insert(2, {"choices": [{"index": index, "delta": {"content": "x"}}]})
    ran: list[dict[str, Any]] = []
    driver = Driver([adder(ran)])
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    assert ran == []
    assert turn.status == "fail"
    assert code in [f.code for f in turn.findings]
    assert [(r.call.id, r.refused) for r in turn.results] == [("call_a", True)]


def test_a_choice_past_the_first_on_a_one_choice_wire_says_so() -> None:
    events = anthropic_events([WireCall("toolu_1", "add", ('{"a": 1}',))], [0, 0, 0])
    buffer = LLMStreamBuffer(choice=1)
    with pytest.raises(ValueError, match="anthropic wire has one choice per turn"):
        buffer.add(events[0])


# -- the command line ----------------------------------------------------------------------


def test_check_reports_each_choice_beside_the_chosen_verdict() -> None:
    report = check_stream(two_choices("length"), {"add": {"type": "object"}})
    assert report["status"] == "pass"
    assert [(c["index"], c["status"]) for c in report["choices"]] == [(0, "pass"), (1, "fail")]
    assert [c["name"] for c in report["choices"][0]["calls"]] == ["add"]
    assert report["choices"][1]["calls"] == []
    assert "wrong_terminal_reason" in [f["code"] for f in report["choices"][1]["findings"]]
    one = openai_chunks([WireCall("call_a", "add", ('{"a": 1}',))], [0, 0])
    assert "choices" not in check_stream(one, {"add": {"type": "object"}})


@pytest.mark.parametrize("cut", ["length", "tool_calls"])
def test_the_command_line_gives_each_choice_its_verdict(
    cut: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check`` and ``replay`` of an ``n > 1`` fixture: choice 0's verdict, each choice's too."""
    tools = {"add": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    fixture = tmp_path / "two.json"
    fixture.write_text(
        json.dumps({"profile": "openai", "tool_schemas": tools, "chunks": two_choices(cut)}),
        encoding="utf-8",
    )
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    capture = tmp_path / "two.jsonl"
    capture.write_text("".join(json.dumps(c) + "\n" for c in two_choices(cut)), encoding="utf-8")
    expected = [(0, "pass"), (1, "pass" if cut == "tool_calls" else "fail")]
    assert main(["check", str(fixture), "--report", "json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert [(c["index"], c["status"]) for c in checked["choices"]] == expected
    replay = ["replay", str(capture), "--tools", str(tmp_path / "tools.json")]
    assert main([*replay, "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["status"] == checked["status"] == "pass"
    assert replayed["choices"] == checked["choices"]
    assert replayed["message"]["object"] == "chat.completion"
    assert main(replay) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[-3:-1] == [
        "choice 0: PASS: add",
        "choice 1: PASS: add"
        if cut == "tool_calls"
        else "choice 1: FAIL (wrong_terminal_reason): no call runs",
    ]
    assert main(["check", str(fixture)]) == 0
    assert "choice 1: " in capsys.readouterr().out
