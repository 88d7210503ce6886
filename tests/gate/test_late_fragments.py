"""A fragment after a call's terminal checks refused it is the root cause, reported first.

The checks read arguments that were cut short; the fragment that came after the terminal
is why, so its ``delta_after_terminal`` goes before the call's check finding, once per
call, within the findings limit. Driven through the gate's public calls, read through its
findings (code, slot, message, order).
"""

from __future__ import annotations

from callgate import Limits, ToolSchemas, TurnGate

WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}
LATE = '"city": "Paris, the capital of France, on the Seine"}'


def found(gate: TurnGate) -> list[tuple[str, object, str]]:
    return [(f.code, f.slot, f.message) for f in gate.findings]


def refused_call(gate: TurnGate, key: int) -> None:
    """A call closed on arguments cut short: its check refuses them."""
    gate.identity(key, f"call_{key}", "get_weather")
    gate.fragment(key, '{"town": "Paris"}')
    gate.close(key)


def test_a_late_fragment_is_reported_before_the_check_it_explains() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    refused_call(gate, 0)
    [check] = found(gate)
    assert check[:2] == ("schema_invalid", 0)
    gate.fragment(0, LATE)
    assert found(gate) == [
        ("delta_after_terminal", 0, f"fragment {LATE[:40]!r} after terminal"),
        check,
    ]
    assert len(LATE) > 40  # the message quotes the first 40 characters only
    assert gate.slots[0].state == "blocked" and gate.turn == "blocked"


def test_only_the_first_late_fragment_of_a_call_is_reported() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    refused_call(gate, 0)
    gate.fragment(0, "1")
    gate.fragment(0, "2")
    gate.fragment(0, "3")
    assert [(f.code, f.slot) for f in gate.findings] == [
        ("delta_after_terminal", 0),
        ("schema_invalid", 0),
    ]
    assert gate.findings[0].message == "fragment '1' after terminal"


def test_a_late_fragment_goes_before_its_own_call_not_before_another_calls() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    refused_call(gate, 0)
    refused_call(gate, 1)
    gate.fragment(1, "}")
    assert [(f.code, f.slot) for f in gate.findings] == [
        ("schema_invalid", 0),
        ("delta_after_terminal", 1),
        ("schema_invalid", 1),
    ]


def test_an_empty_late_fragment_reports_nothing() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    refused_call(gate, 0)
    gate.fragment(0, "")
    assert [f.code for f in gate.findings] == ["schema_invalid"]
    gate.fragment(0, "}")
    assert [f.code for f in gate.findings] == ["delta_after_terminal", "schema_invalid"]


def test_a_late_fragment_past_the_findings_limit_is_not_kept() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER), limits=Limits(max_findings=1))
    refused_call(gate, 0)
    gate.fragment(0, "}")
    assert [(f.code, f.slot) for f in gate.findings] == [("schema_invalid", 0)]


def test_a_late_fragment_within_the_findings_limit_is_kept() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER), limits=Limits(max_findings=2))
    refused_call(gate, 0)
    gate.fragment(0, "}")
    assert [f.code for f in gate.findings] == ["delta_after_terminal", "schema_invalid"]


def test_a_fragment_after_a_valid_calls_terminal_blocks_it() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER))
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"city": "Paris"}')
    gate.close(0)
    assert gate.slots[0].state == "validated"
    gate.fragment(0, " ")
    assert found(gate) == [("delta_after_terminal", 0, "fragment ' ' after terminal")]
    assert gate.turn == "blocked"
