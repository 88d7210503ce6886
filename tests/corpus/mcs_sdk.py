"""Cases from the MCS python-sdk's own streaming tests, with what callgate gives.

Source: repository ``modelcontextstandard/python-sdk``, commit
``08b9680998284317a0129cf5775fca46e6087cbb``, file
``packages/core/tests/test_native_strategies.py`` (the tests' facts: the chunks they feed,
the driver's one tool ``send_mail``, the calls they expect to run). Each case names its
test. ``runs`` is what the MCS test expects to run; callgate gives it with the driver and
buffer the test builds (``Driver([send_mail])`` over a plain ``LLMStreamBuffer()``) unless
``differs`` says why callgate deliberately does otherwise (DESIGN.md's policies): then
``written`` is what callgate runs as written, and ``config`` the callgate configuration
under which it runs what the MCS test expects.
"""

from __future__ import annotations

from typing import Any, NamedTuple

MCS = (
    "modelcontextstandard/python-sdk",
    "08b9680998284317a0129cf5775fca46e6087cbb",
    "packages/core/tests/test_native_strategies.py",
)
TO = {"to": "a@b.c"}
SENT = ("send_mail", TO)


class Case(NamedTuple):
    """One MCS streaming test: its chunks, what it expects to run, and what callgate does."""

    id: str
    test: str
    chunks: list[dict[str, Any]]
    runs: list[tuple[str, dict[str, Any]]]
    differs: str | None = None
    written: list[tuple[str, dict[str, Any]]] | None = None
    config: dict[str, Any] | None = None
    """``text_formats``/``policy`` for the driver, ``end`` (call ``buffer.end()``)."""
    drivers: tuple[tuple[str, ...], ...] = (("send_mail",),)
    """The tools of each driver the chunks go through (several: a fan-out)."""
    status: str | None = None
    """The status the MCS test expects (None: ``call_executed`` if a call runs).

    MCS asserts it on its last response; callgate's owner reports it on the step that
    decides (the strongest status over the steps is compared).
    """

    @property
    def last_status(self) -> str | None:
        """The status the MCS test expects of the owner (the last driver)."""
        return self.status or ("call_executed" if self.runs else None)


def content(text: str) -> dict[str, Any]:
    """An OpenAI content chunk as the MCS tests write it."""
    return {"choices": [{"delta": {"content": text, "tool_calls": None}}]}


def pieces(text: str, size: int) -> list[dict[str, Any]]:
    """``text`` as content chunks of ``size`` characters (the tests' ``_stream_text``)."""
    return [content(text[i : i + size]) for i in range(0, len(text), size)]


def tool_chunk(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One chunk carrying a whole call and the finish (the tests' ``_oai_tool_chunk``)."""
    call = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}  # fmt: skip
    return {"choices": [{"delta": {"content": None, "tool_calls": [call]},
                         "finish_reason": "tool_calls"}]}  # fmt: skip


def fenced(name: str, arguments: dict[str, Any]) -> str:
    """One MCS-format call in a ```json fence."""
    import json

    return "```json\n" + json.dumps({"tool": name, "arguments": arguments}) + "\n```"


RESPONSES_EVENTS = [
    {"type": "response.output_item.added", "output_index": 0,
     "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "send_mail"}},
    {"type": "response.function_call_arguments.delta", "output_index": 0,
     "delta": '{"to": "a@b.c"}'},
    {"type": "response.completed"},
]  # fmt: skip
ANTHROPIC_EVENTS = [
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "send_mail", "input": {}}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "input_json_delta", "partial_json": '{"to": "a@b.c"}'}},
    {"type": "message_stop"},
]  # fmt: skip
BARE = '{"tool": "send_mail", "arguments": {"to": "a@b.c"}}'
NAMED = '{"name": "send_mail", "arguments": {"to": "a@b.c"}}'
EARLY = (
    "callgate runs a call only on terminal evidence (DESIGN.md, policy turn): this stream "
    "lacks the events the provider always sends before its end"
)
BARE_AT_END = (
    "bare JSON is never stream-detected (DESIGN.md, Text formats): it is read at the "
    "stream's end, against the exact schemas, and only when it is the whole content"
)
NO_END = (
    "; and the stream never ends (no finish_reason): under policy turn a text call waits "
    "for the turn's terminal evidence, as a native one does, so the case runs under policy "
    "call, which runs a text call at its own close (bare JSON's is the stream's end)"
)
TEXT = {"text_formats": ["fenced_json", "bare_json"], "end": True, "policy": "call"}

AT_CLOSE = (
    "callgate runs text calls at the turn's end (policy turn), after its terminal evidence, "
    "which this stream never sends (no finish_reason); MCS at the block's close: callgate's "
    "policy call"
)

