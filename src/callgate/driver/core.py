"""Drivers: who owns a call, when it may run, and what the model gets back.

A driver holds tools (a name, a JSON Schema, the caller's function) and is stateless:
what it decided about a stream lives in the buffer's :class:`~callgate.display.Display`
(a :class:`~callgate.display.View` per driver, which runs the display machine,
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
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar, cast

from attrs import Attribute, field, frozen

from callgate.buffer import LLMStreamBuffer, Recording
from callgate.chain import ExtractionChain
from callgate.display import TextBlock, View
from callgate.driver.results import refusal
from callgate.driver.tooldefs import description_of, schema_from_function, tool_specs
from callgate.fsm.display import DISPLAY, STATUS
from callgate.gate.findings import Finding, finding
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import POLICIES
from callgate.ledger import Ledger
from callgate.strategies import default_wire_strategies
from callgate.strategies.base import ExtractedCall, ExtractionStrategy, ToolResult
from callgate.strategies.text.defaults import default_text_formats, model_name
from callgate.strategies.text.formats import DEFAULT_FORMATS, END_FORMATS
from callgate.strategies.text.strategy import TEXT_STRATEGIES, TextFormatsStrategy, TextStrategy

logger = logging.getLogger("callgate")
"""Tool failures are logged here, with their traceback, besides being answered."""

Status = Literal["call_pending", "call_executed", "call_failed"]
CallKey = tuple[Any, ...]
_FINAL_TURN = ("executable", "blocked", "not_applicable")
_SELF_LOOPS = frozenset((t.source, t.event) for t in DISPLAY.transitions if t.source == t.target)
"""Display states and observations that leave the state as it is: a quiet step repeats."""
_SETTLED_SLOT = ("validated", "blocked")
_SIBLING = "another call of this turn was refused: "
"""Why a call that was itself fine was not run (a turn runs all of its calls or none)."""
"""Slot states in which another driver's call no longer concerns this driver."""
_TEXT_RESULTS = TextFormatsStrategy()
"""Shapes results of calls read from text: a text-style continuation, not a native answer."""


def _non_negative(_: object, attribute: Attribute[Any], value: float | None) -> None:
    if value is not None and not value >= 0:
        raise ValueError(f"a tool's {attribute.name} must be seconds >= 0, not {value!r}")


def _a_name(_: object, attribute: Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"a tool's name must be a non-empty string, not {value!r}")


def is_async(function: Callable[..., Any] | None) -> bool:
    """Whether calling ``function`` gives a coroutine (``async def``, or an async ``__call__``)."""
    if function is None:
        return False
    call = type(function).__call__ if not inspect.isroutine(function) else None
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


@frozen
class Tool:
    """A tool a driver owns: its name, the JSON Schema of its arguments, and its function.

    ``function`` is the caller's; callgate runs nothing else. Without one the call is
    answered with a note that it was not run (a dry run, as in ``callgate replay``).
    An ``async def`` function is awaited by :func:`~callgate.driver.loop.arun_turn` (the sync
    loop refuses it); ``in_thread`` runs a sync function in a worker thread there, so a
    slow tool does not block the event loop. ``timeout`` (seconds; the driver's
    ``tool_timeout`` when None) is enforced by the async loop: a call past it is answered
    with an error. The sync loop cannot stop a running function; there, the tool itself
    must bound its time.
    """

    name: str = field(validator=_a_name)
    schema: Mapping[str, Any] = field(factory=lambda: {"type": "object"})
    function: Callable[..., Any] | None = None
    description: str = ""
    timeout: float | None = field(default=None, validator=_non_negative)
    in_thread: bool = False

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (it must be awaited)."""
        return is_async(self.function)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        in_thread: bool = False,
    ) -> Tool:
        """A tool defined by ``function`` alone: its name, schema and description.

        The schema comes from the signature and type hints
        (:func:`~callgate.driver.tooldefs.schema_from_function`), the description from the
        docstring's first paragraph; ``name`` and ``description`` override them.
        """
        return cls(
            name if name is not None else function.__name__,
            schema_from_function(function),
            function,
            description if description is not None else description_of(function),
            timeout,
            in_thread,
        )


@frozen
class Job:
    """A call that passed every check and is to run with its tool's function."""

    call: ExtractedCall
    tool: Tool


