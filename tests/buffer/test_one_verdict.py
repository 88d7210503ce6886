"""One verdict from every entry point: check, replay, the bare buffer and the loop agree.

Streams of every wire are built with the public testing kit: a text content holding calls
in any text format (or prose, or a near miss), cut at every split the kit draws (one
character per delta included), then zero to two native calls; the turn ends normally, is
cut by its length limit, or stops with no end at all, and the tools of the text calls may
be owned or not. ``check``'s code path, ``replay --json``'s, a bare
:class:`LLMStreamBuffer` and ``run_turn`` must give the same verdict and the same calls to
run, whatever the mix; on the wires the proxy serves (OpenAI Chat, Anthropic Messages), so
must the proxy's engine, which also shows the client the text ``replay`` shows. A turn the
provider's error cuts (each error shape of the OpenAI wire) gets the same ``fail`` from all
of them, runs nothing and loses none of its text.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from callgate.proxy.engine import GatedCore, GatedTurn, Options
from callgate.proxy.messages import GatedMessages
from callgate.testing import splits, stream_plans, text_contents
from callgate.testing.plans import TOOLS
from callgate.testing.wires import WIRES, WireCall, chunks_of, encoder
from entry_points import played_everywhere

ENDINGS = ("normal", "normal", "cut", "none")
"""How a drawn turn ends: its own end, cut by the length limit, or no end at all."""

Call = tuple[str, str, Any]
"""A call to run: its reference (native slot or ``text-B.N``), its tool, its arguments."""
PROXIED: dict[str, type[GatedCore]] = {"openai": GatedTurn, "anthropic": GatedMessages}
"""The wires the proxy serves, each with the engine's turn for it."""


@st.composite
def mixed_streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any], Any, str]:
    """A stream of any wire: text (calls embedded in it, cut anywhere), then native calls."""
    wire = draw(st.sampled_from(WIRES))
    content = draw(text_contents())
    deltas = [d for d in draw(splits(content.content)) if d]
    plan = draw(stream_plans(calls=(0, 2), text=False))
    enc = encoder(wire)
    first = enc.first_key(bool(deltas))
    calls = [
        WireCall(
            None if wire == "ollama" else enc.id_prefix + call.suffix,
            call.name,
            call.fragments if enc.fragmented else (),
            key=first + n,
            arguments=call.arguments,
        )
        for n, call in enumerate(plan.calls)
    ]
    pieces = enc.prelude(deltas)
    chunks = chunks_of(pieces)
    for call in calls:
        chunks += enc.open(call)
        if enc.fragmented:
            for fragment in call.fragments:
                chunks += enc.fragment(call, fragment)
        chunks += enc.close(call)
    ending = draw(st.sampled_from(ENDINGS))
    enc.state["reason"] = "tool_calls" if calls else "stop"
    if ending == "cut":
        enc.state["reason"] = enc.other_reason()
        chunks += enc.finish(calls, enc.other_reason()) + enc.epilogue()
    elif ending == "normal":
        chunks += enc.finish(calls) + enc.epilogue()
    names = sorted({name for name, _ in content.calls})
    owned = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    event(f"ending {ending}, text tools owned {len(owned)} of {len(names)}")
    tools = {**TOOLS, **{name: {"type": "object"} for name in owned}}
    return enc.finalise(chunks), tools, content, wire


def reported(calls: list[dict[str, Any]]) -> list[Call]:
    return [(str(c["slot"]), c["name"], c["arguments"]) for c in calls if c["state"] == "validated"]


@given(mixed_streams())
def test_check_replay_the_buffer_and_the_loop_give_one_verdict_and_the_same_calls(
    drawn: tuple[list[dict[str, Any]], dict[str, Any], Any, str],
) -> None:
    chunks, tools, content, wire = drawn
    formats = content.formats
    checked, replayed, buffer, turn = played_everywhere(chunks, tools, formats)

    event(f"verdict {turn.status}")
    event(f"text calls: {bool(buffer.text_calls)}, native calls: {bool(buffer.slots)}")
    assert checked["status"] == replayed["status"] == buffer.verdict == turn.status
    expected = reported(checked["calls"])
    assert reported(replayed["calls"]) == expected
    assert [(str(c.slot), c.name, c.arguments) for c in buffer.calls] == expected
    ran = [(str(r.call.slot), r.call.name, r.call.arguments) for r in turn.results if not r.refused]
    assert ran == expected
    if turn.status == "pass":
        assert expected  # a passing turn runs something
    else:
        assert expected == [] or turn.status == "not_applicable"
    assert replayed["display"] == turn.text
    if wire in PROXIED:
        proxied = proxy_turn(PROXIED[wire], chunks, tools, formats)
        assert proxied.status == turn.status
        assert [(c.name, json.loads(c.arguments)) for c in proxied.calls] == [
            (name, arguments) for _, name, arguments in expected
        ]
        assert proxied.shown == turn.text + proxied.notice()


