"""How tests cut content into deltas: the degenerate cuts come up with real probability.

A uniform draw of cut points almost never gives one- or two-character deltas over a whole
content, nor the content in one piece, and those are where streaming parsers break; so
the strategy below picks the shape first.
"""

from __future__ import annotations

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


def deltas(text: str) -> st.SearchStrategy[list[str]]:
    """Every delta shape a stream may take: whole, 1, 2 or 3 characters each (any phase),
    a cycle of small sizes with empty deltas, or random cut points."""
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
