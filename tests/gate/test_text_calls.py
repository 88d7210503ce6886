"""Calls read from the turn's text, as the gate takes them in, decides and releases them.

A text call enters the gate whole (``TurnGate.text_call``): it carries its block's place,
its format, its id and name and the arguments as written. These tests read what a user
reads: the gate's calls, states, findings and what each release policy hands out, and
the same turns played through ``replay``.
"""

from __future__ import annotations

from typing import Any

from callgate import Limits, ToolSchemas, TurnGate
from callgate.cli.replay import replay
from callgate.fsm.release import policy
from callgate.gate.turn import NativeRef, TextRef, call_order
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall

WEATHER = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}
PARIS = {"city": "Paris"}
ZURICH = {"town": "Zürich"}
TAG = "tool_call_tag"


def found(gate: TurnGate) -> list[tuple[str, object, str]]:
    return [(f.code, f.slot, f.message) for f in gate.findings]


def outcomes(gate: TurnGate, name: str) -> dict[object, str]:
    return {slot.key: outcome for slot, outcome in gate.releases(policy(name))}


def weather_gate(**options: Any) -> TurnGate:
    return TurnGate(schemas=ToolSchemas(WEATHER), **options)


def native_call(gate: TurnGate, key: int = 0) -> None:
    gate.identity(key, f"call_{key}", "get_weather")
    gate.fragment(key, '{"city": "Paris"}')


# What a text call carries into the gate.


def test_a_text_call_is_a_call_of_the_turn_with_its_place_format_and_arguments() -> None:
    gate = weather_gate()
    ref = TextRef(2, 1)
    slot = gate.text_call(ref, TAG, "call_9", "get_weather", PARIS)
    assert gate.evidence
    assert gate.calls() == [slot] and gate.text_slots == {ref: slot}
    assert (slot.ref, slot.key, slot.ref.block, slot.ref.n) == (ref, "text-2.1", 2, 1)
    assert slot.source == TAG
    assert (slot.id, slot.name, slot.state) == ("call_9", "get_weather", "validated")
    assert slot.arguments == PARIS and slot.given == PARIS
    assert gate.findings == []


def test_a_text_call_without_an_id_has_none_whatever_the_text_wrote() -> None:
    gate = weather_gate()
    assert gate.text_call(TextRef(0, 0), TAG, "", "get_weather", PARIS).id is None
    assert gate.text_call(TextRef(0, 1), TAG, None, "get_weather", PARIS).id is None


def test_a_refused_text_call_keeps_its_arguments_as_written_and_its_own_finding() -> None:
    gate = weather_gate()
    slot = gate.text_call(TextRef(0, 0), TAG, None, "get_weather", ZURICH)
    assert slot.state == "blocked" and slot.arguments is None
    assert slot.given == ZURICH
    assert slot.raw_arguments == '{"town": "Zürich"}'  # as JSON, its text unescaped
    assert [(f.code, f.slot) for f in gate.findings] == [("schema_invalid", "text-0.0")]
    assert "'city' is a required property" in gate.findings[0].message


def test_a_text_call_to_an_unknown_tool_is_refused_as_a_native_one_is() -> None:
    gate = weather_gate()
    slot = gate.text_call(TextRef(1, 0), TAG, None, "get_time", {})
    assert slot.state == "blocked"
    assert [(f.code, f.slot) for f in gate.findings] == [("unknown_tool", "text-1.0")]


# When a refused text call blocks the turn.


def test_under_the_turn_policy_a_refused_text_call_blocks_once_the_text_is_settled() -> None:
    gate = weather_gate()
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", ZURICH)
    assert gate.turn == "streaming"
    gate.text_settled()
    assert gate.turn == "blocked"


def test_under_the_turn_policy_a_valid_text_call_leaves_the_turn_open() -> None:
    gate = weather_gate()
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    gate.text_settled()
    assert gate.turn == "streaming"
    assert gate.verdict_events() == ["turn_open", "ran", "end"]


