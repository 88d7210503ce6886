"""A whole-content value is released the moment text follows it, whatever its strings hold.

Bare JSON and pythonic lists are held from the content's start while they can be a call.
Once the value has closed, the first character after it that is not blank shows that the
content is no single value: everything so far is released in that same delta, not at the
stream's end. Finding where the value closes means reading its strings: JSON strings with
escapes, Python's four quote kinds with escapes, and quotes at a delta's end that may still
become a triple quote. Each content is fed one, two, three, five and eight characters at a
time, at every phase.
"""

from __future__ import annotations

import pytest

from callgate.strategies.text.detector import Detector
from callgate.testing.cuts import fixed

JSON_VALUES = [
    '{"name": "f", "arguments": {"s": ["x"], "t": "\\\\"}}',
    '{"name": "f", "arguments": {"s": "a \\" } ] quote"}}',
    '{"name": "f", "arguments": {"s": "x\\\\"}}',
    '{"name": "f", "arguments": {"s": "\\\\\\"]", "t": "}"}}',
    '[{"name": "f", "arguments": {"s": "\\""}}, {"name": "g", "arguments": {}}]',
    '{"name": "f", "arguments": {"a": "x}]"}}',
    '[{"name": "f", "arguments": {"s": "\'"}}, {"name": "g", "arguments": {"t": "(\'"}}]',
    '{"name": "f", "arguments": {"a": [1, {"b": "]"}]}}',
]
"""Values whose strings hold escapes, quotes of the other kind and closing brackets."""
PYTHON_VALUES = [
    "[f(a='')]",
    "[f(a=''''''), g()]",
    "[f(a='''a'\\''''), g()]",
    "[f(a='x\\'y'), g(b=\"z\\\"w\")]",
    "[f(a='''it's ] fine''')]",
    '[f(a="""q " ] """)]',
    "[f(a=''), g()]",
    '[f(a=""), g(b=\'"]\')]',
    "[f(a='\\\\'), g(b=']')]",
    "[f(a='x', b=(1, 2))]",
]
"""Python lists whose strings hold escapes, other quotes, triple quotes and brackets."""
AFTER = " and more."


def released_at_once(formats: list[str], value: str, after: str = AFTER) -> None:
    """Feed ``value`` and text after it: all is shown by the delta holding that text's start."""
    content = value + after
    start = len(value) + 1
    for size in (1, 2, 3, 5, 8):
        for phase in range(size):
            detector = Detector(formats)
            shown, at = "", 0
            for delta in fixed(content, size, phase):
                shown += detector.feed(delta).shown
                at += len(delta)
                if at > start:
                    assert shown == content[:at], (size, phase, delta)
                else:
                    assert shown == "", (size, phase, delta)
            assert detector.finish() == ("", ())


@pytest.mark.parametrize("value", JSON_VALUES)
def test_a_json_value_is_released_as_soon_as_text_follows_it(value: str) -> None:
    released_at_once(["bare_json"], value)


@pytest.mark.parametrize("value", PYTHON_VALUES)
def test_a_python_list_is_released_as_soon_as_text_follows_it(value: str) -> None:
    released_at_once(["pythonic"], value)


@pytest.mark.parametrize(
    ("formats", "value"),
    [(["bare_json"], '{"name": "f", "arguments": {"a": "x"}}'), (["pythonic"], "[f(a='x')]")],
)
def test_a_backslash_in_the_text_after_the_value_is_no_escape_of_its_closing_quote(
    formats: list[str], value: str
) -> None:
    """A delta that opens with the value's closing quote and holds a backslash later.

    The quote closes the string at the delta's first character; the backslash is text after
    the value and escapes nothing inside it.
    """
    released_at_once(formats, value, " \\ more.")
