"""LLMStreamBuffer over generated OpenAI and Anthropic streams: interleaved calls and faults.

The stateful test draws one assistant turn (optional text, then 1-4 tool calls with
generated JSON arguments cut into fragments of 1-8 characters) and emits it piece by piece
in a random interleaving, injecting at most one of each fault. The test keeps its own model
of every call (started, closed, validated, blocked) and predicts, for every step, exactly
which findings the step adds; the buffer's slots and turn must follow that model.

A small per-format encoder turns the primitives (start, fragment, close, turn end) into
that format's chunk dicts; everything else is shared.
"""

from __future__ import annotations

import itertools
import json
import time
import tracemalloc
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from callgate import BufferUsageError, LLMStreamBuffer
from callgate.cli.check import report
from callgate.gate.strictjson import parse_arguments
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from callgate.testing.plans import StreamPlan, stream_plans
from wire_common import (
    JSON_CODES,
    CallModel,
    Expectation,
    check_slot_ranks,
    match_findings,
    one,
    reported_state,
)

Chunk = dict[str, Any]


FAULTS = ("index_reuse", "truncation", "duplicate_terminal", "late_fragment", "corrupt_json")
"""The faults a run may inject; each run draws which are allowed, and uses each once at most."""

FAULT_MENUS = [
    frozenset(),
    *(frozenset({fault}) for fault in FAULTS),
    *(frozenset(pair) for pair in itertools.combinations(FAULTS, 2)),
]
"""What a run may inject: nothing, one fault, or two (drawn uniformly from this list)."""


"""Generated call ids use only these; a reused index gets an id with capitals, never equal."""


def canonical(value: Any) -> str:
    """JSON text that tells true from 1 and a list from a tuple; for exact comparisons."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# -- encoders: primitives into one wire format's chunk dicts ---------------------------------


class Encoder(ABC):
    """Turns the stream primitives into one wire format's chunks, and builds its message."""

    name: ClassVar[str]
    id_prefix: ClassVar[str]
    per_call_close: ClassVar[bool]
    """Whether each call has its own terminal event (the close primitive)."""

    @abstractmethod
    def first_key(self, has_text: bool) -> int:
        """The slot key of the first tool call."""

    @abstractmethod
    def prelude(self, text_parts: list[str]) -> list[Chunk]:
        """The chunks that open the turn, carrying its text (if any)."""

    @abstractmethod
    def start(self, key: int, call_id: str, name: str) -> list[Chunk]:
        """A call's identity on slot ``key``."""

    @abstractmethod
    def fragment(self, key: int, text: str) -> list[Chunk]:
        """An argument fragment for slot ``key``."""

    @abstractmethod
    def close(self, key: int) -> list[Chunk]:
        """A call's own terminal event (none in formats without one)."""

    @abstractmethod
    def turn_end(self) -> list[Chunk]:
        """The turn's terminal evidence for a turn that ends with tool calls."""

    def second_terminal(self) -> list[Chunk]:
        """Turn-level terminal evidence again, which must block the turn."""
        return self.turn_end()

    @abstractmethod
    def keepalive(self) -> list[Chunk]:
        """A chunk that carries nothing."""

    @abstractmethod
    def message(self, text: str, calls: list[CallModel]) -> dict[str, Any]:
        """The stream=false message of a clean turn, built from the plan alone."""


class OpenAIEncoder(Encoder):
    """Chat Completions chunks: tool calls by index, the finish_reason ends the turn."""

    name = "openai"
    id_prefix = "call_"
    per_call_close = False

    @staticmethod
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Chunk:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    def first_key(self, has_text: bool) -> int:
        return 0

    def prelude(self, text_parts: list[str]) -> list[Chunk]:
        if not text_parts:
            return [self.chunk({"role": "assistant", "content": ""})]
        first, *rest = text_parts
        return [
            self.chunk({"role": "assistant", "content": first}),
            *(self.chunk({"content": part}) for part in rest),
        ]

    def start(self, key: int, call_id: str, name: str) -> list[Chunk]:
        call = {
            "index": key,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        return [self.chunk({"tool_calls": [call]})]

    def fragment(self, key: int, text: str) -> list[Chunk]:
        return [self.chunk({"tool_calls": [{"index": key, "function": {"arguments": text}}]})]

    def close(self, key: int) -> list[Chunk]:
        return []

    def turn_end(self) -> list[Chunk]:
        return [self.chunk({}, "tool_calls")]

    def second_terminal(self) -> list[Chunk]:
        # the same finish_reason again on a bare chunk is only a warning (OpenRouter sends one)
        return [self.chunk({}, "stop")]

    def keepalive(self) -> list[Chunk]:
        return [self.chunk({})]

    def message(self, text: str, calls: list[CallModel]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.raw},
                }
                for call in calls
            ],
        }


