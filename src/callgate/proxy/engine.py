"""The proxy's engine: one upstream turn in, the gated turn out, with no web framework.

A :class:`GatedTurn` is made per request from its body (``tools``, ``model``,
``tool_choice``) and :class:`Options`. Each upstream chunk goes to :meth:`GatedTurn.feed`,
which returns the chunks to send the client now; :meth:`GatedTurn.finish` returns the
end (held text flushed, accepted calls as native ``tool_calls``, the final
``finish_reason``, a notice when a call was withheld). :meth:`GatedTurn.whole` does the
same for a stream=false response. Nothing is parsed here: the chunks go through
callgate's own loop, step by step as :func:`~callgate.driver.loop.stream_turn` plays it
(an :class:`~callgate.buffer.LLMStreamBuffer` and a :class:`~callgate.driver.Driver` whose
tools are the request's, without functions, so nothing runs; the turn gathered by
:func:`~callgate.driver.loop.finish_turn`), and what a client receives is the display's
released text and the calls the gate accepted.

The OpenAI Chat Completions wire is :class:`GatedTurn`; the Anthropic Messages wire is
:class:`GatedMessages` (:mod:`callgate.proxy.messages`), on the same core
(:class:`GatedCore`). The API, for the proxy and for the framework integrations:

- ``GatedTurn(request, options)``: one turn (``RequestError`` for a request it cannot
  gate: unreadable ``tools``, ``n`` above 1);
- ``feed(chunk)``, ``finish()``: the chunks to send now, and at the end;
  ``feed_event(event)`` takes a server-sent event (``[DONE]`` finishes);
  ``whole(response)``: a stream=false response;
- after ``finish()``: ``status`` (the verdict), ``findings``, ``calls`` (what the client
  received, each with its ``source``), ``withheld`` (refused answers, with why),
  ``formats``, ``held``, ``audit()``;
- ``repair``: when set after ``finish()`` (``--on-blocked repair``), the final chunk
  was not sent: send ``repair`` (a request body) to the upstream and play its answer
  through ``follow_up()``, or end with ``give_up()``.
"""

from __future__ import annotations

import copy
import functools
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

from attrs import field, frozen

from callgate.buffer import UnreadableChunk
from callgate.driver.drivers import Driver
from callgate.driver.loop import Turn, TurnStep, finish_turn
from callgate.driver.tools import Tool
from callgate.fsm.errors import CallgateError
from callgate.fsm.verdict import VERDICT
from callgate.gate.findings import Finding, finding
from callgate.proxy.sse import DONE, SSEEvent
from callgate.proxy.sse import encode as sse_event
from callgate.strategies.base import ToolResult
from callgate.strategies.text.defaults import default_text_formats
from callgate.strategies.text.formats import FORMATS

__all__ = [
    "BLOCKED_MODES",
    "PASSABLE",
    "BlockedMode",
    "Call",
    "GatedCore",
    "GatedTurn",
    "Options",
    "RequestError",
    "ThinkSplitter",
    "driver_for",
    "fresh_id",
    "on_blocked",
]

BlockedMode = Literal["notice", "repair", "pass"]
NOTICE: BlockedMode = "notice"
REPAIR: BlockedMode = "repair"
PASS: BlockedMode = "pass"
"""The ``--on-blocked`` modes (``pass`` is a mode here, not the verdict of that name)."""
BLOCKED_MODES: tuple[BlockedMode, ...] = (NOTICE, REPAIR, PASS)
"""What ``--on-blocked`` may say: end with a notice, re-ask the upstream, or forward annotated."""
_RUNS = VERDICT.tagged("runs")
_APPLICABLE = VERDICT.tagged("applicable")
"""Verdicts under which every call ran, and verdicts of a turn that had a call."""

PASSABLE = frozenset(
    {"schema_invalid", "identity_collision", "args_mismatch", "missing_id", "unknown_tool"}
)
"""Finding codes of a complete call that ``repair`` may re-ask about (``pass``: all but
``unknown_tool``, which never becomes a call). A truncated call, broken JSON or a broken
stream is never passed nor repaired: the model did not finish it."""

_TRUNCATED = frozenset({"length", "content_filter"})
"""Upstream finish reasons that cut a turn: nothing of it may become a call."""

