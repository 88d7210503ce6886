"""Constants and generators shared by the wire formats' stateful tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from callgate import Finding, LLMStreamBuffer, TurnGate
from callgate.cli.check import report
from callgate.gate.findings import CODES

Expectation = tuple[frozenset[str], int | None]
"""A finding a step must add: one of these codes, on this slot (None: turn-wide)."""

JSON_CODES = frozenset(
    {
        "malformed_json",
        "trailing_data",
        "non_object_arguments",
        "duplicate_key",
        "non_finite_number",
        "lone_surrogate",
    }
)

SLOT_RANK = {
    "unseen": 0,
    "accumulating": 1,
    "replaying": 1,
    "terminal": 2,
    "validated": 3,
    "blocked": 4,
}

ANY_JSON_TYPE = {"type": ["null", "boolean", "integer", "number", "string", "array", "object"]}

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": True,
    },
    "search": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["query", "limit"],
        "additionalProperties": True,
    },
    "store": {
        "type": "object",
        "properties": {"key": {"type": "string"}, "value": ANY_JSON_TYPE},
        "required": ["key", "value"],
        "additionalProperties": True,
    },
    "ping": {"type": "object", "additionalProperties": True},
}

JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)

REQUIRED_ARGUMENTS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "get_weather": {"city": st.text(max_size=12)},
    "search": {"query": st.text(max_size=12), "limit": st.integers(1, 10**6)},
    "store": {"key": st.text(max_size=8), "value": JSON_VALUES},
    "ping": {},
}


SAFE_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
"""Text of any UTF-8 character (no surrogates): the gemini, cohere and ollama tests' values."""


# The gemini, cohere and ollama tests use looser schemas than the ones above.
LOOSE_TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
    "search": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
    "ping": {"type": "object"},
}


LOOSE_JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | SAFE_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SAFE_TEXT, inner, max_size=3),
    max_leaves=6,
)


REQUIRED: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "get_weather": {"city": SAFE_TEXT},
    "search": {"query": SAFE_TEXT},
    "ping": {},
}


MACHINE_SETTINGS = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def pieces_of(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into consecutive pieces of 1-8 characters."""
    parts, pos = [], 0
    while pos < len(text):
        size = draw(st.integers(1, 8))
        parts.append(text[pos : pos + size])
        pos += size
    return parts


def one(code: str) -> frozenset[str]:
    assert code in CODES
    return frozenset({code})


def match_findings(new: list[Finding], predicted: list[Expectation]) -> None:
    """Every predicted finding is among ``new``, and ``new`` holds nothing else."""
    remaining = list(new)
    for codes, slot in predicted:
        hit = next((f for f in remaining if f.code in codes and f.slot == slot), None)
        assert hit is not None, f"expected one of {sorted(codes)} on slot {slot}; got {new}"
        remaining.remove(hit)
    assert not remaining, f"unexpected findings {remaining} (predicted {predicted})"


JUNK: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**13),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def value_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside nested dicts and lists."""
    yield prefix
    if isinstance(value, (dict, list)):
        for key, child in value.items() if isinstance(value, dict) else enumerate(value):
            yield from value_paths(child, (*prefix, key))


def canonical(value: Any) -> str:
    """JSON text that tells true from 1; for exact comparisons."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# -- the plan of one turn, and the model of each call ------------------------------------------

ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True)
class CallPlan:
    """One generated call: the unique part of its id, its tool, arguments and fragments."""

    suffix: str
    name: str
    arguments: dict[str, Any]
    fragments: tuple[str, ...]


@dataclass(frozen=True)
class StreamPlan:
    """One generated turn: optional text, then its calls."""

    text_parts: tuple[str, ...]
    calls: tuple[CallPlan, ...]


@st.composite
def arguments_for(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A JSON object for tool ``name``: its required keys plus a few generated ones."""
    extra = draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3))
    required = {key: draw(values) for key, values in REQUIRED_ARGUMENTS[name].items()}
    return {**extra, **required}


