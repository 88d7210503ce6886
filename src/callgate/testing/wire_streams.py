"""Whole provider streams as Hypothesis strategies, each with its ground truth.

:func:`streams` draws a turn (text and calls), encodes it for one wire with some of the
quirks real providers send, interleaves and fragments the calls, optionally injects one
fault from :func:`faults`, and gives a :class:`StreamExample`: the chunks in the form you
asked for, the calls a correct reader must find (or the fault and the finding callgate
reports for it), and :meth:`StreamExample.verdict`, callgate's own reading, as an oracle.
"""

from __future__ import annotations

import callgate.testing.needs  # noqa: F401  (Hypothesis, or its install line)

# isort: split

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from hypothesis import strategies as st

from callgate import LLMStreamBuffer, ToolSchemas
from callgate.buffer import UnreadableChunk
from callgate.strategies import WIRE_RECORDS, WIRE_STRATEGIES
from callgate.testing.cuts import byte_splits, pieces
from callgate.testing.forms import FORMS, raw_stream, to_sdk
from callgate.testing.plans import TOOLS, StreamPlan, interleavings, stream_plans
from callgate.testing.wires import (
    QUIRKS,
    WIRES,
    Chunk,
    Encoder,
    Piece,
    WireCall,
    encoder,
    encoder_class,
)

Form = Literal["dict", "sdk", "sse"]


@dataclass(frozen=True)
class IntendedCall:
    """A call the stream carries: what a correct reader runs once the turn ends cleanly."""

    id: str | None
    name: str | None
    arguments: Any


@dataclass(frozen=True)
class Fault:
    """The one fault injected into a stream, and the finding callgate reports for it.

    ``kind``: a name from :data:`FAULT_KINDS`; ``code``: the finding code (see
    docs/findings.md); ``call``: the position of the call it hits, if one.
    """

    kind: str
    code: str
    call: int | None = None


@dataclass(frozen=True)
class Verdict:
    """callgate's reading of a whole stream: the turn's state, its calls, its findings."""

    turn_state: str
    calls: tuple[IntendedCall, ...]
    codes: tuple[str, ...]
    executable: bool
    """Whether the turn's calls may run: complete, unambiguous, strict JSON, schema-valid."""


