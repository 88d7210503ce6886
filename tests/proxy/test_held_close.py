"""A streamed call's argument text sent with its close held back (``--stream-args``).

Under ``--stream-args`` a client holds a call's arguments before the gate decided; the
Vercel AI SDK runs every entry whose arguments parse once its stream ends, whatever the
turn's finish says. :class:`HeldClose` sends everything but the bracket that closes the
top-level value (and what follows it): joined with what it holds it is the text given, in
any cut, and what it sent never parses as JSON, whatever the cut and whatever the strings
hold (braces, quotes, escapes).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.proxy.wires.forming import HeldClose

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab{}[]"\\: ,é\n'),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(st.text(alphabet='xy{}"\\', max_size=4), VALUES, max_size=4)
"""Argument objects whose strings hold the characters a scanner could misread."""


def sent_and_held(text: str, cuts: list[int]) -> tuple[str, str]:
    """Feed ``text`` cut at ``cuts``: what was sent, and what the acceptance would send."""
    held = HeldClose()
    bounds = [0, *sorted({c % (len(text) + 1) for c in cuts}), len(text)]
    sent = "".join(held.send(text[a:b]) for a, b in itertools.pairwise(bounds))
    return sent, held.rest()


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


@given(ARGUMENTS, st.sampled_from(["", " ", "\n  "]), st.lists(st.integers(0, 10**6)))
def test_what_was_sent_never_parses_and_the_rest_completes_it(
    arguments: dict[str, Any], space: str, cuts: list[int]
) -> None:
    text = space + json.dumps(arguments, ensure_ascii=False) + space
    sent, rest = sent_and_held(text, cuts)
    assert sent + rest == text
    assert not parses(sent)
    assert rest == "}" + space  # only the close and what follows it waited


@given(st.lists(st.integers(0, 200)))
def test_a_text_that_is_not_an_object_or_array_is_held_from_its_first_character(
    cuts: list[int],
) -> None:
    for text in ('  "a string"', "12", "true", "null", ' "}"', "XX{}", "X]"):
        sent, rest = sent_and_held(text, cuts)
        assert sent + rest == text
        assert not sent.strip()  # at most the whitespace before it


def test_a_close_inside_a_string_is_sent_and_the_real_one_waits() -> None:
    held = HeldClose()
    assert held.send('{"code": "if (a) {') == '{"code": "if (a) {'
    assert held.send(' return } \\"}\\\\"') == ' return } \\"}\\\\"'
    assert held.send("} trailing") == ""
    assert held.rest() == "} trailing"
    assert held.rest() == ""  # handed out once


@pytest.mark.parametrize("text", ['{"a": [1, {"b": 2}]}', "[1, 2]", '{"a": "}"}'])
def test_one_piece_is_sent_up_to_its_close(text: str) -> None:
    held = HeldClose()
    assert held.send(text) == text[:-1]
    assert held.rest() == text[-1]


@given(ARGUMENTS)
def test_one_character_and_empty_pieces_hold_the_same_close(arguments: dict[str, Any]) -> None:
    """Degenerate cuts: every character alone, and an empty piece between each."""
    text = json.dumps(arguments, ensure_ascii=False)
    for pieces in (list(text), [p for c in text for p in ("", c)] + [""]):
        held = HeldClose()
        sent = "".join(held.send(piece) for piece in pieces)
        assert (sent, held.rest()) == (text[:-1], "}")
