"""AdapterMachine: a Hypothesis state machine that checks your adapter against callgate.

Subclass it with two methods, :meth:`~AdapterMachine.feed` (give one chunk to your
adapter) and :meth:`~AdapterMachine.calls` (the calls your adapter would run now), and
run it as a test. It draws a stream of :attr:`~AdapterMachine.wire` from
:func:`~callgate.testing.wire_streams`, feeds it chunk by chunk (one, a few, or the rest at a
time) to your adapter and to a callgate buffer, and after every step checks that your
adapter:

- never raises on a stream callgate accepts;
- never runs a call before the turn's terminal evidence, nor one callgate blocks;
- at the end, runs exactly the calls callgate releases: none lost, none merged;
- optionally (:meth:`~AdapterMachine.work`), does work linear in what it received.

Every failure message leads with what the adapter did, then the stream (its wire and
fault, then one JSON chunk a line), shrunk by Hypothesis; Hypothesis's replay of the
steps follows and names the stream in one line. An exception your adapter raises (in
``feed``, ``calls``, ``end`` or ``work``) on a stream callgate accepts is reported so too.
"""

from __future__ import annotations

import callgate.testing.needs  # noqa: F401  (Hypothesis, or its install line)

# isort: split

import copy
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from callgate import LLMStreamBuffer
from callgate.strategies import WIRE_STRATEGIES
from callgate.testing.forms import to_sdk
from callgate.testing.wire_streams import Form, StreamExample, compiled, streams

CallKey = tuple[Any, Any, str]


def _key(call: Any) -> CallKey:
    """A call as (id, name, canonical arguments) from a tuple, a mapping or an object."""
    if isinstance(call, Mapping):
        call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments")
    elif isinstance(call, tuple | list):
        call_id, name, arguments = call
    else:
        call_id, name, arguments = call.id, call.name, call.arguments
    if isinstance(arguments, str | bytes):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return call_id, name, f"<unparsed> {arguments!r}"
    return call_id, name, json.dumps(arguments, sort_keys=True, ensure_ascii=False)


class _Drawn:
    """A drawn stream as Hypothesis's replay of the steps prints it: one line.

    The failure report above that replay shows the stream whole; printing it again
    (Hypothesis would print every field) buries the report.
    """

    def __init__(self, example: StreamExample) -> None:
        self.example = example

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"<{self.example.label()}: the stream shown above>")


_WHY = {
    "blocked": "that callgate blocks ({})",
    "executable": "that is not a call of this turn (merged?)",
}
"""Why a call the adapter runs is wrong, by callgate's turn state (else: too early)."""


