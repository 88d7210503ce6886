"""How a client's turn ends when the upstream breaks off: in error, on every client wire.

An upstream that stops in the middle (a dropped connection, a read timeout) ends the
client's turn with a short text and the wire's error ending (Chat Completions
``finish_reason: "error"``, an Anthropic ``error`` event, ``response.failed``), never a
plain ``stop`` that a client would take for a finished answer; no call is sent.
"""

from __future__ import annotations

from typing import Any

import pytest

from callgate.proxy.engine import ENGINES, Options
from callgate.proxy.wires import notices
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import WireCall
from proxy_cases import WEATHER

WHY = "the upstream stream broke: ReadTimeout"
"""How the engine is told the upstream stopped (a read timeout)."""
CALL = WireCall("call_1", "get_weather", ('{"city": "Pa', 'ris"}'))
SCHEMA = WEATHER["get_weather"]
REQUESTS: dict[str, dict[str, Any]] = {
    "chat": {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}],
    },
    "messages": {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "get_weather", "input_schema": SCHEMA}],
    },
    "responses": {
        "model": "m",
        "input": "go",
        "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
    },
}
"""The same request on each client wire (the upstream speaks Chat Completions)."""


def _broken(client: str) -> list[dict[str, Any]]:
    """Half of a chat upstream's turn (text, then a call cut open), then the break."""
    turn = ENGINES[client](REQUESTS[client], Options(), upstream="chat")
    chunks = openai_chunks([CALL], [0, 0, 0], text=["Checking ", "the weather."])
    out = [c for chunk in chunks[:4] for c in turn.feed(chunk)]
    turn.interrupted(WHY)
    out += turn.finish()
    assert turn.calls == [] and turn.status == "fail"
    return out


def test_a_chat_client_gets_finish_reason_error_and_the_notice() -> None:
    out = _broken("chat")
    said = "".join(c["choices"][0]["delta"].get("content") or "" for c in out if c["choices"])
    assert said == "Checking the weather." + notices.broken(WHY)
    final = [c for c in out if c["choices"]][-1]
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["error"] == notices.stream_error(WHY)  # what the openai SDKs raise
    assert final["error"]["code"] == "upstream_timeout"
    assert not any(c["choices"][0]["delta"].get("tool_calls") for c in out if c["choices"])


def test_a_messages_client_gets_an_error_event_after_the_text() -> None:
    out = _broken("messages")
    kinds = [e["type"] for e in out]
    assert kinds[0] == "message_start" and kinds[-1] == "error"
    assert "message_stop" not in kinds and "tool_use" not in str(out)
    assert out[-1]["error"] == {"type": "api_error", "message": notices.broken_line(WHY)}
    assert out[-1]["callgate"]["status"] == "fail"  # the turn's record, on the error event
    assert out[-1]["callgate"]["withheld"] == ["get_weather"]
    text = "".join(e["delta"].get("text", "") for e in out if e["type"] == "content_block_delta")
    assert text == "Checking the weather." + notices.broken(WHY)


def test_a_responses_client_gets_response_failed() -> None:
    out = _broken("responses")
    assert out[-1]["type"] == "response.failed"
    response = out[-1]["response"]
    assert response["status"] == "failed"
    assert response["error"] == {"code": "upstream_error", "message": notices.broken_line(WHY)}
    assert [i["type"] for i in response["output"]] == ["message"]


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
def test_a_turn_that_ends_cleanly_is_not_an_error(client: str) -> None:
    turn = ENGINES[client](REQUESTS[client], Options(), upstream="chat")
    for chunk in openai_chunks([CALL], [0, 0, 0], text=["Checking."]):
        turn.feed(chunk)
    out = turn.finish()
    assert [c.name for c in turn.calls] == ["get_weather"]
    assert "error" not in {e.get("type") for e in out}
    assert notices.broken_line() not in str(out)
