"""A driver's round does not walk every call the turn has read: counted, not timed.

Under the default policy the calls read from a turn's text wait for its end. A round that
looked at each of them made a long answer with many text calls quadratic: every block
found, opened or closed is a round. The tests count the calls a driver is asked about
over a whole turn at two sizes; the work is linear in the number of calls.
``bench/bench_driver.py`` shows the times.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate import Driver, Tool, run_turn

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
CALL = '<tool_call>{"name": "lookup", "arguments": {"q": "paris"}}</tool_call>'


class Counting(Driver):
    """A driver that counts how often it is asked whether it owns a call."""

    asked = 0

    def owns(self, name: str | None) -> bool:
        Counting.asked += 1
        return super().owns(name)


def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": text} if text else {}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def stream(calls: int) -> list[dict[str, Any]]:
    """Prose and ``calls`` text calls, each call's markup in 4-character deltas."""
    out = [chunk("")]
    for _ in range(calls):
        out += [chunk("some prose "), *(chunk(CALL[i : i + 4]) for i in range(0, len(CALL), 4))]
    return [*out, chunk("the end"), chunk("", "stop")]


def asked(calls: int, policy: str) -> int:
    driver = Counting(
        [Tool("lookup", SCHEMA, lambda q: "ok")], text_formats=("tool_call_tag",), policy=policy
    )
    Counting.asked = 0
    turn = run_turn(stream(calls), driver, driver.new_stream_buffer())
    assert turn.status == "pass"
    assert len(turn.results) == calls
    assert all(r.content == "ok" for r in turn.results)
    return Counting.asked


@pytest.mark.parametrize("policy", ["turn", "call"])
def test_a_round_asks_about_a_bounded_number_of_calls(policy: str) -> None:
    small, large = asked(10, policy), asked(40, policy)
    assert large <= 5 * small, (small, large)