class ProxiedTurn:
    """What a client of the proxy received for one upstream turn, with the engine's turn."""

    def __init__(self, gated: GatedCore, shown: str) -> None:
        self.status = gated.status
        self.calls = gated.calls
        self.notice = gated.notice
        self.shown = shown


def proxy_turn(
    kind: type[GatedCore], chunks: list[dict[str, Any]], tools: dict[str, Any], formats: Any
) -> ProxiedTurn:
    """The upstream ``chunks`` through the proxy's engine, the request declaring ``tools``."""
    declared = [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for name, schema in tools.items()
    ]
    request = {"model": "callgate-test", "messages": [], "stream": True, "tools": declared}
    gated = kind(request, Options(on_blocked="notice", text_formats=formats or None))
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += gated.feed(chunk)
    out += gated.finish()
    return ProxiedTurn(gated, "".join(_shown(chunk) for chunk in out))


def _shown(chunk: dict[str, Any]) -> str:
    """The text a client shows from one chunk or event the proxy sent."""
    if "choices" in chunk:
        return "".join(c["delta"].get("content") or "" for c in chunk["choices"])
    delta = chunk.get("delta") if chunk.get("type") == "content_block_delta" else None
    return delta.get("text", "") if isinstance(delta, dict) else ""


OPENAI_ERRORS = {
    "openrouter": {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "error": {"code": 502, "message": "Provider disconnected"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    },
    "finish_reason error": {"choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]},
    "error frame": {"error": {"code": "server_error", "message": "Provider disconnected"}},
}
"""How an OpenAI-wire server ends a turn that failed mid-stream (see test_openai_chat_errors)."""


@st.composite
def errored_streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any], Any]:
    """An OpenAI stream (text cut anywhere, then native calls) that the provider's error ends."""
    content = draw(text_contents())
    deltas = [d for d in draw(splits(content.content)) if d]
    plan = draw(stream_plans(calls=(0, 2), text=False))
    enc = encoder("openai")
    first = enc.first_key(bool(deltas))
    chunks = chunks_of(enc.prelude(deltas))
    for n, planned in enumerate(plan.calls):
        call = WireCall(
            enc.id_prefix + planned.suffix,
            planned.name,
            planned.fragments,
            key=first + n,
            arguments=planned.arguments,
        )
        chunks += enc.open(call)
        for fragment in call.fragments:
            chunks += enc.fragment(call, fragment)
    ending = draw(st.sampled_from(sorted(OPENAI_ERRORS)))
    event(f"error {ending}")
    chunks.append(json.loads(json.dumps(OPENAI_ERRORS[ending])))
    names = sorted({name for name, _ in content.calls})
    tools = {**TOOLS, **{name: {"type": "object"} for name in names}}
    return chunks, tools, content


@given(errored_streams())
def test_a_turn_the_provider_error_cuts_fails_alike_everywhere_and_runs_nothing(
    drawn: tuple[list[dict[str, Any]], dict[str, Any], Any],
) -> None:
    chunks, tools, content = drawn
    formats = content.formats
    checked, replayed, buffer, turn = played_everywhere(chunks, tools, formats)

    assert checked["status"] == replayed["status"] == buffer.verdict == turn.status == "fail"
    errors = [f["code"] for f in checked["findings"] if f["severity"] == "error"]
    assert errors[0] == "provider_error"
    assert reported(checked["calls"]) == reported(replayed["calls"]) == []
    assert buffer.calls == []
    assert [r for r in turn.results if not r.refused] == []
    assert replayed["display"] == turn.text
    assert buffer.get_content() == content.content
    proxied = proxy_turn(GatedTurn, chunks, tools, formats)
    assert (proxied.status, proxied.calls) == ("fail", [])
    assert proxied.shown == turn.text + proxied.notice()
