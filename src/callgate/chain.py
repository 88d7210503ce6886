"""The one ordered list of strategies that the buffer and the driver share.

Native (envelope) strategies come before text strategies. The chain moves the strategy
that last matched to the front, on the assumption that a stream keeps its format; that
is an optimisation only: a strategy claims only shapes of its own format, so the order
never changes which strategy claims a shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from callgate.strategies.base import ExtractionStrategy, Shape


class ExtractionChain:
    """Resolve which strategy a chunk or message belongs to."""

    def __init__(self, strategies: Iterable[ExtractionStrategy]) -> None:
        self._strategies = list(strategies)
        if not self._strategies:
            raise ValueError("an ExtractionChain needs at least one strategy")

    def resolve(self, shape: Shape) -> ExtractionStrategy | None:
        """The first strategy that recognises ``shape``, promoted to the front; or None."""
        for position, strategy in enumerate(self._strategies):
            if strategy.recognizes(shape):
                if position:
                    del self._strategies[position]
                    self._strategies.insert(0, strategy)
                return strategy
        return None

    def by_name(self, name: str) -> ExtractionStrategy | None:
        """The strategy whose profile name is ``name``."""
        return next((s for s in self._strategies if s.name == name), None)

    def __iter__(self) -> Iterator[ExtractionStrategy]:
        return iter(list(self._strategies))

    def __len__(self) -> int:
        return len(self._strategies)

    def __repr__(self) -> str:
        return f"ExtractionChain({[s.name for s in self._strategies]!r})"
