"""The conformance procedure's own release checks (source document 003), on ``callgate check``.

Source: document 003 (``mouadja02/llm-streaming-tool-call-reassembly-conformance``,
SKILL.md): "Fixture Envelope" gives the fixture below; "Objective Verification" lists
what a release must show: (1) a valid fragmented call exits 0 and reports its exact id,
name, arguments and ``executable=true``; (2) a reused-slot fixture exits 1 with
``identity_collision`` and executes nothing; (3) a text-only stream exits 2 with
``status=not_applicable``; (4) malformed, truncated, duplicate-terminal, non-finite,
unknown-tool, unsupported-schema and schema-invalid fixtures fail closed. The
validator's script is not public; its documented cases are checked as written. (Its
rule that ``openai`` requires ``finish_reason: "tool_calls"`` meets DESIGN.md's
``stop`` corner, which is decided elsewhere and not pinned here.)
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from callgate.cli.check import EXIT_CODES, check_fixture

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
ENVELOPE: dict[str, Any] = {
    "profile": "openai",
    "tool_schemas": {"weather": WEATHER},
    "chunks": [
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
         "function": {"name": "weather", "arguments": '{"ci'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {
         "arguments": 'ty":"Paris"}'}}]}, "finish_reason": "tool_calls"}]},
    ],
}  # fmt: skip
"""The fixture of the section "Fixture Envelope", as written."""


def checked(fixture: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    report = check_fixture(json.dumps(fixture))
    return EXIT_CODES[report["status"]], report


def varied(change: str) -> dict[str, Any]:
    """The envelope with one fault of the section's list."""
    fixture = copy.deepcopy(ENVELOPE)
    first, second = (c["choices"][0] for c in fixture["chunks"])
    call = first["delta"]["tool_calls"][0]
    rest = second["delta"]["tool_calls"][0]["function"]
    if change == "malformed":
        rest["arguments"] = 'ty": Paris}'
    elif change == "truncated":
        del second["finish_reason"]
    elif change == "duplicate-terminal":
        fixture["chunks"].append({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
        fixture["chunks"].append({"choices": [{"delta": {"content": "x"},
                                               "finish_reason": "tool_calls"}]})  # fmt: skip
    elif change == "non-finite":
        rest["arguments"] = 'ty": NaN}'
    elif change == "unknown-tool":
        call["function"]["name"] = "delete_everything"
    elif change == "unsupported-schema":
        fixture["tool_schemas"]["weather"] = {**WEATHER, "$ref": "https://example.com/s.json"}
    elif change == "schema-invalid":
        rest["arguments"] = 'ty": 7}'
    elif change == "reused-slot":
        fixture["chunks"].insert(1, {"choices": [{"delta": {"tool_calls": [
            {"index": 0, "id": "call_2", "type": "function",
             "function": {"name": "weather", "arguments": ""}}]}}]})  # fmt: skip
    return fixture


def test_a_valid_fragmented_call_exits_0_with_its_exact_call() -> None:
    code, report = checked(ENVELOPE)
    assert (code, report["status"], report["applicable"], report["executable"]) == (
        0, "pass", True, True,
    )  # fmt: skip
    [call] = report["calls"]
    assert (call["id"], call["name"], call["arguments"]) == ("call_1", "weather", {"city": "Paris"})


def test_a_reused_slot_exits_1_with_identity_collision_and_nothing_executable() -> None:
    code, report = checked(varied("reused-slot"))
    assert (code, report["executable"]) == (1, False)
    assert "identity_collision" in [f["code"] for f in report["findings"]]
    assert all(c["state"] == "blocked" for c in report["calls"])


def test_a_text_only_stream_exits_2_not_applicable() -> None:
    fixture = {**ENVELOPE, "chunks": [
        {"choices": [{"delta": {"content": "Sunny."}, "finish_reason": "stop"}]}]}  # fmt: skip
    code, report = checked(fixture)
    assert (code, report["status"], report["applicable"]) == (2, "not_applicable", False)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ("malformed", "malformed_json"),
        ("truncated", "missing_terminal"),
        ("duplicate-terminal", "duplicate_terminal"),
        ("non-finite", "non_finite_number"),
        ("unknown-tool", "unknown_tool"),
        ("unsupported-schema", "unsupported_schema_keyword"),
        ("schema-invalid", "schema_invalid"),
    ],
)
def test_every_listed_fault_fails_closed(change: str, code: str) -> None:
    exit_code, report = checked(varied(change))
    assert (exit_code, report["status"], report["executable"]) == (1, "fail", False)
    assert code in [f["code"] for f in report["findings"]]
    assert all(c["state"] == "blocked" for c in report["calls"])
