"""One stateful test of the buffer for every wire.

The machine draws one assistant turn (optional text, then 0-4 tool calls with generated
JSON arguments cut by the kit's splits) and emits it piece by piece in a random
interleaving through the kit's encoder of the wire (:mod:`callgate.testing.wires`),
injecting the faults the wire can carry, each once at most. On the whole-call wires
(Gemini, Ollama) each call arrives whole, several may be packed into one chunk, a Gemini
call may be split over two chunks, and a call may come after the turn's end.

The machine keeps its own model of every call (started, closed, validated, blocked) and
predicts, for every step, exactly which findings the step adds; the buffer's slots and
turn must follow that model, and a clean turn must assemble into the wire's stream=false
message.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from callgate import BufferUsageError, ExtractedCall, LLMStreamBuffer, ToolSchemas
from callgate.cli.check import report
from callgate.testing.plans import REQUIRED_ARGUMENTS, TOOLS, StreamPlan, stream_plans
from callgate.testing.wires import Chunk, WireCall, chunks_of, encoder
from wire_common import (
    JSON_CODES,
    KEEPALIVE,
    CallModel,
    Expectation,
    WireInvariants,
    canonical,
    match_findings,
    one,
    reported_state,
    wire_message,
)


@dataclass(frozen=True)
class Wire:
    """What the machine needs to know of one wire beyond its kit encoder."""

    name: str
    faults: tuple[str, ...]
    """The faults the machine may inject on this wire."""
    quirks: frozenset[str] = frozenset()
    optional: tuple[str, ...] = ()
    """Quirks each run draws whether to use."""
    plans: dict[str, Any] | None = None
    """Keyword arguments for the kit's ``stream_plans``."""
    reasons: tuple[str, ...] = ()
    """The turn-end reasons that are not "tool calls" (default: the encoder's one)."""
    numbered: bool = False
    """Every event carries its ``sequence_number``."""
    whole: bool = False
    """Calls arrive whole (an argument object each), take slots in arrival order, may be
    packed several to a chunk, and only the turn's end closes them."""
    splits: bool = False
    """A whole call may be split over two chunks (its first keys, then the rest)."""
    error_line: bool = False
    """The wire has an error event that ends the stream."""
    ends_at_terminal: bool = False
    """Nothing follows the turn's end: a chunk that carries nothing, sent after it, is the
    ``late_line`` fault (Ollama's stream stops at its ``done`` line)."""


COMMON = ("index_reuse", "truncation", "duplicate_terminal", "late_fragment", "corrupt_json")
WHOLE = ("id_reuse", "bad_call", "truncation", "duplicate_terminal", "late_call", "wrong_reason")
"""Faults of a whole-call wire: a reused id, non-object arguments or no name, a call after
the turn's end."""
CLOSING = ("early_end", "wrong_reason")
"""Faults of a wire whose calls close one by one: the turn's end before a close, or for
another reason."""

WIRES = [
    Wire("openai", (*COMMON, "wrong_reason")),
    Wire("anthropic", (*COMMON, *CLOSING)),
    Wire(
        "bedrock",
        (*COMMON, *CLOSING, "second_ending"),
        quirks=frozenset({"metadata"}),
        reasons=("end_turn", "max_tokens", "guardrail_intervened"),
        plans={
            "alphabet": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            "id_size": (22, 22),
            "empty_arguments": True,
            "bare_calls": True,
        },
    ),
    Wire(
        "cohere",
        (*COMMON, *CLOSING, "orphan"),
        optional=("tool_plan",),
        reasons=("COMPLETE", "MAX_TOKENS", "ERROR"),
    ),
    Wire(
        "openai-responses",
        (*COMMON, *CLOSING, "second_ending", "args_mismatch"),
        optional=("reasoning_item",),
        numbered=True,
    ),
    Wire(
        "gemini",
        WHOLE,
        optional=("thought", "thought_signature", "no_ids"),
        reasons=("MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL"),
        whole=True,
        splits=True,
    ),
    Wire(
        "ollama",
        (*WHOLE, "late_line"),
        optional=("thinking", "ids", "no_index"),
        reasons=("length",),
        whole=True,
        error_line=True,
        ends_at_terminal=True,
    ),
]

