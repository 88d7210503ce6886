"""``callgate replay`` on a proxy's audit log: a chosen record, its page, the request's tools.

The log is written by the proxy's own :class:`~callgate.proxy.audit.AuditLog` from turns
played through the engine; ``--record N`` and ``--turn ID`` choose one record, ``--html``
writes its page (checked against the tools of its request), and ``--tools`` also reads a
request's ``tools`` list in every wire's shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.commands import main
from callgate.cli.tool_lists import ToolListError, schemas_of_tools
from callgate.proxy.audit import AUDIT_FILE, AuditLog
from callgate.proxy.engine import GatedTurn, Options
from callgate.proxy.sse import SSEReader
from callgate.proxy.upstream import sse_body
from callgate.testing.builders import openai_chunks
from callgate.testing.wires.base import WireCall

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
OPENAI_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]


def _turn(log: AuditLog, arguments: str, response_id: str) -> None:
    """One streamed turn calling get_weather with ``arguments``, through the engine, logged."""
    chunks = openai_chunks([WireCall("call_1", "get_weather", (arguments,))], [0, 0])
    for chunk in chunks:
        chunk["id"] = response_id
    raw = sse_body(chunks)
    request = {"model": "gpt-4.1", "tools": OPENAI_TOOLS, "stream": True}
    turn = GatedTurn(request, Options(on_blocked="notice"))
    reader = SSEReader()
    for event in [*reader.feed(raw), *reader.close()]:
        turn.feed_event(event)
    turn.finish()
    log.write(turn, raw=raw, request=request, timings={}, how="stream")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A log of two turns: a valid call (chatcmpl-good), then a schema-invalid one (-bad)."""
    audit = AuditLog(tmp_path, max_bytes=1 << 20, files=2)
    _turn(audit, '{"city": "Paris"}', "chatcmpl-good")
    _turn(audit, '{"town": "Paris"}', "chatcmpl-bad")
    audit.close()
    return tmp_path / AUDIT_FILE


@pytest.mark.parametrize(
    ("choice", "status"), [(["--record", "2"], "fail"), (["--turn", "chatcmpl-good"], "pass")]
)
def test_html_writes_the_page_of_the_chosen_record_with_its_requests_tools(
    log: Path, tmp_path: Path, choice: list[str], status: str
) -> None:
    page = tmp_path / "page.html"
    assert main(["replay", str(log), *choice, "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert f'id="status">{status}</strong>' in html
    assert ("schema_invalid" in html) is (status == "fail")  # checked against the request's tools
    assert "Tools: get_weather." in html


def test_html_of_a_log_of_several_records_asks_which(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.html"
    assert main(["replay", str(log), "--html", str(page)]) == 2
    assert "choose one with --record N or --turn ID" in capsys.readouterr().err
    assert not page.exists()


@pytest.mark.parametrize(
    ("choice", "says"),
    [
        (["--record", "3"], "--record 3: the log holds records 1 to 2"),
        (["--record", "0"], "--record 0: the log holds records 1 to 2"),
        (["--turn", "chatcmpl-none"], "--turn 'chatcmpl-none': no record"),
    ],
)
def test_a_choice_that_names_no_record_is_a_clear_error(
    log: Path, choice: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(log), *choice]) == 2
    assert says in capsys.readouterr().err


def test_record_replays_only_the_chosen_record(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(log), "--record", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["record"], r["recorded"]["status"], r["same"]) for r in rows] == [(2, "fail", True)]


def test_record_on_a_capture_that_is_no_audit_log_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "c.sse"
    capture.write_bytes(sse_body(openai_chunks([], [], text=["Hi."])))
    assert main(["replay", str(capture), "--record", "1"]) == 2
    assert "choose a record of a callgate proxy audit log" in capsys.readouterr().err


SHAPES: dict[str, list[dict[str, Any]]] = {
    "chat": OPENAI_TOOLS,
    "responses": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
    "anthropic": [{"name": "get_weather", "input_schema": WEATHER}],
    "bedrock": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER}}}],
    "gemini": [{"functionDeclarations": [{"name": "get_weather", "parameters": WEATHER}]}],
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_tools_takes_a_requests_tools_list_of_any_wire(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert schemas_of_tools(SHAPES[shape]) == {"get_weather": WEATHER}
    capture = tmp_path / "c.sse"
    call = WireCall("call_1", "get_weather", ('{"town": "Paris"}',))
    capture.write_bytes(sse_body(openai_chunks([call], [0, 0])))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(SHAPES[shape]), encoding="utf-8")
    assert main(["replay", str(capture), "--tools", str(tools), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in result["findings"]] == ["schema_invalid"]


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ([{"type": "function", "function": {"parameters": {}}}], "tools[0] has no name"),
        ([OPENAI_TOOLS[0], OPENAI_TOOLS[0]], "declares 'get_weather' a second time"),
        (["get_weather"], "tools[0] is not an object"),
    ],
)
def test_a_tools_list_of_no_wires_shape_is_refused(tools: list[Any], says: str) -> None:
    with pytest.raises(ToolListError, match=re.escape(says)):
        schemas_of_tools(tools)
