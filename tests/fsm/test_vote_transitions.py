"""Every transition of the vote machine: a text block is the turn's call block, or text.

An OpenAI stream writes a call into its content; two drivers look at the stream, each
owning some tools. The test steps them one at a time and reads, after each step, what the
user may see and the block's vote state. A claim sent elsewhere shows a call of the turn
as text; a decline sent elsewhere hides text nobody owns.
"""

from __future__ import annotations

from callgate import Driver, Tool
from callgate.audit.trace import Recorder
from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.testing.builders import openai_chunks

BLOCK = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
TEXT = ["Checking. ", BLOCK, " Done."]


def driver(name: str, tool: str) -> Driver:
    return Driver([Tool(tool, {"type": "object"})], name=name, text_formats=DEFAULT_FORMATS)


def test_a_claim_hides_the_block_and_a_decline_by_the_other_driver_does_not_show_it() -> None:
    owner, other = driver("owner", "get_weather"), driver("other", "search")
    recorder = Recorder()
    buffer = owner.new_stream_buffer(recorder=recorder)
    shown = []
    for chunk in openai_chunks([], [], text=TEXT):
        buffer.add(chunk)
        other.process_llm_response(buffer)
        owner.process_llm_response(buffer)
        shown.append(buffer.text())
    buffer.end()
    other.process_llm_response(buffer)
    owner.process_llm_response(buffer)
    shown.append(buffer.text())
    assert "".join(shown) == "Checking.  Done."
    assert [b.vote for b in buffer.text_queue.blocks] == ["owned"]
    steps = [(s.instance, s.source, s.event, s.target) for s in recorder.of("vote")]
    assert steps == [("block 0", "undecided", "claim", "owned")]


def test_a_block_no_call_of_which_is_a_tool_of_the_turn_is_declined_and_shown_at_once() -> None:
    """The vote is the turn's (the buffer's tools), not a driver's: nobody waits for votes."""
    first, second = driver("first", "search"), driver("second", "get_time")
    recorder = Recorder()
    buffer = first.new_stream_buffer(recorder=recorder)
    chunks = openai_chunks([], [], text=TEXT)
    buffer.add(chunks[0])
    buffer.add(chunks[1])
    assert buffer.text() == "Checking. "
    buffer.add(chunks[2])
    first.process_llm_response(buffer)  # whether or not a driver looked: it is text
    assert buffer.text() == BLOCK
    assert [b.vote for b in buffer.text_queue.blocks] == ["unowned"]
    assert buffer.text_queue.held == 0
    steps = [(s.instance, s.source, s.event, s.target) for s in recorder.of("vote")]
    assert steps == [("block 0", "undecided", "decline", "unowned")]
    second.process_llm_response(buffer)
    assert buffer.gate is not None and buffer.text_calls == []
