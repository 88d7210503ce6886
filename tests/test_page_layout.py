"""The audit page as a person sees it: real headless Chromium screenshots and their layout.

For two scenarios the page is loaded at a laptop's width; the timeline must not overflow
sideways, a raw chunk opened must get the row's width, and every diagram must be drawn
at a readable size. The screenshots are written to the test's directory; with
``CALLGATE_WRITE_SCREENSHOTS`` set they are also copied to docs/screenshots/ (the README
shows them).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from test_trace_views import SCENARIOS, page_for

DOCS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
WIDTH, HEIGHT = 1280, 900

PAGES = [
    ("5_adversarial_restart", ()),
    ("3_qwen_xml_in_content", ("--text-formats", "default")),
]

LAYOUT = """
const out = {page: document.documentElement.scrollWidth, view: window.innerWidth};
const table = document.querySelector('#timeline table');
out.table = table.getBoundingClientRect().right;
out.cells = [...table.querySelectorAll('td')]
    .filter(td => td.scrollWidth > td.clientWidth + 1).map(td => td.innerText.slice(0, 40));
out.diagrams = [...document.querySelectorAll('#diagrams figure')].map(figure => {
    const svg = figure.querySelector('svg');
    const box = svg.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    const sizes = [...svg.querySelectorAll('g.edge text')]
        .map(t => parseFloat(t.getAttribute('font-size')) * scale);
    return {id: figure.id, width: box.width, height: box.height,
            shown: getComputedStyle(svg).display !== 'none' && svg.checkVisibility(),
            smallest: Math.min(...sizes)};
});
return out;
"""


def screenshot(browser: Any, target: Path) -> None:
    """The whole page, top to bottom, at the test's width."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(WIDTH, min(height, 12000) + 140)
    browser.save_screenshot(str(target))
    browser.set_window_size(WIDTH, HEIGHT)


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
        assert diagram["smallest"] >= 12, f"edge labels drawn at {diagram['smallest']:.1f} px"

    raw = browser.find_element(By.CSS_SELECTOR, "#timeline tr.raw details")
    raw.find_element(By.TAG_NAME, "summary").click()
    table = browser.find_element(By.CSS_SELECTOR, "#timeline table").size["width"]
    assert raw.find_element(By.TAG_NAME, "pre").size["width"] > 0.6 * table
    raw.find_element(By.TAG_NAME, "summary").click()

    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline tr.chunk")
    assert len(rows) == len(SCENARIOS[name].chunks) + 1
    came = [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows]
    assert "" not in came, "a chunk whose row says nothing about what came in"

    top, whole = tmp_path / f"replay-{name}-top.png", tmp_path / f"replay-{name}.png"
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(top))
    screenshot(browser, whole)
    for shot in (top, whole):
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("CALLGATE_WRITE_SCREENSHOTS"):
            DOCS.mkdir(exist_ok=True)
            shutil.copyfile(shot, DOCS / shot.name)
