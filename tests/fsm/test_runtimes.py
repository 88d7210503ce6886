"""Exports for other runtimes (JSON Schema, XState, SCXML) and the conformance vectors.

The vectors are checked here against callgate's own interpreter; the Node tests under
runtimes/ replay them with XState and with the SCION SCXML engine. The tests that run
Node need ``node`` and each runtime's ``npm ci``; without them they skip, unless
``CALLGATE_REQUIRE_NODE=1`` (set by CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from callgate.audit.trace import TraceStep
from callgate.cli.check import check_fixture
from callgate.cli.conformance import RecordingError, all_runs, runs_of, vector_files
from callgate.cli.demo import scenarios
from callgate.cli.fixtures import examples
from callgate.fsm import MACHINES, SLOT, TURN, State, Table, TableError, Transition
from callgate.fsm.export import EXPORTS, SUFFIXES, to_dict
from callgate.fsm.scxml import NAME, NAMESPACE, scxml_event, to_scxml
from callgate.fsm.vectors import (
    Move,
    Run,
    VectorError,
    dumps,
    generated_runs,
    loads,
    mismatches,
)
from callgate.fsm.xstate import to_xstate
from test_export import tables

ROOT = Path(__file__).resolve().parents[2]
MACHINES_DIR = ROOT / "docs" / "machines"
RUNTIMES = ROOT / "runtimes"
NS = {"s": NAMESPACE}


@pytest.fixture(scope="module")
def runs() -> dict[str, list[Run]]:
    return all_runs()


def schema(name: str) -> Any:
    return json.loads((MACHINES_DIR / name).read_text(encoding="utf-8"))


# -- the JSON export's schema ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_every_json_export_validates_against_the_published_schema(name: str) -> None:
    validator = jsonschema.Draft202012Validator(schema("table.schema.json"))
    validator.validate(to_dict(MACHINES[name]))
    validator.validate(json.loads((MACHINES_DIR / f"{name}.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    ("break_it", "where"),
    [
        (lambda d: d.pop("initial"), "initial"),
        (lambda d: d["states"][0].update(final="no"), "final"),
        (lambda d: d["transitions"][0].update(guard=3), "guard"),
        (lambda d: d.update(version=2), "version"),
        (lambda d: d["events"][0].update(extra=1), "extra"),
        (lambda d: [s.update(final=False) for s in d["states"]], "contains"),
    ],
)
def test_the_table_schema_rejects_a_broken_document(break_it: Any, where: str) -> None:
    document = to_dict(TURN)
    break_it(document)
    errors = list(
        jsonschema.Draft202012Validator(schema("table.schema.json")).iter_errors(document)
    )
    assert errors
    assert any(where in str(e.message) + str(e.path) + str(e.validator) for e in errors)


def test_every_vector_file_validates_against_its_schema(runs: dict[str, list[Run]]) -> None:
    validator = jsonschema.Draft202012Validator(schema("vectors.schema.json"))
    for text in vector_files(runs).values():
        validator.validate(json.loads(text))
    broken = json.loads(dumps("turn", runs["turn"][:1]))
    broken["runs"][0]["steps"][0]["refused"] = "no"
    assert list(validator.iter_errors(broken))


# -- XState ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_xstate_config_has_every_state_transition_event_and_doc(name: str) -> None:
    check_xstate(MACHINES[name])


@given(tables())
def test_any_table_exports_to_a_faithful_xstate_config(table: Table) -> None:
    check_xstate(table)


def check_xstate(table: Table) -> None:
    """The XState config holds exactly the table's states, transitions, events and docs."""
    config = to_xstate(table)
    assert (config["id"], config["initial"], config["description"]) == (
        table.name,
        table.initial,
        table.doc,
    )
    assert config["meta"]["events"] == {e.name: e.doc for e in table.events}
    assert list(config["states"]) == list(table.state_names)
    taken = {
        (source, event): (edge["target"], edge["description"], edge.get("meta", {}))
        for source, node in config["states"].items()
        for event, edge in node.get("on", {}).items()
    }
    assert taken == {
        (t.source, t.event): (
            t.target,
            t.doc,
            {k: v for k, v in (("guard", t.guard), ("output", t.output)) if v},
        )
        for t in table.transitions
    }
    for state in table.states:
        node = config["states"][state.name]
        assert node["description"] == state.doc
        assert ("final" in node.get("tags", [])) is state.final
        assert (node.get("type") == "final") is (state.final and not table.outgoing(state.name))


