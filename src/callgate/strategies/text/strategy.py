"""One text strategy per text format, for the shared ExtractionChain.

A text strategy reads an assembled message whose content is a string (a wire strategy
did the reassembly) and extracts the calls of its format by running a fresh
:class:`~callgate.strategies.text.detector.Detector` over the content. It claims only plain string
content, so it can never claim a native shape (a message with ``tool_calls``, a block
list); that is what keeps the chain's move-to-front optimisation harmless.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from callgate.strategies.base import (
    NOT_FORMING,
    ExtractedCall,
    Forming,
    MessageReader,
    Shape,
    ToolResult,
)
from callgate.strategies.text.detector import Detector
from callgate.strategies.text.formats import END_FORMATS, FORMATS

_NATIVE_KEYS = ("tool_calls", "choices", "candidates", "output", "type")


class TextStrategy(MessageReader):
    """Calls of one text format, read from an assembled message's string content.

    A message reader only: the wire strategy of the stream reassembles the chunks.
    """

    format_name: ClassVar[str]

    @property
    def formats(self) -> tuple[str, ...]:
        """The text formats this strategy reads."""
        return (self.format_name,)

    def recognizes(self, shape: Shape) -> bool:
        """A plain message (string content, no native envelope) whose call is this format.

        Exactly one text strategy claims a given content (see :func:`claiming_format`),
        so the chain's order never changes which one does.
        """
        content = shape.get("content")
        if not isinstance(content, str) or any(k in shape for k in _NATIVE_KEYS):
            return False
        return claiming_format(content) in self.formats

    def _detect(self, message: Shape) -> list[ExtractedCall]:
        stream = [n for n in self.formats if n not in END_FORMATS]
        end = [n for n in self.formats if n in END_FORMATS]
        detector = Detector(stream, end_formats=end)
        detected = detector.feed(self.content_text(message))
        blocks = [*detected.blocks, *detector.finish().blocks]
        calls = [c for b in blocks for c in b.calls]
        return [ExtractedCall(c.id, c.name, c.arguments, i) for i, c in enumerate(calls)]

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """The calls of this format in the content, in order."""
        return self._detect(message)

    def forming(self, message: Shape) -> Forming:
        """A block of this format open in the content (its tool once named), or a call read."""
        detector = Detector([n for n in self.formats if n not in END_FORMATS], end_formats=())
        detected = detector.feed(self.content_text(message))
        coming, name = detector.forming()
        if coming:
            return Forming(True, name)
        calls = [c for b in detected.blocks for c in b.calls]
        return Forming(True, calls[-1].name) if calls else NOT_FORMING

    def content_text(self, message: Shape) -> str:
        """The string content."""
        content = message.get("content")
        return content if isinstance(content, str) else ""

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """A text-style continuation: one user message stating each result by tool name."""
        if not results:
            return []
        lines = [
            f"[{'error' if r.is_error else 'result'} of {r.call.name}] {r.content}" for r in results
        ]
        return [{"role": "user", "content": "\n".join(lines)}]


_STREAM = [f for f in FORMATS.values() if f.stream]
_BY_OPENER: dict[str, list[str]] = {}
for _fmt in _STREAM:
    for _opener in _fmt.opens:
        _BY_OPENER.setdefault(_opener, []).append(_fmt.name)
_OPENERS = re.compile(
    "|".join(re.escape(o) for o in sorted(_BY_OPENER, key=lambda o: (-len(o), o)))
)


def claiming_format(content: str) -> str | None:
    """The one text format that owns ``content``: the earliest opening delimiter decides.

    The earliest delimiter whose block reads a call decides (gpt-oss writes
    ``<|start|>assistant`` before a channel-header call: ``<|start|>`` opens no
    ``harmony_role`` call there, the ``<|channel|>`` after it a ``harmony`` one); with no
    call at all, the earliest delimiter's format. A delimiter shared by several formats
    is settled by the payload (the first format, in catalogue order, whose parser reads a
    call). Content with no delimiter belongs to
    the end-of-stream format whose parser reads it (``[`` opens both bare JSON lists and
    pythonic lists), else to the first whose opener (``{``, ``[``) it starts with.
    """
    first: str | None = None
    for match in _OPENERS.finditer(content):
        names = _BY_OPENER[match.group()]
        first = first or names[0]
        detector = Detector(names, end_formats=())
        blocks = [*detector.feed(content[match.start() :]).blocks, *detector.finish().blocks]
        if blocks:
            return blocks[0].format
    if first is not None:
        return first
    stripped = content.lstrip()
    starting = [name for name in END_FORMATS if stripped.startswith(FORMATS[name].opens)]
    for name in starting:
        if FORMATS[name].parser(stripped, None):
            return name
    return starting[0] if starting else None


def _strategy_class(name: str) -> type[TextStrategy]:
    camel = "".join(part.title() for part in name.split("_"))
    return type(f"{camel}TextStrategy", (TextStrategy,), {"name": name, "format_name": name})


TEXT_STRATEGIES: dict[str, type[TextStrategy]] = {name: _strategy_class(name) for name in FORMATS}
"""A text strategy class per text format, by the format's contract name."""


class TextFormatsStrategy(TextStrategy):
    """Calls of any of several text formats: a driver's backup for calls leaked as text.

    The native→text fall-through hands it a native message's plain text; the formats are
    the driver's (every format by default).
    """

    name = "text"

    def __init__(self, formats: Sequence[str] | None = None) -> None:
        chosen = tuple(FORMATS) if formats is None else tuple(formats)
        unknown = [n for n in chosen if n not in FORMATS]
        if unknown:
            raise ValueError(
                f"unknown text format(s): {', '.join(unknown)}; known: {', '.join(FORMATS)}"
            )
        self._formats = chosen

    @property
    def formats(self) -> tuple[str, ...]:
        """The text formats this strategy reads."""
        return self._formats

    def __repr__(self) -> str:
        return f"<TextFormatsStrategy {list(self.formats)!r}>"