def test_an_open_turn_reads_each_text_call_as_ran_or_refused() -> None:
    gate = weather_gate()
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", ZURICH)
    gate.text_call(TextRef(1, 0), TAG, None, "get_weather", PARIS)
    assert gate.turn == "streaming"
    assert gate.verdict_events() == ["turn_open", "refused", "ran", "end"]


def test_per_call_a_refused_text_call_blocks_the_turn_at_once() -> None:
    gate = weather_gate(text_per_call=True)
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    assert gate.turn == "streaming"
    gate.text_call(TextRef(1, 0), TAG, None, "get_weather", ZURICH)
    assert gate.turn == "blocked"
    assert gate.verdict_events() == ["turn_blocked", "end"]


# Beside native calls a text call is set aside.


def test_a_text_call_after_a_native_call_is_set_aside_with_a_warning() -> None:
    gate = weather_gate()
    native_call(gate)
    slot = gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    assert slot.aside and slot.state == "validated"
    assert found(gate) == [
        (
            "text_call_set_aside",
            "text-0.0",
            "text call text-0.0 (get_weather) sits beside native tool calls, "
            "which are authoritative",
        )
    ]
    assert gate.findings[0].severity == "warning"


def test_a_text_call_before_a_native_call_is_set_aside_when_the_native_call_opens() -> None:
    gate = weather_gate()
    slot = gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    assert not slot.aside and gate.findings == []
    native_call(gate)
    assert slot.aside
    assert [(f.code, f.slot) for f in gate.findings] == [("text_call_set_aside", "text-0.0")]


def test_a_set_aside_call_is_answered_as_set_aside_once_the_turn_is_decided() -> None:
    gate = weather_gate()
    native_call(gate)
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    for name in ("turn", "call", "parseable"):
        assert "text-0.0" not in outcomes(gate, name)
    gate.turn_done(True, "tool_calls")
    assert gate.turn == "executable"
    # the turn is decided before the text is settled: the text call is set aside at once
    for name in ("turn", "call", "parseable"):
        assert outcomes(gate, name) == {0: "released", "text-0.0": "set_aside"}
    assert gate.releasable("turn") == [gate.slots[0]]


def test_a_set_aside_call_of_a_blocked_turn_is_set_aside_too() -> None:
    gate = weather_gate()
    gate.identity(0, "call_0", "get_weather")
    gate.fragment(0, '{"town": "Paris"}')
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    gate.turn_done(True, "tool_calls")
    assert gate.turn == "blocked"
    assert outcomes(gate, "turn") == {0: "blocked", "text-0.0": "set_aside"}


# What each release policy hands out in a turn of text calls only.


def test_under_the_turn_policy_text_calls_wait_for_the_settled_text() -> None:
    gate = weather_gate()
    first = gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    second = gate.text_call(TextRef(1, 0), TAG, None, "get_weather", PARIS)
    assert outcomes(gate, "turn") == {}
    gate.text_settled()
    assert outcomes(gate, "turn") == {"text-0.0": "released", "text-1.0": "released"}
    assert gate.releasable("turn") == [first, second]


def test_a_turn_of_text_calls_blocked_by_one_releases_none() -> None:
    gate = weather_gate()
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    gate.text_call(TextRef(1, 0), TAG, None, "get_weather", ZURICH)
    gate.text_settled()
    assert gate.turn == "blocked"
    for name in ("turn", "call"):
        assert outcomes(gate, name) == {"text-0.0": "blocked", "text-1.0": "blocked"}
        assert gate.releasable(name) == []


def test_per_call_a_valid_text_call_runs_at_its_block_close_and_a_refused_one_waits() -> None:
    gate = weather_gate()
    valid = gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    gate.text_call(TextRef(1, 0), TAG, None, "get_weather", ZURICH)
    assert gate.turn == "streaming"
    for name in ("call", "parseable"):
        assert outcomes(gate, name) == {"text-0.0": "released"}
        assert gate.releasable(name) == [valid]
    assert outcomes(gate, "turn") == {}


def test_per_call_a_set_aside_call_waits_while_the_native_calls_stream() -> None:
    gate = weather_gate()
    native_call(gate)
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    gate.text_settled()
    assert gate.turn == "streaming"
    assert outcomes(gate, "call") == {}
    assert outcomes(gate, "turn") == {}