@dataclass(frozen=True)
class StreamExample:
    """One generated stream and its ground truth.

    :attr:`chunks`: what to feed, in the requested ``form`` (plain dicts, the SDK's
    typed objects, built on first use, or raw bytes pieces); ``dicts``: the same stream as
    plain dicts (for a ``sse`` form, the chunks its bytes decode to); ``calls``: the
    calls the turn carries; ``fault``: the injected fault, or None for a clean stream.
    """

    wire: str
    form: str
    raw: tuple[bytes, ...]
    """The ``sse`` form's bytes, cut anywhere (empty for the other forms)."""
    dicts: tuple[Chunk, ...]
    calls: tuple[IntendedCall, ...]
    text: str
    fault: Fault | None
    tools: Mapping[str, Mapping[str, Any]] = field(repr=False)
    quirks: frozenset[str] = frozenset()
    decoded: tuple[Any, ...] = field(default=(), repr=False)
    """What a client reads from the ``sse`` form's bytes (``callgate replay`` reads them so):
    the dicts, a cut frame an :class:`~callgate.buffer.UnreadableChunk` in its place."""
    argument_chars: tuple[int, ...] = field(default=(), repr=False)
    """Per chunk (dict and sdk forms), how many characters of argument text it carries."""

    @cached_property
    def chunks(self) -> tuple[Any, ...]:
        """The stream in its form: dicts, the SDK's objects, or bytes pieces."""
        if self.form == "sse":
            return self.raw
        if self.form == "sdk":
            return tuple(to_sdk(self.wire, chunk) for chunk in self.dicts)
        return self.dicts

    def buffer(self) -> LLMStreamBuffer:
        """A fresh buffer of this wire fed the whole stream and ended."""
        buffer = LLMStreamBuffer(
            tool_schemas=compiled(self.tools), strategy=WIRE_STRATEGIES[self.wire]()
        )
        for chunk in self.feedable():
            buffer.add(chunk)
        buffer.end()
        return buffer

    def feedable(self) -> list[Any]:
        """The chunks as a buffer takes them: for raw bytes, :attr:`decoded`."""
        return list(self.decoded if self.form == "sse" else self.chunks)

    def verdict(self) -> Verdict:
        """Callgate's verdict on the whole stream: the oracle for your adapter."""
        buffer = self.buffer()
        calls = tuple(IntendedCall(s.id, s.name, s.arguments) for s in buffer.slots)
        codes = tuple(sorted({f.code for f in buffer.findings}))
        return Verdict(buffer.turn_state, calls, codes, buffer.executable)

    def expected_state(self) -> str:
        """The turn state the ground truth implies."""
        if self.fault is not None:
            return "blocked"
        return "executable" if self.calls else "not_applicable"

    def check(self) -> Verdict:
        """Assert callgate's verdict agrees with the ground truth; return the verdict."""
        verdict = self.verdict()
        expected = self.expected_state()
        assert verdict.turn_state == expected, (
            f"{self.wire}: callgate says {verdict.turn_state} ({verdict.codes}), "
            f"the ground truth {expected} (fault {self.fault})"
        )
        if self.fault is None:
            assert verdict.calls == self.calls, f"{verdict.calls} != {self.calls}"
        else:
            assert self.fault.code in verdict.codes, (
                f"{self.wire} {self.fault.kind}: expected {self.fault.code}, got {verdict.codes}"
            )
        return verdict

    def lines(self) -> str:
        """The stream as JSON lines (one chunk a line), for a readable failure report."""
        return "\n".join(json.dumps(c, ensure_ascii=False) for c in self.dicts)

    def label(self) -> str:
        """One line naming the stream: its wire, its fault (and the finding), its calls."""
        fault = f"fault {self.fault.kind} ({self.fault.code})" if self.fault else "clean"
        count = len(self.calls)
        return f"{self.wire} stream, {fault}, {count} call{'' if count == 1 else 's'}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints a drawn example: its label, then one JSON chunk a line.

        Hypothesis's default would print every field of the dataclass (the chunks twice,
        and per-chunk counts), hundreds of lines for a short stream.
        """
        printer.text(f"StreamExample({self.label()},\n{self.lines()}\n)")


_COMPILED: dict[str, ToolSchemas] = {}


def compiled(tools: Mapping[str, Mapping[str, Any]]) -> ToolSchemas:
    """``tools`` compiled once per set of schemas (compiling costs far more than a stream)."""
    key = json.dumps(tools, sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = ToolSchemas(tools)
    return _COMPILED[key]


# -- faults ---------------------------------------------------------------------------------

FAULT_KINDS: dict[str, str] = {
    "index_reuse": "identity_collision",
    "identity_collision": "identity_collision",
    "truncation": "missing_terminal",
    "duplicate_terminal": "duplicate_terminal",
    "late_fragment": "delta_after_terminal",
    "malformed_json": "malformed_json",
    "non_finite_number": "non_finite_number",
    "duplicate_key": "duplicate_key",
    "non_object_arguments": "non_object_arguments",
    "schema_invalid": "schema_invalid",
    "unknown_tool": "unknown_tool",
    "foreign_chunk": "malformed_chunk",
    "cut_frame": "malformed_chunk",
}
"""Every fault the kit injects, and the finding code callgate reports for it."""

_NOT_ON_WHOLE_CALLS = frozenset(
    {"malformed_json", "non_finite_number", "duplicate_key", "index_reuse"}
)
"""Faults a wire whose calls come whole cannot carry: its arguments are objects (no JSON
text to break), and a call's slot is its position (no index to reuse)."""


