"""Constants and models shared by the wire formats' stateful tests.

The streams' content (tools, arguments, calls, fragments) comes from callgate.testing, the
one generator of streams; what stays here is the tests' model of a call and its checks.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant

from callgate import Finding, LLMStreamBuffer, TurnGate
from callgate.cli.check import check_stream, report
from callgate.cli.fixtures import examples
from callgate.gate.findings import CODES
from callgate.testing.cuts import pieces
from callgate.testing.plans import TOOLS
from callgate.testing.wires import GeminiEncoder, OllamaEncoder, OpenAIEncoder, WireCall

FIXTURES: dict[str, dict[str, Any]] = {name: json.loads(text) for name, text in examples()}
"""Every bundled example stream (callgate/examples), parsed once: the one fixture loader."""


def provider_error_only(report: Mapping[str, Any]) -> str:
    """A text turn the provider's error cut: ``fail``, not applicable, one ``provider_error``.

    Returns that finding's message, for the test to check what it names.
    """
    assert (report["status"], report["applicable"], report["executable"]) == (
        "fail",
        False,
        False,
    )
    assert [(f["code"], f["severity"], f["slot"]) for f in report["findings"]] == [
        ("provider_error", "error", None)
    ]
    message: str = report["findings"][0]["message"]
    return message


def fixtures(prefix: str) -> dict[str, dict[str, Any]]:
    """The bundled examples whose names start with ``prefix`` (one wire's)."""
    return {name: data for name, data in FIXTURES.items() if name.startswith(prefix)}


def stream_of(name: str) -> list[Any]:
    """A bundled example's chunks (or events, as its wire calls them)."""
    data = FIXTURES[name]
    chunks: list[Any] = data["events"] if "events" in data else data["chunks"]
    return chunks


def fed(chunks: list[Any], schemas: Mapping[str, Any] | None = None) -> LLMStreamBuffer:
    """A buffer fed ``chunks`` and ended (the kit's tools unless ``schemas``)."""
    buffer = LLMStreamBuffer(tool_schemas=TOOLS if schemas is None else schemas)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


def played(strategy: Any, chunks: list[Any], **options: Any) -> dict[str, Any]:
    """What a buffer on ``strategy`` makes of ``chunks``, to compare two paths by: the
    findings, the message, the text after each chunk, the turn state, the verdict, the calls."""
    buffer = LLMStreamBuffer(strategy=strategy, **options)
    shown = []
    for chunk in chunks:
        buffer.add(copy.deepcopy(chunk))
        shown.append(buffer.text())
    buffer.end()
    return {
        "findings": [(f.code, f.message, f.slot) for f in buffer.findings],
        "message": buffer.as_dict(),
        "finished": buffer.is_finished(),
        "shown": [*shown, buffer.text()],
        "turn": buffer.turn_state,
        "verdict": buffer.verdict,
        "calls": buffer.calls,
    }


def fed_fixture(name: str) -> LLMStreamBuffer:
    """A buffer fed a bundled example with its own tools."""
    return fed(stream_of(name), FIXTURES[name]["tool_schemas"])


def checked(name: str) -> dict[str, Any]:
    """The check report of a bundled example, run through check_stream."""
    return check_stream(stream_of(name), FIXTURES[name]["tool_schemas"])


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


def fragments_of(text: str) -> st.SearchStrategy[tuple[str, ...]]:
    """``text`` cut into non-empty fragments by the kit's splits (one character to all)."""
    return pieces(text, empty=False).map(tuple)


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

    def _closing_fragment(self) -> int:
        """The position of the fragment that holds the closing ``}`` (fragments may be empty)."""
        j = max(k for k, text in enumerate(self.fragments) if text)
        assert self.fragments[j].endswith("}")
        return j

    def corrupt_with(self, kind: str, where: int) -> None:
        """Break the JSON not sent yet so that it no longer parses.

        ``nul``: a NUL inside an unsent fragment (at ``where``); ``cut_closing_brace``:
        the fragment holding the ``}`` loses it (a second value follows instead when that
        fragment was already sent); ``trailing_value``: a second value follows.
        """
        last = len(self.fragments) - 1
        if kind == "nul":
            unsent = self.unsent_fragments()
            j = unsent[where % len(unsent)]
            text = self.fragments[j]
            at = where % (len(text) + 1)
            self.fragments[j] = text[:at] + "\x00" + text[at:]
        elif kind == "cut_closing_brace" and self._closing_fragment() in self.unsent_fragments():
            j = self._closing_fragment()
            self.fragments[j] = self.fragments[j][:-1]
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


class WireInvariants(RuleBasedStateMachine):
    """The invariants every wire machine checks after each step, against its own model.

    A machine keeps ``buffer``, ``ranks`` (``{}`` at the start) and ``terminal_sent``, and
    says what its model expects: ``model_slots()`` and ``model_turn()``.
    """

    buffer: LLMStreamBuffer
    ranks: dict[int, int]
    terminal_sent: bool

    def model_slots(self) -> dict[int, str]:
        """Each started call's expected slot state, by slot key."""
        raise NotImplementedError

    def model_turn(self) -> str:
        """The turn state the model expects."""
        raise NotImplementedError

    @invariant()
    def slot_states_never_move_back(self) -> None:
        if self.buffer.gate is not None:
            check_slot_ranks(self.buffer.gate, self.ranks)

    @invariant()
    def never_executable_before_terminal_evidence(self) -> None:
        if self.buffer.executable:
            assert self.terminal_sent
            assert not [f for f in self.buffer.findings if f.severity == "error"]

    @invariant()
    def slots_and_turn_follow_the_model(self) -> None:
        if self.buffer.gate is None:
            assert not self.model_slots()
            return
        actual = {key: slot.state for key, slot in self.buffer.gate.slots.items()}
        assert actual == self.model_slots()
        assert self.buffer.turn_state == self.model_turn()

    def recheck_invariants(self) -> None:
        """The invariants, run between the steps a teardown takes by itself."""
        self.slot_states_never_move_back()
        self.never_executable_before_terminal_evidence()
        self.slots_and_turn_follow_the_model()


def calls_of(buffer: LLMStreamBuffer) -> list[tuple[Any, ...]]:
    """The report's calls as (slot, id, name, arguments)."""
    return [(c["slot"], c["id"], c["name"], c["arguments"]) for c in report(buffer)["calls"]]


def codes(buffer: LLMStreamBuffer) -> list[tuple[str, Any]]:
    """The report's findings as (code, slot)."""
    return [(f["code"], f["slot"]) for f in report(buffer)["findings"]]


def reported_state(buffer: LLMStreamBuffer, state: str) -> str:
    """A call's state as the report gives it: every call of a blocked turn is blocked."""
    return "blocked" if buffer.turn_state == "blocked" else state


# -- the stream=false message of a clean turn, per wire --------------------------------------


KEEPALIVE: dict[str, dict[str, Any]] = {
    "openai": OpenAIEncoder().chunk({}),
    "anthropic": {"type": "ping"},
    "openai-responses": {"type": "keepalive"},
    "gemini": GeminiEncoder().chunk([{"text": ""}]),
    "ollama": OllamaEncoder().line({}),
}
"""A chunk that carries nothing, on the wires that have one."""


def function_calls(calls: list[CallModel]) -> list[dict[str, Any]]:
    """The calls as OpenAI and Cohere messages list them: arguments as their raw text."""
    return [
        {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.raw}}
        for c in calls
    ]