_DRIVERS: OrderedDict[str, Driver] = OrderedDict()
_DRIVERS_MAX = 256
"""Drivers (schemas compiled) cached per distinct tool set and formats; oldest dropped."""


_model_formats = functools.lru_cache(maxsize=_DRIVERS_MAX)(default_text_formats)
"""The text formats of a wire and model name, read once per name (the model patterns are
fixed): a request asks for them before every turn."""


class RequestError(CallgateError, ValueError):
    """A request the engine cannot gate (its ``tools`` unreadable, ``n`` above 1): a 400."""


def _known_formats(_: object, __: object, value: tuple[str, ...] | None) -> None:
    unknown = [name for name in value or () if name not in FORMATS]
    if unknown:
        raise ValueError(f"unknown text format {unknown[0]!r}; one of: {', '.join(FORMATS)}")


@frozen
class Options:
    """How the proxy treats every turn (the command line's flags)."""

    on_blocked: BlockedMode = "repair"
    """A schema or identity failure: ``notice``, ``repair`` (up to :attr:`repairs` times) or
    ``pass`` (forwarded, annotated). The default is the mode that converged in agent loops
    without ever handing a client an invalid call (``bench/bench_proxy.py --modes``)."""
    repairs: int = 2
    """How many times ``repair`` re-asks the upstream before it ends with a notice."""
    stream_args: bool = False
    """Forward native argument deltas as they arrive (``finish_reason: "tool_calls"`` still
    waits for the gate)."""
    move_reasoning: bool = False
    """Move ``<think>…</think>`` of the content to ``reasoning_content``."""
    text_formats: tuple[str, ...] | None = field(default=None, validator=_known_formats)
    """The text formats read in every turn; None: those of the request's ``model``."""


def on_blocked(words: Sequence[str]) -> tuple[BlockedMode, int]:
    """``notice``, ``pass`` or ``repair [N]`` (N >= 1, default 1) as (mode, repairs).

    ValueError says what is wrong (``--on-blocked`` and ``CALLGATE_ON_BLOCKED`` read it).
    """
    if not words:
        raise ValueError("--on-blocked needs a mode: notice, repair N or pass")
    mode, *rest = words
    if mode in (NOTICE, PASS):
        if rest:
            raise ValueError(f"--on-blocked {mode} takes no number")
        return (NOTICE if mode == NOTICE else PASS), 1
    if mode != REPAIR:
        raise ValueError(f"--on-blocked must be notice, repair N or pass, not {mode!r}")
    if len(rest) > 1 or (rest and not rest[0].isdigit()) or (rest and int(rest[0]) < 1):
        raise ValueError("--on-blocked repair takes one whole number >= 1 (repair 2)")
    return REPAIR, int(rest[0]) if rest else 1


def fresh_id(prefix: str = "call_") -> str:
    """A new call id, unique with overwhelming probability (for a call read from text)."""
    return prefix + secrets.token_hex(12)


