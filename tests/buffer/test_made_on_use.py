"""What a turn only sometimes needs is made on first use: the ledger and the forming calls.

A buffer is built per turn; a turn whose calls no driver runs never reads its ledger, and
one nobody previews never reads its forming calls. Either, made late, reads as the one a
buffer made at once would: the ledger counts every turn started before it, the forming
calls show a whole-arguments wire's values however early or late they were first read.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import callgate.buffer as buffer_module
from callgate import LLMStreamBuffer
from callgate.ledger import Ledger
from callgate.testing.wires import WireCall, encoder
from partial_cases import play


def made(monkeypatch: pytest.MonkeyPatch, name: str) -> list[object]:
    """Every object the buffer module's class ``name`` makes from now on."""
    seen: list[object] = []
    real = getattr(buffer_module, name)

    def making(*args: Any, **kwargs: Any) -> object:
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(buffer_module, name, making)
    return seen


def one_call(wire: str) -> list[Any]:
    """A stream of ``wire`` with one ``write`` call."""
    enc = encoder(wire)
    arguments = {"path": "a.py", "n": [1, 2.5]}
    text = json.dumps(arguments)
    call = WireCall("call_1", "write", (text,), key=enc.first_key(False), arguments=arguments)
    chunks = [piece.chunk for piece in enc.prelude([])] + enc.open(call)
    if enc.fragmented:
        chunks += enc.fragment(call, text)
    chunks += enc.close(call)
    enc.state["reason"] = "tool_calls"
    return enc.finalise(chunks + enc.finish([call]) + enc.epilogue())


def test_a_turn_that_never_reads_its_ledger_or_forming_calls_makes_neither(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ledgers, partials = made(monkeypatch, "Ledger"), made(monkeypatch, "PartialCalls")
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    play(one_call("anthropic"), buffer, read=False)
    buffer.as_dict()
    assert buffer.verdict == "pass"
    assert ledgers == [] and partials == []
    assert buffer.partial_calls()[0].arguments == {"path": "a.py", "n": [1, 2.5]}
    assert buffer.partial_calls() == buffer.partial_calls() and len(partials) == 1


def test_a_ledger_made_late_counts_the_turns_before_it() -> None:
    buffer = LLMStreamBuffer()
    buffer.reset()
    buffer.reset()
    ledger = buffer.ledger
    assert ledger.turn == 3 and buffer.ledger is ledger
    buffer.ledger.repeat_turn()
    buffer.reset()
    assert ledger.turn == 3
    buffer.reset()
    assert ledger.turn == 4
    given = Ledger()
    buffer.ledger = given
    buffer.reset()
    assert buffer.ledger is given and given.turn == 1
    assert LLMStreamBuffer(ledger=given).ledger is given and given.turn == 2


@pytest.mark.parametrize("wire", ["gemini", "ollama", "openai", "anthropic"])
@pytest.mark.parametrize("first_read", [0, 1, -1], ids=["before", "after-first", "at-end"])
def test_forming_calls_read_first_at_any_point_show_the_whole_value(
    wire: str, first_read: int
) -> None:
    """A wire that sends arguments whole (Gemini, Ollama) shows them as soon as the call
    came, whether the forming calls were first read before the stream resolved or after."""
    chunks = one_call(wire)
    arguments = {"path": "a.py", "n": [1, 2.5]}
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    at = first_read % (len(chunks) + 1)
    for n, chunk in enumerate(chunks):
        if n == at:
            buffer.partial_calls()
        buffer.add(chunk)
    if at == len(chunks):
        buffer.partial_calls()
    records = buffer.partial_calls()
    assert [r.arguments for r in records] == [arguments]
    buffer.end()
    assert buffer.partial_calls()[0].complete and buffer.verdict == "pass"
