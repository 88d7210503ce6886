"""``callgate replay --text-formats``: a text call streamed one character per chunk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callgate.cli.commands import main
from callgate.strategies.text.formats import DEFAULT_FORMATS, FORMATS

CONTENT = (
    'Checking.<tool_call>{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}'
    "</tool_call>Done."
)
TOOLS = {"get_time": {"type": "object", "properties": {"timezone": {"type": "string"}}}}


def chunked_capture(path: Path, content: str, size: int) -> Path:
    pieces = [content[i : i + size] for i in range(0, len(content), size)]
    chunks = [
        {"id": "c1", "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
        for p in pieces
    ]
    chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    path.write_text("\n".join(json.dumps(c) for c in chunks), encoding="utf-8")
    return path


def one_char_capture(path: Path, content: str) -> Path:
    return chunked_capture(path, content, 1)


@pytest.mark.parametrize("formats", ["tool_call_tag", "default"])
def test_replay_of_a_one_character_stream_hides_the_markup_and_reports_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], formats: str
) -> None:
    capture = one_char_capture(tmp_path / "capture.jsonl", CONTENT)
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    args = ["replay", str(capture), "--tools", str(tmp_path / "tools.json")]
    assert main([*args, "--text-formats", formats, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["display"] == "Checking.Done."
    calls = [(c["format"], c["name"], c["arguments"]) for c in result["text_calls"]]
    assert calls == [("tool_call_tag", "get_time", {"timezone": "Asia/Tokyo"})]
    assert main([*args, "--text-formats", formats]) == 0
    text = capsys.readouterr().out
    assert "<tool_call>" not in text
    assert "NOT_APPLICABLE" not in text
    assert "get_time" in text


def test_all_reads_every_standing_format_and_default_is_its_old_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``all`` (not the model-based defaults) and the old ``default`` give the same replay."""
    capture = one_char_capture(tmp_path / "capture.jsonl", CONTENT)
    outputs = []
    for spelling in ("all", "default"):
        assert main(["replay", str(capture), "--text-formats", spelling, "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert outputs[0]["text_formats"] == list(DEFAULT_FORMATS)
    assert [c["name"] for c in outputs[0]["text_calls"]] == ["get_time"]
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "'all'" in help_text and "'default' is the old spelling" in help_text


def test_replay_help_names_every_text_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for name in FORMATS:
        assert name in help_text


def test_an_unknown_text_format_is_refused_with_the_known_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = one_char_capture(tmp_path / "capture.jsonl", "hi")
    assert main(["replay", str(capture), "--text-formats", "kimi_k3"]) == 2
    err = capsys.readouterr().err
    assert "kimi_k3" in err and "kimi_k2" in err


@pytest.mark.parametrize("size", [1, 4, 100])
def test_replay_of_a_call_restarted_in_its_own_block_is_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int
) -> None:
    content = '<tool_call>{"name": "f"<tool_call>'
    capture = chunked_capture(tmp_path / "capture.jsonl", content, size)
    (tmp_path / "tools.json").write_text(json.dumps({"f": {"type": "object"}}), encoding="utf-8")
    args = ["replay", str(capture), "--tools", str(tmp_path / "tools.json"), "--json"]
    assert main([*args, "--text-formats", "default"]) in (0, 1, 2)
    result = json.loads(capsys.readouterr().out)
    assert result["display"] == content
    assert result["text_calls"] == []
