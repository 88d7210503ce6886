"""A Messages client under ``--stream-args``: a call's input streams as it forms, its block
open until the gate's verdict.

Claude Code runs a ``tool_use`` block once its stop came and its input parses, whatever the
message's ``stop_reason`` says. So the writer sends a streamed block's input less the close
of its value and holds the block's stop (the upstream's own, for a native block). At the
turn's end an accepted call's block gets its close, then its stop; any other block its
stop alone, its input never whole. A block shown stays open across what comes after it:
text after a call the model wrote in its text opens a block of its own.

Each test plays upstream events through :class:`~callgate.proxy.engine.Engine` in process
and reads the events as a client accumulates them (by index).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.proxy.engine import Engine, Options
from callgate.proxy.wires.forming import STRANDED
from callgate.testing.builders import WireText, anthropic_events, openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import WEATHER, openai_tools, text_turn
from test_gateway_corners import REQUESTS, pieces, sent_arguments
from test_gateway_edges import TAG, leaked

STREAM = Options(on_blocked="notice", stream_args=True, text_formats=TAG)
ENDS = ("message_delta", "message_stop")
SCHEMAS = {**WEATHER, "get_time": {"type": "object"}}
"""get_weather needs a city; get_time takes no argument (an empty object passes)."""
TOOLS = {
    "chat": {**REQUESTS["chat"], "tools": openai_tools(SCHEMAS)},
    "messages": {
        **REQUESTS["messages"],
        "tools": [{"name": n, "input_schema": s} for n, s in SCHEMAS.items()],
    },
}


def accumulated(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The client's blocks by index, each started once, fed only while open, stopped once.

    A block's ``input`` is the text of its ``input_json_delta``\\ s (none empty in a
    ``tool_use`` block; ``start`` is its ``content_block``); ``stopped`` says whether its
    stop came. Every block is stopped before the ``message_delta``.
    """
    blocks: dict[int, dict[str, Any]] = {}
    ended = False
    for event in out:
        kind = event["type"]
        if kind == "message_delta":
            assert all(b["stopped"] for b in blocks.values()), blocks
            ended = True
            continue
        if kind not in ("content_block_start", "content_block_delta", "content_block_stop"):
            continue
        assert not ended, event
        index = event["index"]
        if kind == "content_block_start":
            assert index not in blocks and index == len(blocks), event
            start = event["content_block"]
            blocks[index] = {"type": start["type"], "input": "", "text": "", "stopped": False}
            blocks[index].update(name=start.get("name"), start=start)
            continue
        block = blocks[index]
        assert not block["stopped"], event
        if kind == "content_block_stop":
            block["stopped"] = True
        elif event["delta"]["type"] == "input_json_delta":
            assert event["delta"]["partial_json"] or block["type"] != "tool_use", event
            block["input"] += event["delta"]["partial_json"]
        elif event["delta"]["type"] == "text_delta":
            block["text"] += event["delta"]["text"]
    return [blocks[i] for i in sorted(blocks)]


def parsed(text: str) -> list[Any]:
    """``text`` as the Vercel AI SDK reads a call's input: blank is an empty object."""
    if not text.strip():
        return [{}]
    try:
        return [json.loads(text)]
    except ValueError:
        return []


def runnable(blocks: list[dict[str, Any]]) -> list[Any]:
    """The inputs a client that runs every stopped tool_use block whose input parses runs."""
    return [
        value
        for block in blocks
        if block["type"] == "tool_use" and block["stopped"]
        for value in parsed(block["input"])
    ]


def chat_runnable(out: list[dict[str, Any]]) -> list[Any]:
    """The inputs a client that runs every entry whose arguments parse once the stream ends
    runs (the Vercel AI SDK's OpenAI-compatible provider), whatever the finish."""
    texts: dict[int, str] = {}
    for chunk in out:
        for choice in chunk.get("choices") or ():
            for entry in choice["delta"].get("tool_calls") or ():
                arguments = entry.get("function", {}).get("arguments", "")
                texts[entry["index"]] = texts.get(entry["index"], "") + arguments
    return [value for index in sorted(texts) for value in parsed(texts[index])]


