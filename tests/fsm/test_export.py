"""JSON export (format v1): exact round trips, and clear errors for non-table documents."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.fsm import MACHINES, Event, State, Table, TableError, Transition
from callgate.fsm.export import (
    FORMAT,
    VERSION,
    ExportFormatError,
    dumps,
    from_dict,
    loads,
    to_dict,
)

names = st.text(min_size=1, max_size=8)
docs = st.text(max_size=20)
labels = st.none() | st.text(max_size=8)


@st.composite
def tables(draw: st.DrawFn) -> Table:
    """A valid table: a chain through every state ending in final ones, plus random extras.

    The chain makes every state reachable and able to finish; the last ``finals`` states
    are final, and an extra transition from a final state only targets a final state.
    """
    state_names = draw(st.lists(names, min_size=1, max_size=6, unique=True))
    event_names = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    finals = draw(st.integers(min_value=1, max_value=len(state_names)))
    first_final = len(state_names) - finals
    event = st.sampled_from(event_names)
    edges: dict[tuple[str, str], str] = {}
    for source, target in itertools.pairwise(state_names):
        edges[source, draw(event)] = target
    extras = draw(
        st.lists(
            st.tuples(
                st.integers(0, len(state_names) - 1), event, st.integers(0, len(state_names) - 1)
            ),
            max_size=10,
        )
    )
    for i, ev, j in extras:
        target = max(j, first_final) if i >= first_final else j
        edges.setdefault((state_names[i], ev), state_names[target])
    if not edges:
        edges[state_names[-1], draw(event)] = state_names[-1]
    transitions = [
        Transition(source, ev, target, draw(docs), draw(labels), draw(labels))
        for (source, ev), target in edges.items()
    ]
    used = {t.event for t in transitions}
    return Table(
        name=draw(names),
        doc=draw(docs),
        states=[State(n, draw(docs), i >= first_final) for i, n in enumerate(state_names)],
        events=[Event(n, draw(docs)) for n in event_names if n in used],
        transitions=transitions,
        initial=state_names[0],
    )


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_every_machine_round_trips_exactly(name: str) -> None:
    table = MACHINES[name]
    text = dumps(table)
    assert loads(text) == table
    assert dumps(loads(text)) == text
    assert from_dict(to_dict(table)) == table


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_dumps_is_indented_json_in_definition_order_ending_in_newline(name: str) -> None:
    table = MACHINES[name]
    text = dumps(table)
    assert text.endswith("}\n")
    data = json.loads(text)
    assert (data["format"], data["version"]) == (FORMAT, VERSION) == ("callgate.table", 1)
    assert [s["name"] for s in data["states"]] == list(table.state_names)
    assert [e["name"] for e in data["events"]] == list(table.event_names)
    assert [(t["source"], t["event"]) for t in data["transitions"]] == [
        (t.source, t.event) for t in table.transitions
    ]


@given(tables())
def test_generated_tables_round_trip_exactly(table: Table) -> None:
    text = dumps(table)
    assert loads(text) == table
    assert dumps(loads(text)) == text


def document() -> dict[str, Any]:
    return to_dict(MACHINES["turn"])


def test_wrong_format_tag_is_rejected() -> None:
    data = document() | {"format": "other.table"}
    with pytest.raises(
        ExportFormatError, match=r"expected format 'callgate.table' version 1, got 'other.table'"
    ):
        from_dict(data)


def test_missing_format_tag_is_rejected() -> None:
    data = document()
    del data["format"]
    with pytest.raises(ExportFormatError, match="got None version 1"):
        from_dict(data)


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_wrong_version_is_rejected(version: object) -> None:
    with pytest.raises(ExportFormatError, match=f"got 'callgate.table' version {version!r}"):
        from_dict(document() | {"version": version})


@pytest.mark.parametrize("field", ["name", "doc", "initial", "states", "events", "transitions"])
def test_missing_top_level_field_is_rejected_by_name(field: str) -> None:
    data = document()
    del data[field]
    with pytest.raises(ExportFormatError, match=f"missing or mistypes a field: '{field}'"):
        from_dict(data)


def test_missing_field_inside_a_state_is_rejected() -> None:
    data = document()
    del data["states"][1]["final"]
    with pytest.raises(ExportFormatError, match="missing or mistypes a field: 'final'"):
        from_dict(data)


def test_missing_field_inside_a_transition_is_rejected() -> None:
    data = document()
    del data["transitions"][0]["target"]
    with pytest.raises(ExportFormatError, match="missing or mistypes a field: 'target'"):
        from_dict(data)


def test_list_item_that_is_not_an_object_is_rejected() -> None:
    data = document() | {"events": ["call", "end"]}
    with pytest.raises(ExportFormatError, match="missing or mistypes a field"):
        from_dict(data)


@pytest.mark.parametrize("text", ["[]", '"table"', "1", "null"])
def test_document_that_is_not_an_object_is_rejected(text: str) -> None:
    with pytest.raises(ExportFormatError, match="a table document must be a JSON object"):
        loads(text)


def test_well_formed_document_of_an_invalid_machine_raises_table_error() -> None:
    data = document() | {"initial": "nowhere"}
    with pytest.raises(TableError, match="initial state 'nowhere' is not a state"):
        from_dict(data)


def test_export_format_error_is_a_value_error() -> None:
    assert issubclass(ExportFormatError, ValueError)
