"""The audit page as a person sees it: real headless Chromium screenshots and their layout.

For two scenarios and a turn whose valid call is blocked by its sibling, the page is
loaded at a laptop's width (1400 px) and a phone's (390 px): the page must not scroll
sideways, the timeline must not overflow, a raw chunk opened must get the row's width,
every diagram must be drawn whole and readable at 1400 px, each call listed once with
why it is blocked and its arguments as indented JSON, and the step into ``blocked``
named by its finding. The screenshots are written to the test's directory; with
``CALLGATE_WRITE_SCREENSHOTS`` set they are also copied to docs/screenshots/ (the README
shows them). Without a browser: a large generated capture gives a bounded page.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from callgate.audit import page as audit_page
from callgate.audit.page import replay_page
from callgate.audit.trace import Recorder
from callgate.cli.commands import main
from callgate.cli.replay import replay
from test_trace_views import SCENARIOS, page_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WIDTH, HEIGHT = 1400, 900
PHONE = 390

PAGES = [
    ("5_adversarial_restart", ()),
    ("3_qwen_xml_in_content", ("--text-formats", "default")),
]

SIBLINGS = "blocked_sibling"
"""A turn of two calls: a valid one, and one naming a tool nobody declared."""


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One OpenAI Chat Completions chunk."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [choice]}


def call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A delta opening call ``index`` with all its arguments."""
    function = {"name": name, "arguments": arguments}
    return {
        "tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]
    }


WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def sibling_page(tmp_path: Path) -> Path:
    """The page of a turn whose valid get_weather call is blocked with its turn."""
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk(call(0, "call_a", "get_weather", '{"city": "Paris"}')),
        chunk(call(1, "call_b", "launch", '{"target": "moon", "how": {"stages": [1, 2]}}')),
        chunk({}, "tool_calls"),
    ]
    capture, tools = tmp_path / f"{SIBLINGS}.json", tmp_path / "sibling-tools.json"
    capture.write_text(json.dumps(chunks), encoding="utf-8")
    tools.write_text(json.dumps({"get_weather": WEATHER}), encoding="utf-8")
    page = tmp_path / f"{SIBLINGS}.html"
    main(["replay", str(capture), "--tools", str(tools), "--html", str(page)])
    return page


LAYOUT = """
const out = {page: document.documentElement.scrollWidth, view: window.innerWidth};
const table = document.querySelector('#timeline table');
out.table = table.getBoundingClientRect().right;
out.cells = [...table.querySelectorAll('td')]
    .filter(td => td.scrollWidth > td.clientWidth + 1).map(td => td.innerText.slice(0, 40));
out.diagrams = [...document.querySelectorAll('#diagrams figure')].map(figure => {
    const svg = figure.querySelector('svg');
    const box = svg.getBoundingClientRect();
    const frame = figure.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    const sizes = [...svg.querySelectorAll('g.edge text')]
        .map(t => parseFloat(t.getAttribute('font-size')) * scale);
    return {id: figure.id, width: box.width, height: box.height,
            left: box.left, right: box.right, frame: frame.right,
            shown: getComputedStyle(svg).display !== 'none' && svg.checkVisibility(),
            smallest: Math.min(...sizes)};
});
return out;
"""


LABELS = """
const svg = arguments[0].querySelector('svg');
const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
return Math.min(...[...svg.querySelectorAll('g.edge text')]
    .map(t => parseFloat(t.getAttribute('font-size')) * scale));
"""
"""The smallest edge label of a figure's diagram, in CSS pixels as drawn now."""


def screenshot(browser: Any, target: Path, width: int = WIDTH) -> None:
    """The whole page, top to bottom, at ``width``."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, min(height, 12000) + 140)
    browser.save_screenshot(str(target))
    browser.set_window_size(width, HEIGHT)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.needs("chromium", "chromedriver")
@pytest.mark.parametrize(("name", "extra"), PAGES)
def test_the_page_lays_out_at_a_laptops_width(
    browser: Any, tmp_path: Path, name: str, extra: tuple[str, ...]
) -> None:
    from selenium.webdriver.common.by import By

    browser.set_window_size(WIDTH, HEIGHT)
    browser.get(page_for(tmp_path, name, *extra).as_uri())
    layout = browser.execute_script(LAYOUT)
    assert layout["page"] <= layout["view"], "the page scrolls sideways"
    assert layout["table"] <= layout["view"], "the timeline is wider than the window"
    assert layout["cells"] == [], "timeline cells whose content overflows"
    assert [d["id"] for d in layout["diagrams"]] == [
        f"diagram-{m}"
        for m in ("slot", "turn", "detector", "display", "release", "vote", "verdict")
    ]
    for diagram in layout["diagrams"]:
        assert diagram["shown"], diagram
        assert diagram["width"] > 300 and diagram["height"] > 100, diagram
        assert diagram["left"] >= 0 and diagram["right"] <= diagram["frame"] + 1, (
            f"{diagram['id']} is cut off at the right: drawn to {diagram['right']:.0f} px "
            f"in a figure {diagram['frame']:.0f} px wide"
        )
        assert diagram["smallest"] >= 8, f"fitted, labels drawn at {diagram['smallest']:.1f} px"
        # Clicked, a diagram fitted to the page is drawn at full size, its labels readable.
        figure = browser.find_element(By.ID, diagram["id"])
        browser.execute_script("arguments[0].scrollIntoView()", figure)
        figure.find_element(By.CSS_SELECTOR, ".zoom").click()
        full = browser.execute_script(LABELS, figure)
        assert full >= 12, f"{diagram['id']}: edge labels drawn at {full:.1f} px at full size"
        browser.find_element(By.TAG_NAME, "h1").click()
        assert browser.execute_script(LABELS, figure) == pytest.approx(diagram["smallest"])

    raw = browser.find_element(By.CSS_SELECTOR, "#timeline tr.raw details")
    raw.find_element(By.TAG_NAME, "summary").click()
    table = browser.find_element(By.CSS_SELECTOR, "#timeline table").size["width"]
    assert raw.find_element(By.TAG_NAME, "pre").size["width"] > 0.6 * table
    raw.find_element(By.TAG_NAME, "summary").click()

    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline tr.chunk")
    assert len(rows) == len(SCENARIOS[name].chunks) + 1
    came = [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows]
    assert "" not in came, "a chunk whose row says nothing about what came in"

    calls = browser.find_elements(By.CSS_SELECTOR, "#calls tbody tr")
    where = [row.find_elements(By.TAG_NAME, "td")[0].text for row in calls]
    assert len(where) == len(set(where)), f"a call listed twice: {where}"
    assert not any(cell.startswith("slot text-") for cell in where), where

    top, whole = tmp_path / f"replay-{name}-top.png", tmp_path / f"replay-{name}.png"
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(top))
    screenshot(browser, whole)
    for shot in (top, whole):
        if os.environ.get("CALLGATE_WRITE_SCREENSHOTS"):
            DOCS.mkdir(exist_ok=True)
            shutil.copyfile(shot, DOCS / shot.name)


PHONE_LAYOUT = """
return {page: document.documentElement.scrollWidth, view: window.innerWidth,
        body: document.body.getBoundingClientRect().right};
