"""Drivers: who owns a call, when it may run, and what the model gets back.

A driver holds tools (a name, a JSON Schema, the caller's function) and is stateless:
what it decided about a stream lives in the buffer's :class:`~callgate.textqueue.TextQueue`
(a :class:`~callgate.view.View` per driver, which runs the display machine,
:mod:`callgate.fsm.display`), and the call ids it answered live in the buffer's
:class:`~callgate.ledger.Ledger`. ``process_llm_response(buffer)`` is called after each
chunk (and once after ``buffer.end()``); it returns a :class:`DriverResponse` whose
status is ``call_pending``, ``call_executed``, ``call_failed`` or None (no call).

Ownership is the false-positive guard: a call naming a tool the driver does not own is
never run by it and never counts as its failure (another driver may own it); a text
block whose tool nobody owns flows to the user as text. Calls run only when the buffer's
policy allows (``turn``: after the turn's terminal evidence, all together; ``call``: at
each call's own done; ``parseable``: as soon as the arguments parse, unsafe). A call the
gate blocked gets a corrective error result instead of a run.

Text-embedded calls: on a wire whose assembled message is a plain content string
(OpenAI Chat Completions) the chain's text strategies read them directly; on a native
envelope that ``leaks_into_text`` (Anthropic, Responses, ...) a message with no native
call falls through to the driver's backup text strategy, and ``None`` switches that off
(a leak then flows as text). A turn that has native calls never runs text calls: the
native ones are authoritative.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar, cast

from attrs import evolve

from callgate.buffer import (
    LLMStreamBuffer,
    Recording,
    choice_index,
    repair_mode,
    token_limit,
)
from callgate.driver.decision import QUIET, Decision
from callgate.driver.history import turn_history
from callgate.driver.responses import DriverResponse, Status, merge
from callgate.driver.results import refusal
from callgate.driver.tooldefs import tool_specs
from callgate.driver.tools import Answer, Job, Tool, arun_job, run_job
from callgate.fsm.display import ON_ERROR
from callgate.fsm.release import policy as release_policy
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas
from callgate.ledger import Ledger
from callgate.strategies import OpenAIStrategy, default_wire_strategies
from callgate.strategies.base import ExtractedCall, ExtractionStrategy, MessageReader, ToolResult
from callgate.strategies.text.defaults import default_text_formats, model_name
from callgate.strategies.text.formats import DEFAULT_FORMATS
from callgate.strategies.text.strategy import TEXT_STRATEGIES, TextFormatsStrategy, TextStrategy

__all__ = [
    "BaseDriver",
    "Driver",
    "DriverMeta",
    "Orchestrator",
    "SupportsNativeTools",
    "SupportsStreaming",
]


class DriverMeta(type):
    """The drivers' metaclass: it resolves a driver's capabilities."""

    C = TypeVar("C")

    @staticmethod
    def resolve_capability(driver: object, capability: type[C]) -> C | None:
        """``driver`` as ``capability`` if it has that capability, else None."""
        return driver if isinstance(driver, capability) else None


class BaseDriver(metaclass=DriverMeta):
    """A driver over text: it owns tools and reads calls of its text formats.

    ``process_llm_response`` takes a whole message (a string, or a provider's stream=false
    dict). Streaming and native tool calls are capabilities (:class:`SupportsStreaming`,
    :class:`SupportsNativeTools`); :class:`Driver` has both.
    """

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        text_formats: Iterable[str] | None = None,
        policy: str = "turn",
        limits: Limits | None = None,
        name: str | None = None,
        tool_timeout: float | None = None,
        strict_finish: bool = False,
        hide_think: bool = False,
        choice: int = 0,
        ledger: Ledger | None = None,
        max_tokens: int | None = None,
        repair: Literal["lossless"] | None = None,
    ) -> None:
        self.name = name
        """How traces and the demo call this driver (``driver N`` when None)."""
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
        steps = (limits or Limits()).max_schema_steps
        self.schemas = ToolSchemas({t.name: t.schema for t in self.tools.values()}, max_steps=steps)
        self.text_formats: tuple[str, ...] | None = (
            tuple(text_formats)
            if text_formats is not None
            else None
            if self.chooses_formats
            else DEFAULT_FORMATS
        )
        """The text formats read; None: chosen per stream (see :attr:`chooses_formats`)."""
        release_policy(policy)  # ValueError naming the choices for an unknown one
        self.policy = policy
        self.limits = limits
        if tool_timeout is not None and not tool_timeout >= 0:
            raise ValueError(f"tool_timeout must be a number of seconds >= 0, not {tool_timeout!r}")
        self.tool_timeout = tool_timeout
        """Seconds a tool without its own ``timeout`` may take under the async loop."""
        self.strict_finish = strict_finish
        """The seed validator's rule for the driver's buffers: refuse calls an OpenAI turn
        ends with ``stop`` (by default they run, with a ``stop_finish_reason`` warning)."""
        self.hide_think = hide_think
        """Keep ``<think>…</think>`` in the content out of the display (a chat UI's wish);
        by default it is shown as it came. The message keeps it either way."""
        self.choice = choice_index(choice)
        self.ledger = _a_ledger(ledger) if ledger is not None else Ledger()
        self.max_tokens = token_limit(max_tokens)
        """The request's output token limit, for the driver's buffers: a turn whose usage
        reaches it was cut, whatever its finish reason, and none of its calls runs."""
        self.repair = repair_mode(repair)
        """``lossless``: the driver's buffers repair broken argument JSON where no value
        changes and the schema confirms it (each edit a ``repaired_arguments`` warning)."""
        """The conversation's ledger for the driver's whole messages: a call runs at most
        once across ``process_llm_response(message)`` calls, as across a buffer's turns."""
        """The choice of an OpenAI ``n > 1`` stream whose calls this driver runs (0 by
        default); the other choices are decided and reported, never run."""
        self._backup: TextStrategy | None = TextFormatsStrategy(self.text_formats or ())
        """Read only by drivers with :class:`SupportsNativeTools` (the fall-through)."""

    chooses_formats: ClassVar[bool] = False
    """Whether ``text_formats=None`` means "chosen from each stream's model and wire"
    (:mod:`callgate.strategies.text.defaults`) rather than every stream-detected format."""

    def formats_for(self, message: Mapping[str, Any], wire: str | None) -> tuple[str, ...]:
        """The text formats read in ``message`` (from ``wire``): the driver's, or the defaults."""
        if self.text_formats is not None:
            return self.text_formats
        return default_text_formats(wire, model_name(message))

    def owns(self, name: str | None) -> bool:
        """Whether ``name`` is one of this driver's tools."""
        return name in self.tools

    def tool_specs(self, wire: str) -> list[Any]:
        """The driver's tools as the ``tools`` of a request to ``wire``.

        ``wire`` is a profile name: ``openai``, ``openai-responses``, ``anthropic``,
        ``bedrock`` (the ``toolConfig.tools`` list), ``gemini``, ``cohere``, ``ollama``,
        ``mistral``.
        """
        return tool_specs(wire, [(t.name, t.description, t.schema) for t in self.tools.values()])

    def _chain(self) -> list[MessageReader]:
        """The strategies this driver reads messages with: one per text format."""
        return [TEXT_STRATEGIES[name]() for name in self.text_formats or ()]

    def get_native_backup_strategy(self) -> TextStrategy | None:
        """The text strategy for calls leaked into a native message's text: none here.

        A driver with :class:`SupportsNativeTools` has one (see
        :meth:`SupportsNativeTools.set_native_backup_strategy`).
        """
        return None

    # -- running calls ----------------------------------------------------------------

    def timeout_of(self, tool: Tool) -> float | None:
        """The seconds ``tool`` may take under the async loop (its own, else the driver's)."""
        return tool.timeout if tool.timeout is not None else self.tool_timeout

    def prepare(self, call: ExtractedCall, ledger: Ledger, *, checked: bool = False) -> Answer:
        """What ``call`` gets: the ledger's answer, a refusal, a dry run, or a :class:`Job`.

        A call already in the ledger (same id, tool and arguments) gets its recorded
        result and does not run again; a call that fails its tool's schema is refused with
        a corrective result. ``checked``: the gate already checked it against these very
        schemas, so the check is not repeated.
        """
        known = ledger.get(call)
        if known is not None:
            return known
        problem = None if checked else self.schemas.check(call.name, call.arguments, call.slot)
        if problem is not None:
            return refusal(call, problem)
        tool = self.tools.get(call.name)
        if tool is None or tool.function is None:
            result = ToolResult(call, f"(dry run: {call.name} was not executed)")
            ledger.record(result)
            return result
        return Job(call, tool)

    def run(self, job: Job, ledger: Ledger) -> ToolResult:
        """Run ``job`` here and now; it is in the ledger before the function is called.

        An ``async def`` tool cannot run here: a :class:`TypeError` says to use
        ``arun_turn`` (nothing is recorded, nothing ran).
        """
        return run_job(job, ledger)

    async def arun(self, job: Job, ledger: Ledger) -> ToolResult:
        """Run ``job`` under the async loop: await it, within its timeout."""
        return await arun_job(job, ledger, self.timeout_of(job.tool))

    def answer(self, call: ExtractedCall, ledger: Ledger) -> ToolResult:
        """Validate and run ``call`` once per conversation (see :meth:`prepare`)."""
        answer = self.prepare(call, ledger)
        return self.run(answer, ledger) if isinstance(answer, Job) else answer

    # -- whole messages ---------------------------------------------------------------

    def process_llm_response(
        self, response: str | Mapping[str, Any], *, ledger: Ledger | None = None
    ) -> DriverResponse:
        """The calls of one whole message that this driver owns, answered.

        The message is checked as its own stream: its wire replays it
        (:meth:`~callgate.strategies.base.ExtractionStrategy.replay`) through a buffer of
        this driver's, and each step is decided as a stream's is, so a whole message gets
        the verdict, runs and answers its stream gets. A string, or a dict without a
        native envelope, is plain text; this driver reads no native calls, so a native
        message gets an empty response. Each message is a turn of the conversation whose
        ledger is ``ledger`` (the driver's own, :attr:`ledger`, when None): a call already
        answered in it gets its recorded answer and does not run again.
        """
        return self._process_message(response, ledger)

    def message_wire(self, message: Mapping[str, Any]) -> ExtractionStrategy | None:
        """The wire a whole message is replayed on: plain text only (None for a native one)."""
        if any(wire.recognizes(message) for wire in default_wire_strategies()):
            return None
        return OpenAIStrategy()

    def _process_message(
        self, response: str | Mapping[str, Any], ledger: Ledger | None
    ) -> DriverResponse:
        ledger = _a_ledger(ledger) if ledger is not None else self.ledger
        message: Mapping[str, Any] = (
            {"role": "assistant", "content": response} if isinstance(response, str) else response
        )
        wire = self.message_wire(message)
        if wire is None:
            return DriverResponse()
        buffer = self._buffer(wire, ledger=ledger)
        steps = []
        for chunk in wire.replay(message):
            ledger.identify(chunk)  # the first chunk's identity is the turn's, as in a stream
            buffer.add(chunk)
            steps.append(self._stream_step(buffer))
        buffer.end(clean=True)  # a whole message is all there is: no connection was cut
        steps.append(self._stream_step(buffer))
        results = tuple(r for step in steps for r in step.results)
        if not results:
            return DriverResponse()
        refused = any(r.refused for r in results)
        answers = tuple(m for step in steps for m in step.answers)
        whole = DriverResponse("call_failed" if refused else "call_executed", results, answers)
        return self._answered(buffer, whole)

    def _buffer(
        self,
        strategy: ExtractionStrategy | None = None,
        recorder: Recording | None = None,
        ledger: Ledger | None = None,
    ) -> LLMStreamBuffer:
        """A buffer with this driver's chain, tools, policy, text formats and finish rules.

        Without text formats it has no detector: content is shown as it comes; without a
        backup text strategy, calls leaked into a native wire's text are text. With
        ``strategy`` the buffer reads that wire (a whole message's replay). ``ledger``: the
        conversation's (a fresh in-memory one when None).
        """
        chain = [*([strategy] if strategy is not None else []), *self._chain()]
        return LLMStreamBuffer(
            chain,
            tool_schemas=self.schemas,
            limits=self.limits,
            policy=self.policy,
            strict_finish=self.strict_finish,
            hide_think=self.hide_think,
            text_formats="auto" if self.text_formats is None else self.text_formats or None,
            strategy=strategy,
            recorder=recorder,
            ledger=ledger,
            leaked_calls=self.get_native_backup_strategy() is not None,
            choice=self.choice,
            max_tokens=self.max_tokens,
            repair=self.repair,
        )

    # -- one step of a stream ---------------------------------------------------------

    def _stream_step(self, buffer: LLMStreamBuffer, history: bool = True) -> DriverResponse:
        """The driver's decision after one chunk (or the end), its calls run here.

        ``history``: the response carries the next request's messages; the library's own
        loop, which builds them once at the turn's end, asks without.
        """
        quiet = self._quiet(buffer)
        if quiet is not None:
            return quiet
        step = Decision(self, buffer)
        plan = step.plan()
        ledger = buffer.ledger
        response = step.finish(
            plan, [(k, self.run(a, ledger) if isinstance(a, Job) else a) for k, a in plan]
        )
        return self._answered(buffer, response, history)

    def _quiet(self, buffer: LLMStreamBuffer) -> DriverResponse | None:
        """The repeated decision of a step that cannot differ from the last, or None."""
        queue = buffer.text_queue
        view = queue.views.get(self) or queue.view(self)
        if view.repeat is not None and view.stamp == buffer.stamp():
            return QUIET[view.again()]
        return None

    @staticmethod
    def _answered(
        buffer: LLMStreamBuffer, response: DriverResponse, history: bool = True
    ) -> DriverResponse:
        """A step that answered calls, with its history and findings; ``call_failed`` on a raise.

        :attr:`DriverResponse.messages` is the assistant message as the provider accepts it
        back, then an answer for each of its calls (:func:`turn_history`);
        :attr:`DriverResponse.findings` what the gate found about those calls.
        """
        results = response.results
        if not results:
            return response
        status = response.status
        if any(r.is_error for r in results):
            status = cast("Status | None", ON_ERROR.get(status, status))
        messages = turn_history(buffer, results, response.answers)[1] if history else []
        slots = {r.call.slot for r in results}
        refused = any(r.refused for r in results)
        findings = tuple(
            f
            for f in buffer.findings
            if f.slot in slots or f.slot is None or (refused and f.severity == "error")
        )
        return evolve(response, status=status, messages=tuple(messages), findings=findings)


class SupportsNativeTools:
    """Capability: native tool calls, plus the backup text strategy for leaked calls."""

    _backup: TextStrategy | None

    def native_strategies(self) -> list[ExtractionStrategy]:
        """The wire strategies this driver contributes to the chain."""
        return default_wire_strategies()

    def set_native_backup_strategy(self, strategy: TextStrategy | None) -> None:
        """Set the text strategy a native message without calls falls through to (None: off)."""
        self._backup = strategy

    def get_native_backup_strategy(self) -> TextStrategy | None:
        """The text strategy for calls leaked into native text, or None when switched off."""
        return self._backup


class SupportsStreaming:
    """Capability: hold/release over a stream through an :class:`LLMStreamBuffer`."""

    @property
    def extraction_strategies(self) -> Strategies:
        """The driver's chain: native strategies first, then its text strategies."""
        raise NotImplementedError

    def new_stream_buffer(
        self, *, recorder: Recording | None = None, ledger: Ledger | None = None
    ) -> LLMStreamBuffer:
        """A buffer seeded with this driver's chain, tools, policy and text formats."""
        raise NotImplementedError


class Driver(SupportsNativeTools, SupportsStreaming, BaseDriver):
    """A driver with native tool calls and streaming: what most clients use.

    Without ``text_formats`` it reads text-embedded calls only in the formats of the
    stream's model and the wire's documented leaks (:mod:`callgate.strategies.text.defaults`):
    prose that quotes a call runs nothing. Name the formats to fix them (``()``: none).
    """

    chooses_formats = True

    def _chain(self) -> list[MessageReader]:
        """Native strategies first, then one text strategy per text format."""
        return [*self.native_strategies(), *super()._chain()]

    @property
    def extraction_strategies(self) -> Strategies:
        """The driver's chain: native strategies first, then its text strategies.

        A list; calling it (``driver.extraction_strategies()``, as MCS does) gives the
        same list.
        """
        return Strategies(self._chain())

    def message_wire(self, message: Mapping[str, Any]) -> ExtractionStrategy | None:
        """The wire strategy of this driver that recognises ``message``, else plain text."""
        for wire in self.native_strategies():
            if wire.recognizes(message):
                return wire
        return OpenAIStrategy()

    def new_stream_buffer(
        self, *, recorder: Recording | None = None, ledger: Ledger | None = None
    ) -> LLMStreamBuffer:
        """A buffer seeded with this driver's chain, tools, policy and text formats.

        A driver without text formats gets a buffer without a detector: content is shown
        as it comes; one whose backup text strategy is off gets a buffer in which calls
        leaked into a native wire's text are text. ``ledger``: the conversation's (a fresh
        in-memory one when None).
        """
        return self._buffer(recorder=recorder, ledger=ledger)

    def process_llm_response(
        self,
        response: str | Mapping[str, Any] | LLMStreamBuffer,
        *,
        ledger: Ledger | None = None,
    ) -> DriverResponse:
        """One step of a stream (a buffer), or one whole message (a string or dict).

        A whole message is replayed as its stream (see :meth:`BaseDriver.process_llm_response`);
        a buffer's calls are kept in the buffer's own ledger.
        """
        if isinstance(response, LLMStreamBuffer):
            view = response.text_queue.views.get(self)
            if view is not None and view.stamp == response.changes.n:
                reply: DriverResponse | None = view.reply  # the commonest step: nothing new
                if reply is not None:
                    return reply
            if ledger is not None and ledger is not response.ledger:
                raise ValueError(
                    "a buffer has its own ledger: give it to new_stream_buffer(ledger=...)"
                )
            return self._stream_step(response)
        return self._process_message(response, ledger)

    def _round(self, buffer: LLMStreamBuffer, history: bool) -> DriverResponse:
        """:meth:`process_llm_response` of a buffer; ``history``: with the next history."""
        view = buffer.text_queue.views.get(self)
        if view is not None and view.stamp == buffer.changes.n:
            reply: DriverResponse | None = view.reply  # the commonest step: nothing new
            if reply is not None:
                return reply
        return self._stream_step(buffer, history)

    async def aprocess_llm_response(self, buffer: LLMStreamBuffer) -> DriverResponse:
        """:meth:`process_llm_response` for the async loop: async tools are awaited."""
        return await self._around(buffer, True)

    async def _around(self, buffer: LLMStreamBuffer, history: bool) -> DriverResponse:
        """One step of the async loop; ``history``: with the next request's messages."""
        quiet = self._quiet(buffer)
        if quiet is not None:
            return quiet
        step = Decision(self, buffer)
        plan = step.plan()
        jobs = [self.arun(a, buffer.ledger) for _, a in plan if isinstance(a, Job)]
        done = iter(await asyncio.gather(*jobs))
        response = step.finish(
            plan, [(k, next(done) if isinstance(a, Job) else a) for k, a in plan]
        )
        return self._answered(buffer, response, history)


class Orchestrator(Driver):
    """A driver composed of drivers: each keeps its own tools and decisions.

    It owns the union of their tools; its buffer checks calls against the union. Every
    step runs each driver over the same buffer and merges their responses. Its buffer's
    policy is ``policy``, or by default the one its drivers share (``turn`` for none);
    drivers with different policies need it named, since one buffer releases for all.
    """

    def __init__(
        self,
        drivers: Sequence[Driver],
        *,
        policy: str | None = None,
        strict_finish: bool = False,
        hide_think: bool = False,
        choice: int = 0,
        ledger: Ledger | None = None,
        max_tokens: int | None = None,
        repair: Literal["lossless"] | None = None,
    ) -> None:
        formats: list[str] | None = []
        for driver in drivers:
            if driver.text_formats is None or formats is None:
                formats = None
            else:
                formats += [n for n in driver.text_formats if n not in formats]
        tools = [tool for driver in drivers for tool in driver.tools.values()]
        super().__init__(
            tools,
            text_formats=formats,
            policy=_shared_policy(drivers) if policy is None else policy,
            strict_finish=strict_finish,
            hide_think=hide_think,
            choice=choice,
            ledger=ledger,
            max_tokens=max_tokens,
            repair=repair,
        )
        self.drivers = list(drivers)

    def get_native_backup_strategy(self) -> TextStrategy | None:
        """The backup text strategy, or None once every composed driver switched its own off."""
        if all(driver.get_native_backup_strategy() is None for driver in self.drivers):
            return None
        return self._backup

    def _stream_step(self, buffer: LLMStreamBuffer, history: bool = True) -> DriverResponse:
        """Every driver's response to the same step, merged (see :func:`merge`).

        A whole message is replayed once, through the orchestrator's buffer (the union of
        the tools), and every driver decides on it; the merged step's messages are built
        once, here.
        """
        responses = [d._round(buffer, False) for d in self.drivers]
        return self._answered(buffer, merge(responses, buffer.strategy), history)

    async def _around(self, buffer: LLMStreamBuffer, history: bool) -> DriverResponse:
        """Every driver's async response to the same step, merged."""
        responses = [await d._around(buffer, False) for d in self.drivers]
        return self._answered(buffer, merge(responses, buffer.strategy), history)


def _shared_policy(drivers: Sequence[Driver]) -> str:
    """The policy all of ``drivers`` have (``turn`` for none); ValueError if they differ."""
    policies = sorted({driver.policy for driver in drivers})
    if len(policies) > 1:
        raise ValueError(
            f"the drivers' policies differ ({', '.join(policies)}) and their one buffer "
            "releases under one: pass Orchestrator(drivers, policy=...)"
        )
    return policies[0] if policies else "turn"


def _a_ledger(ledger: object) -> Ledger:
    """``ledger`` if it is a :class:`Ledger`, else TypeError (nothing has run)."""
    if not isinstance(ledger, Ledger):
        raise TypeError(f"ledger must be a Ledger, not {type(ledger).__name__}")
    return ledger


class Strategies(list[MessageReader]):
    """A driver's chain as a list that may also be called (MCS names it as a method)."""

    def __call__(self) -> Strategies:
        """The same strategies: ``driver.extraction_strategies()`` as MCS calls it."""
        return self
