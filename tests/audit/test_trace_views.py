"""Traces made visible: diagrams with a stream's path, and the HTML audit page in Chromium.

The browser test drives Debian's chromium through chromedriver (selenium), loads the
page from a file with the network shut off, and reads the browser's console log.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from callgate.audit.page import replay_page
from callgate.cli.commands import main
from callgate.diagrams import trace_dot
from callgate.diagrams.dot import PALETTE
from callgate.fsm import MACHINES, SLOT, TURN
from demo_scenarios import SCENARIOS, capture, recorded

# -- diagrams ------------------------------------------------------------------------------


def test_each_slot_path_has_its_colour_counts_and_order() -> None:
    _, recorder = recorded("1_openai_parallel_calls")
    dot = trace_dot(SLOT, recorder.of("slot"), title="parallel")
    for n, colour in enumerate(("blue", "green", "purple")):
        assert f"slot {n} ({colour})" in dot
    taken = re.findall(r'label="(slot \d: [^"]+)"', dot)
    assert "slot 0: identity (step 1)" in taken
    assert any(re.fullmatch(r"slot 1: args x\d+ \(steps 2…\d+\)", label) for label in taken)
    assert "slot 2: accept (step 9)" in taken
    assert not [label for label in taken if "#" in label], "# is the timeline's, not a step"


def test_the_step_into_blocked_is_bold_red_and_names_its_finding() -> None:
    _, recorder = recorded("5_adversarial_restart")
    dot = trace_dot(SLOT, recorder.of("slot"))
    [edge] = [
        line for line in dot.splitlines() if "replay_diverge / identity_collision (step" in line
    ]
    assert '"replaying" -> "blocked"' in edge
    assert 'color="red"' in edge and "style=bold" in edge and "penwidth=3" in edge
    turn = trace_dot(TURN, recorder.of("turn"))
    assert '"streaming" -> "blocked"' in turn


def test_cli_draws_a_trace_as_svg(tmp_path: Path) -> None:
    chunks, tools = capture(tmp_path, "6_bedrock_call_policy")
    out = tmp_path / "display.svg"
    args = ["diagram", "display", "--trace", str(chunks), "--tools", str(tools)]
    assert main([*args, "--policy", "call", "--format", "svg", "-o", str(out)]) == 0
    svg = out.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "replay: owned" in svg and "allow" in svg


def test_cli_trace_of_an_unreadable_capture_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\nnope\n', encoding="utf-8")
    assert main(["diagram", "slot", "--trace", str(bad)]) == 2
    assert "no strategy" in capsys.readouterr().err


# -- the page ------------------------------------------------------------------------------


def page_for(tmp_path: Path, name: str, *extra: str) -> Path:
    chunks, tools = capture(tmp_path, name)
    page = tmp_path / f"{name}.html"
    main(["replay", str(chunks), "--tools", str(tools), "--html", str(page), *extra])
    return page


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    text = page_for(tmp_path, "5_adversarial_restart").read_text(encoding="utf-8")
    assert "<script" not in text and "<link" not in text
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", text), "no external asset"
    assert "http://" not in text.replace("http://www.w3.org/", "")
    assert "https://" not in text


def test_the_page_says_what_became_of_each_chunks_text(tmp_path: Path) -> None:
    result, recorder = recorded("4_call_nobody_owns", ["tool_call_tag"])
    page = replay_page(
        result, recorder.steps, list(SCENARIOS["4_call_nobody_owns"].chunks), {}, title="t"
    )
    assert "held, shown at chunk 7" in page
    result, recorder = recorded("3_qwen_xml_in_content", ["qwen3_coder_xml"])
    page = replay_page(
        result, recorder.steps, list(SCENARIOS["3_qwen_xml_in_content"].chunks), {}, title="t"
    )
    assert "chars hidden as call markup" in page


def errors(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


@pytest.mark.needs("chromium", "chromedriver")
def test_the_console_check_catches_an_error(browser: webdriver.Chrome, tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><script>missing()</script>", encoding="utf-8")
    browser.get(broken.as_uri())
    assert any("missing" in e["message"] for e in errors(browser))


@pytest.mark.needs("chromium", "chromedriver")
@pytest.mark.parametrize(
    ("name", "extra", "status"),
    [
        ("5_adversarial_restart", (), "fail"),
        ("1_openai_parallel_calls", (), "pass"),
        ("4_call_nobody_owns", ("--text-formats", "default"), "not_applicable"),
    ],
)
def test_the_page_loads_in_chromium_with_its_key_elements(
    browser: webdriver.Chrome, tmp_path: Path, name: str, extra: tuple[str, ...], status: str
) -> None:
    page = page_for(tmp_path, name, *extra)
    browser.get(page.as_uri())
    assert errors(browser) == []
    assert browser.title == f"callgate replay: {name}.json"
    assert browser.find_element(By.ID, "status").text == status
    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline tr.chunk")
    assert len(rows) == len(SCENARIOS[name].chunks) + 1
    assert rows[-1].get_attribute("data-chunk") == "end"
    for machine in ("slot", "turn", "display"):
        figure = browser.find_element(By.ID, f"diagram-{machine}")
        assert figure.find_element(By.TAG_NAME, "svg").size["width"] > 100
    verdict = browser.find_element(By.ID, "verdict").text
    assert ("the detector is off" in verdict) == (not extra)
    if extra:
        detector = browser.find_elements(
            By.XPATH, "//tr[@class='chunk']//span[starts-with(., 'detector:')]"
        )
        assert len(detector) == len(rows)
    shown = browser.find_element(By.CSS_SELECTOR, "#display pre").text
    assert shown == SCENARIOS[name].expect["shown"].strip()


def test_replay_html_to_a_path_it_cannot_write_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chunks, tools = capture(tmp_path, "5_adversarial_restart")
    target = tmp_path / "missing" / "page.html"
    assert main(["replay", str(chunks), "--tools", str(tools), "--html", str(target)]) == 2
    assert "callgate replay:" in capsys.readouterr().err
    assert not target.exists()


def test_the_page_reads_as_a_person_would_write_it(tmp_path: Path) -> None:
    name = "2_anthropic_leaked_call"
    result, recorder = recorded(name, ["tool_call_tag"])
    chunks = list(SCENARIOS[name].chunks)
    page = replay_page(result, recorder.steps, chunks, {}, title="t")
    rows = re.findall(
        r'<tr class="chunk" data-chunk="(\w+)"><td>(.*?)</td><td><pre>(.*?)</pre>', page
    )
    assert [(key, label) for key, label, _ in rows] == [
        *((str(n), f"chunk {n}") for n in range(len(chunks))),
        ("end", "end"),
    ]
    events = {chunk["type"] for chunk in chunks if chunk["type"] in ("message_start", "ping")}
    assert events, "the scenario has event-only chunks"
    came = {key: text for key, _, text in rows}
    for n, chunk in enumerate(chunks):
        if chunk["type"] in events:
            assert came[str(n)] == f'<span class="event">{chunk["type"]}</span>'
    assert re.search(r"\b1 (char|step)s\b", page) is None
    assert "<summary>1 step</summary>" in page
    body = page[page.index("</style>") :]
    assert "#" not in body, "# names neither chunks nor steps"
    calls = page[page.index('<section id="calls">') : page.index('<section id="findings">')]
    assert "None" not in calls and '<span class="event">none</span>' in calls


def figures(page: str) -> dict[str, str]:
    """Each diagram figure of a page by machine, with what it holds."""
    return dict(re.findall(r'<figure id="diagram-(\w+)"[^>]*>(.*?)</figure>', page, re.S))


def test_the_page_lists_and_draws_all_seven_machines(tmp_path: Path) -> None:
    page = page_for(tmp_path, "2_anthropic_leaked_call", "--text-formats", "tool_call_tag")
    text = page.read_text(encoding="utf-8")
    seven = ["slot", "turn", "detector", "display", "release", "vote", "verdict"]
    assert list(figures(text)) == seven == list(MACHINES)
    listed = re.findall(r'<li id="machine-(\w+)" class="(\w+)">', text)
    assert listed == [  # the leaked text call runs the slot and release machines too
        ("slot", "exercised"),
        ("turn", "exercised"),
        ("detector", "exercised"),
        ("display", "exercised"),
        ("release", "exercised"),
        ("vote", "exercised"),
        ("verdict", "exercised"),
    ]


@pytest.mark.parametrize(
    ("name", "extra", "taken"),
    [
        (
            "6_bedrock_call_policy",
            (),
            {"release": ["call 1: turn (step 1)", "call 2: turn_pass (step 2)"]},
        ),
        (
            "5_adversarial_restart",
            (),
            {"release": ["call 0: turn_block (step 2)"], "verdict": ["verdict: turn_blocked"]},
        ),
        (
            "2_anthropic_leaked_call",
            ("--text-formats", "tool_call_tag"),
            {
                "vote": ["block 0: claim (step 1)"],
                "verdict": ["verdict: turn_open (step 1)", "verdict: ran (step 2)"],
            },
        ),
    ],
)
def test_the_release_vote_and_verdict_steps_are_drawn_on_their_machines(
    tmp_path: Path, name: str, extra: tuple[str, ...], taken: dict[str, list[str]]
) -> None:
    drawn = figures(page_for(tmp_path, name, *extra).read_text(encoding="utf-8"))
    for machine, labels in taken.items():
        for label in labels:
            assert label in drawn[machine], (machine, label)
        assert PALETTE[0][1] in drawn[machine], "the first instance's path has its colour"
        assert "not exercised" not in drawn[machine]


def test_a_machine_the_stream_never_entered_is_greyed_and_says_so(tmp_path: Path) -> None:
    text = page_for(tmp_path, "5_adversarial_restart").read_text(encoding="utf-8")
    idle = re.findall(r'<figure id="diagram-(\w+)" class="idle">', text)
    assert idle == ["detector", "vote"]
    for machine in idle:
        assert f"{machine}: not exercised by this stream" in figures(text)[machine]
        assert PALETTE[0][1] not in figures(text)[machine], "no path drawn"
    assert '<figure id="diagram-release" class="idle">' not in text