def stop_reason(out: list[dict[str, Any]]) -> str:
    return str(next(e for e in out if e["type"] == "message_delta")["delta"]["stop_reason"])


def play_messages(
    events: list[dict[str, Any]], options: Options = STREAM
) -> tuple[Engine, list[dict[str, Any]], list[dict[str, Any]]]:
    """The events before the upstream's message_delta, and those from it on."""
    engine = Engine(TOOLS["messages"], options, client="messages", upstream="messages")
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for event in events:
        (after if after or event["type"] in ENDS else before).extend(engine.feed(event))
    after += engine.finish(clean=True)
    return engine, before, after


def in_turn(*blocks: WireText | WireCall) -> list[dict[str, Any]]:
    """The Messages events of ``blocks``, one after the other."""
    order = [n for n, b in enumerate(blocks) for _ in range(2 + len(b.fragments))]
    return anthropic_events(blocks, order)


def weather(call_id: str, *fragments: str) -> WireCall:
    return WireCall(call_id, "get_weather", fragments)


def test_native_blocks_stream_their_input_less_the_close_and_stop_after_the_verdict() -> None:
    calls = [
        weather("toolu_1", '{"city"', ': "Paris"', "}"),
        weather("toolu_2", '{"ci', 'ty": "Oslo"}'),
    ]
    engine, before, after = play_messages(in_turn(*calls))
    shown = accumulated(before)
    assert [(b["name"], b["input"], b["stopped"]) for b in shown] == [
        ("get_weather", '{"city": "Paris"', False),
        ("get_weather", '{"city": "Oslo"', False),
    ]
    assert [json.loads(c.arguments) for c in engine.calls] == [{"city": "Paris"}, {"city": "Oslo"}]
    blocks = accumulated(before + after)
    assert runnable(blocks) == [{"city": "Paris"}, {"city": "Oslo"}]
    assert stop_reason(after) == "tool_use"
    assert sent_arguments("messages", after) == {0: "}", 1: "}"}  # the closes, at the end


def test_a_refused_native_block_is_stopped_with_its_input_never_whole() -> None:
    twice = weather("toolu_1", '{"city": "Paris", ', '"city": "Oslo"}')
    options = Options(on_blocked="repair", repairs=1, stream_args=True)
    engine, before, after = play_messages(in_turn(twice), options)
    assert engine.calls == [] and engine.repair is None  # shown, so not re-asked
    blocks = accumulated(before + after)
    assert (blocks[0]["type"], blocks[0]["stopped"]) == ("tool_use", True)
    assert blocks[0]["input"] == '{"city": "Paris", "city": "Oslo"'
    assert runnable(blocks) == []
    assert stop_reason(after) == "end_turn"
    assert "A call to get_weather was not run" in blocks[-1]["text"]


def test_a_shown_text_call_set_aside_beside_a_native_one_sends_no_call_of_the_turn() -> None:
    """The gate sets a text call aside for the native call beside it. Both were shown, and
    the anthropic Python SDK reads a block's input from its partial JSON, so the set-aside
    block could still run there: none of the turn's calls goes."""
    text = WireText(tuple(pieces("Sure. " + leaked("Oslo"))))
    native = weather("toolu_1", '{"city": ', '"Paris"}')
    engine, before, after = play_messages(in_turn(text, native))
    shown = accumulated(before)
    assert [(b["type"], b["input"]) for b in shown if b["type"] == "tool_use"] == [
        ("tool_use", '{"city": "Oslo"'),
        ("tool_use", '{"city": "Paris"'),
    ]
    blocks = accumulated(before + after)
    assert runnable(blocks) == []
    assert [b["input"] for b in blocks if b["type"] == "tool_use"] == [
        '{"city": "Oslo"',
        '{"city": "Paris"',
    ]
    assert stop_reason(after) == "end_turn"
    assert blocks[-1]["text"].endswith(STRANDED)
    assert engine.calls == [] and engine.audit()["calls"] == []