SCHEMAS = ToolSchemas(TOOLS)
"""The kit's tools, compiled once: every run's buffer shares them."""

BREAKS = ("list", "string", "number", "no_name")
"""How a whole call is broken: non-object arguments of three kinds, or no name."""

LATE_TEXT = st.sampled_from([" ", "}", '"x"', ', "late": 1}'])


def fault_menus(faults: tuple[str, ...]) -> list[frozenset[str]]:
    """What a run may inject: nothing, one fault, two, or every fault of the wire."""
    return [
        frozenset(),
        *(frozenset({fault}) for fault in faults),
        *(frozenset(pair) for pair in itertools.combinations(faults, 2)),
        frozenset(faults),
    ]


@dataclass
class MachineCall(CallModel):
    """A call of the machine: also whether its JSON fault blocked it."""

    json_blocked: bool = False
    fate: str | None = None
    """Whole calls: the code the turn's end gives a call broken by a fault."""
    cut: int = 0
    """Whole calls: split after this many argument keys (0: in one piece)."""
    collided: bool = False
    late: bool = False

    def reported(self) -> tuple[int, str | None, str | None]:
        """Slot, id and name as the report gives them (a conflicting identity is never kept)."""
        if self.collided:
            return (self.key, None, None)
        return (self.key, self.call_id, None if self.fate == "missing_name" else self.name)

    def wire_call(self) -> WireCall:
        return WireCall(
            self.call_id, self.name, tuple(self.fragments), key=self.key, arguments=self.arguments
        )


REACHED: Counter[str] = Counter()
"""Degenerate shapes the machine has drawn, counted across runs (see the reach test)."""


SHAPES = (
    "one-character fragment",
    "empty fragment",
    "whole arguments at once",
    "zero calls",
    "the most calls",
    "no text",
)
"""The degenerate cases every wire's machine must draw; bedrock also a call with no fragment."""

WHOLE_SHAPES = ("zero calls", "the most calls", "no text", "calls packed in one chunk")
"""The degenerate cases of a whole-call wire (its arguments never come in fragments);
Gemini also a call split over two chunks."""


def degenerate_shapes(plan: StreamPlan) -> list[str]:
    """Which degenerate cases a plan holds: one-character or empty fragments, and so on."""
    fragments = [f for call in plan.calls for f in call.fragments]
    held = {
        "one-character fragment": any(len(f) == 1 for f in fragments),
        "empty fragment": "" in fragments,
        "whole arguments at once": any(len(c.fragments) == 1 and c.raw for c in plan.calls),
        "zero calls": not plan.calls,
        "the most calls": len(plan.calls) == 4,
        "no text": not plan.text_parts,
        "no fragment at all": any(not call.fragments for call in plan.calls),
    }
    return [shape for shape, holds in held.items() if holds]


