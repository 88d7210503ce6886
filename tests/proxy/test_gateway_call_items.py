"""Call items of a Responses upstream that are not ``function_call``, driven through the engine.

An ``apply_patch_call`` or ``shell_call`` item is checked as a call of the function of that
name, its ``operation`` or ``action`` whole as the arguments (an operation's ``type`` says
which edit it is, so it stays); only ``local_shell``'s action drops its ``type``, which the
function form of that tool does not take.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from callgate.proxy.engine import Engine, Options
from test_gateway_forms import responses_items

PATCH_SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"enum": ["create_file", "update_file", "delete_file"]},
        "path": {"type": "string"},
    },
    "required": ["type", "path"],
    "additionalProperties": False,
}
SHELL_SCHEMA = {
    "type": "object",
    "properties": {"type": {"const": "exec"}, "commands": {"type": "array"}},
    "required": ["type", "commands"],
    "additionalProperties": False,
}


def played(engine: Engine, body: bytes) -> list[dict[str, Any]]:
    """The client's events for an upstream event stream fed whole."""
    out: list[dict[str, Any]] = []
    for frame in body.split(b"\n\n"):
        if frame:
            data = frame.split(b"data: ", 1)[1]
            out += engine.feed(json.loads(data))
    return out + engine.finish(clean=True)


@pytest.mark.parametrize(
    ("kind", "name", "field", "asked", "schema"),
    [
        (
            "apply_patch_call",
            "apply_patch",
            "operation",
            {"type": "delete_file", "path": "old.txt"},
            PATCH_SCHEMA,
        ),
        ("shell_call", "shell", "action", {"type": "exec", "commands": ["ls"]}, SHELL_SCHEMA),
    ],
)
def test_an_operation_keeps_its_type_as_an_argument(
    kind: str, name: str, field: str, asked: dict[str, Any], schema: dict[str, Any]
) -> None:
    """The client declared the tool as a function whose arguments name the edit's type:
    the call passes the gate and reaches the client with that type among its arguments."""
    request = {
        "model": "m",
        "input": "tidy up",
        "stream": True,
        "tools": [{"type": "function", "name": name, "parameters": schema}],
    }
    engine = Engine(request, Options(on_blocked="notice"), client="responses")
    item = {"type": kind, "id": "it_1", "call_id": "call_e", field: asked, "status": "completed"}
    out = played(engine, responses_items(item).body)
    assert engine.status == "pass", engine.findings
    (call,) = engine.calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_e", name, asked)
    done = [e["item"] for e in out if e["type"] == "response.output_item.done"]
    assert [(i["type"], i["name"], json.loads(i["arguments"])) for i in done] == [
        ("function_call", name, asked)
    ]
