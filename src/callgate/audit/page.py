"""``callgate replay --html``: one self-contained page that audits a stream.

The page holds the verdict, what the user saw, the calls, the findings, a timeline with
one row per chunk (what it added, each forming call's arguments as they stood after it,
what became of its text: shown at once, held and shown at a later chunk, or hidden as a
call's markup; the state of every slot, the turn, the detector, the driver, each call's
release, each text block's vote and the verdict after it, and the machine steps it
caused) and all seven machines: what each decides, the steps the stream took in it, and
its diagram with the stream's path drawn over it (a machine the stream never entered is
greyed and says so). Everything is inline: no script, no network, no external asset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from callgate.audit.describe import chunk_kind
from callgate.audit.trace import TraceStep
from callgate.fsm import MACHINES
from callgate.fsm.detector import DETECTOR
from callgate.fsm.slot import SLOT

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: .3rem .5rem; text-align: left;
         vertical-align: top; }
th { background: #f4f4f6; position: sticky; top: 0; }
pre, code { font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap;
            word-break: break-all; margin: 0; }
.pass { color: #176f2c; } .fail, .invalid { color: #b00020; } .not_applicable { color: #555; }
.shown { background: #e7f6ea; } .held { background: #fff4d6; } .hidden { background: #fde7ea; }
.state { display: inline-block; margin: 0 .3rem .2rem 0; padding: 0 .3rem;
         border-radius: .25rem; background: #eef1f6; font-size: 12px; }
.state.blocked, .state.failed, .state.fail { background: #fde7ea; color: #b00020; }
.state.validated, .state.executable, .state.executed, .state.released, .state.owned,
.state.pass { background: #e7f6ea; }
figure { margin: 1rem 0; overflow-x: auto; } figcaption { font-weight: 600; }
figure svg { max-width: none; height: auto; }
@media (min-width: 900px) {
  figure svg { max-width: 100%; } .zoom:focus svg { max-width: none; }
  .zoom { cursor: zoom-in; } .zoom:focus { cursor: zoom-out; outline: none; }
}
.scroll { overflow-x: auto; } @media (max-width: 600px) { body { margin: 1rem; } }
.sibling { color: #b00020; } pre.json { max-height: 24rem; overflow: auto; }
#timeline tr.summary td { background: #f7f7f9; }
figure.idle svg, figure.idle pre { opacity: .5; filter: grayscale(1); }
#machines li.idle, figure.idle figcaption { color: #767676; }
details summary { cursor: pointer; color: #355; }
#timeline table { table-layout: fixed; }
#timeline col.c-chunk { width: 5.5rem; } #timeline col.c-came { width: 24%; }
#timeline col.c-held { width: 3.5rem; } #timeline col.c-steps { width: 7rem; }
#timeline td { overflow-wrap: anywhere; }
#timeline tr.raw td { border-bottom: 1px solid #ddd; padding-top: 0; }
#timeline tr.chunk td { border-bottom: none; }
#timeline tr.raw pre { max-height: 24rem; overflow: auto; background: #f7f7f9; padding: .4rem; }
.event { color: #555; font-style: italic; }
.note { background: #fff4d6; padding: .5rem .75rem; border-radius: .25rem; }
.partial { color: #355; }
"""


def _fates(timeline: Sequence[Mapping[str, Any]], hidden: Sequence[str]) -> list[str]:
    """Per chunk, what became of the text it added: shown, held then shown, or hidden."""
    content = "".join(step["added"] for step in timeline)
    masked = [False] * len(content)
    position = 0
    for markup in hidden:
        at = content.find(markup, position)
        if at < 0:
            continue
        for i in range(at, at + len(markup)):
            masked[i] = True
        position = at + len(markup)
    shown_at: list[int] = []
    for round_, step in enumerate(timeline):
        shown_at += [round_] * len(step["shown"])
    fates, start, visible = [], 0, 0
    for round_, step in enumerate(timeline):
        end = start + len(step["added"])
        rounds, masked_count = set(), 0
        for i in range(start, end):
            if masked[i]:
                masked_count += 1
            else:
                rounds.add(shown_at[visible] if visible < len(shown_at) else None)
                visible += 1
        parts = []
        if rounds == {round_}:
            parts.append("shown at once")
        elif rounds:
            later = sorted(_label(r, timeline) for r in rounds if r != round_)
            if round_ in rounds:
                parts.append("partly shown at once")
            parts.append("held, shown at " + ", ".join(later))
        if masked_count:
            parts.append(f"{plural(masked_count, 'char')} hidden as call markup")
        fates.append("; ".join(parts))
        start = end
    return fates