def fault_kinds(wire: str, form: str = "dict") -> list[str]:
    """The faults :func:`streams` can inject on ``wire`` in ``form``."""
    whole = not encoder_class(wire).fragmented
    kinds = [k for k in FAULT_KINDS if not (whole and k in _NOT_ON_WHOLE_CALLS)]
    return [k for k in kinds if k != "cut_frame" or form == "sse"]


def faults(wire: str = "openai", form: str = "dict") -> st.SearchStrategy[str]:
    """The kind of one fault ``wire`` can carry (pass the result as ``streams(faults=)``)."""
    return st.sampled_from(fault_kinds(wire, form))


_BROKEN_ARGUMENTS = {
    "malformed_json": ['{"city": "Par', '{"city" "Paris"}', "{'city': 'Paris'}", '{"a": 1,}'],
    "non_finite_number": ['{"limit": NaN}', '{"x": Infinity}', '{"x": -Infinity}'],
    "duplicate_key": ['{"city": "Paris", "city": "Rome"}', '{"a": {"b": 1, "b": 2}}'],
}


# -- the strategy ---------------------------------------------------------------------------


def _as_range(value: int | tuple[int, int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else value


@st.composite
def streams(
    draw: st.DrawFn,
    wire: str = "openai",
    *,
    tools: Mapping[str, Mapping[str, Any]] | None = None,
    calls: int | tuple[int, int] = (0, 4),
    text: bool = True,
    faults: bool | str | st.SearchStrategy[str] = False,
    form: Form = "dict",
    quirks: bool | Sequence[str] = True,
    interleave: bool = True,
) -> StreamExample:
    """Whole streams of ``wire`` carrying ``calls`` tool calls (a count or a range).

    ``tools``: {name: JSON Schema} (default :data:`TOOLS`); ``text``: may prose come
    first; ``faults``: False for clean streams, True for one fault of any kind the wire
    can carry, a kind name, or a strategy of kind names (:func:`faults`); ``form``:
    ``dict``, ``sdk`` (the official SDK's typed objects where that SDK is installed;
    :func:`callgate.testing.forms.to_sdk` says which) or ``sse`` (raw bytes, cut
    anywhere); ``quirks``: True for any subset of the wire's real-provider quirks
    (:data:`callgate.testing.wires.QUIRKS`), False for none, or the exact list;
    ``interleave``: may the pieces of calls interleave (calls still open in order).
    """
    if wire not in WIRES:
        raise ValueError(f"unknown wire {wire!r}; choose one of {', '.join(WIRES)}")
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    schemas = dict(TOOLS if tools is None else tools)
    kind = _fault_kind(draw, faults, wire, form)
    low, high = _as_range(calls)
    if kind is not None:
        low, high = max(low, 1), max(high, 1)
    empty = WIRE_RECORDS[wire].strategy.empty_arguments_object
    plan = draw(stream_plans(tools=schemas, calls=(low, high), text=text, empty_arguments=empty))
    chosen = _quirks(draw, wire, quirks)
    if kind == "identity_collision":  # two calls can only share an id they carry
        chosen = (chosen - {"no_ids"}) | (set() if encoder_class(wire).carries_ids else {"ids"})
    if kind == "index_reuse":  # a call without an index has no index to reuse
        chosen -= {"no_index"}
    names = [call.name for call in plan.calls]
    if any(a == b for a, b in itertools.pairwise(names)):
        # Gemini reads consecutive id-less calls of one tool as one call cut in two.
        chosen -= {"no_ids"}
    enc = encoder(wire, chosen)
    wire_calls = _wire_calls(enc, plan, draw)
    fault: Fault | None = None
    if kind is not None:
        wire_calls, fault = _break_arguments(draw, kind, enc, wire_calls, schemas)
    pieces = _encode(draw, enc, plan, wire_calls, interleave)
    if kind is not None and fault is None:
        pieces, fault = _break_sequence(draw, kind, enc, wire_calls, pieces)
    dicts = enc.finalise([dict(piece.chunk) for piece in pieces])
    raw_pieces: tuple[bytes, ...] = ()
    decoded: list[Any] = list(dicts)
    if form == "sse":
        raw = raw_stream(wire, dicts)
        if kind == "cut_frame":
            raw, fault, at = _cut_frame(draw, wire, dicts)
            decoded[at] = UnreadableChunk("malformed_chunk", f"frame {at} is cut short")
        raw_pieces = tuple(draw(byte_splits(raw)))
    elif form == "sdk":
        to_sdk(wire, dicts[0])  # a missing SDK is said at once
    intended = tuple(
        IntendedCall(call.id, call.name, _intended_arguments(call)) for call in wire_calls
    )
    return StreamExample(
        wire,
        form,
        raw_pieces,
        tuple(dicts),
        intended,
        "".join(plan.text_parts),
        fault,
        schemas,
        chosen,
        tuple(decoded),
        tuple(piece.chars for piece in pieces),
    )


def _fault_kind(
    draw: st.DrawFn, faults: bool | str | st.SearchStrategy[str], wire: str, form: str
) -> str | None:
    if faults is False:
        return None
    allowed = fault_kinds(wire, form)
    if faults is True:
        return draw(st.sampled_from(allowed))
    kind = faults if isinstance(faults, str) else draw(faults)
    if kind not in allowed:
        raise ValueError(f"{wire} in form {form!r} cannot carry the fault {kind!r}; {allowed}")
    return kind


def _quirks(draw: st.DrawFn, wire: str, quirks: bool | Sequence[str]) -> frozenset[str]:
    if quirks is True:
        chosen = frozenset(draw(st.sets(st.sampled_from(QUIRKS[wire]))))
    elif quirks is False:
        chosen = frozenset()
    else:
        chosen = frozenset(quirks)
    if {"null_content", "no_content_key"} <= chosen:
        chosen -= {"null_content"}
    return chosen


def _wire_calls(enc: Encoder, plan: StreamPlan, draw: st.DrawFn) -> list[WireCall]:
    first = enc.first_key(bool(plan.text_parts))
    out = []
    for n, call in enumerate(plan.calls):
        call_id: str | None = enc.id_prefix + call.suffix
        if "no_ids" in enc.quirks or not (enc.carries_ids or "ids" in enc.quirks):
            call_id = None
        fragments = call.fragments if enc.fragmented else ()
        arguments: Any = call.arguments
        out.append(WireCall(call_id, call.name, fragments, key=first + n, arguments=arguments))
    return out


def _intended_arguments(call: WireCall) -> Any:
    if call.fragments:
        try:
            return json.loads(call.raw)
        except ValueError:
            return call.raw
    return call.arguments


def _encode(
    draw: st.DrawFn, enc: Encoder, plan: StreamPlan, calls: list[WireCall], interleave: bool
) -> list[Piece]:
    pieces = enc.prelude(plan.text_parts)
    whole = not enc.fragmented or "no_index" in enc.quirks
    lengths = [1 if whole else 1 + len(c.fragments) + int(enc.closes) for c in calls]
    if interleave and not whole:
        order = draw(interleavings(lengths))
    else:
        order = [n for n, length in enumerate(lengths) for _ in range(length)]
    sent = [0] * len(calls)
    for n in order:
        call, step = calls[n], sent[n]
        sent[n] += 1
        if step == 0:
            carried = len(json.dumps(call.arguments)) if not enc.fragmented else 0
            if whole and enc.fragmented:
                carried = len(call.raw)
            elif "arguments_in_opening" in enc.quirks and call.fragments:
                carried = len(call.fragments[0])
            opening = enc.open(call)
            pieces += [
                Piece("open", chunk, n, carried if i == 0 else 0) for i, chunk in enumerate(opening)
            ]
        elif step <= len(call.fragments):
            text = call.fragments[step - 1]
            if step == 1 and "arguments_in_opening" in enc.quirks:
                continue
            fragment = enc.fragment(call, text)
            pieces += [
                Piece("fragment", chunk, n, len(text) if i == 0 else 0)
                for i, chunk in enumerate(fragment)
            ]
        else:
            pieces += [Piece("close", chunk, n) for chunk in enc.close(call)]
    if "grouped_calls" in enc.quirks:
        pieces = _grouped(pieces)
    enc.state["reason"] = "tool_calls" if calls else "stop"
    pieces += [Piece("finish", chunk) for chunk in enc.finish(calls)]
    return pieces + [Piece("epilogue", chunk) for chunk in enc.epilogue()]


def _grouped(pieces: list[Piece]) -> list[Piece]:
    """Gemini's calls of one chunk: every functionCall part in the first call's chunk."""
    opens = [p for p in pieces if p.kind == "open"]
    if len(opens) < 2:
        return pieces
    parts = [part for p in opens for part in p.chunk["candidates"][0]["content"]["parts"]]
    merged = json.loads(json.dumps(opens[0].chunk))
    merged["candidates"][0]["content"]["parts"] = parts
    rest = [p for p in pieces if p.kind != "open"]
    return [*rest, Piece("open", merged, 0)]


def _break_arguments(
    draw: st.DrawFn, kind: str, enc: Encoder, calls: list[WireCall], tools: Mapping[str, Any]
) -> tuple[list[WireCall], Fault | None]:
    """Faults in a call's own content; None for a fault of the stream's sequence."""
    n = draw(st.integers(0, len(calls) - 1))
    call = calls[n]
    if kind in _BROKEN_ARGUMENTS:
        value: Any = draw(st.sampled_from(_BROKEN_ARGUMENTS[kind]))
    elif kind == "non_object_arguments":
        # An absent or null argument object is an empty one on the whole-call wires.
        value = draw(st.sampled_from([[1, 2], "text", 3, True, *([None] * enc.fragmented)]))
    elif kind == "schema_invalid":
        needy = sorted(name for name, schema in tools.items() if schema.get("required"))
        if not needy:
            raise ValueError("the fault schema_invalid needs a tool with a required argument")
        call = replace(call, name=draw(st.sampled_from(needy)))
        value = {}
    elif kind == "unknown_tool":
        calls[n] = replace(call, name=draw(st.sampled_from(["rm_rf", "get_wether", "Search"])))
        return calls, Fault(kind, FAULT_KINDS[kind], n)
    else:
        return calls, None
    if enc.fragmented:
        text = value if kind in _BROKEN_ARGUMENTS else json.dumps(value)
        calls[n] = replace(call, arguments=value, fragments=tuple(draw(pieces(text, empty=False))))
    else:
        calls[n] = replace(call, arguments=value, fragments=())
    return calls, Fault(kind, FAULT_KINDS[kind], n)


def _index(pieces: list[Piece], kind: str, call: int | None = None, last: bool = False) -> int:
    hits = [i for i, p in enumerate(pieces) if p.kind == kind and (call is None or p.call == call)]
    return hits[-1] if last else hits[0]


def _break_sequence(
    draw: st.DrawFn, kind: str, enc: Encoder, calls: list[WireCall], pieces: list[Piece]
) -> tuple[list[Piece], Fault]:
    n = draw(st.integers(0, len(calls) - 1))
    call = calls[n]
    finish = _index(pieces, "finish")
    if kind == "truncation":
        start = _index(pieces, "open")
        cut = draw(st.integers(start + 1, finish))
        return pieces[:cut], Fault(kind, FAULT_KINDS[kind], None)
    if kind == "duplicate_terminal":
        if enc.closes:
            at = _index(pieces, "close", n, last=True) + 1
            extra = [Piece("close", c, n) for c in enc.close(call)]
        else:
            at = _index(pieces, "finish", last=True) + 1
            extra = [Piece("finish", c) for c in enc.finish(calls, _second_reason(enc))]
        return pieces[:at] + extra + pieces[at:], Fault(kind, FAULT_KINDS[kind], n)
    if kind == "late_fragment":
        late = draw(st.sampled_from([" ", "}", '"x"', ', "late": 1}']))
        if enc.closes:
            at = _index(pieces, "close", n, last=True) + 1
        else:
            at = _index(pieces, "finish", last=True) + 1
        if enc.fragmented and "no_index" not in enc.quirks:
            extra = [Piece("fragment", c, n) for c in enc.fragment(call, late)]
        else:
            extra = [Piece("open", c, n) for c in enc.open(call)]
        if not extra:  # a wire that sends no argument deltas: restate the call's close
            extra = [Piece("fragment", c, n) for c in _responses_delta(call, late)]
        return pieces[:at] + extra + pieces[at:], Fault(kind, FAULT_KINDS[kind], n)
    if kind == "index_reuse":
        at = _index(pieces, "open", n, last=True) + 1
        other = replace(call, id=f"{enc.id_prefix}reused{n}", name=call.name)
        extra = [Piece("open", c, n) for c in enc.open(other)]
        return pieces[:at] + extra + pieces[at:], Fault(kind, FAULT_KINDS[kind], n)
    if kind == "identity_collision":
        # Another tool under the same id: never a continuation of the first call.
        names = sorted(({c.name for c in calls} | {"get_weather", "search"}) - {call.name})
        twin = replace(
            call,
            name=draw(st.sampled_from(names)),
            key=max(c.key for c in calls) + 1,
            arguments={"other": True},
            fragments=('{"other": true}',) if enc.fragmented else (),
        )
        extra = [Piece("open", c, len(calls)) for c in enc.open(twin)]
        extra += [
            Piece("fragment", c, len(calls)) for f in twin.fragments for c in enc.fragment(twin, f)
        ]
        extra += [Piece("close", c, len(calls)) for c in enc.close(twin)]
        at = _index(pieces, "finish")
        return pieces[:at] + extra + pieces[at:], Fault(kind, FAULT_KINDS[kind], n)
    # foreign_chunk
    others = [w for w in WIRES if w != enc.wire and w not in _LOOKALIKES.get(enc.wire, ())]
    stranger = encoder(draw(st.sampled_from(others)))
    foreign = stranger.prelude(["hi"])[-1].chunk
    at = draw(st.integers(1, len(pieces)))
    return [*pieces[:at], Piece("quirk", foreign), *pieces[at:]], Fault(kind, FAULT_KINDS[kind])


_LOOKALIKES: dict[str, tuple[str, ...]] = {}
"""Wires whose chunks another wire's reader would take for its own (none known)."""


def _second_reason(enc: Encoder) -> str | None:
    """A second finish that blocks (None: the first finish's reason again).

    On a wire whose trailing ``stop`` is only a warning (its record's lenient reasons:
    OpenAI's), one of its length cuts.
    """
    terminal = enc.WIRE.terminal
    return min(terminal.length) if terminal.lenient else None


def _responses_delta(call: WireCall, text: str) -> list[Chunk]:
    return [
        {
            "type": "response.function_call_arguments.delta",
            "item_id": f"fc_kit{call.key}",
            "output_index": call.key,
            "delta": text,
        }
    ]


def _cut_frame(draw: st.DrawFn, wire: str, dicts: list[Chunk]) -> tuple[bytes, Fault, int]:
    """The raw stream with one frame's data cut short (the frame still ends)."""
    at = draw(st.integers(1, len(dicts) - 1))
    frames = [raw_stream(wire, [chunk], last=False) for chunk in dicts]
    body = frames[at].decode().rstrip("\r\n")
    ending = frames[at].decode()[len(body) :]
    cut = draw(st.integers(body.find("{") + 1, len(body) - 1))
    frames[at] = (body[:cut] + ending).encode()
    fault = Fault("cut_frame", FAULT_KINDS["cut_frame"])
    return b"".join(frames) + raw_stream(wire, [], last=True), fault, at