# -- SCXML -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_scxml_document_has_every_state_transition_and_final(name: str) -> None:
    check_scxml(MACHINES[name])


@given(tables())
def test_any_table_exports_to_faithful_scxml_or_names_its_bad_name(table: Table) -> None:
    plain = [table.name, *table.state_names, *table.event_names]
    if all(NAME.match(n) for n in plain) and table.name not in ("done", "error"):
        check_scxml(table)
    else:
        with pytest.raises(ValueError, match="name"):
            to_scxml(table)


@pytest.mark.parametrize("bad", ["a.b", "two words", "1st", "", "é"])
def test_scxml_refuses_a_name_it_would_read_as_structure(bad: str) -> None:
    renamed = Table(
        name="m",
        doc="",
        states=[State(bad, "x", final=True)],
        events=TURN.events[:1],
        transitions=[Transition(bad, "call", bad, "")],
        initial=bad,
    )
    with pytest.raises(ValueError, match="is not a plain SCXML name"):
        to_scxml(renamed)


def check_scxml(table: Table) -> None:
    """The SCXML document holds exactly the table's states, transitions, finals and docs."""
    name = table.name
    text = to_scxml(table)
    root = ET.fromstring(text.encode())
    assert root.tag == f"{{{NAMESPACE}}}scxml"
    assert (root.get("name"), root.get("initial"), root.get("version")) == (
        table.name,
        table.initial,
        "1.0",
    )
    tops = {child.get("id"): child for child in root}
    assert list(tops) == list(table.state_names)
    found = set()
    for state in table.states:
        node = tops[state.name]
        finals = [node] if node.tag.endswith("}final") else node.findall("s:final", NS)
        assert bool(finals) is state.final
        for edge in node.findall("s:transition", NS):
            found.add((state.name, edge.get("event"), edge.get("target")))
        assert state.name in text
    assert found == {(t.source, scxml_event(name, t.event), t.target) for t in table.transitions}
    comments = [c.split("-->")[0] for c in text.split("<!--")[1:]]
    assert all("--" not in c for c in comments)
    docs = [table.doc, *(s.doc for s in table.states), *(t.doc for t in table.transitions)]
    readable = [d for d in docs if "-" not in d and all(" " <= c < "\ud800" for c in d)]
    assert all(any(d in c for c in comments) for d in readable)


def odd_scxml(doc: str, state_doc: str, transition_doc: str) -> str:
    """The SCXML of a two-state table whose docs are ``doc``, ``state_doc``, ``transition_doc``
    (parsed once, so it is well-formed XML)."""
    table = Table(
        name="odd",
        doc=doc,
        states=[State("a", state_doc), State("b", "z", final=True)],
        events=TURN.events[:1],
        transitions=[Transition("a", "call", "b", transition_doc)],
        initial="a",
    )
    text = to_scxml(table)
    ET.fromstring(text.encode())
    return text


def test_scxml_comments_never_hold_a_double_hyphen() -> None:
    text = odd_scxml("a -- b --- c-", "x--y", "--->")
    for comment in text.split("<!--")[1:]:
        assert "--" not in comment.split("-->")[0]


def test_scxml_comments_replace_characters_xml_forbids() -> None:
    text = odd_scxml("nul \x00 and \x1b escape", "\ufffe", "\x0b")
    assert "nul \ufffd and \ufffd escape" in text


def test_scxml_refuses_a_machine_named_like_the_engines_own_events() -> None:
    for name in ("done", "error"):
        with pytest.raises(ValueError, match="SCXML reserves"):
            to_scxml(attrs.evolve(TURN, name=name))


