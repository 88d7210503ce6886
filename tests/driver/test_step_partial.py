"""The loop's steps carry the turn's calls as they form (``TurnStep.partial``).

Each step's records are the buffer's ``partial_calls()`` after that chunk: a UI draws a
call's arguments growing from the steps alone, and the call still runs only once the
turn's verdict lets it, with the arguments the steps ended with.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from callgate import Driver, Tool, TurnStep, astream_turn, finish_turn, stream_turn

written: list[dict[str, Any]] = []


def write_file(path: str, content: str) -> str:
    """Write a file."""
    written.append({"path": path, "content": content})
    return "ok"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "qwen3-coder",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def native_stream(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps(arguments)
    opening = {"index": 0, "id": "call_1", "function": {"name": "write_file", "arguments": ""}}
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    return [
        chunk({"tool_calls": [opening]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
        chunk({}, "tool_calls"),
    ]


def shown(steps: list[TurnStep]) -> list[dict[str, Any]]:
    return [step.partial[0].arguments for step in steps if step.partial]


def test_each_step_carries_the_native_call_as_it_forms() -> None:
    written.clear()
    arguments = {"path": "a.py", "content": "print('hello')\n" * 4}
    driver = Driver([Tool.from_function(write_file)])
    buffer = driver.new_stream_buffer()
    steps = list(stream_turn(native_stream(arguments), driver, buffer))
    contents = [a.get("content", "") for a in shown(steps)]
    assert len(set(contents)) > 10 and contents == sorted(contents, key=len)
    assert steps[-1].partial[0].arguments == arguments and steps[-1].partial[0].complete
    assert finish_turn(buffer, steps).status == "pass" and written == [arguments]


def test_each_step_carries_a_text_call_before_its_block_closes() -> None:
    written.clear()
    content = (
        "Writing it.<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=content>\n" + "x = 1\n" * 8 + "</parameter>\n</function>\n</tool_call>"
    )
    driver = Driver([Tool.from_function(write_file)], text_formats=["qwen3_coder_xml"])
    chunks = [chunk({"content": content[i : i + 3]}) for i in range(0, len(content), 3)]
    steps = list(stream_turn([*chunks, chunk({}, "stop")], driver, driver.new_stream_buffer()))
    forming = [step.partial[0] for step in steps if step.partial and not step.partial[0].complete]
    assert len({r.arguments.get("content") for r in forming}) > 10
    assert {r.source for r in forming} == {"qwen3_coder_xml"}
    assert "".join(step.text for step in steps) == "Writing it."
    assert written == [{"path": "a.py", "content": "x = 1\n" * 7 + "x = 1"}]


def test_the_async_loop_carries_them_too() -> None:
    written.clear()
    arguments = {"path": "b.py", "content": "y" * 40}
    driver = Driver([Tool.from_function(write_file)])

    async def chunks() -> AsyncIterator[dict[str, Any]]:
        for item in native_stream(arguments):
            yield item

    async def play() -> list[TurnStep]:
        return [s async for s in astream_turn(chunks(), driver, driver.new_stream_buffer())]

    steps = asyncio.run(play())
    assert len({json.dumps(a) for a in shown(steps)}) > 5
    assert steps[-1].partial[0].arguments == arguments
