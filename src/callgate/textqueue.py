"""The turn's text queue: what the user has seen, what is held, and each driver's view.

The buffer owns one :class:`TextQueue` per turn; drivers stay stateless and keep their
per-stream display state here (a :class:`~callgate.view.View` each). Content deltas go
through the :class:`~callgate.strategies.text.detector.Detector` when the buffer has text
formats; its output is queued in order. A call block the detector found is handed to
:attr:`TextQueue.enter` (the buffer's: it enters the block's calls into the turn's gate
when one of them names a tool of the turn) and runs the vote machine
(:mod:`callgate.fsm.vote`) on the answer: ``claim`` hides its markup, ``decline`` shows it
as ordinary text. An open block whose name is no tool of the turn (:attr:`TextQueue.known`)
is dropped early (:meth:`Detector.abandon`) at the next ``text()``: it flows as text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from callgate.fsm.interpreter import Interpreter
from callgate.fsm.vote import VOTE, VoteState
from callgate.gate.turn import Changes
from callgate.strategies.text.base import Schemas
from callgate.strategies.text.cut import CutCall, withholds
from callgate.strategies.text.detector import Detected, Detector
from callgate.view import TextBlock, View

_VOTE = Interpreter[VoteState](VOTE)
_HIDES = VOTE.tagged("hides")


def _nobody(block: TextBlock) -> bool:
    return False


class TextQueue:
    """Held and released text of one turn, and the drivers' views of it.

    The detector and the views are made by :meth:`new_detector` and :meth:`new_view`, and
    each block's vote steps through :meth:`vote`: a recording text queue
    (:mod:`callgate.audit.trace`) makes recording ones.
    """

    def __init__(
        self,
        formats: Iterable[str] | None,
        *,
        schemas: Schemas | None = None,
        reasoning_calls: bool = False,
    ) -> None:
        self.detector: Detector | None = None
        if formats is not None:
            self.detector = self.new_detector(
                formats, schemas=schemas, reasoning_calls=reasoning_calls
            )
        self.blocks: list[TextBlock] = []
        self.declined = 0
        """How many blocks were shown as text because no call of theirs is the turn's."""
        self.changes = Changes()
        """Grows whenever a text block is found, opens, closes or shows the tool it names:
        what a driver's decision reads of the text (see :meth:`LLMStreamBuffer.stamp`).
        A buffer gives its queue the count its gate steps."""
        self.enter: Callable[[TextBlock], bool] = _nobody
        """Whether a found block is a call block (its calls entered the gate): the buffer's."""
        self.known: Callable[[str | None], bool] = bool
        """Whether a name is a tool of the turn: an open block naming another flows early."""
        self._forming: tuple[bool, str | None] = (False, None)
        self.views: dict[object, View] = {}
        """Each driver's view, keyed by the driver object itself (hashed by its identity)."""
        self._queue: list[str] = []
        self._fed = self._shown = self._hidden = 0
        """Characters received, handed out by :meth:`text`, and dropped as a call's markup."""
        self.ended = False

    def view(self, owner: object) -> View:
        """The view of ``owner`` (a driver), registered on first use."""
        view = self.views.get(owner)
        if view is None:
            name = getattr(owner, "name", None) or f"driver {len(self.views) + 1}"
            view = self.views[owner] = self.new_view(name)
        return view

    def new_detector(self, formats: Iterable[str], **options: Any) -> Detector:
        """The text-call detector of this turn's content."""
        return Detector(formats, **options)

    def new_view(self, name: str) -> View:
        """A driver's view, on its first step."""
        return View(name)

    # -- input ------------------------------------------------------------------------

    def feed(self, delta: str) -> None:
        """One content delta from the wire strategy."""
        self._fed += len(delta)
        detector = self.detector
        if detector is None or self.ended or detector.plain(delta):  # after the end: as it came
            self._queue.append(delta)
        else:
            self._take(detector.feed(delta))

    def plain_feeder(self, content: list[str]) -> Callable[[str], None] | None:
        """One call that keeps a delta in ``content`` and feeds it, for a queue with no detector.

        What ``content.append(delta)`` and :meth:`feed` do then (the delta queued as it came,
        before the end and after it alike); None for a queue that detects calls or a class
        that feeds otherwise (a recording queue).
        """
        if self.detector is not None or type(self).feed is not TextQueue.feed:
            return None
        queue = self._queue

        def show(delta: str) -> None:
            content.append(delta)
            self._fed += len(delta)
            queue.append(delta)

        return show

    def pass_plain(self, delta: str) -> bool:
        """Feed ``delta`` and count it shown at once, if no marker can start in it.

        For a reader whose view is quiet (nothing waits in the queue for it): the delta is
        then what :meth:`feed` and that view's read would give, with nothing queued.
        """
        detector = self.detector
        if detector is not None and not detector.plain(delta):
            return False
        self._fed += len(delta)
        self._shown += len(delta)
        return True

    def pass_held(self, delta: str) -> bool:
        """Feed ``delta`` into the open call block, if all it does is grow it (nothing shown).

        What :meth:`feed` would do with it (:meth:`Detector.collect`): the block keeps the
        tool it names, so no view sees a change and :meth:`text` has nothing to hand out.
        A block that names a tool nobody knows is left to :meth:`feed`: :meth:`text`
        releases it as text at the next read.
        """
        detector = self.detector
        if detector is None or self.ended or detector.block is None:
            return False
        name = detector.block.named()
        if name is not None and not self.known(name):
            return False
        if not detector.collect(delta):
            return False
        self._fed += len(delta)
        return True

    def end(self, *, cut: bool = False) -> None:
        """The stream ended (``cut``: short of its normal end); the detector settles its text.

        A call the cut left open in the text is withheld, not shown (:attr:`cut`).
        """
        detector = self.detector
        if detector is not None and not self.ended:
            self._take(detector.finish(cut=cut, withhold=withholds(self.known)))
            if detector.cut is not None:
                self._hidden += len(detector.cut.markup)
        self.ended = True

    @property
    def cut(self) -> CutCall | None:
        """The call a cut end withheld from the display (its raw markup), else None."""
        return self.detector.cut if self.detector is not None else None

    def _take(self, detected: Detected) -> None:
        text, start = detected.shown, 0
        for found in detected.blocks:
            block = TextBlock(
                len(self.blocks), found.format, found.calls, found.markup, found.shown
            )
            self.blocks.append(block)
            hides = self.vote(block, "claim" if self.enter(block) else "decline") in _HIDES
            if not hides:
                self.declined += 1
            if found.shown:
                continue
            if found.at > start:
                self._queue.append(text[start : found.at])
                start = found.at
            if hides:
                self._hidden += len(found.markup)
            else:
                self._queue.append(found.markup)
        if start < len(text):
            self._queue.append(text[start:])
        forming = self.forming()
        if detected.blocks or forming != self._forming:
            self._forming = forming
            self.changes.n += 1

    def vote(self, block: TextBlock, event: str) -> VoteState:
        """Step ``block``'s vote machine: ``claim`` (a call block) or ``decline`` (text)."""
        block.vote = target = _VOTE.step(block.vote, event)
        return target

    # -- what the drivers read ----------------------------------------------------------

    def forming(self) -> tuple[bool, str | None]:
        """Whether a text block is open, and the tool it names once known."""
        return self.detector.forming() if self.detector is not None else (False, None)

    # -- output -----------------------------------------------------------------------

    def text(self) -> str:
        """The text that may be shown now, in order; an open block nobody owns flows."""
        detector = self.detector
        if detector is not None and detector.block is not None:
            is_open, name = detector.forming()
            if is_open and name is not None and not self.known(name):
                self._take(detector.abandon())
        queue = self._queue
        if not queue:
            return ""
        text = queue[0] if len(queue) == 1 else "".join(queue)
        queue.clear()
        self._shown += len(text)
        return text

    @property
    def held(self) -> int:
        """Characters received but neither shown yet nor dropped as a call's markup."""
        return self._fed - self._shown - self._hidden