def test_every_export_format_has_a_file_ending() -> None:
    assert set(EXPORTS) == set(SUFFIXES) == {"json", "xstate", "scxml"}


# -- vectors ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_generated_runs_take_every_transition_and_refuse_every_missing_pair(name: str) -> None:
    check_coverage(MACHINES[name])


@given(tables())
def test_any_tables_generated_runs_cover_it_and_it_reproduces_them(table: Table) -> None:
    check_coverage(table)
    assert mismatches(table, generated_runs(table)) == []


def check_coverage(table: Table) -> None:
    """Generated runs take each transition last once and refuse each missing pair once."""
    generated = generated_runs(table)
    taken = [
        (run.steps[-2].state if len(run.steps) > 1 else run.initial, run.steps[-1].event)
        for run in generated
        if run.source == "transition"
    ]
    assert sorted(taken) == sorted((t.source, t.event) for t in table.transitions)
    refused = {
        (run.steps[-1].state, run.steps[-1].event) for run in generated if run.source == "refusal"
    }
    accepted = {(t.source, t.event) for t in table.transitions}
    every = {(s, e) for s in table.state_names for e in table.event_names}
    assert refused == every - accepted
    assert all(r.steps[-1].refused for r in generated if r.source == "refusal")
    assert not any(s.refused for r in generated for s in r.steps[:-1])


def test_the_interpreter_reproduces_every_vector(runs: dict[str, list[Run]]) -> None:
    assert set(runs) == set(MACHINES)
    for name, table in MACHINES.items():
        sources = {run.source for run in runs[name]}
        assert sources == {"fixture", "demo", "transition", "refusal"}
        assert mismatches(table, runs[name]) == []


def test_recorded_runs_cover_every_bundled_fixture_and_demo_scenario(
    runs: dict[str, list[Run]],
) -> None:
    turns = {run.name for run in runs["turn"] if run.source in ("fixture", "demo")}
    assert {f"demo {s.name}: turn" for s in scenarios()} <= turns
    for file_name, text in examples():
        name = f"fixture {file_name.removesuffix('.json')}: turn"
        # A fixture whose stream no wire recognises never reaches the machines.
        assert (name in turns) is (check_fixture(text)["status"] != "invalid"), name


def test_vector_text_round_trips(runs: dict[str, list[Run]]) -> None:
    for name in MACHINES:
        machine, loaded = loads(dumps(name, runs[name]))
        assert (machine, loaded) == (name, runs[name])


@pytest.mark.parametrize(
    "text",
    ['{"format": "other", "version": 1}', '{"format": "callgate.vectors", "version": 1}', "[]"],
)
def test_a_document_that_is_no_vector_file_is_refused(text: str) -> None:
    with pytest.raises(VectorError):
        loads(text)


def test_a_recording_whose_steps_do_not_chain_is_an_error() -> None:
    steps = [
        TraceStep(0, 0, "turn", "turn", "streaming", "call", "streaming"),
        TraceStep(1, 0, "turn", "turn", "complete", "pass", "executable"),
    ]
    with pytest.raises(RecordingError, match="was in 'streaming' but stepped from 'complete'"):
        runs_of(steps, "broken", "fixture")


def test_mismatches_name_the_run_the_step_and_both_outcomes() -> None:
    wrong = Run("r", "transition", "streaming", (Move("done", "blocked"),))
    refused = Run("q", "refusal", "streaming", (Move("pass", "streaming", refused=True),))
    accepted = Run("p", "refusal", "streaming", (Move("call", "streaming", refused=True),))
    assert mismatches(TURN, [wrong, refused, accepted]) == [
        "r: step 0 'done' in 'streaming': expected -> blocked, the table gives -> complete",
        "p: step 0 'call' in 'streaming': expected refused, the table gives -> streaming",
    ]


# -- one changed transition fails the vectors everywhere --------------------------------