def plural(count: int, noun: str) -> str:
    """``1 char``, ``2 chars``: a count with its noun."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _label(round_: int | None, timeline: Sequence[Mapping[str, Any]]) -> str:
    if round_ is None:
        return "never"
    chunk = timeline[round_]["chunk"]
    return "the end" if chunk is None else f"chunk {chunk}"


def _states_after(
    steps: Sequence[TraceStep], rounds: int, start: Mapping[str, str]
) -> list[dict[str, str]]:
    """For each round, every instance's state after it (``start``: those there from the start)."""
    by_round: dict[int | None, list[TraceStep]] = {}
    for step in steps:
        by_round.setdefault(step.chunk, []).append(step)
    current: dict[str, str] = dict(start)
    after = []
    for round_ in range(rounds):
        chunk = round_ if round_ < rounds - 1 else None
        for step in by_round.get(chunk, []):
            current[step.instance] = step.target
        after.append(dict(current))
    return after


def _states_html(states: Mapping[str, str], slots: bool) -> str:
    """The states of the slots (``slots``), or of every other instance, as labelled chips."""
    cells = [
        f'<span class="state {escape(state)}">{escape(name)}: {escape(state)}</span>'
        for name, state in states.items()
        if name.startswith("slot ") == slots
    ]
    return "".join(cells)


def replay_page(
    result: Mapping[str, Any],
    steps: Sequence[TraceStep],
    chunks: Sequence[Mapping[str, Any]],
    diagrams: Mapping[str, str],
    *,
    title: str,
    no_diagrams: str | None = None,
) -> str:
    """The whole page, as one HTML document (``diagrams``: machine name -> inline SVG).

    ``no_diagrams`` says why the diagrams could not be drawn (the page then says so).
    """
    timeline = result["timeline"]
    fates = _fates(timeline, result.get("hidden", []))
    detector_on = result.get("text_formats") is not None
    states = _states_after(
        steps, len(timeline), {"detector": DETECTOR.initial} if detector_on else {}
    )
    by_chunk: dict[int | None, list[TraceStep]] = {}
    for item in steps:
        by_chunk.setdefault(item.chunk, []).append(item)
    status = result["status"]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>callgate replay: {escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>callgate replay: {escape(title)}</h1>",
        '<section id="verdict">',
        f'<p>Verdict: <strong class="{escape(status)}" id="status">{escape(status)}</strong>'
        f" ({'executable' if result['executable'] else 'not executable'}); wire "
        f"<code>{escape(str(result['wire']))}</code>, policy "
        f"<code>{escape(result['policy'])}</code>, {result['chunks']} chunks; "
        + _formats_note(result.get("text_formats"))
        + _tools_note(result.get("tools"))
        + "</p>",
        "</section>",
        '<section id="display"><h2>What the user saw</h2>',
        _display(result["display"]),
        "</section>",
        '<section id="calls"><h2>Calls</h2>',
        _calls_table(result),
        "</section>",
        '<section id="findings"><h2>Findings</h2>',
        _findings_list(result["findings"]),
        "</section>",
        '<section id="timeline"><h2>Timeline</h2>',
        "<p>One row per chunk of the stream (chunk 0 is the first), then the end. "
        "In the diagrams below, <em>step k</em> counts an instance's own transitions.</p>",
    ]
    plain = [
        step["chunk"] is not None
        and not step["held"]
        and fates[round_] in ("", "shown at once")
        and all(s.source == s.target for s in by_chunk.get(step["chunk"], []))
        for round_, step in enumerate(timeline)
    ]
    rows: list[str] = []
    bound = _Bound()
    for kind, first, last in _runs(plain):
        if kind == "summary":
            rows.append(_summary_row(timeline[first : last + 1]))
            bound.summarised += last - first + 1
            bound.runs += 1
            continue
        for round_ in range(first, last + 1):
            rows += _chunk_rows(
                timeline[round_], fates[round_], states[round_], chunks, by_chunk, bound=bound
            )
    out += bound.note(len(chunks))
    out += [
        '<table><colgroup><col class="c-chunk"><col class="c-came"><col><col>'
        '<col class="c-held"><col><col><col class="c-steps"></colgroup><thead><tr>',
        "<th>chunk</th><th>what came in</th><th>its text</th><th>shown now</th>",
        "<th>held</th><th>slots</th><th>other machines</th><th>steps</th>",
        "</tr></thead><tbody>",
        *rows,
    ]
    out.append("</tbody></table></section>")
    out.append('<section id="diagrams"><h2>The machines, with this stream\'s path</h2>')
    out.append(_machines_list(steps))
    out.append(
        "<p>A diagram wider than the page is drawn to fit it: click it to see it at full "
        "size (and scroll it sideways), click elsewhere to fit it again.</p>"
    )
    if no_diagrams is not None:
        out.append(f'<p class="note" id="no-diagrams">No diagrams: {escape(no_diagrams)}</p>')
    entered = {step.machine for step in steps}
    for machine, svg in diagrams.items():
        idle = ("", "") if machine in entered else (' class="idle"', f": {_IDLE}")
        out.append(
            f'<figure id="diagram-{escape(machine)}"{idle[0]}>'
            f"<figcaption>{escape(machine)}{idle[1]}</figcaption>"
            f'<div class="zoom" tabindex="0">{svg}</div></figure>'
        )
    out.append("</section></body></html>")
    return "\n".join(out) + "\n"