# The order of calls: native ones by slot, then text ones by block and place.


def test_native_calls_come_before_text_calls_and_no_reference_after_both() -> None:
    refs = [None, TextRef(1, 0), NativeRef(7), TextRef(0, 2), NativeRef(2), TextRef(0, 1)]
    ordered = sorted(refs, key=call_order)
    expected = [2, 7, "text-0.1", "text-0.2", "text-1.0", None]
    assert [r.slot if r is not None else None for r in ordered] == expected
    assert sorted([None, TextRef(0, 0)], key=call_order) == [TextRef(0, 0), None]


# The same turns through replay.

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
BAD = '<tool_call>{"name": "get_weather", "arguments": {"town": "Zürich"}}</tool_call>'


def test_replay_lists_a_refused_text_call_with_its_arguments_as_written() -> None:
    result = replay(openai_chunks([], [], text=[CALL, BAD]), WEATHER, text_formats=[TAG])
    assert result["status"] == "fail"
    calls = {c["slot"]: c for c in result["text_calls"]}
    assert calls["text-0.0"]["arguments"] == PARIS and calls["text-0.0"]["finding"] is None
    assert calls["text-1.0"]["arguments"] == '{"town": "Zürich"}'
    assert calls["text-1.0"]["finding"]["code"] == "schema_invalid"
    assert {c["format"] for c in result["text_calls"]} == {TAG}


def test_replay_sets_aside_a_text_call_beside_a_native_call() -> None:
    call = WireCall("call_1", "get_weather", ('{"city": "Paris"}',))
    chunks = openai_chunks([call], [0, 0], text=[CALL])
    result = replay(chunks, WEATHER, text_formats=[TAG])
    assert result["status"] == "pass"
    states = {c["slot"]: (c["state"], c["source"]) for c in result["calls"]}
    assert states == {0: ("validated", "native"), "text-0.0": ("set_aside", TAG)}
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [
        ("text_call_set_aside", "text-0.0")
    ]
    assert result["text_calls"][0]["released_at"] is None


def test_replay_per_call_keeps_a_text_call_that_ran_before_the_native_call_opened() -> None:
    call = WireCall("call_1", "get_weather", ('{"city": "Paris"}',))
    chunks = openai_chunks([call], [0, 0], text=[CALL])
    result = replay(chunks, WEATHER, policy="call", text_formats=[TAG])
    assert result["status"] == "pass"
    states = {c["slot"]: (c["state"], c["released_at"]) for c in result["calls"]}
    assert states == {0: ("validated", 4), "text-0.0": ("validated", 1)}
    assert result["findings"] == []


def test_per_call_only_a_text_call_that_validated_stays_when_a_native_call_opens() -> None:
    gate = weather_gate(text_per_call=True)
    ran = gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    refused = gate.text_call(TextRef(1, 0), TAG, None, "get_weather", ZURICH)
    native_call(gate)
    assert not ran.aside and refused.aside
    assert [(f.code, f.slot) for f in gate.findings] == [
        ("schema_invalid", "text-1.0"),
        ("text_call_set_aside", "text-1.0"),
    ]


def test_a_findings_limit_keeps_the_set_aside_warning_within_it() -> None:
    gate = TurnGate(schemas=ToolSchemas(WEATHER), limits=Limits(max_findings=1))
    native_call(gate)
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    gate.text_call(TextRef(0, 1), TAG, None, "get_weather", PARIS)
    assert [(f.code, f.slot) for f in gate.findings] == [
        ("text_call_set_aside", "text-0.0"),
        ("limit_exceeded", None),
    ]
    assert gate.turn == "blocked"


def test_settling_the_text_moves_the_version_on_to_one_never_seen() -> None:
    gate = weather_gate()
    seen = [gate.version]
    gate.text_call(TextRef(0, 0), TAG, None, "get_weather", PARIS)
    seen.append(gate.version)
    gate.text_settled()
    assert gate.version > max(seen)
    settled = gate.version
    gate.text_settled()  # settled once: a second call changes nothing
    assert gate.version == settled
