"""The gate of one proxied turn, on no wire: upstream chunks through callgate's loop, the verdict.

:class:`GateCore` plays each upstream chunk as :func:`~callgate.driver.loop.stream_turn`
does (an :class:`~callgate.buffer.LLMStreamBuffer` and a dry-run
:class:`~callgate.driver.Driver` whose tools have no function, so nothing runs), gathers
the turn with :func:`~callgate.driver.loop.finish_turn`, and decides its end: the calls a
client receives (:class:`~callgate.proxy.core.Call`, each keyed by its typed reference),
those withheld with why, and whether ``pass`` forwards them or ``repair`` re-asks. The
wires' readers feed it; the wires' writers read what it decided.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from callgate.buffer import LLMStreamBuffer, UnreadableChunk
from callgate.driver.loop import Turn, TurnStep, gathered_turn, turn_verdict
from callgate.fsm.verdict import VERDICT, Verdict
from callgate.gate.findings import Finding, finding
from callgate.gate.turn import CallRef, NativeRef, TextRef, TextSlot, call_order
from callgate.proxy import core
from callgate.proxy.core import PASS, PASSABLE, REPAIR, Call, Options, driver_for
from callgate.proxy.requests import output_token_limit
from callgate.strategies.base import ToolResult

__all__ = ["GateCore"]

_RUNS = VERDICT.tagged("runs")
_APPLICABLE = VERDICT.tagged("applicable")
"""Verdicts under which every call ran, and verdicts of a turn that had a call."""


class GateCore(ABC):
    """One turn's loop over buffer and driver, and what it decided (see the module).

    Abstract: the engine (:class:`~callgate.proxy.engine.Engine`) gives it the client's
    writer and the upstream's reader, which answer :meth:`arguments_shown` and
    :meth:`repair_request`.
    """

    wire = "openai"
    """The upstream's wire, as the library's strategy names it."""

    def __init__(
        self,
        request: Mapping[str, Any],
        options: Options | None,
        attempt: int,
        *,
        prepared: bool = True,
    ) -> None:
        self.request = request
        self.options = options if options is not None else Options()
        self.attempt = attempt
        """How many repairs came before this turn (0: the first answer)."""
        self.driver = driver_for(request, self.options, self.wire)
        self.buffer: LLMStreamBuffer
        """The turn's buffer (see :meth:`prepare`)."""
        self._prepared = False
        if prepared:
            self.prepare()
        self.steps: list[TurnStep] = []
        self._turn: Turn | None = None
        self._settled: tuple[Verdict, tuple[Finding, ...]] | None = None
        """The turn's verdict and findings once ended (:attr:`turn` is gathered around them)."""
        self.extra_findings: list[Finding] = []
        """Findings of the proxy's own: an upstream chunk the loop could not take."""
        self.upstream_finish: str | None = None
        """The upstream's own finish or stop reason, as it came."""
        self.cut = False
        """Whether that reason cut the turn (a token limit, a filter, a refusal)."""
        self.chunks = 0
        self.held = 0
        """The most characters the display held at once."""
        self.cpu_ns = 0
        """Time spent in the engine for this turn (its added CPU)."""
        self.calls: list[Call] = []
        """The calls the client received, in order."""
        self.withheld: list[ToolResult] = []
        """The refused answers of calls the client did not receive, with why."""
        self._accepted: list[ToolResult] = []
        """The gate's answers of the calls in :attr:`calls` that it accepted."""
        self.passed = False
        """Whether ``pass`` forwarded calls the gate refused."""
        self.repair: dict[str, Any] | None = None
        """The request to re-ask the upstream with, when ``repair`` applies (else None)."""
        self.finished = False
        self.after_done = 0
        """Upstream events after its ``[DONE]`` (ignored)."""
        self.broken: str | None = None
        """Why the upstream's stream broke off (a dropped connection, a timeout), else None."""
        self.raw: list[bytes] = []
        """The upstream's bytes of this turn, as they came (kept for the audit log)."""
        self.text_ids: dict[CallRef | None, str] = {}
        """Each text call's id by its reference, made once (see :meth:`text_call_id`)."""
        self._dead = False

    def prepare(self) -> None:
        """Make the turn's buffer, once; ``prepared=False`` leaves it to the caller.

        The request is read and its driver found when the turn is made (what can refuse
        it comes first); the buffer only needs to be there for the first chunk, so the
        proxy makes it while the upstream is being asked.
        """
        if self._prepared:
            return
        self._prepared = True
        self.buffer = self.driver.new_stream_buffer()
        # The driver is shared by every request with these tools; the limit and the
        # repair mode are this request's, set before the first chunk starts the gate.
        self.buffer.max_tokens = output_token_limit(self.request)
        self.buffer.repair = "lossless" if self.options.repair_json else None

    # -- the loop ---------------------------------------------------------------------

    def step(self, chunk: object) -> str | None:
        """Play one chunk as the client loop does: the text released; None once dead.

        ``buffer.add``, the driver's ``process_llm_response`` (it runs nothing: its tools
        have no function), then ``buffer.text()``; a step that answered calls is kept
        for :func:`~callgate.driver.loop.finish_turn`.
        """
        if self._dead or self.finished:
            return None
        self.chunks += 1
        if not isinstance(chunk, dict):
            chunk = UnreadableChunk(
                "malformed_chunk", f"an upstream chunk is {type(chunk).__name__}"
            )
        buffer = self.buffer
        try:
            buffer.add(chunk)
        except Exception as exc:  # the stream is not this wire's: end the turn cleanly
            self._dead = True
            self._refuse(f"the upstream stream cannot be read: {exc}")
            return None
        response = self.driver.process_llm_response(buffer)
        text = buffer.text()
        if response.results:
            self.steps.append(TurnStep(self.chunks - 1, text, response))
        held = buffer.text_queue.held
        self.held = max(self.held, held)
        return text

    def step_text(self, chunk: dict[str, Any], text: str) -> str | None:
        """:meth:`step` for an upstream chunk whose only piece is the text ``text``.

        The writer's ``echoes`` said so. On Chat Completions (one choice at index 0, no
        finish reason, a delta of ``content`` alone, no other field), when the turn is in
        its common state (content that came as strings, the display quiet since the last
        step, the text within its limit) and ``text`` can start no markup the detector
        watches (one scan, :meth:`~callgate.strategies.text.detector.Detector.plain`),
        the text is counted where :meth:`step` counts it and released as it came; when
        it only grows an open call block past its head
        (:meth:`~callgate.strategies.text.detector.Detector.collect`), it is held and ''
        released. Otherwise (and on every other wire) :meth:`step` plays the chunk.
        """
        if self.plain_path and self.wire == "openai":
            shown = self._quick(text)
            if shown is not None:
                self.chunks += 1
                return shown
        return self.step(chunk)

    plain_path = True
    """Whether :meth:`step_text` may take its short path (the tests compare both)."""

    def _quick(self, text: str) -> str | None:
        """Take ``text`` as the general path would on a quiet turn: the text it releases.

        ``text`` itself when it is plain, '' when an open call block holds it; None (nothing
        taken) when the general path must read it.
        """
        buffer = self.buffer
        queue = buffer.text_queue
        view = queue.views.get(self.driver)
        quiet = view is not None and view.reply is not None
        detector = queue.detector
        if detector is None or detector.block is None:
            return text if buffer._take_plain(text, quiet) else None
        if not buffer._take_plain(text, quiet, held=True):
            return None
        self.held = max(self.held, queue.held)
        return ""

    def end(self, *, clean: bool) -> str:
        """End the stream: the text released at the end (the calls answered then are kept).

        ``clean``: the transport saw the stream's own end (``[DONE]``, a whole response).
        """
        buffer = self.buffer
        buffer.end(clean=clean)
        response = self.driver.process_llm_response(buffer)
        text = buffer.text()
        self.steps.append(TurnStep(None, text, response))
        self._settled = turn_verdict(buffer)
        return text

    @property
    def decided(self) -> bool:
        """Whether the turn ended and has its verdict (:meth:`end` ran)."""
        return self._settled is not None

    @property
    def turn(self) -> Turn | None:
        """The played turn once ended: history, verdict and findings (None before).

        What :func:`~callgate.driver.loop.finish_turn` gathers. Its verdict and findings
        are taken at the end; its results and the next request's history only when first
        asked (a repair, a caller), for the buffer no longer changes: most turns never
        need them.
        """
        if self._turn is None and self._settled is not None:
            self._turn = gathered_turn(self.buffer, self.steps, self._settled)
        return self._turn

    def interrupted(self, reason: str) -> None:
        """The upstream stream broke off: a finding (then ``finish`` ends the turn in error)."""
        if not self.finished:
            self._refuse(reason)
            self.broken = reason

    def _refuse(self, reason: str) -> None:
        """What the loop could not take refuses the turn in its gate: the verdict says fail."""
        self.buffer.add(UnreadableChunk("malformed_chunk", reason))

    # -- the verdict ------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The turn's verdict: ``pass``, ``fail`` or ``not_applicable`` (a broken stream fails)."""
        return self._settled[0] if self._settled is not None else "streaming"

    @property
    def findings(self) -> list[Finding]:
        """What the gate found, then the proxy's own findings, then refused text calls'."""
        found = list(self._settled[1]) if self._settled is not None else []
        detector = self.buffer.text_queue.detector
        if detector is not None:
            found += detector.findings
        found += self.extra_findings
        for result in self.withheld:
            if isinstance(result.call.ref, TextRef):
                problem = self.driver.schemas.check(
                    result.call.name, result.call.arguments, result.call.slot
                )
                if problem is not None and problem not in found:
                    found.append(problem)
        return found

    @property
    def formats(self) -> tuple[str, ...]:
        """The text formats this turn read."""
        return self.buffer.text_formats or ()

    @property
    def truncated(self) -> bool:
        """Whether the upstream cut the turn (a limit, a filter, a refusal, no end at all)."""
        return self.cut or not self.buffer.is_finished()

    def audit(self) -> dict[str, Any]:
        """The turn for the audit log and metrics: verdict, findings, formats, calls, sizes."""
        return {
            "wire": self.wire,
            "status": self.status,
            "findings": [f.as_dict() for f in self.findings],
            "formats": list(self.formats),
            "held": self.held,
            "chunks": self.chunks,
            "upstream_finish": self.upstream_finish,
            "calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments, "source": c.source}
                for c in self.calls
            ],
            "withheld": [r.content for r in self.withheld],
            "passed": self.passed,
            "attempt": self.attempt,
            "cpu_us": self.cpu_ns / 1000,
        }

    # -- deciding the end -------------------------------------------------------------

    def settle(self) -> None:
        """After :meth:`end`: the calls to send, those withheld, and a repair if it applies."""
        results = [r for step in self.steps for r in step.response.results]
        answered = {r.call.ref: r for r in results}
        accepted = [r for r in answered.values() if not r.refused]
        refused = [r for r in answered.values() if r.refused]
        verdict = self._settled[0] if self._settled is not None else None
        late = verdict in _APPLICABLE and verdict not in _RUNS and accepted
        if late and not self.extra_findings:  # an error after the turn's end (an error frame)
            errors = [f for f in self.findings if f.severity == "error"]
            self.extra_findings.append(
                errors[0] if errors else finding("malformed_chunk", "the turn failed")
            )
        if self.extra_findings:
            refused = [*refused, *(_withheld(r, self.extra_findings[0]) for r in accepted)]
            accepted = []
        self._accepted = sorted(accepted, key=_order)
        self.calls = [self._call(r) for r in self._accepted]
        self.withheld = sorted(refused, key=_order)
        if not self.withheld or self.truncated:
            return
        codes = {f.code for f in self.findings if f.severity == "error"}
        if not codes <= PASSABLE:
            return
        mode = self.options.on_blocked
        if mode == PASS and "unknown_tool" not in codes:
            self.calls += [self._blocked_call(r) for r in self.withheld]
            self.passed = True
        elif mode == REPAIR and self.repairable and self.turn is not None:
            self.repair = self.repair_request(list(self.turn.history))

    @property
    def repairable(self) -> bool:
        """Whether a blocked turn may be re-asked: repairs left, and no argument shown yet.

        Under ``stream_args`` the client may hold a call's argument deltas already; a
        repaired answer would add to that call (Chat and Messages have no way to take it
        back), so such a turn is withheld with its notice instead.
        """
        return self.attempt < self.options.repairs and not self.arguments_shown()

    @abstractmethod
    def arguments_shown(self) -> bool:
        """Whether the client was sent argument deltas of this turn's calls (the writer knows)."""

    @abstractmethod
    def repair_request(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        """The upstream request that re-asks: the request with the turn's history after it."""

    def unsent(self, why: str) -> None:
        """The client's writer sent none of the calls it was given: none counts as sent.

        Each goes to :attr:`withheld` with ``why`` (the audit record, the metrics and the
        span then count what the client received); calls ``pass`` forwarded were not sent
        either.
        """
        unsent = [
            ToolResult(r.call, f"The call to {r.call.name} was not sent: {why}", True, True)
            for r in self._accepted
        ]
        self.withheld = sorted([*self.withheld, *unsent], key=_order)
        self.calls = []
        self._accepted = []
        self.passed = False

    def _native_raw(self, ref: NativeRef, default: str) -> str:
        found = next((s for s in self.buffer.slots if s.ref == ref), None)
        return found.raw_arguments if found is not None else default

    def _repaired(self, ref: NativeRef) -> bool:
        """Whether the slot's arguments were repaired (``repair_json``).

        Its raw text is not what the gate accepted, so the call carries the repaired value.
        """
        found = self._settled[1] if self._settled is not None else ()
        return any(f.code == "repaired_arguments" and f.slot == ref.slot for f in found)

    def _text_slot(self, ref: CallRef | None) -> TextSlot | None:
        gate = self.buffer.gate
        return gate.text_slots.get(ref) if gate is not None and isinstance(ref, TextRef) else None

    def _call(self, result: ToolResult) -> Call:
        ref = result.call.ref
        if isinstance(ref, NativeRef):
            raw = self._native_raw(ref, "")
            kept = raw.strip() and not self._repaired(ref)
            arguments = raw if kept else json.dumps(result.call.arguments)
            call_id = result.call.id or core.fresh_id()
            return Call(call_id, result.call.name, arguments, "native", ref)
        arguments = json.dumps(result.call.arguments, ensure_ascii=False)
        text = self._text_slot(ref)
        source = text.source if text is not None else "text"
        return Call(self.text_call_id(ref), result.call.name, arguments, source, ref)

    def text_call_id(self, ref: CallRef | None) -> str:
        """The id of the text call ``ref``, made once on first asking.

        The argument deltas a writer streams while the call forms and the call released
        carry the same one, prefixed as the client's wire writes ids (its writer's
        ``text_id_prefix``).
        """
        found = self.text_ids.get(ref)
        if found is None:
            prefix = getattr(getattr(self, "writer", None), "text_id_prefix", "call_")
            found = self.text_ids[ref] = core.fresh_id(prefix)
        return found

    def _blocked_call(self, result: ToolResult) -> Call:
        """A refused call as it arrived (for ``pass``): its own arguments, not the refusal's."""
        ref = result.call.ref
        if isinstance(ref, NativeRef):
            raw = self._native_raw(ref, "{}")
            return Call(result.call.id or core.fresh_id(), result.call.name, raw, "native", ref)
        text = self._text_slot(ref)
        given = text.given if text is not None else {}
        arguments = json.dumps(given, ensure_ascii=False)
        source = text.source if text is not None else "text"
        return Call(self.text_call_id(ref), result.call.name, arguments, source, ref)

    def annotation(self) -> dict[str, Any]:
        """The ``callgate`` field of the final chunk (SDKs ignore unknown fields)."""
        note: dict[str, Any] = {
            "status": self.status,
            "findings": [
                {"code": f.code, "message": f.message}
                for f in self.findings
                if f.severity != "info"
            ],
        }
        if self.withheld:
            note["withheld"] = [r.call.name for r in self.withheld]
        if self.passed:
            note["passed"] = True
        return note


def _withheld(result: ToolResult, why: Finding) -> ToolResult:
    """A call the gate let through that the proxy does not send, with why."""
    content = f"The call to {result.call.name} was not run: {why.message} ({why.code})."
    return ToolResult(result.call, content, is_error=True, refused=True)


def _order(result: ToolResult) -> tuple[int, int, int]:
    """Native calls by slot, then text calls by block and position."""
    return call_order(result.call.ref)