"""


@pytest.mark.needs("chromium", "chromedriver")
@pytest.mark.parametrize(("name", "extra"), [*PAGES, (SIBLINGS, ())])
def test_the_page_does_not_scroll_sideways_on_a_phone(
    browser: Any, tmp_path: Path, name: str, extra: tuple[str, ...]
) -> None:
    page = sibling_page(tmp_path) if name == SIBLINGS else page_for(tmp_path, name, *extra)
    browser.set_window_size(PHONE, HEIGHT)
    browser.get(page.as_uri())
    layout = browser.execute_script(PHONE_LAYOUT)
    assert layout["page"] <= layout["view"], f"the page scrolls sideways on a phone: {layout}"
    screenshot(browser, tmp_path / f"replay-{name}-phone.png", width=PHONE)
    browser.set_window_size(WIDTH, HEIGHT)


@pytest.mark.needs("chromium", "chromedriver")
def test_a_blocked_sibling_says_why_and_blocked_arguments_read_as_json(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.set_window_size(WIDTH, HEIGHT)
    browser.get(sibling_page(tmp_path).as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#calls tbody tr")
    cells = {row.find_elements(By.TAG_NAME, "td")[1].text: row for row in rows}
    assert sorted(cells) == ["get_weather", "launch"]
    header = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#calls thead th")]
    why = header.index("why")
    sibling = cells["get_weather"].find_elements(By.TAG_NAME, "td")
    assert sibling[header.index("state")].text == "blocked"
    assert sibling[why].text.startswith("blocked with its turn: slot 1 unknown_tool"), sibling[
        why
    ].text
    own = cells["launch"].find_elements(By.TAG_NAME, "td")
    assert own[why].text == "unknown_tool"
    arguments = own[header.index("arguments")].text
    assert json.loads(arguments) == {"target": "moon", "how": {"stages": [1, 2]}}
    assert arguments.startswith("{\n") and '\\"' not in arguments, arguments  # indented, unescaped

    blocked = [
        text.text
        for text in browser.find_elements(By.CSS_SELECTOR, "#diagram-slot g.edge text")
        if text.get_attribute("fill") == "red"
    ]
    assert blocked == ["slot 1: reject / unknown_tool (step 4)"], blocked
    screenshot(browser, tmp_path / f"replay-{SIBLINGS}.png")


# -- the page's size is bounded -------------------------------------------------------------


def fragments_capture(count: int) -> list[dict[str, Any]]:
    """A call whose arguments come one short fragment a chunk, ``count`` chunks of them."""
    pieces = ['{"city": "', *("ab" for _ in range(count)), '"}']
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk(call(0, "call_a", "get_weather", "")),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
        chunk({}, "tool_calls"),
    ]


def page_of(chunks: list[dict[str, Any]]) -> str:
    """The audit page of ``chunks`` (without diagrams: their size does not grow)."""
    recorder = Recorder()
    result = replay(chunks, {"get_weather": WEATHER}, recorder=recorder)
    return replay_page(result, recorder.steps, chunks, {}, title="large")


def test_a_large_capture_gives_a_bounded_page() -> None:
    started = time.perf_counter()
    small, large = page_of(fragments_capture(2_000)), page_of(fragments_capture(20_000))
    # Ten times the chunks: the timeline is one summary row either way; what grows is
    # the call's arguments (4,000 and 40,000 characters), and those are cut at 20,000.
    assert len(large) < len(small) * 3, (len(small), len(large))
    assert len(large.encode()) < 100_000, len(large.encode())
    assert "more characters not shown" in large and "more characters" not in small
    assert 'id="bounds"' in large and "plain chunks in 1 run are summarised" in large
    assert 'class="summary" data-chunks="' in large
    assert time.perf_counter() - started < 60


def test_the_raw_chunks_a_page_embeds_are_capped_and_it_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chunks = fragments_capture(8)  # short: every chunk has its own row
    whole = page_of(chunks)
    assert "not embedded" not in whole and 'id="bounds"' not in whole
    monkeypatch.setattr(audit_page, "RAW_BUDGET", 1_000)
    capped = page_of(chunks)
    assert capped.count("chunk 0 as received") == 1
    assert "not embedded (the page's budget for raw chunks is spent)" in capped
    assert "the raw JSON of " in capped and f"chunks of {len(chunks)} is not embedded" in capped
