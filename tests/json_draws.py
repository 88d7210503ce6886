"""Hypothesis draws of JSON arguments as the differential tests stream them.

Objects of unicode text and nested values, ``json.dumps``-ed escaped or raw, spaced or
compact, and cut at random points into the fragments a stream carries.
"""

from __future__ import annotations

import itertools
import json

from hypothesis import strategies as st

UNICODE = st.characters(codec="utf-8")
"""Any code point UTF-8 can carry (astral, controls, quotes, backslashes): no lone surrogate."""
TEXT = st.text(UNICODE, max_size=12)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
OBJECTS = st.dictionaries(TEXT, VALUES, max_size=4)


@st.composite
def cuts(draw: st.DrawFn, text: str) -> tuple[str, ...]:
    """Text cut at random positions into non-empty fragments (none for empty text)."""
    if not text:
        return ()
    points = sorted(
        draw(st.sets(st.integers(1, len(text) - 1), max_size=12)) if len(text) > 1 else []
    )
    bounds = [0, *points, len(text)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds))


@st.composite
def arguments(draw: st.DrawFn) -> str:
    """``json.dumps`` of a generated object, escaped or raw unicode, spaced or compact."""
    separators = draw(st.sampled_from([None, (",", ":")]))
    return json.dumps(draw(OBJECTS), ensure_ascii=draw(st.booleans()), separators=separators)
