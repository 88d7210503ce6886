"""Recording every machine step of a stream, for audits, diagrams and the HTML replay.

A :class:`Recorder` handed to an :class:`~callgate.buffer.LLMStreamBuffer` builds the
buffer's gate and text queue itself, as recording variants (the queue's detector, votes
and each driver's view record too): every transition they take is appended as a
:class:`TraceStep` (which machine, which instance such as ``slot 2``, source, event,
target, the finding it output, and the chunk that caused it). The buffer, the text queue,
the views and the drivers never import this module: without a recorder the plain classes
run, with no recording branch on their path, so recording costs nothing when it is off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from attrs import define, field, frozen

from callgate.fsm.detector import DETECTOR, DetectorState
from callgate.fsm.display import DisplayState
from callgate.fsm.interpreter import Interpreter
from callgate.fsm.release import RELEASE, Policy, ReleaseState
from callgate.fsm.slot import SLOT, SlotState
from callgate.fsm.table import Transition
from callgate.fsm.turn import TURN, TurnState
from callgate.fsm.vote import VoteState
from callgate.gate.turn import BaseSlot, CallRef, TurnGate
from callgate.strategies.text.detector import Detected, Detector
from callgate.textqueue import TextQueue
from callgate.view import TextBlock, View

_TURN = Interpreter[TurnState](TURN)
_DETECTOR = Interpreter[DetectorState](DETECTOR)
_SLOTS = Interpreter[SlotState](SLOT)
_RELEASE = Interpreter[ReleaseState](RELEASE)
_APPENDS = SLOT.tagged("appending")


@frozen
class TraceStep:
    """One transition one machine took, and the chunk that caused it (None: the end)."""

    seq: int
    chunk: int | None
    machine: str
    instance: str
    source: str
    event: str
    target: str
    output: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The step as plain data (for JSON and the HTML page)."""
        return {
            "seq": self.seq,
            "chunk": self.chunk,
            "machine": self.machine,
            "instance": self.instance,
            "source": self.source,
            "event": self.event,
            "target": self.target,
            "output": self.output,
        }


class Recorder:
    """Collects the steps of every machine of one stream, in the order they were taken."""

    def __init__(self) -> None:
        self.steps: list[TraceStep] = []
        self.chunk: int | None = None
        """The chunk being processed; whoever feeds the buffer sets it (None after the end)."""

    def record(
        self,
        machine: str,
        instance: str,
        source: str,
        event: str,
        target: str,
        *,
        output: str | None,
    ) -> None:
        """Append one step, stamped with the current chunk."""
        step = TraceStep(
            len(self.steps), self.chunk, machine, instance, source, event, target, output
        )
        self.steps.append(step)

    def stepper(self, machine: str, instance: str) -> Callable[[str, str, str], None]:
        """A callback recording each ``(source, event, target)`` step of one instance."""

        def step(source: str, event: str, target: str) -> None:
            self.record(machine, instance, source, event, target, output=None)

        return step

    def of(self, machine: str) -> list[TraceStep]:
        """The steps of one machine, in order."""
        return [s for s in self.steps if s.machine == machine]

    def turn_gate(self, **options: Any) -> RecordingTurnGate:
        """The gate a buffer given this recorder runs (see :class:`~callgate.buffer.Recording`)."""
        return RecordingTurnGate(self, **options)

    def text_queue(self, formats: tuple[str, ...] | None, **options: Any) -> RecordingTextQueue:
        """The text queue a buffer given this recorder runs: detector, votes and views record."""
        return RecordingTextQueue(self, formats, **options)


