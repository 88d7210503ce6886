"""The buffer's text side: the turn's text queue, the blocks it enters into the gate, display.

Part of :class:`~callgate.buffer.LLMStreamBuffer` (its public names stay there): content
deltas run through the turn's :class:`~callgate.textqueue.TextQueue`; a closed block whose
call names a tool of the turn enters the gate whole; ``text()`` hands out what may be shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from callgate.gate.schema import ToolSchemas
from callgate.gate.turn import Changes, TextRef, TurnGate
from callgate.strategies.base import ExtractionStrategy, Shape
from callgate.strategies.text.defaults import (
    cut_off,
    cut_short,
    default_text_formats,
    model_name,
)
from callgate.strategies.text.formats import END_FORMATS
from callgate.strategies.text.think import ThinkFilter
from callgate.textqueue import TextQueue
from callgate.view import TextBlock


class TextSide:
    """The turn's text: its queue and detector, the blocks that enter the gate, the display.

    A part of :class:`~callgate.buffer.LLMStreamBuffer`, which sets the state named here.
    """

    strategy: ExtractionStrategy | None
    gate: TurnGate | None
    changes: Changes
    schemas: ToolSchemas | None
    reasoning_calls: bool
    leaked_calls: bool
    text_formats: tuple[str, ...] | None
    text_queue: TextQueue
    _make_text_queue: Callable[..., TextQueue]
    _chosen: bool
    _held: bool
    _think: ThinkFilter | None
    _content: list[str]

    if TYPE_CHECKING:

        def _settle(self) -> None: ...

    def _new_text_queue(self, formats: tuple[str, ...] | None) -> None:
        strategy = self.strategy
        if strategy is not None and strategy.leaks_into_text and not self.leaked_calls:
            formats = None
        queue = self.text_queue = self._make_text_queue(
            formats,
            schemas=self.schemas.raw if self.schemas is not None else None,
            reasoning_calls=self.reasoning_calls,
        )
        queue.enter = self._enter_block
        queue.changes = self.changes
        known = self.schemas if self.schemas is not None else ToolSchemas.any_tool()
        queue.known = known.knows

    def _enter_block(self, block: TextBlock) -> bool:
        """The text queue's hook: a block whose call names a tool of the turn enters the gate.

        Each of its calls becomes a whole call of the turn (an unknown one among them is
        refused as an unknown tool, as a native one is); a block of calls that name no
        tool of the turn is text.
        """
        gate = self.gate
        if gate is None or not any(gate.schemas.knows(c.name) for c in block.calls):
            return False
        for n, call in enumerate(block.calls):
            gate.text_call(
                TextRef(block.index, n), block.format, call.id, call.name, call.arguments
            )
        return True

    def _choose_formats(self, strategy: ExtractionStrategy, first: Shape) -> None:
        """Under ``text_formats="auto"``: the stream's model and wire choose the formats."""
        chosen = default_text_formats(strategy.name, model_name(first))
        self.text_formats = tuple(n for n in chosen if n not in END_FORMATS) or None
        self._new_text_queue(self.text_formats)
        self._chosen = True
        self._settle()

    def _settle_text(self, gate: TurnGate | None) -> None:
        """The turn's text is complete: the detector settles it and its calls are decided.

        At :meth:`end`, or already at the stream's own completion signal (so the client
        loop MCS documents, which calls no ``end()``, gets its text calls answered). Text
        that still comes after the signal is shown as it came.
        """
        if gate is not None and gate.text_done:
            return
        self.text_queue.end(cut=gate is None or cut_short(gate.done_seen, gate.done_reason))
        if gate is not None:
            if gate.text_slots and cut_off(gate.done_seen, gate.done_reason):
                gate.refuse(
                    "wrong_terminal_reason",
                    f"the turn ended with reason {gate.done_reason!r}: the output was cut, "
                    "so the calls written in its text are not run",
                )
            elif gate.text_slots and not (gate.done_seen or gate.slots or gate.text_per_call):
                # Under the turn policy a text call waits for the turn's end, as a native one
                # does (with native calls the gate's finish() has refused the turn already).
                gate.refuse(
                    "missing_terminal",
                    "the stream ended without the turn's terminal event, so the calls "
                    "written in its text are not run",
                )
            gate.text_settled()

    def text(self) -> str:
        """Display text released since the last call; empty while the display is held."""
        if self._held:
            return ""
        text = self.text_queue.text()
        think = self._think
        if think is not None:
            text = think.feed(text) + (think.finish() if self.text_queue.ended else "")
        return text

    def hold(self) -> None:
        """Hold the display: ``text()`` returns nothing until ``release()``."""
        self._held = True

    def release(self) -> None:
        """Release the display: held text comes out on the next ``text()``."""
        self._held = False

    @property
    def content_parts(self) -> list[str]:
        """The content deltas of the turn so far, in order (read it, do not change it)."""
        return self._content

    def get_content(self) -> str:
        """All content text of the turn so far, shown or not."""
        return "".join(self._content)