def whole_message(encoder: Any, text: str, calls: list[CallModel]) -> dict[str, Any]:
    """The response a clean turn of a whole-call wire (Gemini, Ollama) assembles into."""
    sent = [WireCall(c.call_id, c.name, key=c.key, arguments=c.arguments) for c in calls]
    if encoder.wire == "ollama":
        message: dict[str, Any] = {"content": text}
        if "thinking" in encoder.quirks:
            message["thinking"] = "Tools apply."
        if calls:
            message["tool_calls"] = [encoder.entry(c) for c in sent]
        response: dict[str, Any] = encoder.line(message, done=True)
        return response
    parts = [{"text": "Tools apply.", "thought": True}] if "thought" in encoder.quirks else []
    parts += [{"text": text}] if text else []
    parts += [encoder.part(c) for c in sent]
    response = encoder.finish([])[0]
    response["candidates"][0]["content"]["parts"] = parts
    return response


def wire_message(wire: str, encoder: Any, text: str, calls: list[CallModel]) -> dict[str, Any]:
    """The message a clean turn of ``wire`` assembles into, built from the plan alone.

    ``encoder`` is the kit's encoder that wrote the stream (its envelope and usage).
    """
    end = encoder.finish([c.key for c in calls])
    if wire == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        return {**message, "tool_calls": function_calls(calls)} if calls else message
    if wire == "anthropic":
        start = encoder.prelude([])[0].chunk["message"]
        usage = {**start["usage"], **end[0]["usage"]}
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "tool_use", "id": c.call_id, "name": c.name, "input": c.arguments}
            for c in calls
        ]
        return {
            **start,
            "stop_reason": end[0]["delta"]["stop_reason"],
            "usage": usage,
            "content": content,
        }
    if wire == "bedrock":
        blocks: list[dict[str, Any]] = [{"text": text}] if text else []
        blocks += [
            {"toolUse": {"toolUseId": c.call_id, "name": c.name, "input": c.arguments}}
            for c in calls
        ]
        return {
            "output": {"message": {"role": "assistant", "content": blocks}},
            "stopReason": end[0]["messageStop"]["stopReason"],
            **encoder.epilogue()[0]["metadata"],
        }
    if wire in ("gemini", "ollama"):
        return whole_message(encoder, text, calls)
    if wire == "openai-responses":
        response: dict[str, Any] = end[0]["response"]
        return response
    assert wire == "cohere", wire
    message = {"role": "assistant"}
    if text:
        message["content"] = [{"type": "text", "text": text}]
    plan = [p.chunk for p in encoder.prelude([]) if p.chunk["type"] == "tool-plan-delta"]
    if plan:
        message["tool_plan"] = "".join(c["delta"]["message"]["tool_plan"] for c in plan)
    if calls:
        message["tool_calls"] = function_calls(calls)
    return {
        "id": encoder.prelude([])[0].chunk["id"],
        "finish_reason": end[0]["delta"]["finish_reason"],
        "message": message,
        "usage": end[0]["delta"]["usage"],
    }