def mutated_slot() -> Table:
    """The slot table with one transition changed: the turn's end blocks a validated call."""
    changed = tuple(
        attrs.evolve(t, target="blocked") if (t.source, t.event) == ("validated", "turn_end") else t
        for t in SLOT.transitions
    )
    return attrs.evolve(SLOT, transitions=changed)


def test_a_changed_transition_fails_the_vectors_in_python(runs: dict[str, list[Run]]) -> None:
    problems = mismatches(mutated_slot(), runs["slot"])
    assert problems
    assert any("'turn_end' in 'validated'" in p for p in problems)


def single_changes(table: Table) -> list[Table]:
    """Every valid table that differs from ``table`` in one (state, event) target."""
    found = []
    for source in table.state_names:
        for event in table.event_names:
            kept = [t for t in table.transitions if (t.source, t.event) != (source, event)]
            old = next(
                (t.target for t in table.transitions if (t.source, t.event) == (source, event)),
                None,
            )
            for target in (None, *table.state_names):
                if target == old:
                    continue
                added = [] if target is None else [Transition(source, event, target, "changed")]
                try:
                    found.append(attrs.evolve(table, transitions=(*kept, *added)))
                except TableError:
                    continue
    return found


@given(tables(), st.data())
def test_any_single_change_of_any_table_fails_its_generated_vectors(
    table: Table, data: st.DataObject
) -> None:
    runs = generated_runs(table)
    changes = single_changes(table)
    assume(changes)  # a one-state table whose every change breaks it: nothing to draw
    changed = data.draw(st.sampled_from(changes))
    assert mismatches(changed, runs) != []


def node_runtime(name: str) -> Path:
    folder = RUNTIMES / name
    ready = shutil.which("node") is not None and (folder / "node_modules").is_dir()
    if not ready:
        message = f"needs node and 'npm ci' in runtimes/{name}"
        if os.environ.get("CALLGATE_REQUIRE_NODE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return folder


def run_node(folder: Path, machines: Path, vectors: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CALLGATE_MACHINES": str(machines), "CALLGATE_VECTORS": str(vectors)}
    return subprocess.run(
        ["node", "--test", "test/conformance.test.mjs"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(("runtime", "kind"), [("js", "xstate"), ("scxml", "scxml")])
def test_a_changed_transition_fails_the_vectors_in_node(
    runtime: str, kind: str, tmp_path: Path, runs: dict[str, list[Run]]
) -> None:
    folder = node_runtime(runtime)
    vectors = tmp_path / "vectors"
    vectors.mkdir()
    for file_name, text in vector_files(runs).items():
        (vectors / file_name).write_text(text, encoding="utf-8")
    good, bad = tmp_path / "good", tmp_path / "bad"
    for target, slot in ((good, SLOT), (bad, mutated_slot())):
        target.mkdir()
        for name, table in MACHINES.items():
            text = EXPORTS[kind](slot if name == "slot" else table)
            (target / f"{name}{SUFFIXES[kind]}").write_text(text, encoding="utf-8")
    passed = run_node(folder, good, vectors)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "# fail 0" in passed.stdout
    failed = run_node(folder, bad, vectors)
    assert failed.returncode != 0
    assert "not ok" in failed.stdout
    assert "slot: " in failed.stdout
    assert "'turn_end' in validated" in failed.stdout
    assert "# fail 1" in failed.stdout


def test_the_typescript_adapter_in_the_docs_fires_only_slot_events() -> None:
    import re

    text = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
    adapter = text.split("```ts", 1)[1].split("```", 1)[0]
    fired = set(re.findall(r"(?:stepOrThrow\(slot\.actor, |this\.fire\()'(\w+)'", adapter))
    fired |= set(re.findall(r"\? '(\w+)' : '(\w+)'", adapter)[0])
    assert fired == {
        "conflict",
        "identity",
        "args",
        "close",
        "accept",
        "reject",
        "bad_terminal",
        "stream_end",
    }
    assert fired <= set(SLOT.event_names)
    assert "'validated'" in adapter
    assert "'terminal'" in adapter
