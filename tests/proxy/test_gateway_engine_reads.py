"""How the engine reads the upstream's bytes: where a read is cut does not change what is sent.

A stream whose first read is only a blank line, a comment (a keep-alive before the first
event) or the byte-order mark sends the client the very bytes the same stream sends without
it: the events the client would receive unchanged still go out as the upstream wrote them.
"""

from __future__ import annotations

from test_proxy_forwarded_bytes import _by_bytes, _loose, _text_stream, _turn


def test_a_blank_or_bom_first_read_leaves_the_upstreams_own_bytes_forwarded() -> None:
    upstream = _loose(_text_stream(["Hello", " world", " done."]))
    plain = _by_bytes(_turn(), upstream)
    assert plain[:4] == upstream[:4]  # role and text chunks: the upstream's own bytes
    for blank in (b"\n", b"\n\n", b":\n", b"\xef\xbb\xbf"):
        assert _by_bytes(_turn(), [blank, *upstream]) == plain, blank
