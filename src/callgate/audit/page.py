"""``callgate replay --html``: one self-contained page that audits a stream.

The page holds the verdict, what the user saw, the calls, the findings, a timeline with
one row per chunk (what it added, what became of its text: shown at once, held and
shown at a later chunk, or hidden as a call's markup; the state of every slot, the turn,
the detector, the driver, each call's release, each text block's vote and the verdict
after it, and the machine steps it caused) and all seven machines: what each decides, the
steps the stream took in it, and its diagram with the stream's path drawn over it (a
machine the stream never entered is greyed and says so). Everything is inline: no
script, no network, no external asset.
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
        + "</p>",
        "</section>",
        '<section id="display"><h2>What the user saw</h2>',
        f"<pre>{escape(result['display']) or '(no text)'}</pre></section>",
        '<section id="calls"><h2>Calls</h2>',
        _calls_table(result),
        "</section>",
        '<section id="findings"><h2>Findings</h2>',
        _findings_list(result["findings"]),
        "</section>",
        '<section id="timeline"><h2>Timeline</h2>',
        "<p>One row per chunk of the stream (chunk 0 is the first), then the end. "
        "In the diagrams below, <em>step k</em> counts an instance's own transitions.</p>",
        '<table><colgroup><col class="c-chunk"><col class="c-came"><col><col>'
        '<col class="c-held"><col><col><col class="c-steps"></colgroup><thead><tr>',
        "<th>chunk</th><th>what came in</th><th>its text</th><th>shown now</th>",
        "<th>held</th><th>slots</th><th>other machines</th><th>steps</th>",
        "</tr></thead><tbody>",
    ]
    for round_, step in enumerate(timeline):
        chunk = step["chunk"]
        lines = [escape(step["added"])] if step["added"] else []
        lines += [
            f"slot {escape(key)}: " + (escape(text) if text is not None else "<em>opens</em>")
            for key, text in step["arguments"].items()
        ]
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
        fate = fates[round_]
        fate_class = "hidden" if "hidden" in fate else "held" if "held" in fate else "shown"
        others = _states_html(states[round_], slots=False)
        out.append(
            f'<tr class="chunk" data-chunk="{"end" if chunk is None else chunk}">'
            f"<td>{'end' if chunk is None else f'chunk {chunk}'}</td><td><pre>{came}</pre></td>"
            f'<td class="{fate_class if fate else ""}">{escape(fate)}</td>'
            f'<td><pre class="shown">{escape(step["shown"])}</pre></td>'
            f"<td>{step['held']}</td><td>{_states_html(states[round_], slots=True)}</td>"
            f"<td>{others}</td><td>{steps_cell}</td></tr>"
        )
        if chunk is not None:
            raw = json.dumps(chunks[chunk], ensure_ascii=False, indent=1)
            out.append(
                f'<tr class="raw"><td></td><td colspan="7"><details><summary>chunk {chunk} as '
                f"received</summary><pre>{escape(raw)}</pre></details></td></tr>"
            )
    out.append("</tbody></table></section>")
    out.append('<section id="diagrams"><h2>The machines, with this stream\'s path</h2>')
    out.append(_machines_list(steps))
    if no_diagrams is not None:
        out.append(f'<p class="note" id="no-diagrams">No diagrams: {escape(no_diagrams)}</p>')
    entered = {step.machine for step in steps}
    for machine, svg in diagrams.items():
        idle = ("", "") if machine in entered else (' class="idle"', f": {_IDLE}")
        out.append(
            f'<figure id="diagram-{escape(machine)}"{idle[0]}>'
            f"<figcaption>{escape(machine)}{idle[1]}</figcaption>{svg}</figure>"
        )
    out.append("</section></body></html>")
    return "\n".join(out) + "\n"


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


def _formats_note(formats: Sequence[str] | None) -> str:
    if formats is None:
        return "text formats: none (the detector is off; replay with --text-formats to run it)."
    return "text formats: " + escape(", ".join(formats)) + "."


def _calls_table(result: Mapping[str, Any]) -> str:
    rows = [
        f"<tr><td>slot {call['slot']}</td><td>{escape(str(call['name']))}</td>"
        f"<td>{_call_id(call['id'])}</td>"
        f"<td><pre>{escape(json.dumps(call['arguments'], ensure_ascii=False))}</pre></td>"
        f'<td><span class="state {escape(call["state"])}">{escape(call["state"])}</span></td>'
        f"<td>{_when(call['released_at'], result['chunks'])}</td></tr>"
        for call in result["calls"]
    ]
    rows += [
        f"<tr><td>text ({escape(call['format'])})</td><td>{escape(call['name'])}</td>"
        f"<td>{_call_id(call['id'])}</td>"
        f"<td><pre>{escape(json.dumps(call['arguments'], ensure_ascii=False))}</pre></td>"
        f"<td>{'valid' if call['finding'] is None else escape(call['finding']['code'])}</td>"
        f"<td>{_when(call['released_at'], result['chunks'])}</td></tr>"
        for call in result["text_calls"]
    ]
    if not rows:
        return "<p>(no tool call)</p>"
    head = (
        "<table><thead><tr><th>where</th><th>tool</th><th>id</th><th>arguments</th>"
        "<th>state</th><th>answered</th></tr></thead><tbody>"
    )
    return head + "".join(rows) + "</tbody></table>"


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
