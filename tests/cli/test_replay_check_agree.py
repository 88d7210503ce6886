"""One verdict from every entry point: ``replay`` and ``check`` agree on every bundled fixture.

Both commands read a fixture's own ``tool_schemas`` and ``profile`` (``--tools`` replaces
the schemas): the same file gives the same status, exit code and wire.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.commands import main
from callgate.cli.fixtures import examples

EXAMPLES = dict(examples())


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any] | None]:
    """The exit code and the JSON report of one command (None when it printed no report)."""
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled fixture written out as the file a user would pass."""
    path = tmp_path_factory.mktemp("fixtures")
    for name, text in EXAMPLES.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_replay_gives_the_verdict_check_gives(
    name: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(folder / name)
    checked_code, checked = run(["check", path, "--report", "json"], capsys)
    replayed_code, replayed = run(["replay", path, "--json"], capsys)
    assert checked is not None
    assert replayed_code == checked_code
    if checked["status"] == "invalid":  # an unusable fixture: replay refuses it in one line
        assert replayed is None
        return
    assert replayed is not None
    assert (replayed["status"], replayed["wire"]) == (checked["status"], checked["profile"])
    assert replayed["tools"] == sorted(json.loads(EXAMPLES[name])["tool_schemas"])


def test_replay_tools_replace_the_fixtures_own(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(folder / "openai_unknown_tool.json")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"delete_everything": {"type": "object"}}), encoding="utf-8")
    assert run(["replay", path, "--json"], capsys)[0] == 1
    code, result = run(["replay", path, "--tools", str(tools), "--json"], capsys)
    assert code == 0 and result is not None and result["tools"] == ["delete_everything"]
    assert run(["check", path, "--tools", str(tools), "--report", "json"], capsys)[0] == 0


def test_an_unusable_fixture_is_one_line_from_replay(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(folder / "invalid_unknown_profile.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown profile 'vertex-ultra'" in err


def test_diagram_trace_reads_the_fixtures_tools(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(folder / "openai_unknown_tool.json")
    assert main(["diagram", "slot", "--trace", path]) == 0
    assert (
        '"terminal" -> "blocked" [label="slot 0: reject / unknown_tool' in capsys.readouterr().out
    )


def test_diagram_trace_follows_the_finish_rule_replay_follows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    call["function"]["arguments"] = "{}"
    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    path = tmp_path / "stop.json"
    path.write_text(json.dumps(chunks), encoding="utf-8")
    taken = {}
    for flags in ([], ["--strict-finish"]):
        assert main(["diagram", "slot", "--trace", str(path), *flags]) == 0
        taken[bool(flags)] = capsys.readouterr().out
        code, result = run(["replay", str(path), "--json", *flags], capsys)
        assert result is not None and code == (1 if flags else 0)
    assert '"terminal" -> "validated" [label="slot 0: accept' in taken[False]
    assert "bad_terminal / wrong_terminal_reason" not in taken[False].split("slot 0:", 1)[1]
    assert '"accumulating" -> "blocked" [label="slot 0: bad_terminal' in taken[True]