class AnthropicEncoder(Encoder):
    """Messages events: content blocks by index, each closed; message_stop ends the turn."""

    name = "anthropic"
    id_prefix = "toolu_"
    per_call_close = True

    ENVELOPE: ClassVar[dict[str, Any]] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }

    def first_key(self, has_text: bool) -> int:
        return 1 if has_text else 0

    def prelude(self, text_parts: list[str]) -> list[Chunk]:
        events: list[Chunk] = [
            {"type": "message_start", "message": {**self.ENVELOPE, "content": []}}
        ]
        if text_parts:
            events.append(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            events.extend(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": part},
                }
                for part in text_parts
            )
            events.append({"type": "content_block_stop", "index": 0})
        return events

    def start(self, key: int, call_id: str, name: str) -> list[Chunk]:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        return [{"type": "content_block_start", "index": key, "content_block": block}]

    def fragment(self, key: int, text: str) -> list[Chunk]:
        delta = {"type": "input_json_delta", "partial_json": text}
        return [{"type": "content_block_delta", "index": key, "delta": delta}]

    def close(self, key: int) -> list[Chunk]:
        return [{"type": "content_block_stop", "index": key}]

    def turn_end(self) -> list[Chunk]:
        return [
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 42},
            },
            {"type": "message_stop"},
        ]

    def keepalive(self) -> list[Chunk]:
        return [{"type": "ping"}]

    def message(self, text: str, calls: list[CallModel]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.extend(
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.arguments}
            for call in calls
        )
        return {
            **self.ENVELOPE,
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 42},
            "content": content,
        }


ENCODERS: list[Encoder] = [OpenAIEncoder(), AnthropicEncoder()]


@dataclass
class BufferCall(CallModel):
    """A call of the buffer's machine: also whether its JSON fault blocked it."""

    json_blocked: bool = False


# -- the stateful test ---------------------------------------------------------------------