class RecordingTurnGate(TurnGate):
    """A :class:`TurnGate` that records every slot and turn transition it takes."""

    appends_in_place = False  # every append is a recorded self-loop: it goes through fragment()

    def __init__(self, recorder: Recorder, **options: Any) -> None:
        super().__init__(**options)
        self.recorder = recorder
        self._release: dict[CallRef, ReleaseState] = {}

    def releases(self, rule: Policy) -> list[tuple[BaseSlot, ReleaseState]]:
        """As :meth:`TurnGate.releases`, recording each call's release machine as it moves.

        A call's run (native or read from the text) starts with the policy's event when it
        first has evidence, and ends with the evidence that released, blocked or set it aside.
        """
        for slot, event in self.release_evidence(rule):
            state = self._release.get(slot.ref)
            if state is None:
                state = self._step_release(slot, _RELEASE.initial, rule.name)
            if not _RELEASE.is_final(state):
                self._step_release(slot, state, event)
        return super().releases(rule)

    def _step_release(self, slot: BaseSlot, state: ReleaseState, event: str) -> ReleaseState:
        target = _RELEASE.step(state, event)
        self.recorder.record("release", f"call {slot.key}", state, event, target, output=None)
        self._release[slot.ref] = target
        return target

    def fragment(self, key: object, text: str) -> None:
        """As :meth:`TurnGate.fragment`, recording the appending self-loop too."""
        slot = self.slots.get(key) if type(key) is int else None
        before = (slot.state, len(slot.parts)) if slot is not None else None
        super().fragment(key, text)
        if (
            slot is not None
            and before is not None
            and before[0] == slot.state
            and slot.state in _APPENDS
            and len(slot.parts) > before[1]
        ):
            self._record_slot(slot, _SLOTS.transition(slot.state, "args"))

    def _apply(self, slot: BaseSlot, transition: Transition, message: str) -> None:
        self._record_slot(slot, transition)
        super()._apply(slot, transition, message)

    def _record_slot(self, slot: BaseSlot, transition: Transition) -> None:
        output = transition.output
        if output == "check_finding":  # the table names the check; the trace, its finding
            output = next((f.code for f in reversed(self.findings) if f.slot == slot.key), output)
        elif transition.event == "accept" and self.repair is not None:  # a repair, if one
            output = next(
                (
                    f.code
                    for f in self.findings
                    if f.slot == slot.key and f.code == "repaired_arguments"
                ),
                output,
            )
        self.recorder.record(
            "slot",
            f"slot {slot.key}",
            transition.source,
            transition.event,
            transition.target,
            output=output,
        )

    def _fire_turn(self, event: str, message: str = "", key: object = None) -> TurnState:
        transition = _TURN.transition(self.turn, event)
        self.recorder.record(
            "turn", "turn", transition.source, event, transition.target, output=transition.output
        )
        return super()._fire_turn(event, message, key)


class RecordingDetector(Detector):
    """A :class:`Detector` that records every transition, the plain-text fast path included."""

    def __init__(self, recorder: Recorder, *args: Any, **options: Any) -> None:
        self.recorder = recorder
        self._fired = 0
        super().__init__(*args, **options)

    def plain(self, delta: str) -> bool:
        """As :meth:`Detector.plain`; a delta it takes is recorded as ``text``."""
        state = self.state
        taken = super().plain(delta)
        if taken:
            self.recorder.record("detector", "detector", state, "text", self.state, output=None)
        return taken

    def feed(self, delta: str) -> Any:
        """As :meth:`Detector.feed`; text that fired no transition is recorded as ``text``."""
        if self.plain(delta):
            return Detected(delta)
        fired, state = self._fired, self.state
        step = super().feed(delta)
        if self._fired == fired and delta:
            self.recorder.record("detector", "detector", state, "text", self.state, output=None)
        return step

    def _fire(self, event: str, *args: Any, **effect: Any) -> None:
        transition = _DETECTOR.transition(self.state, event)
        self._fired += 1
        self.recorder.record(
            "detector", "detector", self.state, event, transition.target, output=transition.output
        )
        super()._fire(event, *args, **effect)


@define(eq=False)
class RecordingView(View):
    """A driver's :class:`~callgate.view.View` that records each display transition."""

    recorder: Recorder = field(kw_only=True)
    replays: ClassVar[bool] = False

    def fire(self, event: str) -> DisplayState:
        """As :meth:`View.fire`, recording the step under the driver's name."""
        source = self.state
        target = super().fire(event)
        self.recorder.record("display", self.name, source, event, target, output=None)
        return target

    def again(self) -> DisplayState:
        """As :meth:`View.again`, recording the repeated self-loop."""
        assert self.repeat is not None, "a quiet step repeats an observation"
        return self.fire(self.repeat)


class RecordingTextQueue(TextQueue):
    """A :class:`~callgate.textqueue.TextQueue` whose detector, votes and views record."""

    def __init__(self, recorder: Recorder, formats: Iterable[str] | None, **options: Any) -> None:
        self.recorder = recorder
        super().__init__(formats, **options)

    def new_detector(self, formats: Iterable[str], **options: Any) -> Detector:
        """A :class:`RecordingDetector`."""
        return RecordingDetector(self.recorder, formats, **options)

    def new_view(self, name: str) -> View:
        """A :class:`RecordingView`."""
        return RecordingView(name, recorder=self.recorder)

    def vote(self, block: TextBlock, event: str) -> VoteState:
        """As :meth:`TextQueue.vote`, recording the block's vote machine."""
        source = block.vote
        target = super().vote(block, event)
        self.recorder.record("vote", f"block {block.index}", source, event, target, output=None)
        return target
