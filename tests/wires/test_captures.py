"""Real recorded streams (tests/captures/) through replay and the buffer.

Each capture is a public SDK's or framework's test fixture, one assistant turn, with its
provenance and the calls and text its most authoritative reader gives (see
``tests/captures/manifest.json`` and ``make_corpus.py``). callgate must pass every
legitimate turn with exactly those calls; a capture where callgate deliberately differs
names the difference, and the test pins that callgate blocks it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.cli.capture import Capture, load_capture
from callgate.cli.check import check_stream
from callgate.cli.replay import replay
from callgate.strategies import WIRE_STRATEGIES

HERE = Path(__file__).resolve().parents[1] / "captures"
MANIFEST: list[dict[str, Any]] = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
WIRES = {"openai", "openai-responses", "anthropic", "bedrock", "gemini", "cohere", "ollama"}


def chunks_of(entry: dict[str, Any]) -> Capture:
    return load_capture((HERE / entry["file"]).read_bytes())


def test_the_corpus_covers_every_wire_with_provenance() -> None:
    assert len(MANIFEST) >= 80
    assert {e["wire"] for e in MANIFEST} == WIRES
    for entry in MANIFEST:
        source = entry["source"]
        assert source["repository"] and source["path"] and source["test"], entry["file"]
        assert len(source["commit"]) == 40
        assert (HERE / entry["file"]).is_file()


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_a_real_stream_gives_the_calls_and_text_its_reader_gives(entry: dict[str, Any]) -> None:
    chunks = chunks_of(entry)
    expect = entry["expect"]
    if "profile" in entry:  # not recognisable on its own: checked under its named profile
        checked = check_stream(chunks, None, entry["profile"])
        assert (checked["status"], checked["calls"]) == (expect["status"], expect["calls"])
        return
    result = replay(chunks, clean_end=chunks.ended)
    assert result["wire"] == entry["wire"]
    if "difference" in entry:
        assert result["status"] == "fail", (entry["difference"], result["findings"])
        assert not result["executable"]
        return
    assert result["status"] == expect["status"], result["findings"]
    assert result["executable"] is (expect["status"] == "pass")
    native = [c for c in result["calls"] if c["source"] == "native"]
    expected_calls = expect["calls"]
    assert [c["name"] for c in native] == [c["name"] for c in expected_calls]
    for got, want in zip(native, expected_calls, strict=True):
        if want["arguments"] is not None:  # Gemini's streamed partialArgs: pinned below
            assert got["arguments"] == want["arguments"]
        assert got["state"] == "validated"
    if expect["text"] is not None:  # None: the recording's text deltas were trimmed
        assert result["display"] == expect["text"]


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_the_buffer_alone_builds_the_message_replay_shows(entry: dict[str, Any]) -> None:
    chunks = chunks_of(entry)
    profile = entry.get("profile")
    buffer = LLMStreamBuffer(strategy=WIRE_STRATEGIES[profile]() if profile else None)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end(clean=chunks.ended)
    if profile:
        assert buffer.get_content() == entry["expect"]["text"]
        return
    result = replay(chunks, clean_end=chunks.ended)
    assert buffer.as_dict() == result["message"]
    assert buffer.turn_state == {"pass": "executable", "fail": "blocked"}.get(
        result["status"], result["status"]
    )
    json.dumps(buffer.as_dict())  # the native message is plain JSON data


def test_vertex_streamed_arguments_build_the_nested_object() -> None:
    entry = next(e for e in MANIFEST if "arguments-nested" in e["file"])
    call = replay(chunks_of(entry))["calls"][0]
    recipe = call["arguments"]["recipe"]
    assert call["name"] == "cookRecipe"
    assert recipe["name"] == "Lasagna"
    assert [i["name"] for i in recipe["ingredients"]][:3] == [
        "Lasagna noodles",
        "Ground beef",
        "Ricotta cheese",
    ]
    assert recipe["steps"][1].endswith("set aside.")
    assert recipe["steps"][4] == "In a 9x13 baking dish, spread a thin layer of meat sauce."


OLLAMA = [e for e in MANIFEST if e["wire"] == "ollama" and "profile" not in e]


@pytest.mark.parametrize("entry", OLLAMA, ids=[e["file"] for e in OLLAMA])
def test_an_ollama_recording_reassembles_into_its_own_final_state(entry: dict[str, Any]) -> None:
    """The message is the done line's envelope with the lines' content joined and their
    tool_calls as recorded; the calls released are those tool_calls, whole, in order."""
    lines = chunks_of(entry)
    done = lines[-1]
    assert done["done"] is True
    buffer = LLMStreamBuffer()
    for line in lines:
        buffer.add(line)
    buffer.end()
    response = buffer.as_dict()
    messages = [line.get("message") or {} for line in lines]
    calls = [call for message in messages for call in message.get("tool_calls") or ()]
    expected: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(message.get("content") or "" for message in messages),
    }
    if calls:
        expected["tool_calls"] = calls
    assert response == {**{k: v for k, v in done.items() if k != "message"}, "message": expected}
    released = [(slot.id, slot.name, slot.arguments) for slot in buffer.releasable()]
    recorded = [(c.get("id"), c["function"]["name"], c["function"]["arguments"]) for c in calls]
    assert released == recorded
    assert buffer.executable is bool(calls)
