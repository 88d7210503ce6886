"""One stream played through each library entry point a user can ask for its verdict.

``check``'s code path, ``replay --json``'s, a bare :class:`~callgate.LLMStreamBuffer` and
``run_turn``: the one-verdict properties (tests/buffer/test_one_verdict.py and the wires'
error agreement) compare what they say.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from callgate import Driver, LLMStreamBuffer, Tool, Turn, run_turn
from callgate.cli.check import check_stream
from callgate.cli.replay import replay


class Played(NamedTuple):
    """One stream as each library entry point answers it."""

    checked: dict[str, Any]
    replayed: dict[str, Any]
    buffer: LLMStreamBuffer
    turn: Turn


def answer(**arguments: Any) -> str:
    """A tool that answers with its arguments, so that what ran can be read back."""
    return json.dumps(arguments, sort_keys=True)


def played_everywhere(chunks: list[dict[str, Any]], tools: dict[str, Any], formats: Any) -> Played:
    """``chunks`` through check, replay, a bare buffer and ``run_turn``, tools ``tools``."""
    checked = check_stream(chunks, tools, text_formats=formats)
    replayed = replay(chunks, tools, text_formats=formats)
    buffer = LLMStreamBuffer(tool_schemas=tools, text_formats=formats or "auto")
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    driver = Driver([Tool(n, s, answer) for n, s in tools.items()], text_formats=formats)
    return Played(checked, replayed, buffer, run_turn(chunks, driver, driver.new_stream_buffer()))