Answer = ToolResult | Job
"""What a driver decided for one call: a result already known, or a run to make."""


@frozen
class DriverResponse:
    """What one driver decided for one step of a stream (or one whole message)."""

    status: Status | None = None
    results: tuple[ToolResult, ...] = ()
    """The calls answered in this step, each with its result, in call order."""
    messages: tuple[dict[str, Any], ...] = ()
    """The results shaped as the provider expects them in the next request."""
    findings: tuple[Finding, ...] = ()

    @property
    def calls(self) -> tuple[ExtractedCall, ...]:
        """The calls answered in this step."""
        return tuple(r.call for r in self.results)


_QUIET = {status: DriverResponse(cast("Status | None", status)) for status in STATUS.values()}
"""A quiet step's response by status: nothing answered, so one (immutable) value each."""


def merge(
    responses: Sequence[DriverResponse], strategy: ExtractionStrategy | None = None
) -> DriverResponse:
    """Several drivers' responses to one step as one: the strongest status, all results.

    With the stream's wire ``strategy`` the results are put in call order, one per call
    (drivers that own the same tool share the ledger, so they answer a call alike), and
    shaped together: native ones as that provider's results (one Anthropic or Bedrock user
    message for all, not one per driver), text ones as one text-style continuation.
    Without it each driver's messages are kept as they were, one after the other.
    """
    rank = {None: 0, "call_pending": 1, "call_executed": 2, "call_failed": 3}
    status = max((r.status for r in responses), key=rank.__getitem__, default=None)
    results = [x for r in responses for x in r.results]
    messages = [x for r in responses for x in r.messages]
    if strategy is not None and len([r for r in responses if r.results]) > 1:
        results = list({r.call.slot: r for r in reversed(results)}.values())
        results.sort(key=lambda r: _call_order(r.call.slot))
        native = [r for r in results if isinstance(r.call.slot, int)]
        text = [r for r in results if not isinstance(r.call.slot, int)]
        messages = _shaped(strategy, native, _TEXT_RESULTS, text)
    return DriverResponse(
        status,
        tuple(results),
        tuple(messages),
        tuple(x for r in responses for x in r.findings),
    )


def _shaped(
    wire: ExtractionStrategy | None,
    native: Sequence[ToolResult],
    text_shaper: ExtractionStrategy,
    text: Sequence[ToolResult],
) -> list[dict[str, Any]]:
    """Native results as the wire's result messages, then text results as a continuation."""
    messages: list[dict[str, Any]] = []
    if native and wire is not None:
        messages += wire.result_messages(native)
    if text:
        messages += text_shaper.result_messages(text)
    return messages


