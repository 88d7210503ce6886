"""The OpenAI strategy driven without a buffer, on a gate of the caller's own.

``OpenAIStrategy.new_accumulator(gate)`` and ``accumulate`` can be driven by hand, with any
:class:`TurnGate` (a subclass of the caller's, say). An ``n > 1`` stream's other choices
then each get a fresh gate like the caller's: of its type, made with its options, so each
choice is decided by the same rules. Under a buffer with an audit recorder the other
choices get plain gates, and the trace is the chosen choice's alone.
"""

from __future__ import annotations

from typing import Any

from callgate import Limits, LLMStreamBuffer, OpenAIStrategy, ToolSchemas, TurnGate
from callgate.audit.trace import Recorder
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class OwnGate(TurnGate):
    """A caller's gate that keeps the options it was made with, and counts its finishes."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.options = options
        self.finishes = 0

    def finish(self) -> None:
        self.finishes += 1
        super().finish()


def of_choice(chunks: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return [{**c, "choices": [{**d, "index": index} for d in c["choices"]]} for c in chunks]


def two_choices(finish: str) -> list[dict[str, Any]]:
    """Choice 0 then choice 1, each one get_weather call, each ended by ``finish``."""
    chunks = []
    for index in (0, 1):
        call = WireCall(f"call_{index}", "get_weather", ('{"city": ', '"Paris"}'))
        one = of_choice(openai_chunks([call], [0, 0, 0]), index)
        one[-1]["choices"][0]["finish_reason"] = finish
        chunks += one
    return chunks


def test_another_choice_gets_a_gate_of_the_callers_type_and_options() -> None:
    options: dict[str, Any] = {
        "schemas": ToolSchemas({"get_weather": SCHEMA}),
        "limits": Limits(max_argument_bytes=4096),
        "per_call_done": True,
        "requires_id": False,
        "empty_arguments_object": True,
        "preview": True,
        "strict_finish": True,
        "text_per_call": True,
    }
    strategy = OpenAIStrategy()
    acc = strategy.new_accumulator(OwnGate(**options))
    for chunk in two_choices("tool_calls"):
        strategy.accumulate(acc, chunk)
    gates = [(n, gate) for n, gate, _ in acc.turns()]
    assert [n for n, _ in gates] == [0, 1]
    for _, gate in gates:
        assert type(gate) is OwnGate
        assert isinstance(gate, OwnGate) and gate.options == options
    finishes = [gate.finishes for _, gate in gates if isinstance(gate, OwnGate)]
    assert finishes == [0, 1]  # another choice ends at its finish; the caller ends its own


def test_another_choice_is_decided_by_the_callers_rules() -> None:
    """Under strict_finish a stop-ended call is refused in every choice, not only the first."""
    strategy = OpenAIStrategy()
    for strict, state in ((True, "blocked"), (False, "validated")):
        gate = TurnGate(schemas=ToolSchemas({"get_weather": SCHEMA}), strict_finish=strict)
        acc = strategy.new_accumulator(gate)
        for chunk in two_choices("stop"):
            strategy.accumulate(acc, chunk)
        turns = acc.turns()
        assert [(n, [s.state for s in g.ordered_slots()]) for n, g, _ in turns] == [
            (0, [state]),
            (1, [state]),
        ]
        other = turns[1][1]
        assert other is not gate
        assert [f.code for f in other.findings] == (
            ["wrong_terminal_reason"] if strict else ["stop_finish_reason"]
        )
        message = strategy.message(acc)
        assert [c["index"] for c in message["choices"]] == [0, 1]
        assert message["choices"][1]["message"]["tool_calls"][0]["id"] == "call_1"


def test_the_callers_gate_hears_of_the_chunks_without_choices_and_only_those() -> None:
    """``on_stray`` is asked about a chunk the strategy cannot place (no ``choices``)."""
    strayed: list[Any] = []
    gate = TurnGate(schemas=ToolSchemas({"get_weather": SCHEMA}))
    gate.on_stray = strayed.append
    strategy = OpenAIStrategy()
    acc = strategy.new_accumulator(gate)
    usage = {"usage": {"total_tokens": 9}}
    error = {"error": {"code": "overloaded", "message": "try later"}}
    for chunk in (*two_choices("tool_calls")[:5], usage, error):
        strategy.accumulate(acc, chunk)
    assert strayed == [usage, error]
    assert [f.code for f in gate.findings] == ["provider_error"]


def test_a_recorded_stream_of_two_choices_traces_the_chosen_choice_alone() -> None:
    """The trace of an ``n > 1`` stream is the trace of its chosen choice's chunks alone."""
    traces = []
    for chunks in (two_choices("tool_calls"), two_choices("tool_calls")[:5]):
        recorder = Recorder()
        buffer = LLMStreamBuffer(tool_schemas={"get_weather": SCHEMA}, recorder=recorder)
        for chunk in chunks:
            buffer.add(chunk)
        buffer.end()
        assert buffer.verdict == "pass"
        assert buffer.findings == []
        traces.append(
            [(s.machine, s.instance, s.source, s.event, s.target) for s in recorder.steps]
        )
    both, chosen = traces
    assert [(c.index, c.verdict) for c in buffer.choices] == [(0, "pass")]
    assert both == chosen  # another choice's finish adds no step
    opened = [step for step in both if step[3] == "identity"]
    assert opened == [("slot", "slot 0", "unseen", "identity", "accumulating")]