def buffer_machine(encoder: Encoder) -> type[RuleBasedStateMachine]:
    """A state machine that streams one generated turn of ``encoder``'s format.

    Each run draws which faults it injects (none, one or two of FAULTS). A rule injects a
    fault at a random moment; a fault the rules did not get to is injected by ``teardown``
    at its first chance while it completes the turn, so short runs exercise faults too
    (a drawn pair can exclude itself: a truncated turn has no terminal to duplicate).
    """

    class BufferMachine(RuleBasedStateMachine):
        buffer: LLMStreamBuffer

        @initialize(plan=stream_plans(), allowed=st.sampled_from(FAULT_MENUS))
        def open_turn(self, plan: StreamPlan, allowed: frozenset[str]) -> None:
            self.buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
            self.allowed = allowed
            self.text = "".join(plan.text_parts)
            first = encoder.first_key(bool(self.text))
            extra = 2 if encoder.per_call_close else 1
            self.calls = [
                BufferCall(
                    first + n,
                    encoder.id_prefix + call.suffix,
                    call.name,
                    call.arguments,
                    list(call.fragments),
                    len(call.fragments) + extra,
                )
                for n, call in enumerate(plan.calls)
            ]
            self.terminal_sent = False
            self.ended = False
            self.truncated = False
            self.turn_blocked = False
            self.faults: set[str] = set()
            self.expected: list[Expectation] = []
            self.ranks: dict[int, int] = {}
            self._send(encoder.prelude(list(plan.text_parts)), [])

        # -- plumbing ----------------------------------------------------------------

        def _step(self, action: Callable[[], None], predicted: list[Expectation]) -> None:
            """Run ``action``; it must add exactly the ``predicted`` findings."""
            before = len(self.buffer.findings)
            action()
            match_findings(self.buffer.findings[before:], predicted)
            self.expected.extend(predicted)

        def _send(self, chunks: list[Chunk], predicted: list[Expectation]) -> None:
            def add_all() -> None:
                for chunk in chunks:
                    self.buffer.add(chunk)

            self._step(add_all, predicted)

        def _close(self, call: CallModel) -> list[Expectation]:
            """Model a call's terminal evidence: the checks run unless it is blocked."""
            call.closed = True
            if call.blocked:
                return []
            if call.corrupt:
                call.blocked = call.json_blocked = True
                return [(JSON_CODES, call.key)]
            call.validated = True
            return []

        def _emit(self, call: CallModel) -> None:
            """Send the call's next piece: its start, a fragment, or (anthropic) its stop."""
            piece = call.sent
            call.sent += 1
            if piece == 0:
                self._send(encoder.start(call.key, call.call_id, call.name), [])
            elif piece <= len(call.fragments):
                text = call.fragments[piece - 1]
                if not call.blocked:
                    call.received.append(text)
                self._send(encoder.fragment(call.key, text), [])
            else:
                self._send(encoder.close(call.key), self._close(call))

        def _pending(self) -> list[CallModel]:
            return [c for c in self.calls if c.pending]

        def _open(self) -> list[CallModel]:
            """Started calls that are not blocked."""
            return [c for c in self.calls if c.started and not c.blocked]

        def _closed(self) -> list[CallModel]:
            """Calls past their terminal evidence that are not blocked."""
            return [c for c in self._open() if c.closed]

        def _corruptible(self) -> list[CallModel]:
            return [c for c in self.calls if not c.blocked and c.unsent_fragments()]

        def _model_turn(self) -> str:
            if self.truncated or self.turn_blocked or any(c.blocked for c in self.calls):
                return "blocked"
            return "executable" if self.terminal_sent else "streaming"

        def _may(self, fault: str) -> bool:
            return not self.ended and fault in self.allowed and fault not in self.faults

        def can_emit(self) -> bool:
            return not self.ended and bool(self._pending())

        def can_finish(self) -> bool:
            return not self.ended and not self.terminal_sent and not self._pending()

        def can_end(self) -> bool:
            return not self.ended and self.terminal_sent

        def may_finish(self) -> bool:
            """Rules end the turn only once a drawn truncation had its chance."""
            return self.can_finish() and not self._may("truncation")

        def may_end(self) -> bool:
            """Rules end the stream only once the drawn late faults had their chance."""
            late = (self.can_reuse_index, self.can_duplicate_terminal, self.can_send_late_fragment)
            return self.can_end() and not any(can() for can in late)

        def can_reuse_index(self) -> bool:
            return self._may("index_reuse") and bool(self._open())

        def can_truncate(self) -> bool:
            started = any(c.started for c in self.calls)
            return self._may("truncation") and not self.terminal_sent and started

        def can_duplicate_terminal(self) -> bool:
            return self._may("duplicate_terminal") and bool(self._closed())

        def can_send_late_fragment(self) -> bool:
            return self._may("late_fragment") and bool(self._closed())

        def can_corrupt_json(self) -> bool:
            return self._may("corrupt_json") and bool(self._corruptible())

        # -- the stream ----------------------------------------------------------------

        @precondition(can_emit)
        @rule(pick=st.integers(0, 3))
        def emit_next(self, pick: int) -> None:
            pending = self._pending()
            self._emit(pending[pick % len(pending)])

        @precondition(can_emit)
        @rule(pick=st.integers(0, 3))
        def emit_rest_of_call(self, pick: int) -> None:
            pending = self._pending()
            call = pending[pick % len(pending)]
            while call.pending:
                self._emit(call)

        @precondition(lambda self: not self.ended)
        @rule()
        def keepalive(self) -> None:
            self._send(encoder.keepalive(), [])

        @precondition(may_finish)
        @rule()
        def finish_turn(self) -> None:
            predicted: list[Expectation] = []
            if not encoder.per_call_close:
                for call in self.calls:
                    predicted += self._close(call)
            self.terminal_sent = True
            self._send(encoder.turn_end(), predicted)

        @precondition(may_end)
        @rule()
        def end_stream(self) -> None:
            self.ended = True
            self._step(self.buffer.end, [])

        @precondition(lambda self: self.ended)
        @rule()
        def add_after_end_is_refused(self) -> None:
            findings = self.buffer.findings
            with pytest.raises(BufferUsageError):
                self.buffer.add(encoder.keepalive()[0])
            assert self.buffer.findings == findings

        # -- faults, each at most once per run ------------------------------------------

        @precondition(can_reuse_index)
        @rule(pick=st.integers(0, 3), name=st.sampled_from(sorted(TOOL_SCHEMAS)))
        def reuse_index(self, pick: int, name: str) -> None:
            self.faults.add("index_reuse")
            candidates = self._open()
            call = candidates[pick % len(candidates)]
            call.blocked = True
            chunks = encoder.start(call.key, f"{encoder.id_prefix}REUSED{call.key}", name)
            self._send(chunks, [(one("identity_collision"), call.key)])

        @precondition(can_truncate)
        @rule()
        def truncate(self) -> None:
            self.faults.add("truncation")
            predicted: list[Expectation] = []
            for call in self._open():
                if not call.validated:
                    call.blocked = True
                    predicted.append((one("missing_terminal"), call.key))
            if not predicted and self._model_turn() == "streaming":
                predicted.append((one("missing_terminal"), None))
            self.truncated = True
            self.ended = True
            self._step(self.buffer.end, predicted)

        @precondition(can_duplicate_terminal)
        @rule(pick=st.integers(0, 3))
        def duplicate_terminal(self, pick: int) -> None:
            self.faults.add("duplicate_terminal")
            if encoder.per_call_close:
                candidates = self._closed()
                target = candidates[pick % len(candidates)]
                target.blocked = True
                self._send(encoder.close(target.key), [(one("duplicate_terminal"), target.key)])
            else:
                predicted = (
                    [] if self._model_turn() == "blocked" else [(one("duplicate_terminal"), None)]
                )
                self.turn_blocked = True
                self._send(encoder.second_terminal(), predicted)

        @precondition(can_send_late_fragment)
        @rule(pick=st.integers(0, 3), text=st.sampled_from([" ", "}", '"x"', ', "late": 1}']))
        def late_fragment(self, pick: int, text: str) -> None:
            self.faults.add("late_fragment")
            candidates = self._closed()
            call = candidates[pick % len(candidates)]
            call.blocked = True
            self._send(encoder.fragment(call.key, text), [(one("delta_after_terminal"), call.key)])

        @precondition(can_corrupt_json)
        @rule(
            pick=st.integers(0, 3),
            kind=st.sampled_from(["nul", "cut_closing_brace", "trailing_value"]),
            where=st.integers(0, 2**16),
        )
        def corrupt_json(self, pick: int, kind: str, where: int) -> None:
            self.faults.add("corrupt_json")
            candidates = self._corruptible()
            call = candidates[pick % len(candidates)]
            call.corrupt_with(kind, where)

        # -- invariants ----------------------------------------------------------------

        @invariant()
        def slot_states_never_move_back(self) -> None:
            assert self.buffer.gate is not None
            check_slot_ranks(self.buffer.gate, self.ranks)

        @invariant()
        def never_executable_before_terminal_evidence(self) -> None:
            if self.buffer.executable:
                assert self.terminal_sent

        @invariant()
        def executable_turn_has_no_error_finding(self) -> None:
            if self.buffer.executable:
                errors = [f for f in self.buffer.findings if f.severity == "error"]
                assert not errors

        @invariant()
        def slots_and_turn_follow_the_model(self) -> None:
            assert self.buffer.gate is not None
            actual = {key: slot.state for key, slot in self.buffer.gate.slots.items()}
            assert actual == {c.key: c.state for c in self.calls if c.started}
            assert self.buffer.turn_state == self._model_turn()

        def recheck_invariants(self) -> None:
            self.slot_states_never_move_back()
            self.never_executable_before_terminal_evidence()
            self.executable_turn_has_no_error_finding()
            self.slots_and_turn_follow_the_model()

        # -- the end of the turn -------------------------------------------------------

        def complete_turn(self) -> None:
            """Send what is left, injecting each drawn fault the rules did not get to."""
            steps: list[tuple[Callable[[], bool], Callable[[], None]]] = [
                (self.can_corrupt_json, lambda: self.corrupt_json(0, "nul", 0)),
                (self.can_reuse_index, lambda: self.reuse_index(0, "ping")),
                (self.can_truncate, self.truncate),
                (self.can_duplicate_terminal, lambda: self.duplicate_terminal(0)),
                (self.can_send_late_fragment, lambda: self.late_fragment(0, " ")),
                (self.can_finish, self.finish_turn),
                (self.can_end, self.end_stream),
            ]
            while not self.ended:
                action = next((act for can, act in steps if can()), None)
                if action is None:
                    self._emit(self._pending()[0])
                else:
                    action()
                self.recheck_invariants()

        def teardown(self) -> None:
            if not hasattr(self, "buffer"):
                return
            self.complete_turn()
            assert self.faults <= self.allowed
            result = report(self.buffer)
            assert result["executable"] is self.buffer.executable
            assert result["profile"] == encoder.name
            started = [c for c in self.calls if c.started]
            assert [(c["slot"], c["id"], c["name"]) for c in result["calls"]] == [
                (c.key, c.call_id, c.name) for c in started
            ]
            for call, entry in zip(started, result["calls"], strict=True):
                assert entry["state"] == reported_state(self.buffer, call.state)
                if call.validated:
                    assert canonical(entry["arguments"]) == canonical(call.arguments)
                else:
                    assert entry["arguments"] == "".join(call.received)
                if call.json_blocked:
                    assert entry["arguments"] == call.raw
            if not self.faults:
                assert self.buffer.executable
                assert result["status"] == "pass"
                assert result["findings"] == []
                expected = encoder.message(self.text, self.calls)
                assert canonical(self.buffer.as_dict()) == canonical(expected)
            else:
                assert not self.buffer.executable
                assert result["status"] == "fail"
                assert self.expected, f"faults {self.faults} left no finding to expect"
                codes = {(f["code"], f["slot"]) for f in result["findings"]}
                for allowed, slot in self.expected:
                    assert any((code, slot) in codes for code in allowed), (allowed, slot)

    BufferMachine.__name__ = BufferMachine.__qualname__ = f"{encoder.name.title()}BufferMachine"
    return BufferMachine