def _call_order(slot: int | str | None) -> tuple[int, int, int]:
    """Native calls by slot, then text calls by block and position (``text-B.N``)."""
    if isinstance(slot, int):
        return (0, slot, 0)
    if isinstance(slot, str) and slot.startswith("text-"):
        block, _, n = slot.removeprefix("text-").partition(".")
        return (1, int(block), int(n))
    return (2, 0, 0)


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
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.policy = policy
        self.limits = limits
        if tool_timeout is not None and not tool_timeout >= 0:
            raise ValueError(f"tool_timeout must be a number of seconds >= 0, not {tool_timeout!r}")
        self.tool_timeout = tool_timeout
        """Seconds a tool without its own ``timeout`` may take under the async loop."""
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

    def strategies(self) -> list[ExtractionStrategy]:
        """The strategies this driver reads messages with: one per text format."""
        return [TEXT_STRATEGIES[name]() for name in self.text_formats or ()]

    def backup(self) -> TextStrategy | None:
        """The text strategy for calls leaked into a native message's text (none here)."""
        return None

    # -- running calls ----------------------------------------------------------------

    def timeout_of(self, tool: Tool) -> float | None:
        """The seconds ``tool`` may take under the async loop (its own, else the driver's)."""
        return tool.timeout if tool.timeout is not None else self.tool_timeout

    def prepare(self, call: ExtractedCall, ledger: Ledger) -> Answer:
        """What ``call`` gets: the ledger's answer, a refusal, a dry run, or a :class:`Job`.

        A call already in the ledger (same id, tool and arguments) gets its recorded
        result and does not run again; a call that fails its tool's schema is refused with
        a corrective result.
        """
        known = ledger.get(call)
        if known is not None:
            return known
        problem = self.schemas.check(call.name, call.arguments, call.slot)
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
        call, function = job.call, cast("Callable[..., Any]", job.tool.function)
        if job.tool.is_async:
            raise TypeError(_ASYNC_IN_SYNC.format(name=job.tool.name))
        ledger.start(call)
        try:
            value = function(**call.arguments)
            if inspect.isawaitable(value):
                _close(value)
                raise TypeError(_ASYNC_IN_SYNC.format(name=job.tool.name))
        except Exception as exc:  # the tool's own failure is the model's answer
            return _finish(ledger, _failed(call, exc))
        return _finish(ledger, _serialised(call, value))

    async def arun(self, job: Job, ledger: Ledger) -> ToolResult:
        """Run ``job`` under the async loop: await it, within its timeout."""
        call, tool = job.call, job.tool
        function = cast("Callable[..., Any]", tool.function)
        timeout = self.timeout_of(tool)
        ledger.start(call)
        try:
            if tool.in_thread and not tool.is_async:
                value = await asyncio.wait_for(
                    asyncio.to_thread(function, **call.arguments), timeout
                )
            else:
                value = function(**call.arguments)
                if inspect.isawaitable(value):
                    value = await asyncio.wait_for(value, timeout)
        except TimeoutError:
            content = f"The call to {call.name} timed out after {timeout:g} s and was stopped."
            return _finish(ledger, ToolResult(call, content, is_error=True))
        except Exception as exc:  # the tool's own failure is the model's answer
            return _finish(ledger, _failed(call, exc))
        return _finish(ledger, _serialised(call, value))

    def answer(self, call: ExtractedCall, ledger: Ledger) -> ToolResult:
        """Validate and run ``call`` once per conversation (see :meth:`prepare`)."""
        answer = self.prepare(call, ledger)
        return self.run(answer, ledger) if isinstance(answer, Job) else answer

    # -- whole messages ---------------------------------------------------------------

    def process_llm_response(self, response: str | Mapping[str, Any]) -> DriverResponse:
        """The calls of one whole message that this driver owns, answered."""
        return self._process_message(response, Ledger())

    def _process_message(self, response: str | Mapping[str, Any], ledger: Ledger) -> DriverResponse:
        message: Mapping[str, Any] = (
            {"role": "assistant", "content": response} if isinstance(response, str) else response
        )
        chain = ExtractionChain(self.strategies())
        strategy = chain.resolve(message)
        if strategy is None and self.text_formats is None:
            chosen = self.formats_for(message, None)
            strategy = ExtractionChain([TEXT_STRATEGIES[n]() for n in chosen]).resolve(message)
        if strategy is None:
            return DriverResponse()
        calls = strategy.extract(message)
        broken = strategy.unreadable(message)
        shaper = strategy
        backup = self.backup()
        if backup is not None and self.text_formats is None:
            backup = TextFormatsStrategy(self.formats_for(message, strategy.name))
        if not calls and not broken and strategy.leaks_into_text and backup is not None:
            calls = backup.extract({"content": strategy.content_text(message)})
            shaper = backup
        owned = [c for c in calls if self.owns(c.name)]
        refused = [refusal(c, problem) for c, problem in broken if self.owns(c.name)]
        if not owned and not refused:
            return DriverResponse()
        answered = [self.answer(c, ledger) for c in owned]
        results = tuple(sorted([*answered, *refused], key=lambda r: _position(r.call.slot)))
        return DriverResponse(
            "call_failed" if any(r.refused for r in results) else "call_executed",
            results,
            tuple(shaper.result_messages(results)),
        )


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
    def extraction_strategies(self) -> list[ExtractionStrategy]:
        """The driver's chain: native strategies first, then its text strategies."""
        raise NotImplementedError

    def new_stream_buffer(self, *, recorder: Recording | None = None) -> LLMStreamBuffer:
        """A buffer seeded with this driver's chain, tools, policy and text formats."""
        raise NotImplementedError


