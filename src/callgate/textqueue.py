"""The turn's text queue: what the user has seen, what is held, and who decided.

The buffer owns one :class:`TextQueue` per turn; drivers stay stateless and keep their
per-stream decisions here (a :class:`~callgate.view.View` each, holding the display
machine's state). Content deltas go through the
:class:`~callgate.strategies.text.detector.Detector` when the buffer has text formats; its
output is queued in order as text and :class:`~callgate.view.TextBlock` entries.
``text()`` hands out the queue up to the first block not yet decided; each block runs the
vote machine (:mod:`callgate.fsm.vote`): it is hidden when some driver claims it (the call
is that driver's), and shown as ordinary text when every driver looking at the stream
declined it. An open block whose name every driver
declined is dropped early (:meth:`Detector.abandon`) at the next ``text()``: it flows
as text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from callgate.fsm.display import DISPLAY, DisplayState
from callgate.fsm.interpreter import Interpreter
from callgate.fsm.vote import VOTE, VoteState
from callgate.strategies.text.base import Schemas
from callgate.strategies.text.detector import Detected, Detector
from callgate.view import TextBlock, View

_MACHINE = Interpreter[DisplayState](DISPLAY)
_VOTE = Interpreter[VoteState](VOTE)
_HIDES = VOTE.tagged("hides")


class TextQueue:
    """Held and released text of one turn, and the drivers' views of it.

    The detector and the views are made by :meth:`new_detector` and :meth:`new_view`, and
    each vote steps through :meth:`vote`: a recording text queue
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
        self.changes = 0
        """Grows whenever a text block is found, opens or closes: what a driver's decision
        reads of the text (see :meth:`LLMStreamBuffer.stamp`)."""
        self._open = False
        self.views: dict[int, View] = {}
        self._queue: deque[str | TextBlock] = deque()
        self._fed = self._shown = self._hidden = 0
        """Characters received, handed out by :meth:`text`, and dropped as owned markup."""
        self._forming: object = None
        self._forming_declines: set[int] = set()
        self.ended = False

    def view(self, owner: object) -> View:
        """The view of ``owner`` (a driver), registered on first use."""
        key = id(owner)
        view = self.views.get(key)
        if view is None:
            name = getattr(owner, "name", None) or f"driver {len(self.views) + 1}"
            view = self.views[key] = self.new_view(name)
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
        if self.detector is None:
            self._queue.append(delta)
        else:
            self._take(self.detector.feed(delta))

    def end(self, *, cut: bool = False) -> None:
        """The stream ended (``cut``: short of its normal end); the detector settles its text."""
        if self.detector is not None and not self.ended:
            self._take(self.detector.finish(cut=cut))
        self.ended = True

    def _take(self, detected: Detected) -> None:
        text, start = detected.shown, 0
        for found in detected.blocks:
            block = TextBlock(
                len(self.blocks), found.format, found.calls, found.markup, found.shown
            )
            self.blocks.append(block)
            if found.shown:
                continue
            if found.at > start:
                self._queue.append(text[start : found.at])
                start = found.at
            self._queue.append(block)
        if start < len(text):
            self._queue.append(text[start:])
        detector = self.detector
        opened = detector is not None and detector.block is not None
        if detected.blocks or opened is not self._open:
            self._open = opened
            self.changes += 1

    # -- the drivers' decisions -------------------------------------------------------

    def forming(self) -> tuple[bool, str | None]:
        """Whether a text block is open, and the tool it names once known."""
        return self.detector.forming() if self.detector is not None else (False, None)

    def decline_forming(self, owner: object) -> None:
        """``owner`` does not own the open block's tool; once nobody does, it flows as text.

        The block is dropped at the next :meth:`text`, when every driver of the round has
        looked at the stream (a driver registers when it first processes the buffer).
        """
        if self.detector is None or self.detector.block is None:
            return
        if self.detector.block is not self._forming:
            self._forming, self._forming_declines = self.detector.block, set()
        self._forming_declines.add(id(owner))

    def undecided(self, owner: object) -> list[TextBlock]:
        """The blocks ``owner`` has not voted on yet, in order; they count as voted now."""
        view = self.view(owner)
        fresh = self.blocks[view.voted :]
        view.voted = len(self.blocks)
        return fresh

    # -- output -----------------------------------------------------------------------

    def _decided(self, block: TextBlock) -> bool | None:
        """True: hide (claimed); False: show as text (declined by every driver); None: wait.

        The votes so far are one event of the vote machine, stepped on the block.
        """
        if block.claims:
            event = "claim"
        elif all(k in block.declines or _MACHINE.is_final(v.state) for k, v in self.views.items()):
            event = "decline"
        else:
            event = "wait"
        target = self.vote(block, event)
        if not _VOTE.is_final(target):
            return None
        return target in _HIDES

    def vote(self, block: TextBlock, event: str) -> VoteState:
        """Step ``block``'s vote machine on the votes so far."""
        block.vote = target = _VOTE.step(block.vote, event)
        return target

    def text(self) -> str:
        """The text that may be shown now, in order, up to the first undecided block."""
        detector = self.detector
        queue = self._queue
        if not queue and (detector is None or detector.block is None):
            return ""  # nothing queued and no open block to drop: the common step
        if (
            detector is not None
            and detector.block is not None
            and detector.block is self._forming
            and self._forming_declines >= self.views.keys()
        ):
            self._take(detector.abandon())
        out: list[str] = []
        while queue:
            head = queue[0]
            if isinstance(head, str):
                out.append(head)
            else:
                decision = self._decided(head)
                if decision is None:
                    break
                if decision:
                    self._hidden += len(head.markup)
                else:
                    out.append(head.markup)
            queue.popleft()
        text = "".join(out)
        self._shown += len(text)
        return text

    @property
    def held(self) -> int:
        """Characters received but neither shown yet nor dropped as an owned call's markup."""
        return self._fed - self._shown - self._hidden
