"""A call the model was writing into its text when the stream was cut is withheld, not shown.

For every text format's sample call, cut at any character, streamed in pieces cut anywhere
on any of the seven wires, and ended by the wire's length reason or by no end at all:
nothing runs; the library's display shows the text before the call and withholds the rest
(the display and what it withheld are the content, nothing lost); and, on the wires the
proxy reads, its client on every client wire receives the library's display and then one
short plain line naming the cut call, never the partial markup.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from callgate import Driver, LLMStreamBuffer, Tool
from callgate.driver.loop import run_turn
from callgate.proxy.engine import ENGINES, Options
from callgate.proxy.notices import LIMIT, call_notice
from callgate.testing import splits
from callgate.testing.text import BEFORE, SAMPLES, TAIL_SAMPLES
from callgate.testing.wires import WIRES, chunks_of, encoder

UPSTREAMS = {"openai": "chat", "anthropic": "messages", "openai-responses": "responses"}
"""The wires the proxy reads, by the testing kit's encoder name."""
MARKUPS = [
    (fmt, markup, calls)
    for table in (SAMPLES, TAIL_SAMPLES)
    for fmt, samples in table.items()
    for markup, calls in samples
]


def _request(client: str, names: list[str]) -> dict[str, Any]:
    """A streamed request on ``client``'s wire declaring a tool of each name."""
    schema = {"type": "object"}
    if client == "messages":
        tools: list[dict[str, Any]] = [{"name": n, "input_schema": schema} for n in names]
        return {"model": "m", "max_tokens": 99, "messages": [], "stream": True, "tools": tools}
    if client == "responses":
        tools = [{"type": "function", "name": n, "parameters": schema} for n in names]
        return {"model": "m", "input": "go", "stream": True, "tools": tools}
    tools = [{"type": "function", "function": {"name": n, "parameters": schema}} for n in names]
    return {"model": "m", "messages": [], "stream": True, "tools": tools}


def _text(client: str, out: list[dict[str, Any]]) -> str:
    """The text a client of ``client``'s wire shows from the proxy's chunks or events."""
    if client == "chat":
        return "".join(c["delta"].get("content") or "" for o in out for c in o.get("choices", []))
    kind = "content_block_delta" if client == "messages" else "response.output_text.delta"
    parts = [o.get("delta") for o in out if o.get("type") == kind]
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in parts)


@st.composite
def cut_streams(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], str, list[str], str]:
    """A sample call cut anywhere, in pieces cut anywhere, on a wire, ended by a cut."""
    fmt, markup, calls = draw(st.sampled_from(MARKUPS))
    at = draw(st.integers(1, len(markup) - 1))
    content = BEFORE + markup[:at]
    wire = draw(st.sampled_from(WIRES))
    enc = encoder(wire)
    chunks = chunks_of(enc.prelude([d for d in draw(splits(content)) if d]))
    ending = draw(st.sampled_from(["length", "none"]))
    if ending == "length":
        reason = enc.other_reason()
        enc.state["reason"] = reason
        chunks += enc.finish([], reason) + enc.epilogue()
    event(f"{wire}, ended by {ending}")
    names = sorted({name for name, _ in calls})
    return content, enc.finalise(chunks), wire, names, fmt


@settings(max_examples=400, deadline=None)
@given(cut_streams(), st.sampled_from(sorted(ENGINES)))
def test_a_call_cut_in_the_text_is_withheld_alike_by_the_library_and_the_proxy(
    drawn: tuple[str, list[dict[str, Any]], str, list[str], str], client: str
) -> None:
    content, chunks, wire, names, fmt = drawn
    tools = [Tool(n, {"type": "object"}, lambda **_: "ran") for n in names]
    driver = Driver(tools, text_formats=[fmt])
    turn = run_turn(chunks, driver, driver.new_stream_buffer())
    assert [r for r in turn.results if not r.refused] == []

    schemas = {n: {"type": "object"} for n in names}
    buffer = LLMStreamBuffer(tool_schemas=schemas, text_formats=[fmt])
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    shown = buffer.text()
    assert shown == turn.text
    assert content.startswith(shown)
    assert buffer.get_content() == content, "the raw text is kept"
    cut = buffer.text_queue.cut
    event(f"withheld: {cut is not None}")
    if cut is not None:
        assert shown + cut.markup == content, "the display and what it withheld are the content"

    if wire not in UPSTREAMS:
        return
    options = Options(on_blocked="notice", text_formats=(fmt,))
    engine = ENGINES[client](_request(client, names), options, upstream=UPSTREAMS[wire])
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += engine.feed(chunk)
    out += engine.finish()
    assert engine.calls == []
    received = _text(client, out)
    assert received == shown + engine.notice()
    if cut is not None:
        line = call_notice([cut.name], "cut")
        assert engine.notice() == "\n\n" + line and len(line) <= LIMIT
        assert cut.markup not in received


def test_a_cut_block_naming_a_tool_the_turn_lacks_is_text_as_it_came() -> None:
    partial = '<tool_call>{"name": "send_email", "arguments": {"to": "a'
    enc = encoder("openai")
    chunks = chunks_of(enc.prelude(["Sure: ", *partial]))
    enc.state["reason"] = "length"
    chunks = enc.finalise(chunks + enc.finish([], "length") + enc.epilogue())
    buffer = LLMStreamBuffer(
        tool_schemas={"get_weather": {"type": "object"}}, text_formats=["tool_call_tag"]
    )
    shown = ""
    for chunk in chunks:
        buffer.add(chunk)
        shown += buffer.text()
    buffer.end()
    shown += buffer.text()
    assert shown == "Sure: " + partial and buffer.text_queue.cut is None
    engine = ENGINES["chat"](
        _request("chat", ["get_weather"]), Options(text_formats=("tool_call_tag",))
    )
    out = [c for chunk in chunks for c in engine.feed(chunk)] + engine.finish()
    assert _text("chat", out) == "Sure: " + partial and engine.notice() == ""