MACHINE_SETTINGS = settings(
    max_examples=150,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.name)
def test_interleaved_calls_with_injected_faults_follow_the_model(encoder: Encoder) -> None:
    run_state_machine_as_test(buffer_machine(encoder), settings=MACHINE_SETTINGS)


# -- examples --------------------------------------------------------------------------------


def feed(chunks: list[Chunk]) -> LLMStreamBuffer:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    for chunk in chunks:
        buffer.add(chunk)
    buffer.end()
    return buffer


def single_call(encoder: Encoder, key: int, fragments: list[str]) -> list[Chunk]:
    """One get_weather call on slot ``key``, ended as the format ends a tool-call turn."""
    chunks = encoder.prelude([]) + encoder.start(key, f"{encoder.id_prefix}a1", "get_weather")
    for text in fragments:
        chunks += encoder.fragment(key, text)
    return chunks + encoder.close(key) + encoder.turn_end()


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.name)
def test_parseable_arguments_are_not_executable_before_the_terminal_event(
    encoder: Encoder,
) -> None:
    before = (
        encoder.prelude([])
        + encoder.start(0, f"{encoder.id_prefix}a1", "get_weather")
        + encoder.fragment(0, '{"city": ')
        + encoder.fragment(0, '"Paris"}')
        + encoder.keepalive()
        + encoder.fragment(0, "  ")
        + encoder.keepalive()
        + encoder.close(0)
        + encoder.keepalive()
    )
    terminal = encoder.turn_end()
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    executable, parseable = [], 0
    for chunk in before:
        buffer.add(chunk)
        executable.append(buffer.executable)
        slots = buffer.slots
        if slots and parse_arguments(slots[0].raw_arguments)[0] is not None:
            parseable += 1
    assert parseable >= 5, "the arguments should parse several chunks before the terminal"
    assert executable == [False] * len(before)
    for chunk in terminal[:-1]:
        buffer.add(chunk)
        assert not buffer.executable, "executable before the turn's last terminal event"
    buffer.add(terminal[-1])
    assert buffer.executable
    buffer.end()
    result = report(buffer)
    assert result["status"] == "pass"
    assert result["calls"][0]["arguments"] == {"city": "Paris"}