class Driver(SupportsNativeTools, SupportsStreaming, BaseDriver):
    """A driver with native tool calls and streaming: what most clients use.

    Without ``text_formats`` it reads text-embedded calls only in the formats of the
    stream's model and the wire's documented leaks (:mod:`callgate.strategies.text.defaults`):
    prose that quotes a call runs nothing. Name the formats to fix them (``()``: none).
    """

    chooses_formats = True

    def strategies(self) -> list[ExtractionStrategy]:
        """Native strategies first, then one text strategy per text format."""
        return [*self.native_strategies(), *super().strategies()]

    def backup(self) -> TextStrategy | None:
        """The backup text strategy (see :meth:`set_native_backup_strategy`)."""
        return self._backup

    @property
    def extraction_strategies(self) -> list[ExtractionStrategy]:
        """The driver's chain: native strategies first, then its text strategies."""
        return self.strategies()

    def new_stream_buffer(self, *, recorder: Recording | None = None) -> LLMStreamBuffer:
        """A buffer seeded with this driver's chain, tools, policy and text formats.

        A driver without text formats gets a buffer without a detector: content is shown
        as it comes.
        """
        return LLMStreamBuffer(
            self.extraction_strategies,
            tool_schemas=self.schemas,
            limits=self.limits,
            policy=self.policy,
            text_formats="auto"
            if self.text_formats is None
            else [n for n in self.text_formats if n not in END_FORMATS] or None,
            recorder=recorder,
        )

    def process_llm_response(
        self, response: str | Mapping[str, Any] | LLMStreamBuffer
    ) -> DriverResponse:
        """One step of a stream (a buffer), or one whole message (a string or dict)."""
        if isinstance(response, LLMStreamBuffer):
            view = response.display.view(self)
            if view.repeat is not None and view.stamp == response.stamp():
                return _QUIET[STATUS[view.again()]]  # a quiet step, as _quiet() without a call
            step = _Step(self, response)
            plan = step.plan()
            ledger = response.ledger
            return step.finish(
                plan, [(k, self.run(a, ledger) if isinstance(a, Job) else a) for k, a in plan]
            )
        return self._process_message(response, Ledger())

    async def aprocess_llm_response(self, buffer: LLMStreamBuffer) -> DriverResponse:
        """:meth:`process_llm_response` for the async loop: async tools are awaited."""
        quiet = self._quiet(buffer)
        if quiet is not None:
            return quiet
        step = _Step(self, buffer)
        plan = step.plan()
        jobs = [self.arun(a, buffer.ledger) for _, a in plan if isinstance(a, Job)]
        done = iter(await asyncio.gather(*jobs))
        return step.finish(plan, [(k, next(done) if isinstance(a, Job) else a) for k, a in plan])

    def _quiet(self, buffer: LLMStreamBuffer) -> DriverResponse | None:
        """The repeated decision of a step that cannot differ from the last, or None."""
        view = buffer.display.view(self)
        if view.repeat is not None and view.stamp == buffer.stamp():
            return _QUIET[STATUS[view.again()]]
        return None


class Orchestrator(Driver):
    """A driver composed of drivers: each keeps its own tools and decisions.

    It owns the union of their tools; its buffer checks calls against the union. Every
    step runs each driver over the same buffer and merges their responses.
    """

    def __init__(self, drivers: Sequence[Driver], *, policy: str = "turn") -> None:
        formats: list[str] | None = []
        for driver in drivers:
            if driver.text_formats is None or formats is None:
                formats = None
            else:
                formats += [n for n in driver.text_formats if n not in formats]
        tools = [tool for driver in drivers for tool in driver.tools.values()]
        super().__init__(tools, text_formats=formats, policy=policy)
        self.drivers = list(drivers)

    def process_llm_response(
        self, response: str | Mapping[str, Any] | LLMStreamBuffer
    ) -> DriverResponse:
        """Every driver's response to the same step, merged (see :func:`merge`)."""
        responses = [d.process_llm_response(response) for d in self.drivers]
        strategy = response.strategy if isinstance(response, LLMStreamBuffer) else None
        return merge(responses, strategy)

    async def aprocess_llm_response(self, buffer: LLMStreamBuffer) -> DriverResponse:
        """Every driver's async response to the same step, merged."""
        responses = [await d.aprocess_llm_response(buffer) for d in self.drivers]
        return merge(responses, buffer.strategy)