DISPLAY_SHOWN = 200_000
"""Characters of the displayed text the page shows (a long stream's text is cut, and said so)."""
RUN_SUMMARISED = 64
"""A run of at least this many plain chunks (text shown at once, no state changed) is
summarised: its first and last :data:`RUN_KEPT` rows stay, one row stands for the rest."""
RUN_KEPT = 5
RAW_BUDGET = 1_000_000
"""Bytes of raw chunk JSON the page embeds in all; later chunks say they are left out."""
CELL_SHOWN = 2_000
"""Characters of one chunk's text or argument fragment its row shows."""


class _Bound:
    """What the page left out to stay small: summarised chunks, raw JSON not embedded."""

    def __init__(self) -> None:
        self.summarised = 0
        self.runs = 0
        self.raw = 0
        self.omitted = 0

    def embed(self, raw: str) -> bool:
        """Whether ``raw`` fits in what is left of :data:`RAW_BUDGET` (and take it if so)."""
        if self.raw + len(raw) > RAW_BUDGET:
            self.omitted += 1
            return False
        self.raw += len(raw)
        return True

    def note(self, chunks: int) -> list[str]:
        """The paragraph that says what the page left out, or nothing."""
        said = []
        if self.runs:
            said.append(
                f"{plural(self.summarised, 'plain chunk')} in {plural(self.runs, 'run')} are "
                "summarised, one row a run (their text was shown at once and no machine "
                "changed state)"
            )
        if self.omitted:
            said.append(
                f"the raw JSON of {plural(self.omitted, 'chunk')} of {chunks} is not embedded "
                f"(the page holds the first {RAW_BUDGET // 1000:,} kB of raw chunks)"
            )
        if not said:
            return []
        body = "; ".join(said)
        return [
            f'<p class="note" id="bounds">To keep this page small, {body}. '
            "The capture holds every chunk.</p>"
        ]


def _runs(plain: Sequence[bool]) -> list[tuple[str, int, int]]:
    """The timeline's rounds as ("rows" | "summary", first, last) spans, in order."""
    spans: list[tuple[str, int, int]] = []
    start = 0
    while start < len(plain):
        end = start
        while end < len(plain) and plain[end] == plain[start]:
            end += 1
        if plain[start] and end - start >= RUN_SUMMARISED:
            spans += [
                ("rows", start, start + RUN_KEPT - 1),
                ("summary", start + RUN_KEPT, end - RUN_KEPT - 1),
                ("rows", end - RUN_KEPT, end - 1),
            ]
        else:
            spans.append(("rows", start, end - 1))
        start = end
    return spans