def _tool_list(request: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """The request's tools as (name, description, schema), OpenAI's or Anthropic's shape."""
    raw = request.get("tools")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RequestError("tools must be a list")
    tools = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise RequestError("each tool must be an object")
        spec = entry.get("function") if entry.get("type") == "function" else entry
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            if "type" in entry and "name" in entry:  # a provider's built-in tool: no schema
                continue
            raise RequestError("each tool needs a name")
        schema = spec.get("parameters", spec.get("input_schema"))
        if schema is None:
            schema = {"type": "object"}
        if not isinstance(schema, Mapping):
            raise RequestError(f"the schema of tool {spec['name']!r} must be an object")
        description = spec.get("description")
        tools.append((spec["name"], description if isinstance(description, str) else "", schema))
    return tools


def driver_for(request: Mapping[str, Any], options: Options, wire: str = "openai") -> Driver:
    """A dry-run driver for the request's tools and formats, compiled once per distinct set.

    Under ``tool_choice: "none"`` it owns no tool and reads no format: nothing is a call.
    Drivers keep no per-stream state, so one serves every request with the same tools.
    """
    choice = request.get("tool_choice")
    none = choice == "none" or (isinstance(choice, Mapping) and choice.get("type") == "none")
    tools = [] if none else _tool_list(request)
    formats: tuple[str, ...] | None
    if none:
        formats = ()
    elif options.text_formats is not None:
        formats = options.text_formats
    else:
        model = request.get("model")
        formats = _model_formats(wire, model if isinstance(model, str) else None)
    key = json.dumps([tools, formats], sort_keys=True, default=str)
    driver = _DRIVERS.get(key)
    if driver is None:
        try:
            driver = Driver(
                [Tool(name, schema, description=text) for name, text, schema in tools],
                text_formats=formats,
                name="proxy",
            )
        except ValueError as exc:  # two tools of one name, an empty name
            raise RequestError(str(exc)) from exc
        _DRIVERS[key] = driver
        if len(_DRIVERS) > _DRIVERS_MAX:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(key)
    return driver


class ThinkSplitter:
    """Splits released content into reasoning (inside ``<think>…</think>``) and the rest.

    Incremental: a tag cut between two pieces is held (at most its length) until the next
    piece or :meth:`flush` says what it was.
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.inside = False
        self._tail = ""

    def feed(self, text: str) -> tuple[str, str]:
        """(reasoning, content) of ``text``, with a possible cut tag held back."""
        reasoning: list[str] = []
        content: list[str] = []
        for inside, piece in self.pieces(text):
            (reasoning if inside else content).append(piece)
        return "".join(reasoning), "".join(content)

    def pieces(self, text: str) -> list[tuple[bool, str]]:
        """``text`` as (inside the tags, piece) in order, with a possible cut tag held back.

        For a wire whose reasoning and text are blocks in sequence (Anthropic's); no
        piece is empty.
        """
        text = self._tail + text
        self._tail = ""
        out: list[tuple[bool, str]] = []
        while text:
            tag = self.CLOSE if self.inside else self.OPEN
            at = text.find(tag)
            if at >= 0:
                if at:
                    out.append((self.inside, text[:at]))
                text = text[at + len(tag) :]
                self.inside = not self.inside
                continue
            keep = next(
                (
                    n
                    for n in range(min(len(tag) - 1, len(text)), 0, -1)
                    if tag.startswith(text[-n:])
                ),
                0,
            )
            if len(text) > keep:
                out.append((self.inside, text[: len(text) - keep]))
            self._tail = text[len(text) - keep :]
            break
        return out

    def flush(self) -> tuple[str, str]:
        """What is held at the end, as it was."""
        tail, self._tail = self._tail, ""
        return (tail, "") if self.inside else ("", tail)


@frozen
class Call:
    """One call the client receives (or was withheld): where it came from, its parts."""

    id: str
    name: str
    arguments: str
    """The arguments as the JSON string the wire carries."""
    source: str
    """``native`` or the text format it was read from."""
    slot: int | str | None


class GatedCore:
    """What every wire's gated turn shares: the loop over buffer and driver, the verdict."""

    wire = "openai"

    def __init__(
        self,
        request: Mapping[str, Any],
        options: Options | None = None,
        *,
        attempt: int = 0,
        continues: Self | None = None,
    ) -> None:
        del continues  # what a wire's turn takes over from the one it continues
        self.request = request
        self.options = options if options is not None else Options()
        self.attempt = attempt
        """How many repairs came before this turn (0: the first answer)."""
        self.driver = driver_for(request, self.options, self.wire)
        self.buffer = self.driver.new_stream_buffer()
        self.steps: list[TurnStep] = []
        self.turn: Turn | None = None
        """The played turn once finished: history, verdict and findings."""
        self.extra_findings: list[Finding] = []
        """Findings of the proxy's own: an upstream chunk the loop could not take."""
        self.upstream_finish: str | None = None
        self.chunks = 0
        self.held = 0
        """The most characters the display held at once."""
        self.cpu_ns = 0
        """Time spent in the engine for this turn (its added CPU)."""
        self.calls: list[Call] = []
        """The calls the client received, in order."""
        self.withheld: list[ToolResult] = []
        """The refused answers of calls the client did not receive, with why."""
        self.passed = False
        """Whether ``pass`` forwarded calls the gate refused."""
        self.repair: dict[str, Any] | None = None
        """The request to re-ask the upstream with, when ``repair`` applies (else None)."""
        self.finished = False
        self.after_done = 0
        """Upstream events after its ``[DONE]`` (ignored)."""
        self.raw: list[bytes] = []
        """The upstream's bytes of this turn, as they came (kept for the audit log)."""
        self._dead = False

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
            self.extra_findings.append(
                finding("malformed_chunk", f"the upstream stream cannot be read: {exc}")
            )
            return None
        response = self.driver.process_llm_response(buffer)
        text = buffer.text()
        if response.results:
            self.steps.append(TurnStep(self.chunks - 1, text, response))
        held = buffer.text_queue.held
        self.held = max(self.held, held)
        return text

    def end(self) -> str:
        """End the stream: the text released at the end (the calls answered then are kept)."""
        buffer = self.buffer
        buffer.end()
        response = self.driver.process_llm_response(buffer)
        text = buffer.text()
        self.steps.append(TurnStep(None, text, response))
        self.turn = finish_turn(buffer, self.steps)
        return text

    def feed(self, chunk: object) -> list[dict[str, Any]]:
        """One upstream chunk or event (a parsed ``data:`` payload): what to send now.

        An event that ends the stream by itself (Anthropic's ``message_stop``) finishes
        the turn here too.
        """
        if self.finished:
            return []
        started = time.perf_counter_ns()
        out = self.rewrite(chunk)
        self.cpu_ns += time.perf_counter_ns() - started
        if self.ends(chunk):
            out += self.finish()
        return out

    def rewrite(self, chunk: object) -> list[dict[str, Any]]:
        """Play one chunk and rewrite it for the client (the wire's own)."""
        raise NotImplementedError

    def ends(self, chunk: object) -> bool:
        """Whether ``chunk`` ends the stream by itself (no ``[DONE]`` follows on its wire)."""
        del chunk
        return False

    def finish(self) -> list[dict[str, Any]]:
        """The end of the upstream stream (``[DONE]``, ``message_stop``, or it stopped).

        The held text, then (unless :attr:`repair` is set: the repaired turn continues
        the message) the accepted calls, a notice when calls were withheld, and the
        wire's final chunks.
        """
        if self.finished:
            return []
        started = time.perf_counter_ns()
        text = self.end()
        self.finished = True
        self.settle()
        out = self.flush(text)
        if self.repair is None:
            out += self.final()
        self.cpu_ns += time.perf_counter_ns() - started
        return out

    def flush(self, text: str) -> list[dict[str, Any]]:
        """The chunks of the text released at the end (the wire's own)."""
        raise NotImplementedError

    def final(self) -> list[dict[str, Any]]:
        """The calls, the notice and the closing chunks (the wire's own)."""
        raise NotImplementedError

    def whole_chunks(self, response: object) -> list[dict[str, Any]]:
        """A stream=false response as the gated chunks (the wire's own)."""
        raise NotImplementedError

    def give_up(self) -> list[dict[str, Any]]:
        """The final chunks after a repair that could not be asked (a notice, no call)."""
        self.repair = None
        return self.final()

    def follow_up(self) -> Self:
        """The turn that plays the upstream's answer to :attr:`repair`, continuing this one."""
        if self.repair is None:
            raise ValueError("no repair to follow up")
        return type(self)(self.repair, self.options, attempt=self.attempt + 1, continues=self)

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false response made of gated ``chunks`` (the wire's own)."""
        raise NotImplementedError

    def play(self, event: SSEEvent) -> bytes:
        """One server-sent event of the upstream as the bytes to send the client now.

        The same as encoding :meth:`feed_event`'s chunks; a wire may write its common
        chunks faster (the proxy's streaming path calls this).
        """
        return b"".join(self.encode(c) for c in self.feed_event(event))

    def feed_event(self, event: SSEEvent) -> list[dict[str, Any]]:
        """One server-sent event of the upstream: ``[DONE]`` ends, data is a chunk."""
        if event.broken is not None:
            return self.feed_unreadable(event.broken)
        if event.data.strip() == DONE:
            return self.finish()
        if self.finished:
            self.after_done += 1
            return []
        try:
            chunk = json.loads(event.data)
        except ValueError:
            return self.feed_unreadable(f"an upstream event is not JSON: {event.data[:80]!r}")
        return self.feed(chunk)

    def feed_unreadable(self, reason: str) -> list[dict[str, Any]]:
        """An upstream event that could not be read: a finding that blocks the turn."""
        return self.feed(UnreadableChunk("malformed_chunk", reason))

    def interrupted(self, reason: str) -> None:
        """The upstream stream broke off: a finding (then :meth:`finish` ends the turn)."""
        if not self.finished:
            self.extra_findings.append(finding("malformed_chunk", reason))

    def encode(self, chunk: Mapping[str, Any]) -> bytes:
        """One chunk as the client's server-sent event."""
        return sse_event(chunk)

    # -- the verdict ------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The verdict: ``pass``, ``fail`` or ``not_applicable`` (``fail`` on a broken stream)."""
        if self.turn is None:
            return "streaming"
        if self.extra_findings:
            return "fail"
        return self.turn.status

    @property
    def findings(self) -> list[Finding]:
        """What the gate found, then the proxy's own findings, then refused text calls'."""
        found = list(self.turn.findings) if self.turn is not None else []
        detector = self.buffer.text_queue.detector
        if detector is not None:
            found += detector.findings
        found += self.extra_findings
        for result in self.withheld:
            if not isinstance(result.call.slot, int):
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
        """Whether the upstream cut the turn (``length``, ``content_filter``, no end at all)."""
        return self.upstream_finish in _TRUNCATED or not self.buffer.is_finished()

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
        answered = {r.call.slot: r for r in results}
        accepted = [r for r in answered.values() if not r.refused]
        refused = [r for r in answered.values() if r.refused]
        verdict = self.turn.status if self.turn is not None else None
        late = verdict in _APPLICABLE and verdict not in _RUNS and accepted
        if late and not self.extra_findings:  # an error after the turn's end (an error frame)
            errors = [f for f in self.findings if f.severity == "error"]
            self.extra_findings.append(
                errors[0] if errors else finding("malformed_chunk", "the turn failed")
            )
        if self.extra_findings:
            refused = [*refused, *(_withheld(r, self.extra_findings[0]) for r in accepted)]
            accepted = []
        self.calls = [self._call(r) for r in sorted(accepted, key=_order)]
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
        elif mode == REPAIR and self.attempt < self.options.repairs and self.turn is not None:
            messages = self.request.get("messages")
            history = list(messages) if isinstance(messages, list) else []
            self.repair = {**self.request, "messages": [*history, *self.turn.history]}

    def _call(self, result: ToolResult) -> Call:
        slot = result.call.slot
        if isinstance(slot, int):
            found = next((s for s in self.buffer.slots if s.key == slot), None)
            raw = found.raw_arguments if found is not None else ""
            arguments = raw if raw.strip() else json.dumps(result.call.arguments)
            return Call(result.call.id or fresh_id(), result.call.name, arguments, "native", slot)
        arguments = json.dumps(result.call.arguments, ensure_ascii=False)
        return Call(fresh_id(), result.call.name, arguments, self._format_of(slot), slot)

    def _blocked_call(self, result: ToolResult) -> Call:
        """A refused call as it arrived (for ``pass``): its own arguments, not the refusal's."""
        slot = result.call.slot
        if isinstance(slot, int):
            found = next((s for s in self.buffer.slots if s.key == slot), None)
            raw = found.raw_arguments if found is not None else "{}"
            return Call(result.call.id or fresh_id(), result.call.name, raw, "native", slot)
        block, call = self._text_call(slot)
        arguments = json.dumps(call.arguments if call is not None else {}, ensure_ascii=False)
        return Call(fresh_id(), result.call.name, arguments, block, slot)

    def _text_call(self, slot: object) -> tuple[str, Any]:
        """The format and the call of a text slot ``text-B.N``."""
        if not isinstance(slot, str) or not slot.startswith("text-"):
            return "text", None
        block, _, n = slot.removeprefix("text-").partition(".")
        blocks = self.buffer.text_queue.blocks
        if not block.isdigit() or int(block) >= len(blocks):
            return "text", None
        found = blocks[int(block)]
        calls = found.calls
        return found.format, calls[int(n)] if n.isdigit() and int(n) < len(calls) else None

    def _format_of(self, slot: object) -> str:
        return self._text_call(slot)[0]

    def notice(self) -> str:
        """The short assistant text that says why calls were withheld ('' when none was)."""
        if not self.withheld or self.passed or self.repair is not None:
            return ""
        why = " ".join(dict.fromkeys(r.content for r in self.withheld))
        return f"\n\n[callgate: {why}]"

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
    slot = result.call.slot
    if isinstance(slot, int):
        return (0, slot, 0)
    if isinstance(slot, str) and slot.startswith("text-"):
        block, _, n = slot.removeprefix("text-").partition(".")
        if block.isdigit() and n.isdigit():
            return (1, int(block), int(n))
    return (2, 0, 0)


_DELTA_GATED = frozenset({"content", "tool_calls", "function_call"})
"""Delta fields the engine rewrites; every other field of a delta is forwarded as it came."""


_CONTENT_ONLY = frozenset({"content"})
_TAIL = b',"finish_reason":null}]}\n\n'
"""What follows the delta in a chunk that is not the last."""
_string = json.encoder.encode_basestring
"""A string as JSON without ASCII escapes (what ``json.dumps(s, ensure_ascii=False)`` writes)."""


def _frame(envelope: Mapping[str, Any]) -> bytes:
    """A chunk's event up to its delta (b"" when the envelope needs ASCII escapes)."""
    try:
        fixed = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return b""
    return b"data: " + fixed[:-1] + b',"choices":[{"index":0,"delta":'


class GatedTurn(GatedCore):
    """One OpenAI Chat Completions turn through the gate: chunks in, gated chunks out.

    ``feed(chunk)`` returns the chunks to send now; ``finish()`` the end. When
    :attr:`repair` is set after ``finish()``, the final chunk was not sent: stream the
    upstream's answer to :attr:`repair` through :meth:`follow_up` (or call
    :meth:`give_up` for the final chunks with a notice).
    """

    wire = "openai"

    def __init__(
        self,
        request: Mapping[str, Any],
        options: Options | None = None,
        *,
        attempt: int = 0,
        continues: GatedTurn | None = None,
    ) -> None:
        n = request.get("n")
        if n is not None and n != 1:
            raise RequestError("callgate gates one choice per request: send n=1 or none")
        super().__init__(request, options, attempt=attempt, continues=continues)
        self.envelope: dict[str, Any] = {}
        self.usage: Any = None
        self._usage_alone = False
        self._role_sent = continues is not None
        self._index = len(continues.calls) if continues is not None else 0
        self._streamed: dict[int, str] = {}
        """Native slots whose deltas were forwarded (``stream_args``): their names."""
        self.splitter = ThinkSplitter() if self.options.move_reasoning else None
        self._head: bytes | None = None
        """The encoded start of every plain chunk up to its delta (b"": not encodable so)."""

    # -- the stream -------------------------------------------------------------------

    def rewrite(self, chunk: object) -> list[dict[str, Any]]:
        """A Chat Completions chunk: its text as released, its calls held, no finish.

        The upstream's own error object is relayed alone (as a bare error frame comes);
        a choice beside it (OpenRouter's mid-stream error) goes through the gate first.
        """
        error = chunk.get("error") if isinstance(chunk, dict) else None
        delta = self._delta(chunk)
        out = [] if delta is None else [self._chunk(delta)]
        if isinstance(error, Mapping):
            out.append({"error": error})
        return out

    def play(self, event: SSEEvent) -> bytes:
        """One upstream event as bytes; a chunk of text or kept fields is written at once.

        The chunk's fixed part (the envelope, the choice around the delta) was encoded
        once per turn, so only the delta is encoded per chunk: the same bytes as
        :func:`~callgate.proxy.sse.encode` of the chunk :meth:`feed` makes.
        """
        if event.broken is not None or self.finished:
            return super().play(event)
        try:
            chunk = json.loads(event.data)
        except ValueError:  # [DONE], or not JSON: the general path says which
            return super().play(event)
        if type(chunk) is not dict or isinstance(chunk.get("error"), Mapping):
            return super().play(event)
        started = time.perf_counter_ns()
        delta = self._delta(chunk)
        out = b"" if delta is None else self._encoded(delta)
        self.cpu_ns += time.perf_counter_ns() - started
        return out

    def _delta(self, chunk: object) -> dict[str, Any] | None:
        """Play one chunk: the delta to send for it (None: nothing to send)."""
        choice: Mapping[str, Any] = {}
        if isinstance(chunk, dict):
            if not self.envelope:
                self._take_envelope(chunk)
            usage = chunk.get("usage")
            if usage is not None:
                self.usage = usage
            choices = chunk.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
                choice = choices[0]
            elif usage is not None:
                self._usage_alone = True
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                self.upstream_finish = reason
        text = self.step(chunk)
        if text is None:
            return None
        delta = choice.get("delta")
        out: dict[str, Any] = {}
        if isinstance(delta, Mapping):
            if not delta.keys() <= _DELTA_GATED:
                out = {k: v for k, v in delta.items() if k not in _DELTA_GATED and v is not None}
            if self.options.stream_args:
                calls = self._stream_args(delta.get("tool_calls"))
                if calls:
                    out["tool_calls"] = calls
        self._text_into(out, text)
        return self._ready(out)

    def _text_into(self, delta: dict[str, Any], text: str) -> None:
        if self.splitter is not None and text:
            reasoning, text = self.splitter.feed(text)
            if reasoning:
                delta["reasoning_content"] = delta.get("reasoning_content", "") + reasoning
        if text:
            delta["content"] = text

    def _ready(self, delta: dict[str, Any]) -> dict[str, Any] | None:
        """The delta as sent: the first carries the role; an empty one is not sent (None)."""
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            if "content" not in delta and "tool_calls" not in delta:
                delta["content"] = ""
            self._role_sent = True
        elif not delta or delta.keys() == {"role"}:
            return None
        return delta

    def _emit(self, delta: dict[str, Any]) -> list[dict[str, Any]]:
        ready = self._ready(delta)
        return [] if ready is None else [self._chunk(ready)]

    def _encoded(self, delta: dict[str, Any]) -> bytes:
        """``encode(self._chunk(delta))``, with the chunk's fixed part encoded once."""
        if self._head is None:
            if not self.envelope:
                self._take_envelope({})
            self._head = _frame(self.envelope)
        if self._head:
            try:
                if delta.keys() == _CONTENT_ONLY:
                    body = b'{"content":' + _string(delta["content"]).encode("utf-8") + b"}"
                else:
                    body = json.dumps(delta, ensure_ascii=False, separators=(",", ":")).encode(
                        "utf-8"
                    )
            except UnicodeEncodeError:  # a lone surrogate: the whole chunk is escaped
                pass
            else:
                return self._head + body + _TAIL
        return self.encode(self._chunk(delta))

    def _take_envelope(self, chunk: Mapping[str, Any]) -> None:
        """The fields every chunk sent carries: the upstream's first chunk's, else made up."""
        kept = {k: chunk[k] for k in ("id", "created", "model", "system_fingerprint") if k in chunk}
        self.envelope = {
            "id": kept.pop("id", None) or fresh_id("chatcmpl-"),
            "object": "chat.completion.chunk",
            "created": kept.pop("created", None) or int(time.time()),
            "model": kept.pop("model", None) or self.request.get("model", ""),
            **kept,
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        if not self.envelope:
            self._take_envelope({})
        body = self.envelope.copy()
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return body

    def _stream_args(self, calls: object) -> list[dict[str, Any]]:
        """Native argument deltas forwarded as they come, for calls of a declared tool."""
        if not isinstance(calls, list):
            return []
        out = []
        for entry in calls:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("index"), int):
                continue
            index = entry["index"]
            function = entry.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str) and name and index not in self._streamed:
                if not self.driver.owns(name):
                    continue
                self._streamed[index] = name
            if index in self._streamed:
                out.append(copy.deepcopy(dict(entry)))
        return out

    def flush(self, text: str) -> list[dict[str, Any]]:
        """The text released at the end, with the reasoning splitter's held tail."""
        delta: dict[str, Any] = {}
        self._text_into(delta, text)
        if self.splitter is not None:
            reasoning, rest = self.splitter.flush()
            if reasoning:
                delta["reasoning_content"] = delta.get("reasoning_content", "") + reasoning
            if rest:
                delta["content"] = delta.get("content", "") + rest
        return self._emit(delta)

    def final(self) -> list[dict[str, Any]]:
        """The calls, the notice, the final chunk, then usage if the upstream sent it alone."""
        out: list[dict[str, Any]] = []
        sent = self.calls if not self.options.stream_args else self._unstreamed()
        for call in sent:
            entry = {
                "index": self._index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            self._index += 1
            out += self._emit({"tool_calls": [entry]})
        notice = self.notice()
        if notice:
            out += self._emit({"content": notice})
        finish = self._finish_reason()
        final = self._chunk({}, finish)
        final["callgate"] = self.annotation()
        if self.usage is not None and not self._usage_alone:
            final["usage"] = self.usage
        if not self._role_sent:
            final["choices"][0]["delta"] = {"role": "assistant", "content": ""}
            self._role_sent = True
        out.append(final)
        if self.usage is not None and self._usage_alone:
            usage = {**self._chunk({}), "choices": [], "usage": self.usage}
            out.append(usage)
        return out

    def _unstreamed(self) -> list[Call]:
        """Under ``stream_args``: the accepted calls not already forwarded delta by delta."""
        return [c for c in self.calls if not (isinstance(c.slot, int) and c.slot in self._streamed)]

    def _finish_reason(self) -> str:
        if self.calls:
            return "tool_calls"
        reason = self.upstream_finish
        if reason in _TRUNCATED:
            return str(reason)
        return "stop" if reason in (None, "tool_calls", "function_call") else str(reason)

    # -- stream=false -----------------------------------------------------------------

    def whole(self, response: Mapping[str, Any]) -> dict[str, Any]:
        """A stream=false response through the same gate: the response the client gets.

        The message is fed as one chunk (its content and its calls as deltas), so the
        decision is the stream's; the response keeps every other field as it came.
        """
        return self.assemble(response, self.whole_chunks(response))

    def whole_chunks(self, response: object) -> list[dict[str, Any]]:
        """The gated chunks of a stream=false ``response`` (see :meth:`whole`)."""
        if not isinstance(response, Mapping):
            unreadable = self.feed_unreadable("the upstream's response is not a JSON object")
            return [*unreadable, *self.finish()]
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        if not isinstance(choice, Mapping):
            choice = {}
        message = choice.get("message")
        delta: dict[str, Any] = dict(message) if isinstance(message, Mapping) else {}
        delta.setdefault("role", "assistant")
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [
                {**c, "index": c.get("index", n)} if isinstance(c, Mapping) else c
                for n, c in enumerate(calls)
            ]
        chunk = {
            **{k: v for k, v in response.items() if k not in ("choices", "object", "usage")},
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}],
        }
        return [*self.feed(chunk), *self.finish()]

    def assemble(
        self, response: Mapping[str, Any] | None, chunks: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The stream=false response made of the gated ``chunks`` (this engine's own output)."""
        message: dict[str, Any] = {"role": "assistant", "content": None}
        content: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        finish: str | None = None
        note: Any = None
        response = response or {}
        choices = response.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else {}
        original = first.get("message") if isinstance(first, Mapping) else None
        if isinstance(original, Mapping):
            message.update(
                {k: v for k, v in original.items() if k not in (*_DELTA_GATED, "reasoning_content")}
            )
        for chunk in chunks:
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                content.append(delta.get("content") or "")
                reasoning.append(delta.get("reasoning_content") or "")
                calls += [
                    {k: v for k, v in c.items() if k != "index"}
                    for c in delta.get("tool_calls") or ()
                ]
                finish = choice.get("finish_reason") or finish
            note = chunk.get("callgate", note)
        if "".join(content):
            message["content"] = "".join(content)
        if "".join(reasoning):
            message["reasoning_content"] = "".join(reasoning)
        if calls:
            message["tool_calls"] = calls
        body = {k: v for k, v in response.items() if k != "choices"}
        body["choices"] = [
            {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        ]
        body["callgate"] = note
        return body
