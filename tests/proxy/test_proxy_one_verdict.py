"""The gateway's verdict is the turn's own: the one the buffer's gate decides, never set aside.

A stream that breaks off, or that the loop cannot read, refuses the turn in its gate; the
proxy's status, the buffer's verdict and the findings then say the same, the finding once.
"""

from __future__ import annotations

from callgate.proxy.engine import GatedTurn, Options
from proxy_cases import qwen_case, text_turn


def test_a_stream_that_breaks_off_fails_in_the_buffers_own_verdict() -> None:
    case = qwen_case()
    for at in (0, 1, len(case.chunks) // 2):
        turn = GatedTurn(case.request, Options(on_blocked="notice"))
        for chunk in case.chunks[:at]:
            turn.feed(chunk)
        turn.interrupted("the upstream stream broke: ReadError")
        turn.finish()
        assert turn.status == turn.buffer.verdict == "fail", at
        broken = [f for f in turn.findings if f.message == "the upstream stream broke: ReadError"]
        assert len(broken) == 1 and broken[0].code == "malformed_chunk", at
        assert turn.calls == [], at


def test_a_stream_the_loop_cannot_read_fails_in_the_buffers_own_verdict() -> None:
    case = qwen_case()
    turn = GatedTurn(case.request, Options(on_blocked="notice"))
    turn.feed({"neither": "wire"})
    turn.finish()
    assert turn.status == turn.buffer.verdict == "fail"
    assert [f.code for f in turn.findings] == ["malformed_chunk"]


def test_a_whole_plain_turn_keeps_its_verdict() -> None:
    case = qwen_case()
    turn = GatedTurn(case.request, Options(on_blocked="notice"))
    for chunk in text_turn(["Hello", " there."]):
        turn.feed(chunk)
    turn.finish()
    assert turn.status == turn.buffer.verdict == "not_applicable"