class AdapterMachine(RuleBasedStateMachine):
    """Checks your stream adapter against callgate's verdict after every chunk.

    Set the class attributes to choose the streams; implement :meth:`feed` and
    :meth:`calls` (and :meth:`end` if your adapter needs to hear that the stream ended).
    Run it with ``TestMyAdapter = MyMachine.TestCase`` or
    ``hypothesis.stateful.run_state_machine_as_test(MyMachine)``.
    """

    wire: ClassVar[str] = "openai"
    form: ClassVar[Form] = "dict"
    tools: ClassVar[Mapping[str, Mapping[str, Any]] | None] = None
    calls_per_turn: ClassVar[int | tuple[int, int]] = (0, 4)
    faults: ClassVar[bool | Sequence[str]] = True
    """Draw faulted streams as well as clean ones (about one in three): True for any
    fault the wire can carry, or the kinds to draw from (see :data:`FAULT_KINDS`)."""
    quirks: ClassVar[bool | Sequence[str]] = True
    interleave: ClassVar[bool] = True
    text: ClassVar[bool] = True
    """May prose come before the calls."""
    compare_ids: ClassVar[bool] = True
    """Compare call ids too (turn off for an adapter that makes up its own ids)."""
    max_work_per_char: ClassVar[float] = 8.0
    """The bound :meth:`work` must keep: units of work per argument character received."""

    example: StreamExample

    # -- what you implement ---------------------------------------------------------------

    def feed(self, chunk: Any) -> None:
        """Give ``chunk`` to your adapter."""
        raise NotImplementedError("AdapterMachine subclasses implement feed(chunk)")

    def calls(self) -> Sequence[Any]:
        """The calls your adapter would run now: (id, name, arguments), mappings or objects.

        ``arguments``: an object, or its JSON text. Return nothing for calls your
        adapter has not decided to run yet.
        """
        raise NotImplementedError("AdapterMachine subclasses implement calls()")

    def end(self) -> None:
        """Tell your adapter the stream ended (optional)."""

    def work(self) -> int | None:
        """Units of work your adapter has done so far (bytes parsed, say), or None."""
        return None

    # -- the machine ------------------------------------------------------------------------

    @initialize(data=st.data())
    def draw_stream(self, data: st.DataObject) -> None:
        """Draw the stream this run feeds, clean or (sometimes) with one fault."""
        if self.form not in ("dict", "sdk"):
            raise ValueError(
                "AdapterMachine feeds chunks (form 'dict' or 'sdk'); for raw bytes, "
                "draw streams(form='sse') in a test of your own"
            )
        kinds: bool | st.SearchStrategy[str] = False
        if self.faults and data.draw(st.integers(0, 2), label="faulted") == 0:
            kinds = True if self.faults is True else st.sampled_from(list(self.faults))
        drawn = data.draw(
            streams(
                self.wire,
                tools=self.tools,
                calls=self.calls_per_turn,
                text=self.text,
                faults=kinds,
                form=self.form,
                quirks=self.quirks,
                interleave=self.interleave,
            ).map(_Drawn),
            label="stream",
        )
        self.example = drawn.example
        self.buffer = LLMStreamBuffer(
            tool_schemas=compiled(self.example.tools), strategy=WIRE_STRATEGIES[self.wire]()
        )
        self.sent = 0
        self.received = 0
        self.ended = False
        self.refused: BaseException | None = None

    def _report(self, problem: str) -> str:
        example = self.example
        fault = f"fault {example.fault.kind} ({example.fault.code})" if example.fault else "clean"
        return (
            f"{problem}\n{example.wire} stream, {fault}, {self.sent} of "
            f"{len(example.dicts)} chunks fed:\n{example.lines()}"
        )

    @precondition(lambda self: self.sent < len(self.example.dicts))
    @rule(count=st.sampled_from([1, 1, 2, 5, 10**6]))
    def feed_chunks(self, count: int) -> None:
        """Feed the next ``count`` chunks (10**6: the rest) to both sides."""
        for _ in range(count):
            if self.sent >= len(self.example.dicts):
                return
            plain = self.example.dicts[self.sent]
            self.sent += 1
            self.received += self.example.argument_chars[self.sent - 1]
            self.buffer.add(plain)
            self._adapter("on a stream callgate accepts", self._deliver, plain)

    @precondition(lambda self: self.sent == len(self.example.dicts) and not self.ended)
    @rule()
    def end_stream(self) -> None:
        """The stream ends: callgate's buffer ends, and your adapter hears it."""
        self.ended = True
        self.buffer.end()
        self._adapter("at the end of a clean stream", self.end)

    def _deliver(self, plain: dict[str, Any]) -> None:
        """Hand the adapter a chunk as its form has it: an SDK object or a copy of the dict."""
        self.feed(to_sdk(self.wire, plain) if self.form == "sdk" else copy.deepcopy(plain))

    def _adapter(self, where: str, step: Callable[..., Any], *args: Any, who: str = "") -> Any:
        """Run one step of the adapter unless it refused already; it may refuse a fault only.

        Returns what the step returned (None once the adapter refused). ``who`` names the
        method in the report when it is not ``feed``.
        """
        if self.refused is not None:
            return None
        try:
            return step(*args)
        except Exception as exc:
            if self.example.fault is None:
                adapter = f"the adapter's {who}" if who else "the adapter"
                raise AssertionError(self._report(f"{adapter} raised {exc!r} {where}")) from exc
            self.refused = exc
            return None

    @precondition(lambda self: self.ended)
    @rule()
    def ask_again(self) -> None:
        """After the end, asking the adapter for its calls again gives the same calls."""
        first, second = self._ran(), self._ran()
        if Counter(first) != Counter(second):
            raise AssertionError(self._report(f"the adapter's calls changed: {first} {second}"))

    def _ran(self) -> list[CallKey]:
        if self.refused is not None:
            return []
        answer = self._adapter("on a stream callgate accepts", self.calls, who="calls()")
        if self.refused is not None:
            return []
        ran = [_key(call) for call in answer]
        return ran if self.compare_ids else [(None, name, args) for _, name, args in ran]

    def _released(self) -> list[CallKey]:
        if not self.buffer.executable:
            return []
        released = [_key((s.id, s.name, s.arguments)) for s in self.buffer.slots]
        return released if self.compare_ids else [(None, n, a) for _, n, a in released]

    @invariant()
    def runs_only_what_callgate_releases(self) -> None:
        """Never a call before the terminal evidence, nor one callgate blocks."""
        if not hasattr(self, "example"):
            return
        extra = Counter(self._ran()) - Counter(self._released())
        if not extra:
            return
        codes = sorted({f.code for f in self.buffer.findings if f.severity == "error"})
        why = _WHY.get(self.buffer.turn_state, "before the terminal evidence").format(codes)
        raise AssertionError(self._report(f"the adapter runs {sorted(extra)} {why}"))

    @invariant()
    def loses_and_merges_nothing(self) -> None:
        """At the end of a turn callgate releases, the adapter runs exactly its calls."""
        if not hasattr(self, "example") or not self.ended:
            return
        missing = Counter(self._released()) - Counter(self._ran())
        if missing:
            raise AssertionError(self._report(f"the adapter loses {sorted(missing)}"))

    @invariant()
    def work_stays_linear(self) -> None:
        """The adapter's work stays within a constant per argument character received."""
        if not hasattr(self, "example"):
            return
        work = self._adapter("on a stream callgate accepts", self.work, who="work()")
        if work is None:
            return
        bound = self.max_work_per_char * self.received + 256
        if work > bound:
            raise AssertionError(
                self._report(
                    f"the adapter did {work} units of work for {self.received} argument "
                    f"characters (more than {self.max_work_per_char:g} per character: "
                    "growth faster than linear)"
                )
            )