def test_a_text_calls_block_stays_open_across_the_text_after_it() -> None:
    engine = Engine(REQUESTS["messages"], STREAM, client="messages", upstream="chat")
    out: list[dict[str, Any]] = []
    chunks = text_turn(pieces("Sure. " + leaked("Paris") + " Then more."))
    for chunk in chunks[:-1]:
        out += engine.feed(chunk)
    shown = accumulated(out)
    assert [(b["type"], b["stopped"]) for b in shown] == [
        ("text", True),
        ("tool_use", False),
        ("text", False),
    ]
    assert shown[1]["input"] == '{"city": "Paris"'
    assert shown[2]["text"].strip() == "Then more."
    end = engine.feed(chunks[-1]) + engine.finish(clean=True)
    blocks = accumulated(out + end)
    assert runnable(blocks) == [{"city": "Paris"}]
    (call,) = engine.calls
    assert call.id.startswith("toolu_")  # the block's id from its start is the call's
    assert blocks[1]["start"] == {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
    assert stop_reason(end) == "tool_use"


@pytest.mark.parametrize(
    "odd",
    [
        {"type": "content_block_delta", "index": 0, "delta": "oops"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": 5},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
    ],
    ids=["not-an-object", "no-text", "text-not-a-string", "text-delta"],
)
def test_an_odd_delta_in_a_streamed_block_sends_nothing_and_withholds_the_call(
    odd: dict[str, Any],
) -> None:
    """A delta of a streamed tool_use block that carries no input text reaches the client
    as nothing; the gate reads the same event and the call is withheld or taken whole."""
    events = in_turn(weather("toolu_1", '{"city": ', '"Paris"}'))
    events.insert(3, odd)  # after the block's first delta
    engine, before, after = play_messages(events)
    blocks = accumulated(before + after)
    assert [b["input"] for b in blocks if b["type"] == "tool_use"] == [
        '{"city": "Paris"' + ("}" if engine.calls else "")
    ]
    assert runnable(blocks) == [json.loads(c.arguments) for c in engine.calls]


def test_a_message_with_no_message_start_still_opens_with_one() -> None:
    """An upstream that sent no message_start: the client's message starts with one, then
    the call's block (no argument shown, so nothing was written before the end)."""
    options = Options(on_blocked="notice")
    events = [
        e for e in in_turn(weather("toolu_1", '{"city": "Paris"}')) if e["type"] != "message_start"
    ]
    _, before, after = play_messages(events, options)
    assert before == []
    kinds = [e["type"] for e in after]
    assert kinds[:3] == ["message_start", "content_block_start", "content_block_delta"]
    assert runnable(accumulated(after)) == [{"city": "Paris"}]


def test_a_start_that_carries_its_input_sends_it_as_the_first_delta_its_close_held() -> None:
    """A call made by Anthropic's code execution comes with its input whole in the block's
    start and no delta: the SDKs would read it whole from the start, whatever the verdict."""
    events = in_turn(weather("toolu_1"))
    events[1]["content_block"]["input"] = {"city": "Zürich"}
    engine, before, after = play_messages(events)
    starts = [e for e in before if e["type"] == "content_block_start"]
    assert [s["content_block"]["input"] for s in starts] == [{}]
    assert [b["input"] for b in accumulated(before)] == ['{"city": "Zürich"']
    assert [json.loads(c.arguments) for c in engine.calls] == [{"city": "Zürich"}]
    assert runnable(accumulated(before + after)) == [{"city": "Zürich"}]


def test_a_withheld_call_with_blank_arguments_ends_with_an_open_brace() -> None:
    """The Vercel AI SDK runs a blank arguments text as an empty object: a withheld native
    call of which nothing but blanks went gets ``{`` (Chat: an empty text is no JSON;
    Messages: a block with no input delta, refused with the call beside it)."""
    empty = WireCall("call_0", "get_time", ("",))
    engine, before, after = played_as("chat", openai_chunks([empty], [0, 0]), STREAM)
    assert engine.calls == []
    assert sent_arguments("chat", before) == {0: ""}
    assert sent_arguments("chat", before + after) == {0: "{"}
    twice = weather("toolu_1", '{"city": "Paris", ', '"city": "Oslo"}')
    engine, before, after = play_messages(in_turn(WireCall("toolu_0", "get_time", ()), twice))
    assert engine.calls == []
    inputs = [b["input"] for b in accumulated(before + after) if b["type"] == "tool_use"]
    assert inputs == ["{", '{"city": "Paris", "city": "Oslo"']


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_a_text_call_spelled_its_own_way_is_finished_on_every_client_wire(client: str) -> None:
    """The model wrote its JSON without spaces: what was sent and held is the same value
    as the call's arguments, so the call is finished, not stranded."""
    compact = '<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>'
    engine = Engine(REQUESTS[client], STREAM, client=client, upstream="chat")
    out: list[dict[str, Any]] = []
    for chunk in text_turn(pieces("Sure. " + compact)):
        out += engine.feed(chunk)
    out += engine.finish(clean=True)
    assert [json.loads(c.arguments) for c in engine.calls] == [{"city": "Paris"}]
    assert engine.withheld == []
    (streamed,) = sent_arguments(client, out).values()
    assert streamed == '{"city":"Paris"}'


# -- every turn of native blocks, cut anywhere ----------------------------------------------

ARGUMENTS = {
    "good": ("get_weather", '{"city": "Pa\\"ris {x}"}'),
    "twice": ("get_weather", '{"city": "Paris", "city": "Oslo"}'),
    "invalid": ("get_weather", '{"town": "Paris"}'),
    "empty": ("get_weather", "{}"),
    "none": ("get_time", ""),
    "blank": ("get_time", " "),
    "nothing": ("get_time", "{}"),
}
"""Each kind of native call: its tool and whole arguments (a city; a key twice, against the
schema, the empty object where a city is needed; get_time with no argument text at all,
a blank one, or ``{}``)."""
ACCEPTED = {"chat": {"good", "nothing"}, "messages": {"good", "none", "nothing"}}
"""The kinds the gate accepts on each wire: Anthropic's empty input is the empty object,
an empty Chat Completions arguments text is no JSON; a blank text is none on either."""
LEAKS = {
    "none": "",
    "good": leaked("Oslo"),
    "invalid": '<tool_call>{"name": "get_weather", "arguments": {"town": "Oslo"}}</tool_call>',
}
"""A text block's call written in the text: none, accepted, against the schema."""


def cut(text: str, draw: st.DrawFn) -> tuple[str, ...]:
    """``text`` in pieces cut anywhere (empty pieces among them; none for an empty text)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return tuple(p for p in pieces if p) if not text else tuple(pieces)


@st.composite
def turns(draw: st.DrawFn) -> tuple[str, list[Any], str, list[str]]:
    """A turn on either wire: text (maybe with a call written in it), then native calls,
    each cut anywhere."""
    client = draw(st.sampled_from(["chat", "messages"]))
    leak = draw(st.sampled_from(sorted(LEAKS)))
    some = st.lists(st.sampled_from(sorted(ARGUMENTS)), max_size=3)
    accepted = st.lists(st.sampled_from(sorted(ACCEPTED[client])), max_size=3)
    kinds = draw(st.one_of(accepted, some))
    text: list[str] = []
    if draw(st.booleans()) or leak != "none" or not kinds:
        text = list(cut("Let me check. " + LEAKS[leak], draw))
    calls = []
    for n, kind in enumerate(kinds):
        name, arguments = ARGUMENTS[kind]
        calls.append(WireCall(f"call_{n}", name, cut(arguments, draw)))
    if client == "chat":
        order = [n for n, call in enumerate(calls) for _ in range(1 + len(call.fragments))]
        return client, openai_chunks(calls, order, text=text), leak, kinds
    blocks = [WireText(tuple(text))] if text else []
    return client, in_turn(*blocks, *calls), leak, kinds


def played_as(
    client: str, events: list[dict[str, Any]], options: Options
) -> tuple[Engine, list[dict[str, Any]], list[dict[str, Any]]]:
    """The turn on ``client``'s own wire: what was sent before its end, and from its end."""
    if client == "messages":
        return play_messages(events, options)
    engine = Engine(TOOLS["chat"], options, client="chat", upstream="chat")
    before = [c for chunk in events[:-1] for c in engine.feed(chunk)]
    return engine, before, engine.feed(events[-1]) + engine.finish(clean=True)


@settings(max_examples=300, deadline=None)
@given(turn=turns())
def test_a_client_runs_exactly_the_calls_the_turn_sends_and_only_after_the_verdict(
    turn: tuple[str, list[Any], str, list[str]],
) -> None:
    """What a client that runs every call whose input parses (a blank input as an empty
    object) runs is what the same turn without ``--stream-args`` sends, or nothing when a
    shown text call was set aside beside native calls; before the verdict no tool_use block
    is stopped and no call shown could run."""
    client, events, leak, kinds = turn
    engine, before, after = played_as(client, events, STREAM)
    plain, _, plain_after = played_as(
        client, events, Options(on_blocked="notice", text_formats=TAG)
    )
    sent = [json.loads(c.arguments) for c in plain.calls]
    stranded = leak != "none" and bool(kinds) and bool(sent)
    if client == "messages":
        shown = accumulated(before)
        assert not any(b["stopped"] for b in shown if b["type"] == "tool_use")
        assert all(not b["input"].strip() for b in shown if parsed(b["input"]))
        ran = runnable(accumulated(before + after))
        assert stop_reason(after) == ("tool_use" if ran else "end_turn")
        assert stop_reason(plain_after) == ("tool_use" if sent else "end_turn")
    else:
        ran = chat_runnable(before + after)
        finish = [c["choices"][0]["finish_reason"] for c in after if c.get("choices")][-1]
        assert finish == ("tool_calls" if ran else "stop")
    assert ran == ([] if stranded else sent)
    assert [json.loads(c.arguments) for c in engine.calls] == ran  # what the records say
    if not kinds:
        assert sent == ([{"city": "Oslo"}] if leak == "good" else [])
    elif not stranded:
        assert (sent == []) is not (set(kinds) <= ACCEPTED[client])


@pytest.mark.parametrize("client", ["chat", "messages"])
@pytest.mark.parametrize("spacer", [(), ("",)], ids=["chars", "chars-and-empty"])
def test_every_kind_of_call_a_character_at_a_time_runs_as_without_stream_args(
    client: str, spacer: tuple[str, ...]
) -> None:
    """The degenerate cuts: each call's arguments one character per piece (with an empty
    piece between each), alone, and all of them in one turn."""
    turns = [[kind] for kind in ARGUMENTS] + [sorted(ARGUMENTS), []]
    for kinds in turns:
        calls = []
        for n, kind in enumerate(kinds):
            name, arguments = ARGUMENTS[kind]
            pieces = tuple(p for ch in arguments for p in (ch, *spacer))
            calls.append(WireCall(f"call_{n}", name, pieces))
        if client == "chat":
            order = [n for n, call in enumerate(calls) for _ in range(1 + len(call.fragments))]
            events = openai_chunks(calls, order, text=["Hi."])
        else:
            events = in_turn(WireText(("Hi.",)), *calls)
        engine, before, after = played_as(client, events, STREAM)
        plain, _, _ = played_as(client, events, Options(on_blocked="notice", text_formats=TAG))
        sent = [json.loads(c.arguments) for c in plain.calls]
        if client == "messages":
            ran = runnable(accumulated(before + after))
        else:
            ran = chat_runnable(before + after)
        assert ran == sent == [json.loads(c.arguments) for c in engine.calls], kinds
        assert (sent == []) is not (set(kinds) <= ACCEPTED[client]) or not kinds, kinds
