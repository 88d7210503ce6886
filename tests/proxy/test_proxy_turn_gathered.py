"""A gated turn's history is gathered only when asked, and is then what the eager gathering gives.

The engine takes a turn's verdict and findings at its end; the results and the next
request's history (``Engine.turn``) only when something asks for them (a repair, a caller).
A streamed turn that needs no repair never builds them, and whenever they are built they
equal :func:`~callgate.driver.loop.finish_turn` of the same buffer: on every upstream wire,
with calls accepted, refused, unknown, read from the text, and a stream that broke off.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.driver import history
from callgate.driver.loop import finish_turn
from callgate.proxy import core
from callgate.proxy.engine import Engine, Options
from callgate.proxy.metrics import Metrics
from proxy_cases import WEATHER
from test_proxy_wire_matrix import WIRES, _captures, _qwen, _tools, body


def _request(wire: str, schemas: dict[str, Any]) -> dict[str, Any]:
    asked = [{"role": "user", "content": "go"}]
    given: dict[str, Any] = {"input": "go"} if wire == "responses" else {"messages": asked}
    if wire == "messages":
        given["max_tokens"] = 8192
    return {"model": "m", "stream": True, **given, "tools": _tools(wire, schemas)}


def _played(wire: str, data: bytes, schemas: dict[str, Any], *, cut: bool = False) -> Engine:
    options = Options(on_blocked="notice", text_formats=("tool_call_tag",))
    turn = Engine(_request(wire, schemas), options, client=wire, upstream=wire)
    turn.play_bytes(data[: len(data) // 2] if cut else data)
    if cut:
        turn.interrupted("the upstream stream broke: ReadError")
    turn.close_bytes()
    turn.finish()
    return turn


def _streams(wire: str) -> list[tuple[str, bytes]]:
    streams = [("qwen", _qwen(wire)), *_captures(wire)]
    return [(name, body(wire, stream)) for name, stream in streams]


@pytest.mark.parametrize("wire", WIRES)
def test_a_streamed_turn_that_needs_no_repair_builds_no_history(
    wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    real = history.turn_history

    def counted(*args: Any) -> Any:
        built.append(1)
        return real(*args)

    for module in ("callgate.driver.loop", "callgate.proxy.gate"):
        monkeypatch.setattr(f"{module}.turn_history", counted, raising=False)
    metrics = Metrics()
    for _, data in _streams(wire)[:4]:
        turn = _played(wire, data, dict(WEATHER))
        assert turn.decided
        turn.audit()
        turn.annotation()
        metrics.turn(turn, "streamed")
    assert built == []
    assert turn.turn is not None  # asked: gathered now
    assert built == [1]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("declared", ["all", "none", "other"])
@pytest.mark.parametrize("cut", [False, True])
def test_the_history_gathered_when_asked_is_the_eager_one(
    wire: str, declared: str, cut: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(range(10**6))
    monkeypatch.setattr(core, "fresh_id", lambda prefix="call_": f"{prefix}{next(ids)}")
    for name, data in _streams(wire):
        schemas = {
            "all": {**WEATHER, **_names(wire, data)},
            "none": {},
            "other": {"no_such_tool": {"type": "object"}},
        }[declared]
        turn = _played(wire, data, schemas, cut=cut)
        gathered = turn.turn
        assert gathered == finish_turn(turn.buffer, turn.steps), name
        assert gathered is turn.turn  # gathered once
        assert gathered.status == turn.status, name


def _names(wire: str, data: bytes) -> dict[str, Any]:
    """Every tool a stream calls, declared with any object (its calls are then accepted)."""
    probe = _played(wire, data, {})
    names = {call.name for call in probe.calls} | {r.call.name for r in probe.withheld}
    return {name: {"type": "object"} for name in names if name}
