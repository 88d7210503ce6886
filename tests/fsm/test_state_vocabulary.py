"""The typed state vocabulary: properties in the tables, Literal aliases, no bare state names.

Every state name lives in a table under ``src/callgate/fsm/``; code above the tables asks a
table what holds in a state (final, a tag, a status) instead of comparing state names. The
last tests read every module outside ``fsm/`` and fail on a comparison against any state
name of any table.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, get_args

import pytest

from callgate.driver.loop import Verdict
from callgate.fsm import MACHINES, Event, Interpreter, State, Table, TableError, Transition
from callgate.fsm.detector import DetectorState
from callgate.fsm.display import HOLDS, STATUS, DisplayState
from callgate.fsm.export import dumps as dump_json
from callgate.fsm.export import from_dict, loads, to_dict
from callgate.fsm.release import ReleaseState
from callgate.fsm.scxml import to_scxml
from callgate.fsm.slot import SlotState
from callgate.fsm.turn import TurnState
from callgate.fsm.verdict import VERDICT, VerdictState
from callgate.fsm.vote import VoteState
from callgate.fsm.xstate import to_xstate

SRC = Path(__file__).resolve().parents[2] / "src" / "callgate"

ALIASES: dict[str, Any] = {
    "slot": SlotState,
    "turn": TurnState,
    "detector": DetectorState,
    "display": DisplayState,
    "release": ReleaseState,
    "vote": VoteState,
    "verdict": VerdictState,
}


def test_every_machine_has_a_literal_alias_naming_its_states_in_order() -> None:
    assert set(ALIASES) == set(MACHINES)
    for name, alias in ALIASES.items():
        assert get_args(alias) == MACHINES[name].state_names, name


def test_the_verdict_words_are_the_verdict_machines_final_states() -> None:
    assert set(get_args(Verdict)) == VERDICT.final_states == {"pass", "fail", "not_applicable"}


# -- the properties the code above the tables asks ------------------------------------


def test_the_display_tables_properties_replace_the_hand_copied_sets() -> None:
    display = MACHINES["display"]
    assert display.tagged("holds") == HOLDS == {"holding", "pending"}
    assert display.tagged("settled") == {"flowing", "released", "executed", "failed"}
    assert STATUS == {
        "flowing": None,
        "holding": "call_pending",
        "pending": "call_pending",
        "released": None,
        "executed": "call_executed",
        "failed": "call_failed",
        "ended": None,
    }
    assert display.final_states == {"ended"}


def test_slot_and_turn_properties() -> None:
    slot, turn = MACHINES["slot"], MACHINES["turn"]
    assert slot.final_states == {"validated", "blocked"}
    assert slot.tagged("appending") == {"accumulating"}
    assert slot.tagged("replaying") == {"replaying"}
    assert slot.tagged("checking") == {"terminal"}
    assert slot.tagged("valid") == {"validated"}
    assert slot.tagged("blocks") == {"blocked"}
    assert turn.final_states == {"executable", "blocked", "not_applicable"}
    assert turn.tagged("runs") == {"executable"}
    assert turn.tagged("blocks") == {"blocked"}
    assert turn.tagged("no_calls") == {"not_applicable"}
    assert [turn.status(s) for s in turn.state_names] == [
        "fail",
        "fail",
        "pass",
        "fail",
        "not_applicable",
    ]


def test_detector_states_name_their_reader() -> None:
    detector = MACHINES["detector"]
    assert detector.tagged("scans") == {"printing", "matching_prefix"}
    assert detector.tagged("passes") == {"printing"}
    assert detector.tagged("collects") == {"in_block"}
    assert detector.tagged("reasons") == {"reasoning"}


def test_table_queries_answer_for_every_state_and_refuse_an_unknown_one() -> None:
    for table in MACHINES.values():
        interpreter = Interpreter[str](table)
        for state in table.states:
            assert table.is_final(state.name) is state.final is interpreter.is_final(state.name)
            assert table.status(state.name) == state.status == interpreter.status(state.name)
            for tag in table.tag_names:
                assert interpreter.has(state.name, tag) is (state.name in table.tagged(tag))
        assert table.tagged("no such tag") == frozenset()
        with pytest.raises(KeyError, match="has no state 'nowhere'"):
            table.is_final("nowhere")
        with pytest.raises(KeyError, match="has no state 'nowhere'"):
            table.status("nowhere")


def test_the_interpreter_finds_a_transition_or_none_and_types_its_target() -> None:
    slot = Interpreter[SlotState](MACHINES["slot"])
    found = slot.find("accumulating", "close")
    assert found is not None and slot.target(found) == "terminal"
    assert slot.find("unseen", "accept") is None


TOY_STATES = (
    State("idle", "waiting", tags={"open"}),
    State("done", "over", final=True, tags={"closed", "quiet"}, status="finished"),
)
TOY = Table(
    name="toy",
    doc="two states",
    states=TOY_STATES,
    events=(Event("go", "finish"),),
    transitions=(Transition("idle", "go", "done", "finish"),),
    initial="idle",
)


@pytest.mark.parametrize("tag", ["", "final"])
def test_a_tag_that_is_empty_or_final_is_rejected(tag: str) -> None:
    with pytest.raises(TableError, match="tag"):
        Table(
            name="bad",
            doc="a bad tag",
            states=(State("a", "a", tags={tag}), State("b", "b", final=True)),
            events=(Event("go", "go"),),
            transitions=(Transition("a", "go", "b", "go"),),
            initial="a",
        )


def test_tags_and_status_survive_the_json_export_and_are_optional_there() -> None:
    data = to_dict(TOY)
    assert data["states"] == [
        {"name": "idle", "doc": "waiting", "final": False, "tags": ["open"]},
        {
            "name": "done",
            "doc": "over",
            "final": True,
            "tags": ["closed", "quiet"],
            "status": "finished",
        },
    ]
    assert loads(dump_json(TOY)) == TOY
    bare = json.loads(dump_json(TOY))
    for state in bare["states"]:
        state.pop("tags")
        state.pop("status", None)
    plain = from_dict(bare)
    assert [(s.tags, s.status) for s in plain.states] == [(frozenset(), None)] * 2


def test_tags_and_status_reach_xstate_and_scxml() -> None:
    states = to_xstate(TOY)["states"]
    assert states["idle"]["tags"] == ["open"]
    assert states["done"]["tags"] == ["closed", "final", "quiet"]
    assert states["done"]["meta"] == {"status": "finished"}
    assert "<!-- done: over; tags: closed, quiet; status: finished -->" in to_scxml(TOY)


# -- no state name compared outside the tables -----------------------------------------

STATE_NAMES = frozenset(name for table in MACHINES.values() for name in table.state_names)


def _names_in(node: ast.expr) -> list[str]:
    """State names written as string literals in ``node`` (alone, or in a tuple/list/set)."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [
        item.value
        for item in items
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
        if item.value in STATE_NAMES
    ]


