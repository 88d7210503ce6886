"""The streaming detector: holds back what may be call markup, releases what is not.

Runs the detector table (:mod:`callgate.fsm.detector`) over content deltas. Each delta is
scanned once: a regular expression finds the next opening delimiter (or ``<think>``), a
set of the delimiters' proper prefixes tells what to hold at the end of a delta, and inside
a block one search finds the closing delimiter or a marker that breaks the block, over
the new text plus a tail one shorter than the longest of those tokens (so a close that
arrives one character per delta is still seen whole). A token found at the very end that
may still grow into a longer one (the fence close that may become a new fence) waits for
the next delta or the end of the stream. A delimiter of the open format's own payload
grammar is not a breaking marker. Work per delta is therefore proportional to the delta,
and nothing is scanned twice except the released text of a broken block, read again from
its break point.

Guarantees, for any split of the same content into deltas: the shown text and the calls
are the same; every character that is not markup of a confirmed call is shown exactly
once, in order; no character of a confirmed call's markup is shown (outside reasoning,
see below); and outside a block no more than the longest delimiter minus one characters
are held. Markdown code in the printed text (a code span, a fenced block) is shown and never
scanned for openers (:mod:`callgate.strategies.text.quoting`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Container, Iterable
from typing import NamedTuple

from attrs import frozen

from callgate.fsm.detector import DETECTOR, DetectorState
from callgate.fsm.interpreter import Interpreter
from callgate.gate.findings import Finding, finding
from callgate.strategies.text._scan import (
    _NO_STOPS,
    THINK_CLOSE,
    THINK_OPEN,
    _Block,
    _may_end,
    _scanning,
)
from callgate.strategies.text.base import Schemas, TextCall
from callgate.strategies.text.cut import CutCall, Withhold
from callgate.strategies.text.formats import (
    END_FORMATS,
    FORMATS,
    FormatMemory,
    TextFormat,
    leading_name,
)
from callgate.strategies.text.quoting import LOOK, MARKS, Quotes

__all__ = ["HEAD", "THINK_CLOSE", "THINK_OPEN", "Detected", "DetectedBlock", "Detector"]

HEAD = 64
"""How many payload characters the viability check reads before it trusts a block."""

_MACHINE = Interpreter[DetectorState](DETECTOR)
_PASSES = frozenset(
    s
    for s in DETECTOR.tagged("passes")
    if (t := _MACHINE.find(s, "text")) is not None and t.target == s and t.output is None
)
"""States where plain text is a self-loop with no output: the fast path only shows it."""
assert _PASSES, "the detector table has no state where plain text passes"
_COLLECTS = DETECTOR.tagged("collects")
"""States inside a block: new text is ``payload`` there, ``text`` elsewhere."""
_LOOPS = [(s, _MACHINE.transition(s, "payload")) for s in _COLLECTS]
assert all(t.target == s and t.output is None for s, t in _LOOPS), "payload: a silent self-loop"
_QUOTE = re.compile("[" + re.escape(MARKS) + "]")
"""Where Markdown code may start (:mod:`~callgate.strategies.text.quoting`)."""


@frozen
class DetectedBlock:
    """A block that parsed as calls: its format, the calls, and the markup they replaced."""

    format: str
    calls: tuple[TextCall, ...]
    markup: str
    shown: bool = False
    """True for end-of-stream formats (bare JSON, pythonic): the text was already shown."""
    at: int = 0
    """Where the markup sat in the shown text of its Detected: this many characters precede it."""


class Detected(NamedTuple):
    """What one delta (or the end) produced: text to show now, and finished blocks."""

    shown: str
    blocks: tuple[DetectedBlock, ...] = ()


class Detector:
    """Text-embedded call detection over one stream of content deltas."""

    def __init__(
        self,
        formats: Iterable[str] | None = None,
        *,
        end_formats: Iterable[str] | None = (),
        memory: FormatMemory | None = None,
        schemas: Schemas | None = None,
        known_tools: Container[str] | None = None,
        reasoning_calls: bool = False,
        max_block: int = 1 << 20,
    ) -> None:
        self.end_formats = [FORMATS[n] for n in (end_formats or ())]
        for fmt in self.end_formats:
            if fmt.name not in END_FORMATS:
                raise ValueError(f"{fmt.name} is stream-detected, not an end-of-stream format")
        self.memory = memory if memory is not None else FormatMemory()
        self.schemas = schemas
        self.known_tools = known_tools
        self.reasoning_calls = reasoning_calls
        self.max_block = max_block
        scan = _scanning(None if formats is None else tuple(formats))
        self._openers = scan.openers
        self._at_start = scan.at_start
        self._held_formats = scan.held_formats
        self._open_re = scan.open_re
        self._prefixes = scan.prefixes
        self._hold = scan.hold
        self._stops = scan.stops
        self._reason_re = scan.reason_re
        self._starters = scan.starters
        self._reason_hold = scan.reason_hold
        self.findings: list[Finding] = []
        self._observed = type(self)._fire is not Detector._fire
        """Whether a subclass watches transitions: :meth:`collect` then fires ``payload``."""
        self.reset()

    def reset(self) -> None:
        """Start a new turn; the format memory is kept."""
        self.state: DetectorState = _MACHINE.initial
        self.held = ""
        self.block: _Block | None = None
        self._reason_tail = ""
        self._channel_tail = ""
        self._seen_text = False
        self._quotes = Quotes()
        self._content: list[str] = []
        self._extracted = 0
        self._final = False
        self.findings = []
        self.cut: CutCall | None = None
        """The call a cut end withheld from the display (see :meth:`finish`), else None."""

    # -- feeding ----------------------------------------------------------------------

    def plain(self, delta: str) -> bool:
        """Take ``delta`` as plain text if no marker can start in it: it is shown as it came.

        The common delta of prose, taken with one check and nothing built; False leaves the
        delta to :meth:`feed`.
        """
        if (
            self.state in _PASSES
            and not self._quotes.busy
            and (self._seen_text or not self._at_start)
            and delta
            and not self._starters.search(delta)
        ):
            self._content.append(delta)
            return True
        return False

    def collect(self, delta: str) -> bool:
        """Take ``delta`` into the open block if all it does is grow the payload (nothing shown).

        No value tracked, the size limit kept, no close or breaking marker in the tail and
        ``delta`` (one search), and a head still viable that names the same tool (or none):
        :meth:`feed` would take it so, :meth:`forming` unchanged. Else False: :meth:`feed`.
        """
        block = self.block
        if (
            block is None
            or block.value is not None
            or not delta
            or block.size + len(delta) > self.max_block
            or block.stops.pattern.search(block.tail + delta) is not None
        ):
            return False
        if block.size < HEAD:
            candidate = block.head + delta[: HEAD - len(block.head)]
            if not self._viable(block, candidate) or leading_name(candidate) != block.named():
                return False
            block.head = candidate
        self._append(block, delta)
        if self._observed:
            self._fire("payload")
        return True

    def feed(self, delta: str) -> Detected:
        """Read one content delta; return what may be shown now and any finished blocks."""
        if self.plain(delta):
            return Detected(delta)
        shown: list[str] = []
        blocks: list[DetectedBlock] = []
        text = delta
        _MACHINE.step(self.state, "payload" if self.state in _COLLECTS else "text")
        self._run(text, shown, blocks)
        return self._detected(shown, blocks)

    def _run(self, text: str, shown: list[str], blocks: list[DetectedBlock]) -> None:
        while text:
            text = _READERS[self.state](self, text, shown, blocks)

    def forming(self) -> tuple[bool, str | None]:
        """Whether a block is open, and the tool it names once the name has streamed.

        The name is read only where a payload starts with it (see
        :func:`~callgate.strategies.text.formats.leading_name`), so a driver may release
        the block early when the name is nobody's tool.
        """
        block = self.block
        if block is None:
            return False, None
        return True, block.named()

    def abandon(self) -> Detected:
        """Release the open block as text now (its tool is nobody's): read it again as text.

        The opening delimiter is shown; the payload so far goes back through the scanner
        as ordinary text, so what is shown does not depend on when the block was dropped.
        """
        block = self.block
        if block is None:
            return Detected("")
        shown: list[str] = []
        blocks: list[DetectedBlock] = []
        self.block = None
        self._fire("break", shown, text=block.markup_open or block.opener)
        self._seen_text = True
        payload = block.payload()
        self._run(
            payload[len(block.opener) :] if block.formats[0].keep_open else payload, shown, blocks
        )
        return self._detected(shown, blocks)

    def finish(self, *, cut: bool = False, withhold: Withhold | None = None) -> Detected:
        """The stream ended: release what is held, settle an open block, check the end.

        A block still open is a call when its payload parses: servers use a close marker
        as a stop sequence, so a normal end stands for it. ``cut``: the stream was cut
        short (its length limit, or no terminal event), so only a format whose close is
        optional may end there; any other open block is shown, unless ``withhold`` says
        it is a cut call (:mod:`~callgate.strategies.text.cut`): then :attr:`cut` keeps it.
        """
        shown: list[str] = []
        blocks: list[DetectedBlock] = []
        self._final = True
        if self.block is not None:
            self._run(self._in_block("", shown, blocks), shown, blocks)
        block = self.block
        if block is not None:
            payload = block.payload()
            parsed = (
                self._parse(block, payload, end="cut" if cut else "normal")
                if block.open_ended or not cut
                else None
            )
            if parsed is not None:
                fmt, calls = parsed
                markup = block.markup_open + payload
                found = DetectedBlock(fmt.name, calls, markup, at=_length(shown))
                self._fire("finish_call", blocks=blocks, found=found)
            else:
                text = block.markup_open + payload
                if cut and withhold is not None and withhold(block.named()):
                    self.cut, text = CutCall(block.named(), text), ""
                self._fire("finish_text", shown, text=text)
            self.block = None
        else:
            self._fire("end", shown)
        if not blocks and not self._extracted:
            blocks.extend(self._end_formats(shown))
        return self._detected(shown, blocks)

    def feed_reasoning(self, delta: str) -> None:
        """A provider's separate reasoning channel: never shown, scanned only to report."""
        window = self._channel_tail + delta
        for match in self._reason_re.finditer(window):
            if match.end() > len(self._channel_tail) and match.group() != THINK_CLOSE:
                self._report_reasoning(match.group())
        self._channel_tail = window[-self._reason_hold :] if self._reason_hold else ""

    # -- the three scanning states -----------------------------------------------------

    def _printing(self, text: str, shown: list[str], blocks: list[DetectedBlock]) -> str:
        buf = self.held + text
        self.held = ""
        if self._quotes.busy:
            return self._quoted(buf, shown)
        if self._at_start and not self._seen_text:
            lead = len(buf) - len(buf.lstrip())
            if lead < len(buf) and buf[lead] in self._at_start:
                if lead:
                    self._show(buf[:lead], shown)
                    self._fire("text", shown)
                opener = buf[lead]
                self._fire("open", block=_Block(opener, self._at_start[opener], _NO_STOPS))
                return buf[lead:]
        match = self._open_re.search(buf)
        quote = _QUOTE.search(buf, 0, len(buf) if match is None else match.start())
        tick = -1 if quote is None else quote.start()
        if tick >= 0:
            self._show(buf[:tick], shown)
            self._fire("text", shown)
            if buf[tick:] in self._prefixes:  # "```js" may still become the "```json" opener
                self.held = buf[tick:]
                self._fire("prefix")
                return ""
            return self._quoted(buf[tick:], shown)
        if match is not None:
            before = buf[: match.start()]
            if before:
                self._show(before, shown)
                self._fire("text", shown)
            token = match.group()
            if token == THINK_OPEN:
                self._show(token, shown)
                self._fire("think")
                self._reason_tail = ""
            else:
                self._fire("open", block=_Block(token, self._openers[token], self._stops[token]))
            return buf[match.end() :]
        keep = self._held_suffix(buf)
        if len(buf) > keep:
            self._show(buf[: len(buf) - keep], shown)
            self._fire("text", shown)
        if keep:
            self.held = buf[len(buf) - keep :]
            self._fire("prefix")
        return ""

    def _quoted(self, buf: str, shown: list[str]) -> str:
        """Show the Markdown code (or run of backticks) at the start of ``buf``.

        The rest is prose, scanned again (see :mod:`~callgate.strategies.text.quoting`).
        """
        end = self._quotes.read(buf, lambda text, pos: self._line(shown, text, pos))
        self._show(buf[:end], shown)
        self._fire("text", shown)
        return buf[end:]

    def _line(self, shown: list[str], buf: str, pos: int) -> str | None:
        """The text from the last line break (or the content's start) to ``buf[pos]``.

        ``buf`` follows everything shown; None when that is longer than :data:`LOOK`.
        """
        before: list[str] = []
        room = LOOK
        pieces = itertools.chain(
            (buf[max(pos - LOOK, 0) : pos],), reversed(shown), reversed(self._content)
        )
        for piece in pieces:
            tail = piece[-room:] if room else ""
            cut = tail.rfind("\n")
            if cut >= 0:
                before.append(tail[cut + 1 :])
                return "".join(reversed(before))
            if len(tail) == room:
                return None
            before.append(tail)
            room -= len(tail)
        return "".join(reversed(before))

    def _in_block(self, text: str, shown: list[str], blocks: list[DetectedBlock]) -> str:
        block = self.block
        assert block is not None
        window = block.tail + text
        match = block.stops.pattern.search(window)
        if match is not None and not self._final and block.waits(window, match):
            match = None
        end_new = len(text) if match is None else max(match.start() - len(block.tail), 0)
        young = block.size < HEAD
        limit = self.max_block - block.size
        broke_at = self._viability_break(block, text[:end_new]) if young else None
        if broke_at is None and block.value is not None:
            broke_at = block.value.feed(text[:end_new])
        if broke_at is None and end_new > limit:
            broke_at = max(limit, 0)
        if broke_at is not None:
            return self._break(block, text, block.size + broke_at, shown)
        if match is None:
            self._append(block, text)
            self._fire("payload")
            return ""
        token_start = block.size - len(block.tail) + match.start()
        if match.group() != block.close:
            return self._break(block, text, token_start, shown)
        self._append(block, text[:end_new])
        payload = block.payload()[:token_start]
        rest = (block.payload() + text[end_new:])[token_start + len(match.group()) :]
        markup = block.markup_open + payload + match.group()
        parsed = self._parse(block, payload)
        self.block = None
        if parsed is None:
            self._fire("close_text", shown, text=markup)
        else:
            fmt, calls = parsed
            found = DetectedBlock(fmt.name, calls, markup, at=_length(shown))
            self._fire("close_call", blocks=blocks, found=found)
        return rest

    def _reasoning(self, text: str, shown: list[str], blocks: list[DetectedBlock]) -> str:
        tail = self._reason_tail
        window = tail + text
        match = self._reason_re.search(window)
        if match is None:
            self._show(text, shown)
            self._fire("text")
            self._reason_tail = window[-self._reason_hold :] if self._reason_hold else ""
            return ""
        token = match.group()
        end = match.end() - len(tail)
        self._reason_tail = ""
        if token == THINK_CLOSE:
            self._show(text[:end], shown)
            self._fire("unthink")
            return text[end:]
        if self.reasoning_calls:
            start = max(match.start() - len(tail), 0)
            if start:
                self._show(text[:start], shown)
            opened = _Block(token, self._openers[token], self._stops[token])
            self._fire("reasoning_open", text=token, block=opened)
            return text[end:]
        self._show(text[:end], shown)
        self._fire("reasoning_marker", text=token)
        return text[end:]

    # -- helpers ----------------------------------------------------------------------

    def _viability_break(self, block: _Block, new: str) -> int | None:
        """Where in ``new`` the payload's head stops being viable for every format.

        A trailing part that may still become the block's close (or a breaking marker) is
        not judged yet: the stop search decides it once it completes or fails. The break
        never cuts through the start of an opening delimiter (Harmony's ``<|channel|>``
        after a ``<|start|>assistant`` that names no recipient): it moves back before it,
        and the delimiter is read again with the rest. The result may then be negative
        (the break lies in the payload before ``new``).
        """
        head = block.head
        room = HEAD - len(head)
        candidate = head + new[:room]
        if self._viable(block, candidate):
            block.head = candidate
            return None
        for n in range(1, min(room, len(new)) + 1):
            if not self._viable(block, head + new[:n]):
                return n - 1 - self._held_suffix(head + new[: n - 1])
        return None

    @staticmethod
    def _viable(block: _Block, head: str) -> bool:
        for keep in range(min(len(head), block.stops.keep), 0, -1):
            if head[-keep:] in block.stops.partial:
                head = head[:-keep]
                break
        return any(f.viable(head) for f in block.formats)

    def _break(self, block: _Block, text: str, cut: int, shown: list[str]) -> str:
        """Release the block up to payload position ``cut``; the rest is read again.

        The rest is read past the content's start: a block that opened there (bare JSON,
        pythonic) and broke at once, before ``[TOOL_CALLS]``, must not open again.
        """
        combined = block.payload() + text
        self._fire("break", shown, text=block.markup_open + combined[:cut])
        self._seen_text = True
        self.block = None
        return combined[cut:]

    def _append(self, block: _Block, text: str) -> None:
        if not text:
            return
        block.parts.append(text)
        block.size += len(text)
        keep = block.stops.keep
        block.tail = (block.tail + text)[-keep:] if keep else ""

    def _parse(
        self, block: _Block, payload: str, *, end: str | None = None
    ) -> tuple[TextFormat, tuple[TextCall, ...]] | None:
        """The first format (remembered first) whose parser reads calls in the payload.

        ``end``: the block is still open at the stream's end. ``"cut"``: only formats that
        may end there count; ``"normal"``: those are tried first, then the rest, if the
        payload ends as a complete one does (see :data:`_COMPLETE`).
        """
        formats = self.memory.order(block.formats)
        if end is not None:
            formats = sorted(formats, key=lambda f: not _may_end(f))
        complete = payload.rstrip().endswith(_COMPLETE)
        for fmt in formats:
            if end is not None and not _may_end(fmt) and (end == "cut" or not complete):
                continue
            calls = fmt.parser(payload, self.schemas)
            if calls:
                known = self.known_tools
                if known is not None and not all(c.name in known for c in calls):
                    return None
                self.memory.remember(fmt.name)
                self._extracted += 1
                return fmt, tuple(calls)
        return None

    def _end_formats(self, shown: list[str]) -> list[DetectedBlock]:
        """The end-of-stream formats over the whole content, which was shown already.

        A format this detector also holds at the start is skipped: its block decided it,
        and a block released as text must not run after it was shown.
        """
        content = "".join(self._content) + "".join(shown)
        for fmt in self.end_formats:
            if fmt.name in self._held_formats:
                continue
            if content.lstrip().startswith(fmt.opens):
                calls = fmt.parser(content, self.schemas)
                known = self.known_tools
                if calls and (known is None or all(c.name in known for c in calls)):
                    self.memory.remember(fmt.name)
                    block = DetectedBlock(fmt.name, tuple(calls), content, shown=True)
                    return [block]
        return []

    def _held_suffix(self, buf: str) -> int:
        for keep in range(min(len(buf), self._hold), 0, -1):
            if buf[-keep:] in self._prefixes:
                return keep
        return 0

    def _report_reasoning(self, token: str) -> None:
        self.findings.append(
            finding("call_in_reasoning", f"a {token!r} call marker inside reasoning; not run")
        )

    def _show(self, text: str, shown: list[str]) -> None:
        if text:
            shown.append(text)
            if not self._seen_text and text.strip():
                self._seen_text = True

    def _fire(
        self,
        event: str,
        shown: list[str] | None = None,
        blocks: list[DetectedBlock] | None = None,
        *,
        text: str = "",
        block: _Block | None = None,
        found: DetectedBlock | None = None,
    ) -> None:
        """Take the table's transition for ``event`` and run the action its output names.

        The arguments are what the action works on (:data:`_ACTIONS`): where text is
        shown, where found blocks go, the text to show or the marker to report, the block
        that opens, the block that was found.
        """
        transition = _MACHINE.transition(self.state, event)
        self.state = _MACHINE.target(transition)
        output = transition.output
        if output is not None:
            _ACTIONS[output](self, _Effect(shown, blocks, text, block, found))

    def _detected(self, shown: list[str], blocks: list[DetectedBlock]) -> Detected:
        text = "".join(shown)
        if text:
            self._content.append(text)
        return Detected(text, tuple(blocks))


class _Effect(NamedTuple):
    """What a transition's action works on (see :meth:`Detector._fire`)."""

    shown: list[str] | None
    blocks: list[DetectedBlock] | None
    text: str
    block: _Block | None
    found: DetectedBlock | None


def _release_held(detector: Detector, effect: _Effect) -> None:
    """``release_held``: the text held as a possible delimiter is shown."""
    assert effect.shown is not None
    detector._show(detector.held, effect.shown)
    detector.held = ""


def _drop_markup(detector: Detector, effect: _Effect) -> None:
    """``drop_markup``: the delimiter opens a block; its markup is kept there, not shown."""
    detector.block = effect.block


def _extract(detector: Detector, effect: _Effect) -> None:
    """``extract``: the block's calls are handed on; its markup is never shown."""
    assert effect.blocks is not None and effect.found is not None
    effect.blocks.append(effect.found)


def _release_block(detector: Detector, effect: _Effect) -> None:
    """``release_block``: the block (up to where it broke) is shown as ordinary text."""
    assert effect.shown is not None
    detector._show(effect.text, effect.shown)


def _call_in_reasoning(detector: Detector, effect: _Effect) -> None:
    """``call_in_reasoning``: the marker is reported; with the driver's opt-in it opens a block."""
    detector._report_reasoning(effect.text)
    if effect.block is not None:
        detector.block = effect.block


_ACTIONS: dict[str, Callable[[Detector, _Effect], None]] = {
    "release_held": _release_held,
    "drop_markup": _drop_markup,
    "extract": _extract,
    "release_block": _release_block,
    "call_in_reasoning": _call_in_reasoning,
}
"""The action of each output the detector table names, run when a transition outputs it."""
assert set(_ACTIONS) == {t.output for t in DETECTOR.transitions if t.output is not None}

_Reader = Callable[[Detector, str, list[str], list[DetectedBlock]], str]
_BY_TAG: tuple[tuple[str, _Reader], ...] = (
    ("scans", Detector._printing),
    ("collects", Detector._in_block),
    ("reasons", Detector._reasoning),
)
_READERS: dict[str, _Reader] = {
    state: reader for tag, reader in _BY_TAG for state in DETECTOR.tagged(tag)
}
"""The reader of new text in each state that reads text, chosen by the state's tag."""
assert sorted(s for tag, _ in _BY_TAG for s in DETECTOR.tagged(tag)) == sorted(
    set(DETECTOR.state_names) - DETECTOR.final_states
), "every state that reads text has exactly one reader tag"


_COMPLETE = ("}", "]", ">")
"""How a complete payload of a format with a close ends: its JSON, or its last tag (``</function>``,
``<|tool_call_end|>``, ``</arg_value>``). A payload ending otherwise (a bare GLM name, prose
after ``<tool_call>``) may have been cut and is not read without its close."""


def _length(pieces: list[str]) -> int:
    return sum(map(len, pieces))
