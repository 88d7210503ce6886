"""The releasing round does each thing once: counted over whole turns, not timed.

Each native call's schema is checked once (by the gate, at its terminal; the driver
trusts a buffer built on its own schemas), the slots are sorted once per new slot, and
one driver's response is used as it is, never merged. The blocked calls of a turn are
answered from one pass over its findings: each quotes its own, or the turn's cause.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import callgate.driver.loop
import callgate.gate._release
from callgate import Driver, Tool, run_turn
from callgate.driver.responses import DriverResponse
from callgate.gate.schema import ToolSchemas

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def native(calls: int, bad: int | None = None) -> list[dict[str, Any]]:
    """``calls`` native calls of ``lookup``, each opened, then its arguments in pieces.

    The call in slot ``bad`` gives a number where the schema wants a string.
    """
    out = [chunk({"role": "assistant", "content": ""})]
    for i in range(calls):
        text = json.dumps({"q": 1 if i == bad else "paris"})
        opening = {"index": i, "id": f"call_{i}", "type": "function",
                   "function": {"name": "lookup", "arguments": ""}}  # fmt: skip
        out.append(chunk({"tool_calls": [opening]}))
        for n in range(0, len(text), 5):
            piece = {"index": i, "function": {"arguments": text[n : n + 5]}}
            out.append(chunk({"tool_calls": [piece]}))
    return [*out, chunk({}, "tool_calls")]


def driver() -> Driver:
    return Driver([Tool("lookup", SCHEMA, lambda q: f"sunny in {q}")])


def test_each_native_call_is_checked_against_its_schema_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[object] = []
    check = ToolSchemas.check

    def counted(self: ToolSchemas, name: str, arguments: Any, slot: Any = None) -> Any:
        checked.append(slot)
        return check(self, name, arguments, slot)

    monkeypatch.setattr(ToolSchemas, "check", counted)
    d = driver()
    turn = run_turn(native(3), d, d.new_stream_buffer())
    assert turn.status == "pass"
    assert [r.content for r in turn.results] == ["sunny in paris"] * 3
    assert sorted(checked, key=str) == [0, 1, 2]


def test_the_slots_are_sorted_once_per_new_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    sorts: list[int] = []

    def counted(items: Any, **options: Any) -> list[Any]:
        ordered = sorted(items, **options)
        sorts.append(len(ordered))
        return ordered

    monkeypatch.setattr(callgate.gate._release, "sorted", counted, raising=False)
    d = driver()
    turn = run_turn(native(4), d, d.new_stream_buffer())
    assert [r.call.slot for r in turn.results] == [0, 1, 2, 3]
    assert len(sorts) == len(set(sorts))  # never the same slots twice
    assert max(sorts) == 4


def test_one_drivers_response_is_not_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    merged: list[int] = []
    merge = callgate.driver.loop.merge

    def counted(responses: Any, strategy: Any) -> DriverResponse:
        merged.append(len(responses))
        return merge(responses, strategy)

    monkeypatch.setattr(callgate.driver.loop, "merge", counted)
    d = driver()
    one = run_turn(native(2), d, d.new_stream_buffer())
    assert merged == []
    weather = Driver([Tool("lookup", SCHEMA, lambda q: f"sunny in {q}")])
    other = Driver([Tool("other", SCHEMA, lambda q: "unused")])
    both = run_turn(native(2), [weather, other], weather.new_stream_buffer())
    assert merged and set(merged) == {2}
    assert [r.content for r in both.results] == [r.content for r in one.results]
    assert both.status == one.status == "pass"


def test_a_blocked_turn_answers_each_call_with_its_own_finding_or_the_cause() -> None:
    d = driver()
    turn = run_turn(native(3, bad=1), d, d.new_stream_buffer())
    assert turn.status == "fail"
    assert [r.call.slot for r in turn.results] == [0, 1, 2]
    assert all(r.refused for r in turn.results)
    assert [(f.slot, f.code) for f in turn.findings] == [(1, "schema_invalid")]
    own, *siblings = (str(turn.results[n].content) for n in (1, 0, 2))
    assert "1 is not of type 'string'" in own
    assert "blocked with its turn" not in own
    for text in siblings:
        assert "blocked with its turn: the call in slot 1" in text
