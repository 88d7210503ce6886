"""The conformance checker: every bundled fixture, the exit codes, and bad fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callgate.cli.check import EXIT_CODES, check_fixture, check_stream, format_text
from callgate.cli.commands import main
from callgate.cli.fixtures import examples
from callgate.gate.findings import CODES

EXAMPLES = examples()


@pytest.mark.parametrize(("name", "text"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_bundled_fixture_gives_its_documented_exit_code_and_findings(name: str, text: str) -> None:
    expect = json.loads(text)["expect"]
    result = check_fixture(text)
    assert EXIT_CODES[result["status"]] == expect["exit"], result
    codes = {f["code"] for f in result["findings"]}
    assert set(expect["codes"]) <= codes, result
    if expect["exit"] == 0:
        assert result["executable"] is True
        assert all(f["severity"] != "error" for f in result["findings"])
    else:
        assert result["executable"] is False


def test_every_wire_finding_code_has_a_bundled_fixture() -> None:
    covered = {code for _, text in EXAMPLES for code in json.loads(text)["expect"]["codes"]}
    not_for_these_wires = {"args_mismatch", "call_in_reasoning"}
    by_an_option = {  # a plain fixture gives none: docs/make_findings.py shows each one
        "token_limit": "the request's max_tokens (tests/buffer/test_token_limit.py)",
        "no_finish_reason": "the stream's own [DONE] end (tests/buffer/test_clean_end.py)",
        "repaired_arguments": "repair='lossless' (tests/gate/test_lossless_repair.py)",
    }
    assert set(CODES) - not_for_these_wires - set(by_an_option) <= covered


def test_interleaved_three_calls_pass_with_the_exact_calls() -> None:
    text = dict(EXAMPLES)["openai_interleaved_three_calls.json"]
    result = check_fixture(text)
    assert result["status"] == "pass"
    assert [(c["slot"], c["id"], c["name"], c["arguments"]) for c in result["calls"]] == [
        (0, "call_a1", "get_weather", {"city": "Paris", "unit": "C"}),
        (1, "call_b2", "get_time", {"tz": "Europe/Paris"}),
        (2, "call_c3", "search", {"query": "café near Louvre", "limit": 3}),
    ]


def test_report_has_the_contract_keys() -> None:
    result = check_fixture(dict(EXAMPLES)["anthropic_single_call.json"])
    assert set(result) == {"status", "applicable", "executable", "profile", "calls", "findings"}
    assert result["profile"] == "anthropic"
    assert set(result["calls"][0]) == {"slot", "id", "name", "arguments", "state", "source"}
    assert result["calls"][0]["source"] == "native"


def test_auto_profile_is_recognised_from_the_stream() -> None:
    result = check_fixture(dict(EXAMPLES)["auto_detect_openai.json"])
    assert result["profile"] == "openai"
    assert result["status"] == "pass"


def test_text_only_stream_is_not_applicable() -> None:
    result = check_fixture(dict(EXAMPLES)["openai_text_only.json"])
    assert (result["status"], result["applicable"], EXIT_CODES[result["status"]]) == (
        "not_applicable",
        False,
        2,
    )
    assert [f["code"] for f in result["findings"]] == ["no_tool_calls"]


@pytest.mark.parametrize(
    ("fixture", "needle"),
    [
        ("{not json", "not JSON"),
        ("[]", "JSON object"),
        ('{"profile": "openai"}', "'chunks' or 'events'"),
        ('{"profile": "openai", "chunks": [1]}', "chunk 0 is not a JSON object"),
        ('{"profile": "nope", "chunks": []}', "unknown profile 'nope'"),
        ('{"chunks": [], "events": []}', "both"),
        ('{"chunks": [], "tool_schemas": []}', "tool_schemas"),
        ('{"chunks": [{"hello": 1}]}', "no known format"),
    ],
)
def test_bad_fixture_is_invalid_with_a_clear_message(fixture: str, needle: str) -> None:
    result = check_fixture(fixture)
    assert result["status"] == "invalid"
    assert EXIT_CODES["invalid"] == 2
    [item] = result["findings"]
    assert item["code"] == "invalid_fixture"
    assert needle in item["message"]


def test_events_key_works_for_an_openai_profile() -> None:
    data = json.loads(dict(EXAMPLES)["openai_single_call.json"])
    data["events"] = data.pop("chunks")
    assert check_fixture(json.dumps(data))["status"] == "pass"


def test_check_stream_needs_no_fixture_file() -> None:
    data = json.loads(dict(EXAMPLES)["anthropic_single_call.json"])
    result = check_stream(data["events"], data["tool_schemas"], "anthropic")
    assert result["calls"][0]["arguments"] == {"city": "Paris", "unit": "C"}


def test_cli_exit_codes_and_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, code in [
        ("openai_single_call.json", 0),
        ("openai_identity_collision.json", 1),
        ("anthropic_text_only.json", 2),
        ("invalid_unknown_profile.json", 2),
    ]:
        path = tmp_path / name
        path.write_text(dict(EXAMPLES)[name], encoding="utf-8")
        assert main(["check", str(path), "--report", "json"]) == code
        report = json.loads(capsys.readouterr().out)
        assert EXIT_CODES[report["status"]] == code


def test_cli_unreadable_fixture_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_text_report_lists_calls_and_findings_with_the_verdict_last() -> None:
    result = check_fixture(dict(EXAMPLES)["openai_identity_collision.json"])
    lines = format_text(result).splitlines()
    assert lines[0].startswith("call  slot 0: get_weather")
    assert any(line.startswith("error   identity_collision slot 0") for line in lines)
    assert lines[-1] == "FAIL: profile openai, not executable"


def test_demo_runs_every_bundled_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert f"{len(EXAMPLES)} of {len(EXAMPLES)} bundled conformance fixtures" in out