def _summary_row(run: Sequence[Mapping[str, Any]]) -> str:
    """One row for a run of plain chunks: how many, and how much text and arguments came."""
    first, last = run[0]["chunk"], run[-1]["chunk"]
    text = "".join(step["added"] for step in run)
    fragments: dict[str, int] = {}
    for step in run:
        for key, piece in step["arguments"].items():
            fragments[key] = fragments.get(key, 0) + len(piece or "")
    parts = [f"{plural(len(run), 'plain chunk')} summarised"]
    if text:
        parts.append(f"{plural(len(text), 'char')} of text, shown at once")
    parts += [
        f"{plural(n, 'char')} of arguments for slot {escape(k)}" for k, n in fragments.items()
    ]
    grew = dict.fromkeys(view["ref"] for step in run for view in step.get("partial", ()))
    parts += [f"the arguments of call {escape(str(ref))} grew" for ref in grew]
    sample = f"<pre>{escape(_cut(text, 200))}</pre>" if text else ""
    return (
        f'<tr class="summary" data-chunks="{first}-{last}"><td>chunks {first} to {last}</td>'
        f'<td colspan="7"><span class="event">{"; ".join(parts)}; no machine changed '
        f"state.</span>{sample}</td></tr>"
    )


def _chunk_rows(
    step: Mapping[str, Any],
    fate: str,
    states: Mapping[str, str],
    chunks: Sequence[Mapping[str, Any]],
    by_chunk: Mapping[int | None, Sequence[TraceStep]],
    *,
    bound: _Bound,
) -> list[str]:
    """A chunk's row (and the row of its raw JSON, within the page's budget)."""
    chunk = step["chunk"]
    lines = [escape(_cut(step["added"], CELL_SHOWN))] if step["added"] else []
    lines += [
        f"slot {escape(key)}: "
        + (escape(_cut(text, CELL_SHOWN)) if text is not None else "<em>opens</em>")
        for key, text in step["arguments"].items()
    ]
    lines += [_forming(view) for view in step.get("partial", ())]
    came = "<br>".join(lines)
    if not came and chunk is not None:
        came = f'<span class="event">{escape(chunk_kind(chunks[chunk]))}</span>'
    elif not came:
        came = '<span class="event">the stream ended</span>'
    taken = by_chunk.get(chunk, [])
    moves = "<br>".join(
        f"{escape(s.instance)}: {escape(s.source)} —{escape(s.event)}→ {escape(s.target)}"
        + (f" <strong>{escape(s.output)}</strong>" if s.output else "")
        for s in taken
    )
    steps_cell = (
        f"<details><summary>{plural(len(taken), 'step')}</summary>{moves}</details>"
        if taken
        else ""
    )
    fate_class = "hidden" if "hidden" in fate else "held" if "held" in fate else "shown"
    rows = [
        f'<tr class="chunk" data-chunk="{"end" if chunk is None else chunk}">'
        f"<td>{'end' if chunk is None else f'chunk {chunk}'}</td><td><pre>{came}</pre></td>"
        f'<td class="{fate_class if fate else ""}">{escape(fate)}</td>'
        f'<td><pre class="shown">{escape(_cut(step["shown"], CELL_SHOWN))}</pre></td>'
        f"<td>{step['held']}</td><td>{_states_html(states, slots=True)}</td>"
        f"<td>{_states_html(states, slots=False)}</td><td>{steps_cell}</td></tr>"
    ]
    if chunk is not None:
        raw = json.dumps(chunks[chunk], ensure_ascii=False, indent=1)
        body = (
            f"<pre>{escape(raw)}</pre>"
            if bound.embed(raw)
            else '<p class="event">not embedded (the page\'s budget for raw chunks is spent)</p>'
        )
        rows.append(
            f'<tr class="raw"><td></td><td colspan="7"><details><summary>chunk {chunk} as '
            f"received</summary>{body}</details></td></tr>"
        )
    return rows