def measured(chunks: list[Chunk]) -> tuple[dict[str, Any], float, int]:
    """The report for ``chunks``, the seconds it took, and the peak bytes allocated."""
    started = time.perf_counter()
    result = report(feed(chunks))
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    try:
        report(feed(chunks))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, elapsed, peak


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.name)
def test_huge_slot_index_is_refused_quickly_with_little_memory(encoder: Encoder) -> None:
    result, elapsed, peak = measured(single_call(encoder, 10**12, ['{"city": "Paris"}']))
    assert result["status"] == "fail"
    assert "limit_exceeded" in [f["code"] for f in result["findings"]]
    assert result["calls"] == []
    assert elapsed < 1.0
    assert peak < 16 * 1024 * 1024


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.name)
def test_deeply_nested_fragment_is_refused_quickly_with_little_memory(encoder: Encoder) -> None:
    brackets = "[" * 200_000
    result, elapsed, peak = measured(single_call(encoder, 0, [brackets]))
    assert result["status"] == "fail"
    assert ("limit_exceeded", 0) in [(f["code"], f["slot"]) for f in result["findings"]]
    assert result["calls"][0]["arguments"] == brackets
    assert elapsed < 1.0
    assert peak < 16 * 1024 * 1024


BAD_ARGUMENTS = [
    ('{"city": "Paris",}', "malformed_json"),
    ('{"city": "Par', "malformed_json"),
    ('{"city": "Paris"} {}', "trailing_data"),
    ('["Paris"]', "non_object_arguments"),
    ('{"city": "Paris", "city": "Rome"}', "duplicate_key"),
    ('{"city": "Paris", "t": NaN}', "non_finite_number"),
    ('{"city": "\\ud800"}', "lone_surrogate"),
]


