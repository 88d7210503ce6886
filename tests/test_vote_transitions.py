"""Every transition of the vote machine: drivers sharing one stream vote on a text block.

An OpenAI stream writes a call into its content; two drivers look at the stream, each
owning some tools. The test steps them one at a time and reads, after each step, what the
user may see and the block's vote state. A claim sent elsewhere shows a driver's call as
text; a decline sent elsewhere hides text nobody owns; a wait sent elsewhere decides a
block before every driver voted.
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


def test_a_block_waits_for_every_driver_and_shows_as_text_once_all_declined() -> None:
    first, second = driver("first", "search"), driver("second", "get_time")
    buffer = first.new_stream_buffer()
    chunks = openai_chunks([], [], text=TEXT)
    buffer.add(chunks[0])
    for each in (first, second):
        each.process_llm_response(buffer)  # both look at the stream from its start
    assert buffer.text() == ""
    buffer.add(chunks[1])
    first.process_llm_response(buffer)
    second.process_llm_response(buffer)
    assert buffer.text() == "Checking. "
    buffer.add(chunks[2])
    first.process_llm_response(buffer)  # first declines; second has not voted yet
    assert buffer.text() == ""
    assert [b.vote for b in buffer.text_queue.blocks] == ["undecided"]
    assert buffer.text_queue.held == len(BLOCK)
    second.process_llm_response(buffer)  # second declines too: nobody owns it
    assert buffer.text() == BLOCK
    assert [b.vote for b in buffer.text_queue.blocks] == ["unowned"]