def state_comparisons(source: str) -> list[tuple[int, str]]:
    """Each comparison (``==``, ``!=``, ``in``, ``not in``, a ``case``) against a state name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += [(node.lineno, name) for name in _names_in(side)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, name) for name in _names_in(node.value)]
    return found


def test_the_scan_finds_each_kind_of_state_name_comparison() -> None:
    source = "\n".join(
        [
            "a = slot.state == 'validated'",
            "b = view.state in ('holding', 'pending')",
            "c = 'ended' != view.state",
            "d = turn not in {'executable'}",
            "match state:",
            "    case 'printing':",
            "        pass",
            "e = kind == 'content'",
            "f = state in HOLDS",
        ]
    )
    assert state_comparisons(source) == [
        (1, "validated"),
        (2, "holding"),
        (2, "pending"),
        (3, "ended"),
        (4, "executable"),
        (6, "printing"),
    ]


def test_no_state_name_is_compared_outside_the_tables() -> None:
    outside = [p for p in sorted(SRC.rglob("*.py")) if "fsm" not in p.relative_to(SRC).parts]
    assert len(outside) > 40
    found = [
        f"{path.relative_to(SRC)}:{line}: {name!r}"
        for path in outside
        for line, name in state_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "ask the table (is_final, tagged, status) instead"