class _Step:
    """One driver's decision on a buffer after one chunk (or after the end)."""

    def __init__(self, driver: Driver, buffer: LLMStreamBuffer) -> None:
        self.driver = driver
        self.buffer = buffer
        self.display = buffer.display
        self.view: View = self.display.view(driver)
        self.refused = False
        self.text_path = False
        self.observation = "text"

    def plan(self) -> list[tuple[CallKey, Answer]]:
        """Observe the buffer and decide every call this step answers (nothing runs yet)."""
        if self.view.state == "ended":
            return []
        self.text_path = self._text_path()
        self.observation = self._observe(self.text_path)
        return self._answer_native() + (self._answer_text() if self.text_path else [])

    def finish(
        self, plan: Sequence[tuple[CallKey, Answer]], answers: Sequence[tuple[CallKey, ToolResult]]
    ) -> DriverResponse:
        """Record the answers, step the display machine, and shape the response."""
        view = self.view
        if view.state == "ended":
            return DriverResponse()
        for key, result in answers:
            self._record(key, result)
        native = [r for key, r in answers if key[0] == "slot"]
        text = [r for key, r in answers if key[0] == "text"]
        observation = self.observation
        view.fire(observation)
        results = native + text
        if results:
            view.fire("refuse" if self.refused else "allow")
        status = cast("Status | None", STATUS[view.state])
        if self.buffer.ended and view.state not in ("holding", "pending"):
            view.fire("end")
        quiet = (
            not results
            and (view.state, observation) in _SELF_LOOPS
            and not self.display.forming()[0]
        )
        view.repeat = observation if quiet and self.buffer.policy != "parseable" else None
        view.stamp = self.buffer.stamp()
        backup = self.driver.backup() or _TEXT_RESULTS
        messages = _shaped(self.buffer.strategy, native, backup, text)
        return DriverResponse(status, tuple(results), tuple(messages))

    # -- what the driver sees ---------------------------------------------------------

    def _text_path(self) -> bool:
        """Whether calls in this turn's text are calls (see the module's docstring)."""
        wire = self.buffer.strategy
        if self.buffer.slots or wire is None:
            return False
        return not wire.leaks_into_text or self.driver.backup() is not None

    def _observe(self, text_path: bool) -> str:
        driver, view, display = self.driver, self.view, self.display
        ours = forming = foreign = False
        for slot in self.buffer.slots:
            if ("slot", slot.key) in view.answered or (slot.state == "blocked" and not slot.name):
                continue
            if slot.name is None:
                forming = True
            elif driver.owns(slot.name):
                ours = True
            elif slot.state not in _SETTLED_SLOT:
                foreign = True
        me = id(driver)
        for block in display.undecided(driver):
            if text_path and any(driver.owns(c.name) for c in block.calls):
                block.claims.add(me)
                view.claimed.append(block)
                view.open_text += sum(driver.owns(c.name) for c in block.calls)
            else:
                block.declines.add(me)
                foreign = True
        ours = ours or (text_path and view.open_text > 0)
        is_open, name = display.forming()
        if is_open and not text_path:
            display.decline_forming(driver)
        elif is_open and name is None:
            forming = True
        elif is_open and driver.owns(name):
            ours = True
        elif is_open:
            display.decline_forming(driver)
            foreign = True
        if ours:
            return "owned"
        if forming:
            return "forming"
        if foreign:
            return "foreign"
        return "broken" if view.state in ("holding", "pending") else "text"

    def _open_text_calls(self) -> list[tuple[CallKey, ExtractedCall]]:
        """The owned calls of claimed blocks not answered yet (answered blocks drop out)."""
        answered, open_calls, still = self.view.answered, [], []
        for block in self.view.claimed:
            calls = [
                (("text", block.index, n), call)
                for n, call in enumerate(block.calls)
                if self.driver.owns(call.name) and ("text", block.index, n) not in answered
            ]
            if calls:
                still.append(block)
            open_calls += [
                (key, ExtractedCall(call.id, call.name, call.arguments, _slot(block, key[2])))
                for key, call in calls
            ]
        self.view.claimed[:] = still
        return open_calls

    # -- answering --------------------------------------------------------------------

    def _answer_native(self) -> list[tuple[CallKey, Answer]]:
        buffer, driver, view = self.buffer, self.driver, self.view
        gate = buffer.gate
        if gate is None:
            return []
        answers: list[tuple[CallKey, Answer]] = []
        for slot in buffer.releasable():
            key = ("slot", slot.key)
            arguments = slot.arguments if slot.arguments is not None else slot.early
            if driver.owns(slot.name) and key not in view.answered and isinstance(arguments, dict):
                call = ExtractedCall(slot.id, cast(str, slot.name), arguments, slot.key)
                answers.append((key, driver.prepare(call, buffer.ledger)))
        if gate.turn == "blocked":
            first = _first_error(buffer.findings)
            planned = {key for key, _ in answers}
            for slot in buffer.slots:
                key = ("slot", slot.key)
                if not driver.owns(slot.name) or key in view.answered or key in planned:
                    continue
                own = _first_error(f for f in buffer.findings if f.slot == slot.key)
                call = ExtractedCall(slot.id, cast(str, slot.name), {}, slot.key)
                cause = "" if own is not None else _SIBLING
                problem = own or first or finding("malformed_chunk", "the turn was blocked")
                answers.append((key, refusal(call, problem, cause=cause)))
        return answers

    def _answer_text(self) -> list[tuple[CallKey, Answer]]:
        buffer, driver = self.buffer, self.driver
        turn = buffer.turn_state
        if turn == "blocked":
            problem = _first_error(buffer.findings) or finding(
                "malformed_chunk", "the turn was blocked"
            )
            return [(key, refusal(call, problem)) for key, call in self._open_text_calls()]
        if buffer.policy == "turn" and (turn not in _FINAL_TURN or not buffer.display.finished):
            return []
        pending = list(self._open_text_calls())
        if buffer.policy == "turn":
            problems = [driver.schemas.check(c.name, c.arguments, c.slot) for _, c in pending]
            first = next((p for p in problems if p is not None), None)
            if first is not None:
                return [
                    (
                        key,
                        refusal(call, problem)
                        if problem is not None
                        else refusal(call, first, cause=_SIBLING),
                    )
                    for (key, call), problem in zip(pending, problems, strict=True)
                ]
        return [(key, driver.prepare(call, buffer.ledger)) for key, call in pending]

    def _record(self, key: CallKey, result: ToolResult) -> None:
        self.view.answered[key] = result
        if key[0] == "text":
            self.view.open_text -= 1
        self.refused = self.refused or result.refused