def wire_machine(wire: Wire) -> type[RuleBasedStateMachine]:
    """A state machine that streams one generated turn of ``wire``.

    Each run draws which faults it injects (``fault_menus``). A rule injects a fault at a
    random moment; a fault the rules did not get to is injected by ``teardown`` at its
    first chance while it completes the turn, so short runs exercise faults too (a drawn
    pair can exclude itself: a truncated turn has no terminal to duplicate).
    """
    menus = fault_menus(wire.faults)
    plans = stream_plans(calls=(0, 4), empty_fragments=True, **(wire.plans or {}))

    class WireMachine(WireInvariants):
        buffer: LLMStreamBuffer

        @initialize(
            plan=plans,
            allowed=st.sampled_from(menus),
            quirks=st.sets(st.sampled_from(wire.optional)) if wire.optional else st.just(set()),
            cuts=st.lists(st.integers(0, 6), min_size=4, max_size=4),
            broken=st.tuples(st.integers(0, 3), st.sampled_from(BREAKS)),
        )
        def open_turn(
            self,
            plan: StreamPlan,
            allowed: frozenset[str],
            quirks: set[str],
            cuts: list[int],
            broken: tuple[int, str],
        ) -> None:
            for shape in degenerate_shapes(plan):
                if not wire.whole or shape in WHOLE_SHAPES:
                    self._reach(shape)
            self.encoder = encoder(wire.name, wire.quirks | quirks)
            self.sequence = 0
            self.buffer = LLMStreamBuffer(tool_schemas=SCHEMAS)
            self.allowed = allowed
            self.text = "".join(plan.text_parts)
            first = self.encoder.first_key(bool(self.text))
            extra = 2 if self.encoder.closes else 1
            self.calls = [
                MachineCall(
                    first + n,
                    self.encoder.id_prefix + call.suffix,
                    call.name,
                    call.arguments,
                    list(call.fragments),
                    len(call.fragments) + extra,
                )
                for n, call in enumerate(plan.calls)
            ]
            if wire.whole:
                self.calls = [
                    self._whole(call, cuts[n], quirks) for n, call in enumerate(self.calls)
                ]
            self.next_key = 0
            self.terminal_sent = False
            self.ended = False
            self.truncated = False
            self.turn_blocked = False
            self.faults: set[str] = set()
            self.expected: list[Expectation] = []
            self.ranks: dict[int, int] = {}
            self.shown: list[str] = []
            if self.can_break_call():
                self.break_a_call(*broken)
            self._send(chunks_of(self.encoder.prelude(plan.text_parts)), [])

        # -- plumbing ----------------------------------------------------------------

        @staticmethod
        def _reach(shape: str) -> None:
            REACHED[shape] += 1
            event(shape)

        @staticmethod
        def _whole(call: MachineCall, cut: int, quirks: set[str]) -> MachineCall:
            """A planned call as a whole-call wire sends it: no fragments, one piece; on a
            wire that splits calls a ``seq`` key keeps two calls from merging."""
            arguments = call.arguments
            if wire.splits:
                arguments = {"seq": call.key, **{k: v for k, v in arguments.items() if k != "seq"}}
            idless = "no_ids" in quirks or ("ids" in wire.optional and "ids" not in quirks)
            call_id = None if idless else call.call_id
            keys = len(arguments) if wire.splits else 1
            return MachineCall(-1, call_id, call.name, arguments, [], 1, cut=cut % keys)

        def _arrive(self, call: MachineCall) -> tuple[list[Chunk], list[Expectation]]:
            """A whole call takes the next slot; its chunks and the findings it adds."""
            call.key, call.sent = self.next_key, 1
            self.next_key += 1
            predicted: list[Expectation] = []
            if call.late:
                if self._model_turn() != "blocked":
                    predicted.append((one("delta_after_terminal"), call.key))
                self.turn_blocked = True
            others = [c for c in self.calls if c.started and c is not call]
            if call.call_id is not None and any(c.call_id == call.call_id for c in others):
                call.blocked = call.collided = True
                predicted.append((one("identity_collision"), call.key))
            sent = call.wire_call()
            if call.fate == "missing_name":
                return self.encoder.nameless(sent), predicted
            if call.cut:
                self._reach("a call split over two chunks")
                return self.encoder.halves(sent, call.cut), predicted
            return self.encoder.open(sent), predicted

        def _step(self, action: Callable[[], None], predicted: list[Expectation]) -> None:
            """Run ``action``; it must add exactly the ``predicted`` findings."""
            before = len(self.buffer.findings)
            action()
            match_findings(self.buffer.findings[before:], predicted)
            self.expected.extend(predicted)

        def _send(self, chunks: list[Chunk], predicted: list[Expectation]) -> None:
            def add_all() -> None:
                for chunk in chunks:
                    self.buffer.add(self._numbered(chunk))
                    self.shown.append(self.buffer.text())

            self._step(add_all, predicted)

        def _numbered(self, chunk: Chunk) -> Chunk:
            """``chunk`` with its sequence number, on a wire that numbers its events."""
            if not wire.numbered:
                return chunk
            self.sequence += 1
            return {**chunk, "sequence_number": self.sequence - 1}

        def _close(self, call: MachineCall) -> list[Expectation]:
            """Model a call's terminal evidence: the checks run unless it is blocked."""
            call.closed = True
            if call.blocked:
                return []
            if call.fate is not None:
                call.blocked = True
                return [(one(call.fate), call.key)]
            if call.corrupt:
                call.blocked = call.json_blocked = True
                return [(JSON_CODES, call.key)]
            call.validated = True
            return []

        def _emit(self, call: MachineCall) -> None:
            """Send the call's next piece: its opening, a fragment, or its own close."""
            if wire.whole:
                self._send(*self._arrive(call))
                return
            piece = call.sent
            call.sent += 1
            if piece == 0:
                self._send(self.encoder.open(call.wire_call()), [])
            elif piece <= len(call.fragments):
                text = call.fragments[piece - 1]
                if not call.blocked:
                    call.received.append(text)
                self._send(self.encoder.fragment(call.wire_call(), text), [])
            else:
                self._send(self.encoder.close(call.wire_call()), self._close(call))

        def _turn_end(self, reason: str | None = None) -> list[Chunk]:
            calls = [c.wire_call() for c in self.calls]
            return self.encoder.finish(calls, reason) + self.encoder.epilogue()

        def _pending(self) -> list[MachineCall]:
            return [c for c in self.calls if c.pending]

        def _open(self) -> list[MachineCall]:
            """Started calls that are not blocked."""
            return [c for c in self.calls if c.started and not c.blocked]

        def _closed(self) -> list[MachineCall]:
            """Calls past their terminal evidence that are not blocked."""
            return [c for c in self._open() if c.closed]

        def _corruptible(self) -> list[MachineCall]:
            return [c for c in self.calls if not c.blocked and c.unsent_fragments()]

        def _block_unsettled(self, code: str) -> list[Expectation]:
            """Block every open call not validated yet: each gets ``code``."""
            predicted: list[Expectation] = []
            for call in self._open():
                if not call.validated:
                    call.blocked = True
                    predicted.append((one(code), call.key))
            return predicted

        def _model_turn(self) -> str:
            if self.truncated or self.turn_blocked or any(c.blocked for c in self.calls):
                return "blocked"
            if not self.terminal_sent:
                return "streaming"
            return "executable" if self.calls else "not_applicable"

        def _may(self, fault: str) -> bool:
            return not self.ended and fault in self.allowed and fault not in self.faults

        def can_emit(self) -> bool:
            return not self.ended and bool(self._pending())

        def can_finish(self) -> bool:
            return not self.ended and not self.terminal_sent and not self._pending()

        def can_end(self) -> bool:
            return not self.ended and self.terminal_sent

        def may_finish(self) -> bool:
            """Rules end the turn only once the drawn early faults had their chance."""
            early = (
                self.can_truncate,
                self.can_end_early,
                self.can_end_for_another_reason,
                self.can_reuse_id,
            )
            return self.can_finish() and not any(can() for can in early)

        def may_end(self) -> bool:
            """Rules end the stream only once the drawn late faults had their chance."""
            late = (
                self.can_reuse_index,
                self.can_duplicate_terminal,
                self.can_send_late_fragment,
                self.can_end_again,
                self.can_send_orphan,
                self.can_send_late_call,
                self.can_send_late_line,
            )
            return self.can_end() and not any(can() for can in late)

        def _underway(self) -> bool:
            """Every call has started or one has closed: a stream-ending fault may come now."""
            return all(c.started for c in self.calls) or any(c.closed for c in self.calls)

        def can_reuse_index(self) -> bool:
            return self._may("index_reuse") and bool(self._open())

        def can_reuse_id(self) -> bool:
            return self._may("id_reuse") and not self.terminal_sent and bool(self._with_ids())

        def _with_ids(self) -> list[MachineCall]:
            return [c for c in self.calls if c.call_id is not None]

        def can_break_call(self) -> bool:
            return self._may("bad_call") and bool(self._unsent())

        def _unsent(self) -> list[MachineCall]:
            return [c for c in self.calls if not c.started]

        def can_send_late_call(self) -> bool:
            return self._may("late_call") and self.terminal_sent

        def can_send_late_line(self) -> bool:
            return self._may("late_line") and self.terminal_sent

        def can_truncate(self) -> bool:
            started = any(c.started for c in self.calls)
            return self._may("truncation") and not self.terminal_sent and started

        def can_duplicate_terminal(self) -> bool:
            return self._may("duplicate_terminal") and bool(self._closed())

        def can_send_late_fragment(self) -> bool:
            return self._may("late_fragment") and bool(self._closed())

        def can_corrupt_json(self) -> bool:
            return self._may("corrupt_json") and bool(self._corruptible())

        def can_end_early(self) -> bool:
            return (
                self._may("early_end")
                and not self.terminal_sent
                and all(c.started for c in self.calls)
                and any(not c.closed for c in self._open())
            )

        def can_end_for_another_reason(self) -> bool:
            return (
                self._may("wrong_reason")
                and not self.terminal_sent
                and self._underway()
                and bool(self._open())
            )

        def can_end_again(self) -> bool:
            return self._may("second_ending") and self.terminal_sent

        def can_restate(self) -> bool:
            return self._may("args_mismatch") and bool(self._restatable())

        def _restatable(self) -> list[MachineCall]:
            """Open calls that streamed some text: a restatement can differ from it."""
            return [c for c in self._open() if not c.closed and any(c.received)]

        def can_send_orphan(self) -> bool:
            return self._may("orphan") and not self.terminal_sent and bool(self._closed())

        # -- the stream ----------------------------------------------------------------

        @precondition(can_emit)
        @rule(pick=st.integers(0, 3))
        def emit_next(self, pick: int) -> None:
            pending = self._pending()
            self._emit(pending[pick % len(pending)])

        @precondition(can_emit)
        @rule(pick=st.integers(0, 3), count=st.sampled_from([2, 4, 12, 10**6]))
        def emit_run(self, pick: int, count: int) -> None:
            """Up to ``count`` pieces of one call in a row (10**6: the rest of the call)."""
            pending = self._pending()
            call = pending[pick % len(pending)]
            for _ in range(count):
                if not call.pending:
                    break
                self._emit(call)

        @precondition(lambda self: wire.whole and self.can_emit())
        @rule(count=st.integers(2, 4))
        def emit_packed(self, count: int) -> None:
            """The next ``count`` calls in one chunk; a split call's rest starts the next."""
            groups: list[list[Chunk]] = [[]]
            predicted: list[Expectation] = []
            for call in self._pending()[:count]:
                chunks, found = self._arrive(call)
                groups[-1].append(chunks[0])
                groups += [[chunk] for chunk in chunks[1:]]
                predicted += found
            if any(len(group) > 1 for group in groups):
                self._reach("calls packed in one chunk")
            self._send([self.encoder.pack(group) for group in groups], predicted)

        @precondition(
            lambda self: (
                not self.ended
                and wire.name in KEEPALIVE
                and not (wire.ends_at_terminal and self.terminal_sent)
            )
        )
        @rule()
        def keepalive(self) -> None:
            self._send([dict(KEEPALIVE[wire.name])], [])

        @precondition(may_finish)
        @rule()
        def finish_turn(self) -> None:
            predicted: list[Expectation] = []
            if not self.encoder.closes:
                for call in self.calls:
                    predicted += self._close(call)
            self.terminal_sent = True
            self._send(self._turn_end(), predicted)

        @precondition(may_end)
        @rule()
        def end_stream(self) -> None:
            self.ended = True
            self._step(self.buffer.end, self._block_unsettled("missing_terminal"))

        @precondition(lambda self: self.ended)
        @rule()
        def add_after_end_is_refused(self) -> None:
            findings = self.buffer.findings
            with pytest.raises(BufferUsageError):
                self.buffer.add(self._turn_end()[0])
            assert self.buffer.findings == findings

        # -- faults, each at most once per run ------------------------------------------

        @precondition(can_reuse_index)
        @rule(pick=st.integers(0, 3), name=st.sampled_from(sorted(TOOLS)))
        def reuse_index(self, pick: int, name: str) -> None:
            self.faults.add("index_reuse")
            candidates = self._open()
            call = candidates[pick % len(candidates)]
            call.blocked = True
            reused = WireCall(
                f"{self.encoder.id_prefix}REUSED{call.key}", name, key=call.key, arguments={}
            )
            self._send(self.encoder.open(reused), [(one("identity_collision"), call.key)])

        @precondition(can_truncate)
        @rule(error_line=st.booleans())
        def truncate(self, error_line: bool = False) -> None:
            """The stream stops (on a wire with one, after an error event)."""
            self.faults.add("truncation")
            error_line = error_line and wire.error_line
            streaming = self._model_turn() == "streaming"
            predicted = self._block_unsettled("missing_terminal")
            if error_line:
                # the error event is the turn's own finding, blocked turn or not
                predicted.append((one("provider_error"), None))
            elif streaming and not predicted:
                predicted.append((one("missing_terminal"), None))
            self.truncated = True
            self.ended = True

            def stop() -> None:
                if error_line:
                    self.buffer.add(self.encoder.error())
                self.buffer.end()

            self._step(stop, predicted)

        @precondition(can_duplicate_terminal)
        @rule(pick=st.integers(0, 3))
        def duplicate_terminal(self, pick: int) -> None:
            self.faults.add("duplicate_terminal")
            if self.encoder.closes:
                candidates = self._closed()
                target = candidates[pick % len(candidates)]
                target.blocked = True
                chunks = self.encoder.close(target.wire_call())
                self._send(chunks, [(one("duplicate_terminal"), target.key)])
            else:
                # a bare chunk with another finish_reason (the same one again only warns, as
                # does OpenAI's trailing stop: length); it also ends the stream: a call that
                # came after the first is settled
                predicted = (
                    [] if self._model_turn() == "blocked" else [(one("duplicate_terminal"), None)]
                )
                predicted += self._block_unsettled("missing_terminal")
                self.turn_blocked = True
                second = "length" if self.encoder.wire == "openai" else None
                self._send(self.encoder.finish([], second), predicted)

        @precondition(can_send_late_fragment)
        @rule(pick=st.integers(0, 3), text=LATE_TEXT)
        def late_fragment(self, pick: int, text: str) -> None:
            self.faults.add("late_fragment")
            candidates = self._closed()
            call = candidates[pick % len(candidates)]
            call.blocked = True
            chunks = self.encoder.fragment(call.wire_call(), text)
            self._send(chunks, [(one("delta_after_terminal"), call.key)])

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

        @precondition(can_end_early)
        @rule()
        def end_turn_before_a_close(self) -> None:
            self.faults.add("early_end")
            predicted: list[Expectation] = []
            for call in self._open():
                if not call.closed:
                    call.blocked = True
                    predicted.append((one("missing_terminal"), call.key))
            self.terminal_sent = True
            self._send(self._turn_end(), predicted)

        @precondition(can_end_for_another_reason)
        @rule(pick=st.integers(0, 2))
        def end_turn_for_another_reason(self, pick: int) -> None:
            self.faults.add("wrong_reason")
            predicted: list[Expectation] = []
            for call in self._open():
                call.blocked = True
                predicted.append((one("wrong_terminal_reason"), call.key))
            self.terminal_sent = True
            reasons = wire.reasons or (self.encoder.other_reason(),)
            self._send(self._turn_end(reasons[pick % len(reasons)]), predicted)

        @precondition(can_end_again)
        @rule()
        def end_turn_again(self) -> None:
            """A second turn ending: refused; as a stream end it also settles every open call."""
            self.faults.add("second_ending")
            self.turn_blocked = True
            predicted: list[Expectation] = [(one("duplicate_terminal"), None)]
            predicted += self._block_unsettled("missing_terminal")
            self._send(self._turn_end(), predicted)

        @precondition(can_restate)
        @rule(pick=st.integers(0, 3), where=st.sampled_from([0, 1]))
        def restate_other_arguments(self, pick: int, where: int) -> None:
            """A call's close restating arguments that differ from its fragments (Responses:
            0 is ``function_call_arguments.done``, 1 the done item)."""
            self.faults.add("args_mismatch")
            candidates = self._restatable()
            call = candidates[pick % len(candidates)]
            call.blocked = True
            other = WireCall(call.call_id, call.name, (call.raw + " ",), key=call.key, arguments={})
            chunk = self.encoder.close(other)[where]
            self._send([chunk], [(one("args_mismatch"), call.key)])

        @precondition(can_send_orphan)
        @rule()
        def fragment_for_a_call_never_opened(self) -> None:
            self.faults.add("orphan")
            self.turn_blocked = True
            stranger = WireCall(None, "ping", key=len(self.calls) + 7, arguments={})
            chunks = self.encoder.fragment(stranger, '{"x": 1}')
            self._send(chunks, [(one("orphan_event"), None)])

        @precondition(can_reuse_id)
        @rule(pick=st.integers(0, 3))
        def reuse_an_id(self, pick: int) -> None:
            """A whole call with another call's id, sent or to come: the second collides."""
            self.faults.add("id_reuse")
            candidates = self._with_ids()
            target = candidates[pick % len(candidates)]
            again = MachineCall(
                -1, target.call_id, target.name, target.arguments, [], 1, fate=target.fate
            )
            self.calls.append(again)
            self._emit(again)

        @precondition(can_send_late_line)
        @rule()
        def line_after_the_turn_end(self) -> None:
            """A chunk that carries nothing, after the turn's end on a wire that ends there:
            a finding of its own, blocked turn or not."""
            self.faults.add("late_line")
            self.turn_blocked = True
            self._send([dict(KEEPALIVE[wire.name])], [(one("delta_after_terminal"), None)])

        def break_a_call(self, pick: int, kind: str) -> None:
            """A whole call still to come gets non-object arguments or loses its name."""
            self.faults.add("bad_call")
            candidates = self._unsent()
            call = candidates[pick % len(candidates)]
            if kind == "no_name":
                call.fate = "missing_name"
                return
            broken = {"list": [call.arguments], "string": json.dumps(call.arguments), "number": 7}
            call.arguments = broken[kind]
            call.fate, call.cut = "non_object_arguments", 0

        @precondition(can_send_late_call)
        @rule(name=st.sampled_from(sorted(TOOLS)))
        def call_after_the_turn_end(self, name: str) -> None:
            """A whole call after the turn's end: never merged, never executable."""
            self.faults.add("late_call")
            arguments = {"seq": 99} if wire.splits else {}
            arguments |= {key: "x" for key in REQUIRED_ARGUMENTS.get(name, {})}
            call = MachineCall(-1, None, name, arguments, [], 1, late=True)
            self.calls.append(call)
            self._emit(call)

        # -- the model's view, for the shared invariants ------------------------------

        def model_slots(self) -> dict[int, str]:
            return {c.key: c.state for c in self.calls if c.started}

        def model_turn(self) -> str:
            return self._model_turn()

        # -- the end of the turn -------------------------------------------------------

        def complete_turn(self) -> None:
            """Send what is left, injecting each drawn fault the rules did not get to."""
            steps: list[tuple[Callable[[], bool], Callable[[], None]]] = [
                (self.can_corrupt_json, lambda: self.corrupt_json(0, "nul", 0)),
                (self.can_reuse_id, lambda: self.reuse_an_id(0)),
                (self.can_reuse_index, lambda: self.reuse_index(0, "ping")),
                (self.can_truncate, self.truncate),
                (self.can_end_early, self.end_turn_before_a_close),
                (self.can_end_for_another_reason, lambda: self.end_turn_for_another_reason(0)),
                (self.can_send_orphan, self.fragment_for_a_call_never_opened),
                (self.can_restate, lambda: self.restate_other_arguments(0, 0)),
                (self.can_duplicate_terminal, lambda: self.duplicate_terminal(0)),
                (self.can_send_late_fragment, lambda: self.late_fragment(0, " ")),
                (self.can_send_late_call, lambda: self.call_after_the_turn_end("ping")),
                (self.can_send_late_line, self.line_after_the_turn_end),
                (self.can_finish, self.finish_turn),
                (self.can_end_again, self.end_turn_again),
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
            assert result["profile"] == wire.name
            started = sorted((c for c in self.calls if c.started), key=lambda c: c.key)
            assert [(c["slot"], c["id"], c["name"]) for c in result["calls"]] == [
                c.reported() for c in started
            ]
            for call, entry in zip(started, result["calls"], strict=True):
                assert entry["state"] == reported_state(self.buffer, call.state)
                if call.validated:
                    assert canonical(entry["arguments"]) == canonical(call.arguments)
                elif not wire.whole:
                    assert entry["arguments"] == "".join(call.received)
                if call.json_blocked:
                    assert entry["arguments"] == call.raw
            assert self.buffer.get_content() == self.text
            if not self.faults:
                self.check_clean_turn(result)
            else:
                assert not self.buffer.executable
                assert result["status"] == "fail"
                assert self.expected, f"faults {self.faults} left no finding to expect"
                codes = {(f["code"], f["slot"]) for f in result["findings"]}
                for allowed, slot in self.expected:
                    assert any((code, slot) in codes for code in allowed), (allowed, slot)

        def check_clean_turn(self, result: dict[str, Any]) -> None:
            """A clean turn passes, assembles into the stream=false message, reads back."""
            assert self.buffer.executable is bool(self.calls)
            status, codes = ("pass", []) if self.calls else ("not_applicable", ["no_tool_calls"])
            assert (result["status"], [f["code"] for f in result["findings"]]) == (status, codes)
            message = self.buffer.as_dict()
            self.calls.sort(key=lambda c: c.key)
            expected = wire_message(wire.name, self.encoder, self.text, self.calls)
            assert canonical(message) == canonical(expected)
            strategy = self.buffer.strategy
            assert strategy is not None
            assert strategy.extract(message) == [
                ExtractedCall(c.call_id, c.name, c.arguments, c.key) for c in self.calls
            ]
            assert "".join(self.shown) == self.text == strategy.content_text(message)

    WireMachine.__name__ = WireMachine.__qualname__ = f"{wire.name.title()}Machine"
    return WireMachine


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
def test_interleaved_calls_with_injected_faults_follow_the_model(wire: Wire) -> None:
    """The machine follows its model, and its runs reached every degenerate case."""
    REACHED.clear()
    run_state_machine_as_test(wire_machine(wire), settings=settings.get_profile("machine"))
    wanted = {*SHAPES, *(["no fragment at all"] if wire.plans else [])}
    if wire.whole:
        wanted = {*WHOLE_SHAPES, *(["a call split over two chunks"] if wire.splits else [])}
    assert wanted <= set(REACHED), f"never drawn: {sorted(wanted - set(REACHED))}"
