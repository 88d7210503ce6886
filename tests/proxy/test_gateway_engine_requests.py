"""The tools of a request as the engine reads them the first time it sees them.

Drivers are kept per distinct tool list, so each test here starts with none kept: a Chat
request's tools (a function nested under ``function``) are read by their nested name and
schema, and a text call of one is released as that tool's call; under ``tool_choice:
"none"`` the driver owns no tool, so a native call the model sends anyway is not sent.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

from callgate.proxy import core
from callgate.proxy.engine import Engine, Options
from proxy_cases import chat_chunk, rebuilt
from test_gateway_behaviours import CALL
from test_gateway_corners import REQUESTS
from test_gateway_edges import TAG, leaked


@pytest.fixture(autouse=True)
def no_kept_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "_DRIVERS", OrderedDict())


def test_a_chat_requests_nested_function_is_read_by_its_name_the_first_time() -> None:
    engine = Engine(REQUESTS["chat"], Options(text_formats=TAG), client="chat", upstream="chat")
    out: list[dict[str, Any]] = []
    for chunk in [
        chat_chunk({"role": "assistant", "content": "Checking. " + leaked("Oslo")}),
        chat_chunk({}, "stop"),
    ]:
        out += engine.feed(chunk)
    got = rebuilt(out + engine.finish(clean=True))
    assert got["content"] == "Checking. "
    assert got["calls"] == [("get_weather", {"city": "Oslo"})]


def test_under_tool_choice_none_a_native_call_is_not_sent_the_first_time() -> None:
    request = {**REQUESTS["chat"], "tool_choice": "none"}
    engine = Engine(request, Options(on_blocked="notice"), client="chat", upstream="chat")
    out: list[dict[str, Any]] = []
    for chunk in [
        chat_chunk({"role": "assistant", "content": "Checking."}),
        chat_chunk({"tool_calls": [CALL]}),
        chat_chunk({}, "tool_calls"),
    ]:
        out += engine.feed(chunk)
    got = rebuilt(out + engine.finish(clean=True))
    assert got["calls"] == []
    assert got["content"].startswith("Checking.")
