"""The MCS python-sdk's streaming tests, and its documented client loop, on callgate.

The cases (tests/corpus/mcs_sdk.py) come from MCS's own test file; each runs as MCS
wrote it (its driver over a plain ``LLMStreamBuffer()``, ``process_llm_response(buf)``
after every chunk, no ``end()``) and gives what MCS expects, or is a documented
deliberate difference whose callgate configuration gives it. The loop of source
document 000 ("Streaming interface") and 001 ("Resolved sub-decision") runs on OpenAI,
Anthropic, plain-text and text-leak streams, and every history it builds is accepted by
the official SDKs' own request types.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from callgate import Driver, DriverMeta, LLMStreamBuffer, SupportsStreaming, Tool
from callgate.fsm.display import STATUS_RANK
from callgate.strategies import (
    AnthropicStrategy,
    OpenAIStrategy,
    ResponsesStrategy,
    default_wire_strategies,
)
from callgate.strategies.base import Forming
from callgate.strategies.text.strategy import TEXT_STRATEGIES
from callgate.testing.builders import WireText, anthropic_events, openai_chunks, split
from callgate.testing.wires import Chunk, WireCall
from corpus.mcs_sdk import CASES, MCS, Case


class Runs:
    """MCS's EchoDriver tools: each run is recorded and answered."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def driver(self, tools: tuple[str, ...], **options: Any) -> Driver:
        def tool(name: str) -> Tool:
            def run(**arguments: Any) -> dict[str, Any]:
                self.runs.append((name, arguments))
                return {"sent": name, "args": arguments}

            return Tool(name, {"type": "object"}, run)

        return Driver([tool(n) for n in tools], **options)


def play(
    case: Case, config: dict[str, Any] | None
) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """Feed the case's chunks as MCS's test does (or under ``config``).

    What ran, and the strongest status the owner (the last driver) reported.
    """
    runs = Runs()
    options = {k: v for k, v in (config or {}).items() if k in ("text_formats", "policy")}
    drivers = [runs.driver(tools, **options) for tools in case.drivers]
    buffer = LLMStreamBuffer() if config is None else drivers[-1].new_stream_buffer()
    statuses: list[str | None] = []
    for chunk in (config or {}).get("chunks", case.chunks):
        buffer.add(chunk)
        statuses += [d.process_llm_response(buffer).status for d in drivers][-1:]
    if config is not None and config.get("end"):
        buffer.end()
        statuses += [d.process_llm_response(buffer).status for d in drivers][-1:]
    return runs.runs, max(statuses, key=STATUS_RANK.__getitem__, default=None)


def test_the_corpus_names_its_source_and_documents_every_difference() -> None:
    assert MCS[0] == "modelcontextstandard/python-sdk" and len(MCS[1]) == 40
    assert len(CASES) >= 15 and len({c.id for c in CASES}) == len(CASES)
    for case in CASES:
        assert "::test_" in case.test
        if case.differs is not None:
            assert case.written is not None and case.config is not None, case.id


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_an_mcs_case_passes_as_written_or_under_its_documented_configuration(case: Case) -> None:
    if case.differs is None:
        assert play(case, case.config) == (case.runs, case.last_status)
        return
    written, _ = play(case, None)
    assert written == case.written, f"as written: {case.differs}"
    assert play(case, case.config) == (case.runs, case.last_status), f"with {case.config}"


# -- MCS's documented client loop -------------------------------------------------------

HERMES = '<tool_call>{"name": "send_mail", "arguments": {"to": "a@b.c"}}</tool_call>'
LEAK = WireText(split("Sending. " + HERMES, [9]))
OPENAI_CALL = [
    WireCall("call_1", "send_mail", ('{"to": ', '"a@b.c"}')),
    WireCall("call_2", "send_mail", ('{"to": "x@y.z"}',)),
]
STREAMS: dict[str, tuple[str, list[Chunk], tuple[str, ...] | None]] = {
    "openai-native": (
        "openai",
        openai_chunks(OPENAI_CALL, [0, 0, 0, 1, 1], text=("On it.",)),
        None,
    ),
    "anthropic-native": (
        "anthropic",
        anthropic_events(
            [WireText(("On it.",)), WireCall("toolu_1", "send_mail", ('{"to":', ' "a@b.c"}'))],
            [0, 0, 0, 1, 1, 1, 1],
        ),
        None,
    ),
    "openai-plain-text": ("openai", openai_chunks([], [], text=split("Just chatting.", [4])), None),
    "openai-text-leak": (
        "openai",
        openai_chunks([], [], text=split("Sending. " + HERMES + " Done.", [7])),
        ("tool_call_tag",),
    ),
    "anthropic-text-leak": (
        "anthropic",
        anthropic_events([LEAK], [0] * (2 + len(LEAK.fragments))),
        ("tool_call_tag",),
    ),
}