def _forming(view: Mapping[str, Any]) -> str:
    """A call's arguments as this chunk left them: a forming call grows from row to row.

    The end of a long value is what grew, so that is the part shown.
    """
    text = json.dumps(view["arguments"], ensure_ascii=False)
    if len(text) > CELL_SHOWN:
        text = f"({len(text) - CELL_SHOWN:,} characters before) …{text[-CELL_SHOWN:]}"
    said = "arguments, whole" if view["complete"] else "arguments so far"
    return (
        f'<span class="partial" data-call="{escape(str(view["ref"]))}">call '
        f"{escape(str(view['ref']))} ({escape(str(view['name']))}) {said}: {escape(text)}</span>"
    )


def _display(text: str) -> str:
    """What the user saw, cut at :data:`DISPLAY_SHOWN` characters (and said so)."""
    if not text:
        return "<pre>(no text)</pre>"
    if len(text) <= DISPLAY_SHOWN:
        return f"<pre>{escape(text)}</pre>"
    return (
        f"<pre>{escape(text[:DISPLAY_SHOWN])}</pre>"
        f'<p class="note" id="display-cut">The first {DISPLAY_SHOWN:,} of '
        f"{len(text):,} characters shown; <code>callgate replay --json</code> gives them all.</p>"
    )


_IDLE = "not exercised by this stream"
"""What the page says of a machine the stream never entered (its figure is greyed)."""


def _machines_list(steps: Sequence[TraceStep]) -> str:
    """Every machine, what it decides, and the steps this stream took in it (or none)."""
    items = []
    for name, table in MACHINES.items():
        taken = [step for step in steps if step.machine == name]
        instances = ", ".join(escape(i) for i in dict.fromkeys(s.instance for s in taken))
        did = f"{plural(len(taken), 'step')} ({instances})" if taken else _IDLE
        items.append(
            f'<li id="machine-{escape(name)}" class="{"exercised" if taken else "idle"}">'
            f"<strong>{escape(name)}</strong>: {escape(table.doc, quote=False)} <em>{did}</em></li>"
        )
    return '<ul id="machines">' + "".join(items) + "</ul>"


def _tools_note(tools: Sequence[str] | None) -> str:
    """The tools the calls were checked against (their schemas), or that none were given."""
    if tools is None:
        return " Tools: none given (calls checked for strict JSON only)."
    return " Tools: " + (escape(", ".join(tools)) if tools else "none declared") + "."


def _formats_note(formats: Sequence[str] | None) -> str:
    if formats is None:
        return "text formats: none (the detector is off; replay with --text-formats to run it)."
    return "text formats: " + escape(", ".join(formats)) + "."


def _calls_table(result: Mapping[str, Any]) -> str:
    """Every call once: the native ones from ``calls``, the text ones from ``text_calls``.

    ``calls`` lists the text calls too (the replay's contract); here each text call has
    its own row with its format and its own check, so those entries are skipped.
    """
    findings = result["findings"]
    rows = [
        f"<tr><td>slot {call['slot']}</td><td>{escape(str(call['name']))}</td>"
        f"<td>{_call_id(call['id'])}</td><td>{_arguments(call['arguments'])}</td>"
        f'<td><span class="state {escape(call["state"])}">{escape(call["state"])}</span></td>'
        f"<td>{_why(call, findings)}</td>"
        f"<td>{_when(call['released_at'], result['chunks'])}</td></tr>"
        for call in result["calls"]
        if call.get("source", "native") == "native"
    ]
    states = {call["slot"]: call["state"] for call in result["calls"]}
    rows += [
        f"<tr><td>text ({escape(call['format'])})</td><td>{escape(call['name'])}</td>"
        f"<td>{_call_id(call['id'])}</td><td>{_arguments(call['arguments'])}</td>"
        f"<td>{_text_state(call, states)}</td>"
        f"<td>{_text_why(call, findings, states)}</td>"
        f"<td>{_when(call['released_at'], result['chunks'])}</td></tr>"
        for call in result["text_calls"]
    ]
    if not rows:
        return "<p>(no tool call)</p>"
    head = (
        '<div class="scroll"><table><thead><tr><th>where</th><th>tool</th><th>id</th>'
        "<th>arguments</th><th>state</th><th>why</th><th>answered</th></tr></thead><tbody>"
    )
    return head + "".join(rows) + "</tbody></table></div>"


