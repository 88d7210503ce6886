"""How the engine reads the upstream's bytes: where a read is cut does not change what is sent.

A stream whose first read is only a blank line, a comment (a keep-alive before the first
event) or the byte-order mark sends the client the very bytes the same stream sends without
it: the events the client would receive unchanged still go out as the upstream wrote them.
Text held until the upstream's own last event (Anthropic's ``message_stop``, the Responses
API's ``response.completed``) reaches the client when the events are played one by one.
"""

from __future__ import annotations

import json

import pytest

from callgate.proxy.engine import Engine, Options
from callgate.proxy.sse import SSEReader, encode
from test_gateway_behaviours import end, start, text_block
from test_gateway_corners import REQUESTS
from test_gateway_edges import TAG
from test_gateway_turn_ends import responses_stream
from test_proxy_forwarded_bytes import _by_bytes, _loose, _text_stream, _turn


def test_a_blank_or_bom_first_read_leaves_the_upstreams_own_bytes_forwarded() -> None:
    upstream = _loose(_text_stream(["Hello", " world", " done."]))
    plain = _by_bytes(_turn(), upstream)
    assert plain[:4] == upstream[:4]  # role and text chunks: the upstream's own bytes
    for blank in (b"\n", b"\n\n", b":\n", b"\xef\xbb\xbf"):
        assert _by_bytes(_turn(), [blank, *upstream]) == plain, blank


@pytest.mark.parametrize("upstream", ["messages", "responses"])
def test_text_held_to_the_last_event_reaches_a_chat_client_event_by_event(upstream: str) -> None:
    """``<tool`` might open a call until the stream's last event shows it does not."""
    words = "Mild <tool"
    messages = [start(), *text_block(0, words), *end()]
    events = messages if upstream == "messages" else responses_stream(words)
    engine = Engine(REQUESTS["chat"], Options(text_formats=TAG), client="chat", upstream=upstream)
    data = b"".join(encode(event, event["type"]) for event in events)
    sent = b"".join(engine.play(event) for event in SSEReader().feed(data))
    chunks = [json.loads(e.data) for e in SSEReader().feed(sent) if e.data != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == words
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