def mcs_loop(
    driver: Driver, stream: list[Chunk], history: list[dict[str, Any]]
) -> tuple[str, list[str]]:
    """The client loop of source documents 000 and 001, line by line; what it printed.

    Nothing is added to it: no ``end()``. The stream's own completion signal (OpenAI's
    ``finish_reason``, Anthropic's ``message_stop``) settles the turn, its text included.
    """
    streamer = DriverMeta.resolve_capability(driver, SupportsStreaming)
    assert streamer is not None
    buf = streamer.new_stream_buffer()
    printed, seen = "", []
    for chunk in stream:
        buf.add(chunk)
        dr = streamer.process_llm_response(buf)
        printed += buf.text()
        seen.append("pending" if dr.call_pending else "")
        if dr.call_executed or dr.call_failed:
            history.extend(dr.messages)
    return printed, seen


SHOWN = {
    "openai-native": "On it.",
    "anthropic-native": "On it.",
    "openai-plain-text": "Just chatting.",
    "openai-text-leak": "Sending.  Done.",
    "anthropic-text-leak": "Sending. ",
}
"""What each stream shows the user: its text, never a call's markup."""


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_the_mcs_client_loop_runs_as_written_and_builds_a_history_the_sdk_accepts(
    name: str,
) -> None:
    wire, stream, formats = STREAMS[name]
    runs = Runs()
    driver = runs.driver(("send_mail",), text_formats=formats or ())
    user: dict[str, Any] = {"role": "user", "content": "Mail a@b.c please."}
    history = [user]
    printed, seen = mcs_loop(driver, stream, history)
    assert printed == SHOWN[name]
    assert seen[-1] == "", "the last step, with no end(), holds nothing back"
    if name == "openai-plain-text":
        assert (printed, runs.runs, history) == ("Just chatting.", [], [user])
        return
    expected = [("send_mail", {"to": "a@b.c"})]
    if name == "openai-native":
        expected.append(("send_mail", {"to": "x@y.z"}))
    assert runs.runs == expected
    assert history[1]["role"] == "assistant", "the assistant message comes before its answers"
    if wire == "openai":
        TypeAdapter(list[ChatCompletionMessageParam]).validate_python(history, strict=True)
    else:
        TypeAdapter(list[MessageParam]).validate_python(history, strict=True)


def test_the_loop_holds_the_display_while_a_native_call_forms() -> None:
    runs = Runs()
    driver = runs.driver(("send_mail",), text_formats=())
    stream = openai_chunks(OPENAI_CALL[:1], [0, 0, 0], text=("On it.",))
    printed, seen = mcs_loop(driver, stream, [])
    assert printed == "On it."
    first = seen.index("pending")
    assert seen[first:-1] == ["pending"] * (len(seen) - 1 - first), "held from the call on"
    assert seen[-1] == "" and runs.runs == [("send_mail", {"to": "a@b.c"})]


@pytest.mark.parametrize(
    ("strategy", "message", "forming"),
    [
        (OpenAIStrategy(), {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]},
         Forming(True, None)),
        (OpenAIStrategy(), {"tool_calls": [{"function": {"name": "send_mail"}}]},
         Forming(True, "send_mail")),
        (OpenAIStrategy(), {"content": "hi"}, Forming(False, None)),
        (AnthropicStrategy(), {"content": [{"type": "text", "text": "x"},
         {"type": "tool_use", "id": "t", "name": "send_mail", "input": {}}]},
         Forming(True, "send_mail")),
        (ResponsesStrategy(), {"output": [{"type": "function_call", "name": ""}]},
         Forming(True, None)),
    ],
)  # fmt: skip
def test_forming_says_whether_a_call_is_coming_and_its_name_once_streamed(
    strategy: Any, message: dict[str, Any], forming: Forming
) -> None:
    assert strategy.forming(message) == forming


def test_forming_is_on_every_wire_strategy_and_reads_its_own_replay() -> None:
    for wire in default_wire_strategies():
        assert wire.forming({}) == Forming(False, None), wire.name
    buffer = LLMStreamBuffer()
    for chunk in openai_chunks(OPENAI_CALL[:1], [0, 0, 0], text=()):
        buffer.add(chunk)
    assert OpenAIStrategy().forming(buffer.as_dict()) == Forming(True, "send_mail")


@pytest.mark.parametrize(
    ("content", "forming"),
    [
        ('Sure <tool_call>{"na', Forming(True, None)),
        ('Sure <tool_call>{"name": "send_mail", "argu', Forming(True, "send_mail")),
        (HERMES + " Done.", Forming(True, "send_mail")),
        ("Just text, <tool_result> is no opener.", Forming(False, None)),
    ],
)
def test_a_text_strategy_forms_mid_block_as_the_detector_reads_it(
    content: str, forming: Forming
) -> None:
    strategy = TEXT_STRATEGIES["tool_call_tag"]()
    assert strategy.forming({"role": "assistant", "content": content}) == forming
