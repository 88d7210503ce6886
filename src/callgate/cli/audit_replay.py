"""``callgate replay AUDIT.jsonl``: a proxy's audit log played again, a record at a time.

Every record (or the one chosen with ``--record N``, counted from 1, or ``--turn ID``, the
id of the response the turn answered) goes through a fresh engine under its request and
options, and must give the recorded account. ``--html FILE`` writes the replay page of the
chosen record: its upstream stream through the buffer and driver, checked against the
request's tools and read in the formats the proxy read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from callgate.audit.trace import Recorder
from callgate.errors import AuditChoice

__all__ = ["AuditChoice", "chosen_records", "replay_audit"]

Page = Callable[[Sequence[Any], Mapping[str, Any], Recorder, str], None]
"""Writes the replay page of ``(chunks, result, recorder, title)``."""


def chosen_records(
    records: Sequence[dict[str, Any]], record: int | None, turn: str | None
) -> list[tuple[int, dict[str, Any]]]:
    """The records chosen, each with its number (from 1): one, or all when none is named."""
    from callgate.proxy.audit import turn_id

    numbered = list(enumerate(records, 1))
    if record is not None:
        if not 1 <= record <= len(records):
            raise AuditChoice(f"--record {record}: the log holds records 1 to {len(records)}")
        return [numbered[record - 1]]
    if turn is not None:
        found = [(n, r) for n, r in numbered if turn_id(r) == turn]
        if not found:
            raise AuditChoice(f"--turn {turn!r}: no record of the log answered that response id")
        return found[:1]
    return numbered


def replay_audit(
    path: Path,
    *,
    as_json: bool,
    record: int | None = None,
    turn: str | None = None,
    html: Page | None = None,
) -> int | None:
    """``callgate replay`` on an audit log; None if ``path`` is not one.

    Exit 0 when every chosen record reproduces, 1 when one does not, 2 when the choice
    names no record or a page was asked of several records (or of a whole response).
    """
    from callgate.proxy.audit import KEY, load_records, reproduce, same_turn

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if f'"{KEY}"' not in text[:200]:
        return None
    chosen = chosen_records(load_records(text), record, turn)
    if html is not None:
        if len(chosen) != 1:
            raise AuditChoice(
                f"--html writes the page of one record and the log holds {len(chosen)}: "
                "choose one with --record N or --turn ID"
            )
        number, item = chosen[0]
        chunks, result, recorder = _played(item)
        html(chunks, result, recorder, f"{path.name}, record {number}")
    rows = []
    for number, item in chosen:
        again = reproduce(item)
        same = same_turn(item["turn"], again["turn"])
        rows.append(
            {"record": number, "recorded": item["turn"], "reproduced": again["turn"], "same": same}
        )
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for row in rows:
            played = row["recorded"]
            calls = ", ".join(c["name"] for c in played["calls"]) or "no call"
            codes = ", ".join(sorted({f["code"] for f in played["findings"]})) or "-"
            mark = "reproduced" if row["same"] else "DIFFERS"
            print(
                f"turn {row['record']}: {played['wire']} {played['status']}, {calls}; "
                f"findings {codes}; {mark}"
            )
        print(f"{sum(r['same'] for r in rows)} of {len(rows)} audit records reproduced exactly")
    return 0 if all(r["same"] for r in rows) else 1


def _played(item: Mapping[str, Any]) -> tuple[Sequence[Any], dict[str, Any], Recorder]:
    """A record's upstream stream replayed with its request's tools and the formats read."""
    from callgate.cli.capture import load_capture
    from callgate.cli.replay import replay
    from callgate.cli.tool_lists import schemas_of_tools
    from callgate.proxy.audit import raw_stream

    request = item.get("request") or {}
    if request.get("stream") is not True:
        raise AuditChoice("the record is a whole (stream: false) response: a page shows a stream")
    chunks = load_capture(raw_stream(item))
    tools = request.get("tools")
    schemas = schemas_of_tools(tools) if tools is not None else None
    formats = (item.get("turn") or {}).get("formats")
    recorder = Recorder()
    result = replay(
        chunks,
        schemas,
        text_formats=list(formats) if isinstance(formats, list) else None,
        recorder=recorder,
    )
    return chunks, result, recorder