@st.composite
def stream_plans(
    draw: st.DrawFn,
    *,
    alphabet: str = ID_ALPHABET,
    id_size: tuple[int, int] = (4, 24),
    empty_arguments: bool = False,
) -> StreamPlan:
    """Optional text, then 1-4 calls with distinct ids and fragmented JSON arguments.

    ``empty_arguments``: a call with no arguments may stream no fragment at all.
    """
    text = draw(st.just("") | st.text(min_size=1, max_size=16))
    count = draw(st.integers(1, 4))
    suffixes = draw(
        st.lists(
            st.text(alphabet, min_size=id_size[0], max_size=id_size[1]),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    calls = []
    for suffix in suffixes:
        name = draw(st.sampled_from(sorted(TOOL_SCHEMAS)))
        arguments = draw(arguments_for(name))
        separators = draw(st.sampled_from([(", ", ": "), (",", ":")]))
        serialised = json.dumps(arguments, ensure_ascii=draw(st.booleans()), separators=separators)
        fragments = draw(pieces_of(serialised))
        if empty_arguments and not arguments and draw(st.booleans()):
            fragments = []
        calls.append(CallPlan(suffix, name, arguments, tuple(fragments)))
    return StreamPlan(tuple(draw(pieces_of(text))), tuple(calls))


@dataclass
class CallModel:
    """What a test knows about one call: its plan, what was sent, and its expected state."""

    key: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    fragments: list[str]
    pieces: int
    """How many events the call takes on its wire (its opening, fragments, any done)."""
    sent: int = 0
    received: list[str] = field(default_factory=list)
    closed: bool = False
    validated: bool = False
    blocked: bool = False
    corrupt: bool = False

    @property
    def raw(self) -> str:
        return "".join(self.fragments)

    @property
    def started(self) -> bool:
        return self.sent > 0

    @property
    def pending(self) -> bool:
        return self.sent < self.pieces

    @property
    def state(self) -> str:
        if self.blocked:
            return "blocked"
        return "validated" if self.validated else "accumulating"

    def unsent_fragments(self) -> list[int]:
        """Positions in ``fragments`` not sent yet (piece ``j + 1`` is fragment ``j``)."""
        return [j for j in range(len(self.fragments)) if j + 1 >= self.sent]

    def corrupt_with(self, kind: str, where: int) -> None:
        """Break the JSON not sent yet so that it no longer parses.

        ``nul``: a NUL inside an unsent fragment (at ``where``); ``cut_closing_brace``:
        the last fragment loses its ``}``; ``trailing_value``: a second value follows.
        """
        last = len(self.fragments) - 1
        if kind == "nul":
            unsent = self.unsent_fragments()
            j = unsent[where % len(unsent)]
            text = self.fragments[j]
            at = where % (len(text) + 1)
            self.fragments[j] = text[:at] + "\x00" + text[at:]
        elif kind == "cut_closing_brace":
            assert self.fragments[last].endswith("}")
            self.fragments[last] = self.fragments[last][:-1]
        else:
            self.fragments[last] += " {}"
        self.corrupt = True
        with pytest.raises(ValueError):
            json.loads(self.raw)


def check_slot_ranks(gate: TurnGate, ranks: dict[int, int]) -> None:
    """No slot vanishes or moves back in the slot machine's order; ``ranks`` is updated."""
    for key in ranks:
        assert key in gate.slots, f"slot {key} vanished"
    for key, slot in gate.slots.items():
        rank = SLOT_RANK[slot.state]
        assert rank >= ranks.get(key, 0), f"slot {key} moved back to {slot.state}"
        ranks[key] = rank


def calls_of(buffer: LLMStreamBuffer) -> list[tuple[Any, ...]]:
    """The report's calls as (slot, id, name, arguments)."""
    return [(c["slot"], c["id"], c["name"], c["arguments"]) for c in report(buffer)["calls"]]


def codes(buffer: LLMStreamBuffer) -> list[tuple[str, Any]]:
    """The report's findings as (code, slot)."""
    return [(f["code"], f["slot"]) for f in report(buffer)["findings"]]


def reported_state(buffer: LLMStreamBuffer, state: str) -> str:
    """A call's state as the report gives it: every call of a blocked turn is blocked."""
    return "blocked" if buffer.turn_state == "blocked" else state
