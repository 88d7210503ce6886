"""The openai-responses wire event by event: what a user reads off the buffer and the driver.

Each test builds a short Responses stream (or a whole Response) and checks what the user
sees: the assembled stream=false message, the display text, the findings, the verdict and
the calls that run.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Driver, LLMStreamBuffer, Tool
from callgate.strategies import ResponsesStrategy
from callgate.strategies.text.formats import DEFAULT_FORMATS

Event = dict[str, Any]

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS = {"get_weather": WEATHER}
ARGUMENTS = '{"city":"Paris"}'


def created(response_id: str = "resp_1") -> Event:
    return {
        "type": "response.created",
        "response": {"id": response_id, "object": "response", "status": "in_progress"},
    }


def call_item(item_id: str = "fc_1", call_id: str = "call_1", arguments: str = "") -> Event:
    return {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": arguments,
        "call_id": call_id,
        "name": "get_weather",
    }


def added(index: int, item: Event) -> Event:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def done(index: int, item: Event) -> Event:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def _arguments(kind: str, field: str, index: int, text: str, item_id: str) -> Event:
    """A ``function_call_arguments`` event (``delta`` or ``done``) for one item."""
    return {
        "type": f"response.function_call_arguments.{kind}",
        "output_index": index,
        "item_id": item_id,
        field: text,
    }


def delta(index: int, text: str, item_id: str = "fc_1") -> Event:
    return _arguments("delta", "delta", index, text, item_id)


def arguments_done(index: int, text: str, item_id: str = "fc_1") -> Event:
    return _arguments("done", "arguments", index, text, item_id)


def completed(output: list[Event], response_id: str = "resp_1") -> Event:
    response = {"id": response_id, "object": "response", "status": "completed", "output": output}
    return {"type": "response.completed", "response": response}


def one_call(*middle: Event) -> list[Event]:
    """A stream of one get_weather call (Paris) with ``middle`` as its argument events."""
    finished = {**call_item(), "status": "completed", "arguments": ARGUMENTS}
    return [created(), added(0, call_item()), *middle, done(0, finished), completed([finished])]


def fed(events: list[Event]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    for event in events:
        buffer.add(event)
    buffer.end()
    return buffer


def codes(buffer: LLMStreamBuffer) -> list[tuple[str, object]]:
    return [(f.code, f.slot) for f in buffer.findings]


# -- which item an arguments event names -------------------------------------------------------


def test_a_clean_call_passes_with_its_arguments() -> None:
    buffer = fed(one_call(delta(0, '{"city":'), delta(0, '"Paris"}'), arguments_done(0, ARGUMENTS)))
    assert codes(buffer) == []
    assert buffer.verdict == "pass"
    assert [(c.id, c.name, c.arguments) for c in buffer.calls] == [
        ("call_1", "get_weather", {"city": "Paris"})
    ]


@pytest.mark.parametrize(
    "events",
    [
        [delta(0, ARGUMENTS, item_id="fc_other")],
        [delta(0, '{"city":'), delta(0, '"Paris"}', item_id="fc_other")],
        [delta(0, ARGUMENTS), arguments_done(0, ARGUMENTS, item_id="fc_other")],
    ],
    ids=["first-delta", "later-delta", "arguments-done"],
)
def test_an_arguments_event_for_another_item_id_is_a_collision_and_nothing_runs(
    events: list[Event],
) -> None:
    buffer = fed(one_call(*events))
    assert ("identity_collision", None) in codes(buffer) or ("identity_collision", 0) in codes(
        buffer
    ), codes(buffer)
    assert any("fc_other" in f.message for f in buffer.findings)
    assert buffer.verdict == "fail"
    assert buffer.calls == []


def test_an_arguments_delta_without_an_item_id_is_read_as_its_output_index_says() -> None:
    plain = {k: v for k, v in delta(0, ARGUMENTS).items() if k != "item_id"}
    buffer = fed(one_call(plain))
    assert codes(buffer) == []
    assert [c.arguments for c in buffer.calls] == [{"city": "Paris"}]


def test_an_arguments_delta_for_a_message_item_is_refused() -> None:
    message = {"id": "msg_1", "type": "message", "status": "in_progress", "content": []}
    events = [created(), added(0, message), delta(0, ARGUMENTS, item_id="msg_1")]
    buffer = fed(events)
    assert ("malformed_chunk", None) in codes(buffer) or ("malformed_chunk", 0) in codes(buffer)
    assert "'message' item" in " ".join(f.message for f in buffer.findings)
    assert buffer.verdict == "fail"


# -- the message's parts: text, refusals, annotations ------------------------------------------


def message_item() -> Event:
    return {
        "id": "msg_1",
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }


def part_added(part: Event, index: int = 0) -> Event:
    return {
        "type": "response.content_part.added",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": index,
        "part": part,
    }


def text_delta(kind: str, text: str, index: int = 0) -> Event:
    return {
        "type": f"response.{kind}.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": index,
        "delta": text,
    }


def annotation(note: Event, index: int = 0) -> Event:
    return {
        "type": "response.output_text.annotation.added",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": index,
        "annotation_index": 0,
        "annotation": note,
    }


def streamed(events: list[Event]) -> tuple[LLMStreamBuffer, str]:
    """A buffer fed ``events`` (not ended: the message is read mid-stream), and the text shown."""
    buffer = LLMStreamBuffer()
    shown = []
    for event in events:
        buffer.add(event)
        shown.append(buffer.text())
    return buffer, "".join(shown)


def test_refusal_text_stays_in_the_message_and_is_not_shown() -> None:
    buffer, shown = streamed(
        [
            created(),
            added(0, message_item()),
            part_added({"type": "refusal", "refusal": ""}),
            text_delta("refusal", "I can't "),
            text_delta("refusal", "help with that."),
        ]
    )
    assert shown == ""
    [item] = buffer.as_dict()["output"]
    assert item["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]


def test_refusal_text_without_its_part_added_gets_a_refusal_part() -> None:
    buffer, shown = streamed([created(), added(0, message_item()), text_delta("refusal", "No.")])
    assert shown == ""
    assert buffer.as_dict()["output"][0]["content"] == [{"type": "refusal", "refusal": "No."}]


def test_text_and_refusal_parts_are_kept_apart_in_their_order() -> None:
    buffer, shown = streamed(
        [
            created(),
            added(0, message_item()),
            text_delta("output_text", "Partly: ", 0),
            text_delta("refusal", "not that.", 1),
            text_delta("output_text", "the rest.", 0),
        ]
    )
    assert shown == "Partly: the rest."
    assert buffer.as_dict()["output"][0]["content"] == [
        {"type": "output_text", "annotations": [], "text": "Partly: the rest."},
        {"type": "refusal", "refusal": "not that."},
    ]


CITE_A = {"type": "url_citation", "url": "https://a.example", "start_index": 0, "end_index": 4}
CITE_B = {"type": "url_citation", "url": "https://b.example", "start_index": 5, "end_index": 9}
CITE_C = {"type": "file_citation", "file_id": "file_1", "index": 9}


def test_annotations_added_to_a_part_join_the_ones_it_came_with_in_order() -> None:
    buffer, _ = streamed(
        [
            created(),
            added(0, message_item()),
            part_added({"type": "output_text", "annotations": [CITE_A], "text": ""}),
            text_delta("output_text", "Oslo and Lima"),
            annotation(CITE_B),
            annotation(CITE_C),
        ]
    )
    [part] = buffer.as_dict()["output"][0]["content"]
    assert part == {
        "type": "output_text",
        "annotations": [CITE_A, CITE_B, CITE_C],
        "text": "Oslo and Lima",
    }


def test_an_annotation_for_a_part_never_added_changes_nothing() -> None:
    buffer, shown = streamed(
        [
            created(),
            added(0, message_item()),
            text_delta("output_text", "Oslo"),
            annotation(CITE_B, index=3),
        ]
    )
    assert shown == "Oslo"
    assert buffer.as_dict()["output"][0]["content"] == [
        {"type": "output_text", "annotations": [], "text": "Oslo"}
    ]
    assert buffer.findings == []


def test_reading_the_message_twice_does_not_grow_its_annotations() -> None:
    buffer, _ = streamed(
        [
            created(),
            added(0, message_item()),
            part_added({"type": "output_text", "annotations": [CITE_A], "text": ""}),
            annotation(CITE_B),
        ]
    )
    first = buffer.as_dict()["output"][0]["content"][0]["annotations"]
    first.append("changed by the reader")
    assert buffer.as_dict()["output"][0]["content"][0]["annotations"] == [CITE_A, CITE_B]


# -- a whole Response ---------------------------------------------------------------------------


def leaked_response(text: str) -> dict[str, Any]:
    """A stream=false Response whose only output item is a message carrying ``text``."""
    item = {
        **message_item(),
        "status": "completed",
        "content": [{"type": "output_text", "annotations": [], "text": text}],
    }
    return {"id": "resp_9", "object": "response", "status": "completed", "output": [item]}


def weather_driver() -> tuple[Driver, list[dict[str, Any]]]:
    runs: list[dict[str, Any]] = []

    def get_weather(**arguments: Any) -> str:
        runs.append(arguments)
        return "21 C"

    return Driver([Tool("get_weather", WEATHER, get_weather)], text_formats=DEFAULT_FORMATS), runs


LEAK = '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>'


def test_a_whole_response_whose_only_item_leaks_a_text_call_runs_it_once() -> None:
    driver, runs = weather_driver()
    response = driver.process_llm_response(leaked_response("Checking. " + LEAK))
    assert runs == [{"city": "Lima"}]
    assert response.status == "call_executed"
    assert [r.content for r in response.results] == ["21 C"]


def test_a_whole_response_with_the_fall_through_off_runs_nothing() -> None:
    driver, runs = weather_driver()
    driver.set_native_backup_strategy(None)
    response = driver.process_llm_response(leaked_response("Checking. " + LEAK))
    assert runs == []
    assert response.results == ()


def test_a_whole_response_replays_as_the_stream_that_shows_its_text() -> None:
    whole = leaked_response("Paris is sunny.")
    buffer = LLMStreamBuffer()
    shown = []
    for event in ResponsesStrategy().replay(whole):
        buffer.add(event)
        shown.append(buffer.text())
    buffer.end()
    assert "".join(shown) == "Paris is sunny."
    assert buffer.as_dict() == whole
    assert buffer.verdict == "not_applicable"


def test_a_part_added_without_its_text_field_reads_as_empty_text() -> None:
    buffer, _ = streamed(
        [
            created(),
            added(0, message_item()),
            part_added({"type": "output_text", "annotations": []}),
        ]
    )
    assert buffer.as_dict()["output"][0]["content"] == [
        {"type": "output_text", "annotations": [], "text": ""}
    ]


def test_deltas_extend_the_text_a_part_came_with() -> None:
    buffer, shown = streamed(
        [
            created(),
            added(0, message_item()),
            part_added({"type": "output_text", "annotations": [], "text": "Hello, "}),
            text_delta("output_text", "world"),
        ]
    )
    assert shown == "world"
    assert buffer.as_dict()["output"][0]["content"][0]["text"] == "Hello, world"


def test_a_reasoning_summary_in_progress_is_built_from_its_deltas() -> None:
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": []}
    summary = {
        "type": "response.reasoning_summary_text.delta",
        "item_id": "rs_1",
        "output_index": 0,
        "summary_index": 0,
    }
    buffer, shown = streamed(
        [
            created(),
            added(0, reasoning),
            {**summary, "delta": "Think "},
            {**summary, "delta": "first."},
        ]
    )
    assert shown == ""
    assert buffer.as_dict()["output"] == [
        {**reasoning, "summary": [{"type": "summary_text", "text": "Think first."}]}
    ]


# -- errors the provider reports ------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "says"),
    [
        ({"error": {"code": "rate_limit", "message": "Slow down"}}, "rate_limit: Slow down"),
        ({"code": "server_error", "message": "Try again"}, "server_error: Try again"),
        ({"error": {"message": "Slow down"}}, "'Slow down'"),
    ],
    ids=["nested", "flat", "no-code"],
)
def test_an_error_event_refuses_the_turn_and_says_what_the_provider_said(
    error: Event, says: str
) -> None:
    buffer = fed([created(), {"type": "error", "sequence_number": 3, **error}])
    assert buffer.verdict == "fail"
    [problem] = buffer.findings
    assert problem.code == "provider_error"
    assert problem.message == f"the provider reported an error: {says}"


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "response.output_item.added", "output_index": "0", "item": call_item()},
        {"type": "response.output_item.added", "output_index": 0, "item": "function_call"},
        {"type": "response.output_item.done", "output_index": None, "item": call_item()},
    ],
    ids=["index-text", "item-text", "done-index-none"],
)
def test_an_output_item_event_without_its_index_or_item_is_refused(bad: Event) -> None:
    buffer = fed([created(), bad])
    assert buffer.verdict == "fail"
    [problem] = buffer.findings
    assert problem.code == "malformed_chunk"
    which = bad["type"].rsplit(".", 1)[1]
    assert problem.message.startswith(f"output_item.{which} needs an output_index and an item")


def test_a_repeated_fault_is_refused_once_per_output_index_it_names() -> None:
    bad = {"type": "response.output_item.added", "item": "x"}
    buffer = fed(
        [
            created(),
            {**bad, "output_index": "a"},
            {**bad, "output_index": "a"},
            {**bad, "output_index": "b"},
        ]
    )
    assert [f.code for f in buffer.findings] == ["malformed_chunk", "malformed_chunk"]


# -- reading a whole Response ---------------------------------------------------------------


def test_the_text_of_a_whole_response_is_its_output_text_parts_joined() -> None:
    whole = {
        "object": "response",
        "output": [
            {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "hmm"}]},
            {
                "type": "message",
                "content": [
                    {"type": "output_text", "text": "One, "},
                    {"type": "refusal", "text": "never shown"},
                    "not a part",
                    {"type": "output_text", "text": "two."},
                ],
            },
            {"type": "function_call", "content": [{"type": "output_text", "text": "no"}]},
        ],
    }
    assert ResponsesStrategy().content_text(whole) == "One, two."


def test_function_calls_of_a_whole_response_that_cannot_run_say_why() -> None:
    whole = {
        "object": "response",
        "output": [
            {"type": "message", "content": []},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": ARGUMENTS,
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "get_weather",
                "arguments": {"a": 1},
            },
            {"type": "function_call", "call_id": "c3", "name": "", "arguments": "{}"},
            {"type": "function_call", "call_id": "c4", "name": "get_weather", "arguments": "[1]"},
            {"type": "function_call", "call_id": "c5", "name": 7, "arguments": "{}"},
            {"type": "function_call", "call_id": "c6", "name": "get_weather"},
        ],
    }
    strategy = ResponsesStrategy()
    assert [(c.id, c.name, c.arguments, c.slot) for c in strategy.extract(whole)] == [
        ("c1", "get_weather", {"city": "Paris"}, 1)
    ]
    unreadable = strategy.unreadable(whole)
    assert [(c.id, c.name, c.arguments, p.code, p.slot) for c, p in unreadable] == [
        ("c2", "get_weather", {}, "malformed_chunk", 2),
        ("c3", "(no name)", {}, "missing_name", 3),
        ("c4", "get_weather", {}, "non_object_arguments", 4),
        ("c5", "(no name)", {}, "missing_name", 5),
        ("c6", "get_weather", {}, "malformed_json", 6),
    ]
    assert unreadable[-1][1].message.startswith("arguments text is empty")
    assert all(p.message for _, p in unreadable)
    assert unreadable[0][1].message.startswith("function.arguments is an object, not a JSON string")
    assert unreadable[1][1].message == "the function call has no name"


def test_every_finding_on_a_whole_messages_call_names_its_position_on_every_json_wire() -> None:
    from callgate.strategies import CohereStrategy, OpenAIStrategy

    calls = [
        {"id": "c0", "type": "function", "function": {"name": "f", "arguments": "[1]"}},
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": '}},
    ]
    openai = {"role": "assistant", "content": None, "tool_calls": calls}
    cohere = {"message": {"role": "assistant", "tool_calls": calls}}
    for strategy, message in ((OpenAIStrategy(), openai), (CohereStrategy(), cohere)):
        found = [(p.code, p.slot) for _, p in strategy.unreadable(message)]
        assert found == [("non_object_arguments", 0), ("malformed_json", 1)], strategy.name


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (
            {**arguments_done(0, ARGUMENTS), "output_index": "0"},
            "function_call_arguments.done has output_index '0'",
        ),
        (
            {**delta(0, ARGUMENTS), "output_index": None},
            "function_call_arguments.delta has output_index None",
        ),
        (
            {**part_added({"type": "output_text"}), "content_index": "0"},
            "response.content_part.added needs an integer content_index and a part",
        ),
        (
            {**part_added({"type": "output_text"}), "part": "text"},
            "response.content_part.added needs an integer content_index and a part",
        ),
    ],
    ids=["done-index-text", "delta-index-none", "part-index-text", "part-not-object"],
)
def test_an_event_that_names_no_place_is_refused_and_says_what_it_named(
    bad: Event, says: str
) -> None:
    buffer = fed([created(), added(0, message_item()), bad])
    assert buffer.verdict == "fail"
    assert [(f.code, f.message) for f in buffer.findings] == [("malformed_chunk", says)]


def test_faults_at_two_unreadable_output_indexes_are_refused_once_each() -> None:
    bad = [{**delta(0, ARGUMENTS), "output_index": index} for index in ("a", "a", "b")]
    buffer = fed([created(), added(0, call_item()), *bad])
    assert [f.message for f in buffer.findings if f.code == "malformed_chunk"] == [
        "function_call_arguments.delta has output_index 'a'",
        "function_call_arguments.delta has output_index 'b'",
    ]


FINISHED = {**call_item(), "status": "completed", "arguments": ARGUMENTS}


def streamed_then_completed(listed: list[Event]) -> LLMStreamBuffer:
    """One streamed call, then a ``response.completed`` whose output is ``listed``."""
    events = one_call(delta(0, ARGUMENTS))
    return fed([*events[:-1], completed(listed)])


def test_a_completed_response_may_name_a_streamed_call_by_its_call_id_alone() -> None:
    without_id = {k: v for k, v in FINISHED.items() if k != "id"}
    buffer = streamed_then_completed([without_id])
    assert buffer.findings == [] and buffer.verdict == "pass"


def test_a_completed_response_listing_a_call_that_never_streamed_is_refused() -> None:
    stranger = {**FINISHED, "id": "fc_9", "call_id": "call_zzz", "name": "get_time"}
    buffer = streamed_then_completed([FINISHED, stranger])
    assert buffer.verdict == "fail"
    [problem] = buffer.findings
    assert problem.code == "orphan_event"
    assert "'call_zzz'" in problem.message and "'get_time'" in problem.message
    changed = {**FINISHED, "arguments": '{"city":"Rome"}'}
    both = streamed_then_completed([stranger, changed])
    assert [f.code for f in both.findings] == ["orphan_event", "args_mismatch"], (
        "a call listed after an orphan is still checked"
    )
    other = {**stranger, "id": "fc_8", "call_id": "call_yyy"}
    two = streamed_then_completed([FINISHED, stranger, other, stranger])
    assert [f.message.split("'")[1] for f in two.findings] == ["call_zzz", "call_yyy"]


def test_a_completed_response_that_renames_a_streamed_call_is_no_orphan_but_a_mismatch() -> None:
    renamed = {**FINISHED, "call_id": "call_other"}
    buffer = streamed_then_completed([renamed])
    assert buffer.verdict == "fail"
    assert buffer.findings and all(f.code != "orphan_event" for f in buffer.findings)


def test_a_second_ending_is_a_duplicate_terminal() -> None:
    events = one_call(delta(0, ARGUMENTS))
    buffer = LLMStreamBuffer(tool_schemas=TOOLS)
    for event in [*events, events[-1]]:
        buffer.add(event)
    assert [(f.code, f.message) for f in buffer.findings] == [
        ("duplicate_terminal", "response.completed after response.completed")
    ]


def test_an_item_that_changes_its_type_when_done_is_refused() -> None:
    buffer = fed([created(), added(0, message_item()), done(0, FINISHED)])
    assert ("malformed_chunk", "output item 0 changed its type when done") in [
        (f.code, f.message) for f in buffer.findings
    ]


def test_an_incomplete_whole_response_runs_none_of_its_calls() -> None:
    driver, runs = weather_driver()
    whole = {"id": "resp_7", "object": "response", "status": "incomplete", "output": [FINISHED]}
    response = driver.process_llm_response(whole)
    assert runs == []
    assert response.results and all(r.refused for r in response.results)
    assert "wrong_terminal_reason" in response.results[0].content


def test_a_whole_response_with_reasoning_and_hosted_items_replays_as_it_was() -> None:
    whole = leaked_response("Paris is sunny.")
    whole["output"] = [
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]},
        {"id": "ws_1", "type": "web_search_call", "status": "completed"},
        *whole["output"],
    ]
    buffer = LLMStreamBuffer()
    for event in ResponsesStrategy().replay(whole):
        buffer.add(event)
    buffer.end()
    assert buffer.as_dict() == whole
    assert buffer.findings == []


# -- each fault an event can carry, at two output indexes: what the user is told -------------


def _message(item_id: str) -> Event:
    return {**message_item(), "id": item_id}


def _call(n: int, **fields: Any) -> Event:
    return {**call_item(f"fc_{n}", f"call_{n}"), **fields}


def _without_arguments(n: int) -> Event:
    return {k: v for k, v in _call(n).items() if k != "arguments"}


def _text_at(index: int) -> Event:
    return {**text_delta("output_text", "hi"), "output_index": index}


def _part_at(index: int, **fields: Any) -> Event:
    return {**part_added({"type": "output_text"}), "output_index": index, **fields}


UNFINISHED = [("missing_terminal", "the stream ended before this call's terminal")] * 2

FAULTS: dict[str, tuple[list[Event], list[tuple[str, str]]]] = {
    "added-twice": (
        [added(0, _message("m0")), added(1, _message("m1"))] * 2,
        [("malformed_chunk", f"output item {n} was added twice") for n in (0, 1)],
    ),
    "arguments-not-text": (
        [added(0, _call(0, arguments=5)), added(1, _call(1, arguments=5))],
        [("malformed_chunk", f"function call {n}'s arguments are not a string") for n in (0, 1)]
        + UNFINISHED,
    ),
    "item-id-taken": (
        [added(n, _message("m0")) for n in (0, 1, 2)],
        [
            ("identity_collision", f"item id 'm0' of output item {n} is already output item 0's")
            for n in (1, 2)
        ],
    ),
    "custom-tool-call": (
        [added(n, {"type": "custom_tool_call", "id": f"ct_{n}", "name": f"t{n}"}) for n in (0, 1)],
        [
            (
                "malformed_chunk",
                f"output item {n} is a custom_tool_call ('t{n}'): its free-text input cannot be "
                "checked, so callgate does not pass it",
            )
            for n in (0, 1)
        ],
    ),
    "delta-not-text": (
        [added(0, _call(0)), added(1, _call(1))]
        + [{**delta(n, "", f"fc_{n}"), "delta": 5} for n in (0, 1)],
        [("malformed_chunk", f"an arguments delta for output item {n} is not text") for n in (0, 1)]
        + UNFINISHED,
    ),
    "done-never-added": (
        [arguments_done(n, ARGUMENTS, f"fc_{n}") for n in (0, 1)],
        [("orphan_event", f"arguments done for output item {n}, never added") for n in (0, 1)],
    ),
    "done-not-text": (
        [added(0, _call(0)), added(1, _call(1))]
        + [{**arguments_done(n, "", f"fc_{n}"), "arguments": 5} for n in (0, 1)],
        [("malformed_chunk", f"function call {n}'s done arguments are not text") for n in (0, 1)]
        + UNFINISHED,
    ),
    "done-without-arguments": (
        [added(0, _call(0)), added(1, _call(1)), *(done(n, _without_arguments(n)) for n in (0, 1))],
        [
            finding
            for n in (0, 1)
            for finding in (
                ("malformed_chunk", f"function call {n} is done without its arguments"),
                (
                    "malformed_json",
                    "arguments text is empty: expected a JSON value at line 1 column 1 (char 0)",
                ),
            )
        ],
    ),
    "changed-type": (
        [added(0, _message("m0")), added(1, _message("m1")), done(0, _call(0)), done(1, _call(1))],
        [("malformed_chunk", f"output item {n} changed its type when done") for n in (0, 1)],
    ),
    "part-never-added": (
        [_part_at(0), _part_at(1)],
        [
            ("orphan_event", f"response.content_part.added for output item {n}, never added")
            for n in (0, 1)
        ],
    ),
    "part-without-its-index": (
        [added(0, _message("m0")), added(1, _message("m1"))]
        + [_part_at(n, content_index="0") for n in (0, 1)],
        [
            (
                "malformed_chunk",
                "response.content_part.added needs an integer content_index and a part",
            )
        ]
        * 2,
    ),
    "text-never-added": (
        [_text_at(0), _text_at(1)],
        [
            ("orphan_event", f"response.output_text.delta for output item {n}, never added")
            for n in (0, 1)
        ],
    ),
    "text-for-a-call": (
        [added(0, _call(0)), added(1, _call(1)), _text_at(0), _text_at(1)],
        [
            (
                "malformed_chunk",
                f"response.output_text.delta for output item {n} needs a text part and text",
            )
            for n in (0, 1)
        ]
        + UNFINISHED,
    ),
    "no-response-object": (
        [{"type": "response.in_progress"}],
        [("malformed_chunk", "response.in_progress carries no response object")],
    ),
    "response-id-changed": (
        [{"type": "response.in_progress", "response": {"id": "resp_2"}}],
        [("identity_collision", "the response id changed from 'resp_1' to 'resp_2'")],
    ),
    "no-type": (
        [{"delta": "x"}],
        [("malformed_chunk", "an event without a type: {'delta': 'x'}")],
    ),
    "custom-input-never-added": (
        [{"type": "response.custom_tool_call_input.delta", "output_index": 3, "delta": "x"}],
        [("orphan_event", "custom tool input for output item 3, never added")],
    ),
    "failed-with-a-text-error": (
        [{"type": "response.failed", "response": {"error": "boom"}}],
        [("provider_error", "the response failed: 'boom'")],
    ),
    "incomplete-without-a-reason": (
        [
            added(0, _call(0)),
            delta(0, ARGUMENTS, "fc_0"),
            done(0, _call(0, arguments=ARGUMENTS)),
            {"type": "response.incomplete", "response": {"id": "resp_1"}},
        ],
        [
            (
                "wrong_terminal_reason",
                "the turn ended with reason 'incomplete', not a tool-call reason",
            )
        ],
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_fails_the_turn_and_is_told_once_per_output_index(fault: str) -> None:
    events, told = FAULTS[fault]
    buffer = fed([created(), *events])
    assert buffer.verdict == "fail"
    assert [(f.code, f.message) for f in buffer.findings] == told
    assert buffer.text() == "", "a refused event shows no text"


# -- the next request's input items ---------------------------------------------------------


def history_of(events: list[Event]) -> list[Event]:
    """The input items a turn of ``events`` gives the next request, run by a weather driver."""
    from callgate import run_turn

    driver = Driver([Tool("get_weather", WEATHER, lambda city: f"sun in {city}")])
    return list(run_turn(events, driver, driver.new_stream_buffer()).history)


def one_call_of(arguments: str, **fields: Any) -> list[Event]:
    item = {**call_item(), "status": "completed", "arguments": arguments, **fields}
    opened = {**call_item(), **fields}
    return [created(), added(0, opened), delta(0, arguments), done(0, item), completed([item])]


def test_a_turns_history_is_its_output_items_then_an_output_per_call() -> None:
    finished = {**call_item(), "status": "completed", "arguments": ARGUMENTS}
    events = [
        created(),
        added(0, message_item()),
        text_delta("output_text", "Hi"),
        added(1, call_item()),
        delta(1, ARGUMENTS),
        done(1, finished),
        completed([finished]),
    ]
    assert history_of(events) == [
        {**message_item(), "content": [{"type": "output_text", "annotations": [], "text": "Hi"}]},
        finished,
        {"type": "function_call_output", "call_id": "call_1", "output": "sun in Paris"},
    ]


def test_a_call_whose_arguments_do_not_parse_goes_back_with_an_empty_object() -> None:
    [item, output] = history_of(one_call_of('{"city": '))
    assert (item["call_id"], item["name"], item["arguments"]) == ("call_1", "get_weather", "{}")
    assert output["call_id"] == "call_1" and "(malformed_json)" in output["output"]
    [item, _] = history_of(one_call_of('{"city": 5}'))
    assert item["arguments"] == '{"city": 5}', "arguments that parse go back as they came"


def test_a_call_without_a_call_id_goes_back_under_a_stand_in_in_item_and_output() -> None:
    [item, output] = history_of(one_call_of(ARGUMENTS, call_id=""))
    assert item["call_id"] == output["call_id"] == "callgate_0"
    assert item["name"] == "get_weather"


# -- reading a whole Response ----------------------------------------------------------------


WHOLE: dict[str, Any] = {
    "id": "resp_9",
    "object": "response",
    "status": "completed",
    "output": [
        {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather"}
        | {"arguments": '{"city":"Oslo"}'},
        {"id": "msg_1", "type": "message", "role": "assistant"}
        | {
            "content": [{"type": "output_text", "text": "Hi"}, {"type": "refusal", "refusal": "no"}]
        },
        {"id": "fc_2", "type": "function_call", "call_id": "call_2", "name": "get_weather"}
        | {"arguments": {"city": "x"}},
    ],
}


def test_a_whole_response_replays_as_its_events_in_order() -> None:
    call, text, odd = WHOLE["output"]
    envelope = {"id": "resp_9", "object": "response", "status": "completed", "output": []}
    assert ResponsesStrategy().replay(WHOLE) == [
        {"type": "response.created", "response": envelope},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**call, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"city":"Oslo"}',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": call},
        {"type": "response.output_item.added", "output_index": 1, "item": {**text, "content": []}},
        {
            "type": "response.output_text.delta",
            "output_index": 1,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": "Hi",
        },
        {"type": "response.output_item.done", "output_index": 1, "item": text},
        {"type": "response.output_item.added", "output_index": 2, "item": odd},
        {"type": "response.output_item.done", "output_index": 2, "item": odd},
        {"type": "response.completed", "response": WHOLE},
    ]


@pytest.mark.parametrize(
    ("status", "ending"),
    [
        ("incomplete", "response.incomplete"),
        ("failed", "response.failed"),
        ("completed", "response.completed"),
        (None, "response.completed"),
    ],
)
def test_a_whole_response_ends_as_its_status_says(status: str | None, ending: str) -> None:
    assert ResponsesStrategy().replay({**WHOLE, "status": status})[-1]["type"] == ending


def test_a_whole_response_is_forming_once_it_holds_a_function_call_named_by_the_last() -> None:
    strategy = ResponsesStrategy()
    for message, coming, name in (
        (WHOLE, True, "get_weather"),
        ({"output": [{"type": "message"}]}, False, None),
        ({"output": [{"type": "function_call"}]}, True, None),
    ):
        forming = strategy.forming(message)
        assert (forming.coming, forming.name) == (coming, name)


def test_the_responses_wire_lists_a_tool_with_its_function_fields_at_the_top() -> None:
    driver = Driver([Tool("get_weather", WEATHER, lambda city: city, description="Weather.")])
    assert driver.tool_specs("openai-responses") == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather.",
            "parameters": WEATHER,
        }
    ]


def test_only_numbered_error_events_and_response_events_are_this_wires() -> None:
    strategy = ResponsesStrategy()
    assert strategy.recognizes({"type": "error", "sequence_number": 4, "message": "x"})
    assert not strategy.recognizes({"type": "error", "error": {"type": "overloaded_error"}})
    assert not strategy.recognizes({"type": "message_start", "sequence_number": 1})


def test_a_stream_without_its_created_event_still_assembles_a_response() -> None:
    finished = {**call_item(), "status": "completed", "arguments": ARGUMENTS}
    buffer = fed([added(0, call_item()), delta(0, ARGUMENTS), done(0, finished)])
    message = buffer.as_dict()
    assert (message["object"], message["output"]) == ("response", [finished])


def test_an_output_index_that_is_a_list_is_refused_once_not_a_crash() -> None:
    bad = {"type": "response.output_item.added", "output_index": [0], "item": "x"}
    buffer = fed([created(), bad, bad])
    assert [f.code for f in buffer.findings] == ["malformed_chunk"]


@pytest.mark.parametrize(
    ("listed", "told"),
    [
        ({"call_id": "call_other"}, "slot 0 has id 'call_1', then 'call_other'"),
        ({"name": "get_time"}, "slot 0 has name 'get_weather', then 'get_time'"),
    ],
    ids=["call-id", "name"],
)
def test_a_completed_response_that_changes_a_streamed_calls_identity_says_which(
    listed: Event, told: str
) -> None:
    buffer = streamed_then_completed([{**FINISHED, **listed}])
    assert [(f.code, f.message, f.slot) for f in buffer.findings] == [
        ("identity_collision", told, 0)
    ]


def test_a_completed_response_is_checked_past_its_message_items() -> None:
    stranger = {**FINISHED, "id": "fc_9", "call_id": "call_9"}
    buffer = streamed_then_completed([message_item(), stranger])
    assert [f.message for f in buffer.findings] == [
        "the completed response lists function call 'call_9' ('get_weather') that never streamed"
    ]


def test_a_completed_listing_whose_item_id_is_not_text_is_matched_by_its_call_id() -> None:
    buffer = streamed_then_completed([{**FINISHED, "id": [1]}])
    assert (buffer.verdict, buffer.findings) == ("pass", [])