@pytest.mark.parametrize(("bad", "code"), BAD_ARGUMENTS, ids=[c for _, c in BAD_ARGUMENTS])
@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e.name)
def test_bad_arguments_are_reported_with_their_raw_text(
    encoder: Encoder, bad: str, code: str
) -> None:
    good, bad_key = '{"city": "Rome"}', 1
    chunks = encoder.prelude([])
    chunks += encoder.start(0, f"{encoder.id_prefix}good", "get_weather")
    chunks += encoder.start(bad_key, f"{encoder.id_prefix}bad", "get_weather")
    for n in range(0, max(len(good), len(bad)), 3):
        if good[n : n + 3]:
            chunks += encoder.fragment(0, good[n : n + 3])
        if bad[n : n + 3]:
            chunks += encoder.fragment(bad_key, bad[n : n + 3])
    chunks += encoder.close(0) + encoder.close(bad_key) + encoder.turn_end()
    buffer = feed(chunks)
    result = report(buffer)
    assert result["status"] == "fail"
    assert not buffer.executable
    assert [(f["code"], f["slot"]) for f in result["findings"]] == [(code, bad_key)]
    good_call, bad_call = result["calls"]
    assert (good_call["arguments"], good_call["state"]) == ({"city": "Rome"}, "blocked")
    assert (bad_call["arguments"], bad_call["state"]) == (bad, "blocked")
    if encoder.name == "openai":
        arguments = [c["function"]["arguments"] for c in buffer.as_dict()["tool_calls"]]
        assert arguments == [good, bad]
