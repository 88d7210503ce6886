"""Every way of cutting content into deltas, the degenerate ones with real probability.

A uniform draw of cut points almost never gives one- or two-character deltas over a whole
content, nor the content in one piece, and those are where streaming parsers break; so
:func:`splits` picks the shape first: the whole content at once, deltas of 1, 2 or 3
characters at any phase, a cycle of small sizes with empty deltas, or random cut points.
"""

from __future__ import annotations

import callgate.testing.needs  # noqa: F401  (Hypothesis, or its install line)

# isort: split

from collections.abc import Sequence

from hypothesis import strategies as st


def fixed(text: str, size: int, phase: int = 0) -> list[str]:
    """``text`` in deltas of ``size`` characters, the first one ``phase`` characters long."""
    first = [text[:phase]] if phase else []
    return first + [text[i : i + size] for i in range(phase, len(text), size)]


def cycled(text: str, sizes: Sequence[int]) -> list[str]:
    """``text`` cut by repeating ``sizes``; a 0 inserts an empty delta."""
    out: list[str] = []
    position, turn = 0, 0
    while position < len(text):
        size = sizes[turn % len(sizes)]
        turn += 1
        if size == 0 and turn > 4 * len(text) + len(sizes):
            size = 1
        out.append(text[position : position + size])
        position += size
    return out


def at_points(text: str, points: Sequence[int]) -> list[str]:
    """``text`` cut at ``points`` (repeated points give empty deltas)."""
    cuts = sorted(min(max(p, 0), len(text)) for p in points)
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def splits(text: str) -> st.SearchStrategy[list[str]]:
    """Every delta shape a stream may take of ``text``; joined, the deltas are ``text``.

    The whole text in one delta, 1, 2 or 3 characters each (any phase), a cycle of
    small sizes with empty deltas, or random cut points.
    """
    small = st.integers(1, 3).flatmap(
        lambda n: st.integers(0, n - 1).map(lambda phase: fixed(text, n, phase))
    )
    return st.one_of(
        st.just([text]),
        small,
        st.lists(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 7]), min_size=1, max_size=6).map(
            lambda sizes: cycled(text, sizes)
        ),
        st.lists(st.integers(0, len(text)), max_size=24).map(lambda pts: at_points(text, pts)),
    )


def pieces(text: str, *, empty: bool = True) -> st.SearchStrategy[list[str]]:
    """:func:`splits` of ``text``; without ``empty``, no delta is empty (none for ``""``)."""
    if empty:
        return splits(text)
    return splits(text).map(lambda parts: [part for part in parts if part])


def byte_splits(data: bytes) -> st.SearchStrategy[list[bytes]]:
    """Raw bytes cut anywhere (inside a UTF-8 character or an SSE line included)."""
    return st.one_of(
        st.just([data]),
        st.integers(1, 3).map(lambda n: [data[i : i + n] for i in range(0, len(data), n)]),
        st.lists(st.integers(0, len(data)), max_size=24).map(
            lambda points: [
                data[a:b]
                for a, b in zip([0, *sorted(points)], [*sorted(points), len(data)], strict=True)
            ]
        ),
    )
