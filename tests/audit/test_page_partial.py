"""The audit page shows a call's arguments growing, chunk by chunk, as the stream formed it."""

from __future__ import annotations

import re
from html import unescape

from callgate.audit.page import replay_page
from demo_scenarios import SCENARIOS, recorded


def rows_of(page: str) -> dict[str, str]:
    """Each timeline row's ``data-chunk`` and its text (tags dropped)."""
    return {
        chunk: unescape(re.sub(r"<[^>]+>", " ", row))
        for chunk, row in re.findall(
            r'<tr class="chunk" data-chunk="([^"]+)">(.*?)</tr>', page, re.S
        )
    }


def test_a_text_call_grows_in_the_rows_before_its_block_closes() -> None:
    result, recorder = recorded("3_qwen_xml_in_content", ["qwen3_coder_xml"])
    chunks = list(SCENARIOS["3_qwen_xml_in_content"].chunks)
    rows = rows_of(replay_page(result, recorder.steps, chunks, {}, title="t"))
    assert "call text-0.0 (get_weather) arguments so far: {}" in rows["6"]
    assert 'arguments so far: {"city": "Oslo"}' in rows["9"]
    assert 'arguments, whole: {"city": "Oslo", "days": 3}' in rows["17"]
    assert "arguments" not in rows["20"]  # nothing grew there


def test_a_long_native_call_shows_the_end_of_what_grew() -> None:
    result, recorder = recorded("1_openai_parallel_calls")
    chunks = list(SCENARIOS["1_openai_parallel_calls"].chunks)
    page = replay_page(result, recorder.steps, chunks, {}, title="t")
    grown = re.findall(r'<span class="partial" data-call="(\d+)">', page)
    assert set(grown) == {"0", "1", "2"}
    views = [v for step in result["timeline"] for v in step["partial"]]
    assert {v["ref"] for v in views if v["complete"]} == {"0", "1", "2"}