ARGUMENTS_SHOWN = 20_000
"""Characters of one call's arguments the page shows (the capture holds them all)."""


def _arguments(value: object) -> str:
    """A call's arguments as indented JSON; text that is not JSON as the text received.

    A blocked call keeps its arguments as the text that came (they never parsed, or
    the turn stopped before they were read): parsed leniently here, for reading only.
    """
    if isinstance(value, str):
        received = value
        try:
            value = json.loads(received)
        except ValueError:
            return f'<pre class="raw-text">{escape(_cut(received, ARGUMENTS_SHOWN))}</pre>'
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return f'<pre class="json">{escape(_cut(text, ARGUMENTS_SHOWN))}</pre>'


def _cut(text: str, most: int) -> str:
    """``text``, or its first ``most`` characters and how many more there were."""
    if len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters not shown)"


_BLOCKED = SLOT.tagged("blocks")
"""The call states that mean it must not run (the slot table's, asked, not spelled)."""


def _errors(findings: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [f for f in findings if f["severity"] == "error"]


def _why(call: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> str:
    """Why a native call is blocked: its own findings, or the turn's that blocked it too."""
    if call["state"] not in _BLOCKED:
        return ""
    own = [f for f in _errors(findings) if f["slot"] == call["slot"]]
    if own:
        return "; ".join(f"<strong>{escape(f['code'])}</strong>" for f in own)
    return _with_its_turn([f for f in _errors(findings) if f["slot"] != call["slot"]])


def _with_its_turn(others: Sequence[Mapping[str, Any]]) -> str:
    """``blocked with its turn: slot 1 unknown_tool: ...``: what blocked a sound call."""
    if not others:
        return "blocked with its turn"
    causes = "; ".join(
        (f"slot {f['slot']} " if f["slot"] is not None else "")
        + f"<strong>{escape(f['code'])}</strong>: {escape(f['message'])}"
        for f in others
    )
    return f'<span class="sibling">blocked with its turn: {causes}</span>'


def _text_state_name(call: Mapping[str, Any], states: Mapping[Any, str]) -> str:
    """A text call's state: blocked by its own check, else the state the replay gave it."""
    return "blocked" if call["finding"] is not None else states.get(call["slot"], "validated")


def _text_state(call: Mapping[str, Any], states: Mapping[Any, str]) -> str:
    state = escape(_text_state_name(call, states))
    return f'<span class="state {state}">{state}</span>'


def _text_why(
    call: Mapping[str, Any], findings: Sequence[Mapping[str, Any]], states: Mapping[Any, str]
) -> str:
    """Why a text call is blocked: its own check, or the turn's findings."""
    if call["finding"] is not None:
        return f"<strong>{escape(call['finding']['code'])}</strong>"
    if _text_state_name(call, states) not in _BLOCKED:
        return ""
    return _with_its_turn(_errors(findings))


def _call_id(value: object) -> str:
    """A call's id, or that it has none (text calls and some wires carry none)."""
    if value is None:
        return '<span class="event">none</span>'
    return f"<code>{escape(str(value))}</code>"


def _when(at: int | None, chunks: int) -> str:
    if at is None:
        return "never"
    return "at the end" if at >= chunks else f"after chunk {at}"


def _findings_list(findings: Sequence[Mapping[str, Any]]) -> str:
    if not findings:
        return "<p>none</p>"
    items = [
        f'<li class="{escape(f["severity"])}"><strong>{escape(f["code"])}</strong>'
        + (f" (slot {f['slot']})" if f["slot"] is not None else "")
        + f": {escape(f['message'])}</li>"
        for f in findings
    ]
    return "<ul>" + "".join(items) + "</ul>"
