"""Constants and models shared by the wire formats' stateful tests.

The streams' content (tools, arguments, calls, fragments) comes from callgate.testing, the
one generator of streams; what stays here is the tests' model of a call and its checks.
"""

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
from callgate.testing.cuts import pieces

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


def pieces_of(text: str) -> st.SearchStrategy[list[str]]:
    """``text`` cut into non-empty fragments by the kit's splits (one character to all)."""
    return pieces(text, empty=False)


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


# -- the model of each call --------------------------------------------------------------------


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