def _slot(block: TextBlock, n: int) -> str:
    return f"text-{block.index}.{n}"


def _position(slot: int | str | None) -> int:
    """A call's position in its message, for answering in call order."""
    return slot if isinstance(slot, int) else 0


def _first_error(findings: Iterable[Finding]) -> Finding | None:
    return next((f for f in findings if f.severity == "error"), None)


_ASYNC_IN_SYNC = (
    "{name} is an async function: play the turn with arun_turn (or "
    "await driver.aprocess_llm_response(buffer)), which awaits it"
)


def _close(value: object) -> None:
    """Close an awaitable that will never be awaited (no 'never awaited' warning)."""
    close = getattr(value, "close", None)
    if callable(close):
        close()


def _failed(call: ExtractedCall, exc: Exception) -> ToolResult:
    """The answer to a call whose tool raised: the error, logged with its traceback."""
    logger.error("tool %s (call %s) raised", call.name, call.id, exc_info=exc)
    return ToolResult(call, f"{type(exc).__name__}: {exc}", is_error=True)


def _serialised(call: ExtractedCall, value: object) -> ToolResult:
    """The tool's value as the model reads it: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return ToolResult(call, value)
    try:
        return ToolResult(call, json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError) as exc:
        logger.error(
            "the result of tool %s (call %s) could not be serialised",
            call.name,
            call.id,
            exc_info=exc,
        )
        content = f"The call to {call.name} ran, but its result could not be serialised: {exc}"
        return ToolResult(call, content, is_error=True)


def _finish(ledger: Ledger, result: ToolResult) -> ToolResult:
    ledger.record(result)
    return result
