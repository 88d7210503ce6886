"""The gateway's settings and shared parts, read as an operator and a client see them.

``--on-blocked`` / ``CALLGATE_ON_BLOCKED`` words and what each bad one says; an unknown
text format named with every known one; a call read from text gets an id in the client
wire's form; the reasoning splitter (``--move-reasoning``) sends each piece as soon as it
can tell, holds only what may still be a cut tag, and gives every piece in order.
"""

from __future__ import annotations

import re

import pytest

from callgate.proxy.core import ThinkSplitter, fresh_id
from callgate.proxy.engine import Options, on_blocked
from callgate.strategies.text.formats import FORMATS


@pytest.mark.parametrize(
    ("words", "read"),
    [
        (["notice"], ("notice", 1)),
        (["pass"], ("pass", 1)),
        (["repair"], ("repair", 1)),
        (["repair", "1"], ("repair", 1)),
        (["repair", "3"], ("repair", 3)),
    ],
)
def test_on_blocked_reads_each_mode(words: list[str], read: tuple[str, int]) -> None:
    assert on_blocked(words) == read


REPAIR_NUMBER = "--on-blocked repair takes one whole number >= 1 (repair 2)"


@pytest.mark.parametrize(
    ("words", "says"),
    [
        ([], "--on-blocked needs a mode: notice, repair N or pass"),
        (["notice", "2"], "--on-blocked notice takes no number"),
        (["pass", "x"], "--on-blocked pass takes no number"),
        (["never"], "--on-blocked must be notice, repair N or pass, not 'never'"),
        (["repair", "x"], REPAIR_NUMBER),
        (["repair", "0"], REPAIR_NUMBER),
        (["repair", "-1"], REPAIR_NUMBER),
        (["repair", "1", "2"], REPAIR_NUMBER),
    ],
)
def test_a_bad_on_blocked_says_what_is_wrong(words: list[str], says: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(says) + "$"):
        on_blocked(words)


def test_an_unknown_text_format_is_named_with_every_known_one() -> None:
    said = f"unknown text format 'hermes'; one of: {', '.join(FORMATS)}"
    with pytest.raises(ValueError, match="^" + re.escape(said) + "$"):
        Options(text_formats=("tool_call_tag", "hermes"))
    assert Options(text_formats=()).text_formats == ()


def test_a_made_id_is_the_wires_prefix_and_24_hex_digits() -> None:
    assert re.fullmatch(r"call_[0-9a-f]{24}", fresh_id())
    assert re.fullmatch(r"toolu_[0-9a-f]{24}", fresh_id("toolu_"))
    assert fresh_id() != fresh_id()


def test_the_splitter_splits_several_tags_in_one_piece_in_order() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("<think>a</think>b<think>c</think>d") == ("ac", "bd")
    assert splitter.inside is False
    assert splitter.pieces("<think>x</think>y<think>z") == [(True, "x"), (False, "y"), (True, "z")]


def test_the_splitter_sends_plain_text_at_once_and_holds_only_a_cut_tag() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("plain") == ("", "plain")
    assert splitter.pieces("<thi") == []
    assert splitter.feed("nk>why</th") == ("why", "")
    assert splitter.feed("ink>so") == ("", "so")


@pytest.mark.parametrize("cut", range(1, len("<think>")))
def test_an_opening_tag_cut_anywhere_is_held_until_it_is_whole(cut: int) -> None:
    splitter = ThinkSplitter()
    tag = "<think>"
    assert splitter.feed("a" + tag[:cut]) == ("", "a")
    assert splitter.feed(tag[cut:] + "b</think>c") == ("b", "c")


def test_the_held_tail_is_given_back_once_by_flush() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("ok <th") == ("", "ok ")
    assert splitter.flush() == ("", "<th")
    assert splitter.feed("x") == ("", "x")
    assert splitter.flush() == ("", "")
    inside = ThinkSplitter()
    assert inside.feed("<think>deep </thi") == ("deep ", "")
    assert inside.flush() == ("</thi", "")
