"""How the gateway settles a blocked turn, driven through the engine as a client sees it.

``repair`` re-asks a turn whose every error is one the model can fix by asking again
(:data:`~callgate.proxy.core.PASSABLE`), all of those at once included; a Chat turn
stranded by a call shown as it formed ends with the line that says so, alone when there
is nothing else to say.
"""

from __future__ import annotations

from typing import Any

from callgate.proxy.core import PASSABLE
from callgate.proxy.engine import Engine, GatedMessages, Options
from callgate.proxy.wires.forming import STRANDED
from proxy_cases import text_turn
from test_gateway_behaviours import MESSAGES, block, end, start
from test_gateway_corners import REQUESTS, pieces
from test_gateway_edges import TAG, leaked


def tool_use(index: int, name: str, call_id: str | None, given: Any, *parts: str) -> list[Any]:
    content: dict[str, Any] = {"type": "tool_use", "name": name, "input": given}
    if call_id is not None:
        content["id"] = call_id
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in parts]
    return block(index, content, *deltas)


def test_a_turn_with_every_passable_error_at_once_is_reasked() -> None:
    """A wrong argument type, an undeclared tool, a call without id, a restatement that
    disagrees and an id used twice: every error may be fixed by asking again, so
    ``repair`` asks, and no call reaches the client."""
    engine = GatedMessages(MESSAGES, Options(on_blocked="repair"))
    events = [
        start(),
        *tool_use(0, "get_weather", "toolu_a", {}, '{"city": 5}'),
        *tool_use(1, "delete_files", "toolu_b", {}, "{}"),
        *tool_use(2, "get_weather", None, {}, '{"city": "Oslo"}'),
        *tool_use(3, "get_weather", "toolu_d", {"city": "Rome"}, '{"city": "Lima"}'),
        *tool_use(4, "get_weather", "toolu_d", {}, '{"city": "Kyiv"}'),
        *end("tool_use"),
    ]
    out: list[dict[str, Any]] = []
    for event in events:
        out += engine.feed(event)
    errors = {f.code for f in engine.findings if f.severity == "error"}
    assert errors == PASSABLE
    assert engine.repair is not None
    assert engine.calls == []
    assert not [e for e in out if e.get("type") == "message_stop"]


def test_a_stranded_chat_turn_with_nothing_else_to_say_ends_with_the_stranded_line_alone() -> None:
    """Under ``--stream-args`` a call streamed as it formed, then a second one cut off in
    the text: the first cannot be finished beside what was shown, and the turn's last
    words are only the line that says so."""
    options = Options(on_blocked="notice", text_formats=TAG, stream_args=True)
    engine = Engine(REQUESTS["chat"], options, client="chat")
    text = "Both. " + leaked("Paris") + leaked("Oslo")[:-15]
    out: list[dict[str, Any]] = []
    for chunk in text_turn(pieces(text, 7)):
        out += engine.feed(chunk)
    out += engine.finish()
    said = [c["choices"][0]["delta"].get("content") for c in out if c.get("choices")]
    assert said[-2] == STRANDED
    assert out[-1]["choices"][0]["finish_reason"] == "stop"
    assert engine.calls == []