CASES = [
    Case("responses-executes", "TestOpenAIResponses::test_executes_via_driver",
         RESPONSES_EVENTS, [SENT], EARLY + " (response.output_item.done)", [],
         {"policy": "parseable"}),
    Case("anthropic-executes", "TestAnthropic::test_executes_via_driver",
         ANTHROPIC_EVENTS, [SENT],
         EARLY + " (content_block_stop, message_delta with stop_reason tool_use)", [],
         {"policy": "parseable"}),
    Case("text-fallback", "TestTextEmbeddedToolCall::test_driver_text_fallback_executes_it",
         [content(BARE[:10]), content(BARE[10:28]), content(BARE[28:])], [SENT],
         BARE_AT_END + NO_END, [], TEXT),
    Case("text-forming", "TestTextEmbeddedToolCall::"
         "test_forming_holds_then_executes_without_leaking",
         pieces(BARE, 12), [SENT], BARE_AT_END + NO_END, [], TEXT),
    Case("text-name-leak", "TestTextEmbeddedToolCall::"
         "test_openai_style_name_arguments_leak_executes",
         [content(NAMED[:12]), content(NAMED[12:30]), content(NAMED[30:])], [SENT],
         BARE_AT_END + NO_END, [], TEXT),
    Case("text-in-prose", "TestTextEmbeddedToolCall::test_text_then_call_then_text",
         [content("I'll send it. "), content('{"tool": "send_mail", '),
          content('"arguments": {"to": "a@b.c"}}'), content(" All done.")], [SENT],
         BARE_AT_END + ": JSON inside prose is prose (an explanation quotes calls)" + NO_END,
         [], {"text_formats": ["fenced_json"], "end": True, "policy": "call",
          "chunks": [content("I'll send it. "), content(fenced("send_mail", TO)),
                     content(" All done.")]}),
    Case("prose-then-leak", "TestTextEmbeddedToolCall::test_leak_wrapped_in_prose_executes",
         [content("Sure, sending now. "), content('{"name": "send_mail", '),
          content('"arguments": {"to": "a@b.c"}}')], [SENT],
         BARE_AT_END + ": JSON after prose is prose" + NO_END, [],
         {"text_formats": ["fenced_json"], "end": True, "policy": "call",
          "chunks": [content("Sure, sending now. "), content(fenced("send_mail", TO))]}),
    Case("native-history", "TestNativeHistoryFormat::test_native_call_uses_tool_role_and_call_id",
         [tool_chunk("call_9", "send_mail", '{"to": "a@b.c"}')], [SENT]),
    Case("parallel", "TestParallelCalls::test_all_execute_with_native_history",
         [{"choices": [{"delta": {"content": None, "tool_calls": [
             {"index": 0, "id": "call_1", "type": "function",
              "function": {"name": "send_mail", "arguments": '{"to": "a@b.c"}'}},
             {"index": 1, "id": "call_2", "type": "function",
              "function": {"name": "send_mail", "arguments": '{"to": "x@y.z"}'}}]},
             "finish_reason": "tool_calls"}]}],
         [SENT, ("send_mail", {"to": "x@y.z"})]),
    Case("pending-until-done", "TestParallelCalls::test_pending_until_the_batch_is_done",
         [content(""), {"choices": [{"delta": {"tool_calls": [
             {"index": 0, "id": "call_1", "type": "function",
              "function": {"name": "send_mail", "arguments": '{"to": "a@b.c"}'}}]}}]}], [],
         status="call_pending"),
    Case("foreign-in-batch", "TestParallelCalls::test_foreign_tool_in_batch_is_ignored",
         [{"choices": [{"delta": {"content": None, "tool_calls": [
             {"index": 0, "id": "call_1", "type": "function",
              "function": {"name": "send_mail", "arguments": "{}"}},
             {"index": 1, "id": "call_2", "type": "function",
              "function": {"name": "nonexistent", "arguments": "{}"}}]},
             "finish_reason": "tool_calls"}]}], [("send_mail", {})]),
    Case("fan-out-native", "TestNativeFanOut::"
         "test_unowned_native_call_survives_for_the_next_driver",
         [tool_chunk("call_9", "send_mail", '{"to": "a@b.c"}')], [SENT],
         drivers=(("log_event",), ("send_mail",))),
    Case("two-unowned", "TestTextMultiCall::test_two_unowned_calls_flow_and_nothing_runs",
         pieces("Hypothetisch:\n" + fenced("findCatsByTags", {"tags": ["Mops"]}) + "\nOder:\n"
                + fenced("findCatsByTags", {"tags": ["tag1", "tag2"]}) + "\nNur hypothetisch.",
                12), [], config={"text_formats": ["fenced_json"]},
         status="call_pending"),  # each fence is held until its name shows it is not ours
    Case("unowned-then-owned",
         "TestTextMultiCall::test_unowned_example_then_owned_real_runs_the_real_one",
         pieces("Example:\n" + fenced("findCatsByTags", {"tags": ["x"]}) + "\nNow for real:\n"
                + fenced("send_mail", TO), 12), [SENT],
         AT_CLOSE, [], {"text_formats": ["fenced_json"], "end": True, "policy": "call"}),
    Case("two-owned", "TestTextMultiCall::test_two_owned_calls_both_execute_in_order",
         pieces("First:\n" + fenced("send_mail", TO) + "\nSecond:\n"
                + fenced("send_mail", {"to": "x@y.z"}), 12),
         [SENT, ("send_mail", {"to": "x@y.z"})],
         AT_CLOSE, [], {"text_formats": ["fenced_json"], "end": True, "policy": "call"}),
    Case("fan-out-text", "TestTextMultiCall::test_deferred_consume_is_fan_out_safe",
         pieces('Do it:\n```json\n{"tool": "send_mail", "arguments": {"to": "a@b.c"}}\n```', 12),
         [SENT], AT_CLOSE, [], {"text_formats": ["fenced_json"], "end": True, "policy": "call"},
         drivers=(("log_event",), ("send_mail",))),
    Case("non-call-blocks", "TestTextMultiCall::"
         "test_non_call_blocks_do_not_anchor_a_later_real_call",
         pieces("Beispiel Katzen:\n```json\n"
                '{"recipient_name": "functions.getCatsByTags", "parameters": {"tags": ["x"]}}'
                "\n```\nBeispiel Hunde:\n```json\n"
                '{"recipient_name": "functions.getDogsByTags", "parameters": {"tags": ["y"]}}'
                "\n```\nEcht:\n" + fenced("send_mail", TO), 12), [SENT],
         AT_CLOSE, [], {"text_formats": ["fenced_json"], "end": True, "policy": "call"}),
]  # fmt: skip
"""Every case, in the order of the MCS test file."""
