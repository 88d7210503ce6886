"""The one ordered list of strategies that the buffer and the driver share.

Native (envelope) strategies come before text strategies. The chain moves the strategy
that last matched to the front, on the assumption that a stream keeps its format; that
is an optimisation only: a strategy claims only shapes of its own format, so the order
never changes which strategy claims a shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from callgate.strategies.base import ExtractionStrategy, MessageReader, Shape

_WIRES: dict[type[object], bool] = {}
"""Whether a strategy class is a wire's (:class:`ExtractionStrategy`), by class."""


class ExtractionChain:
    """Resolve which strategy a chunk or message belongs to."""

    def __init__(self, strategies: Iterable[MessageReader]) -> None:
        self._strategies = list(strategies)
        if not self._strategies:
            raise ValueError("an ExtractionChain needs at least one strategy")

    def resolve(self, shape: Shape) -> MessageReader | None:
        """The first strategy that recognises ``shape``, promoted to the front; or None."""
        for position, strategy in enumerate(self._strategies):
            if strategy.recognizes(shape):
                self._promote(position)
                return strategy
        return None

    def resolve_stream(self, chunk: Shape) -> ExtractionStrategy | None:
        """The first wire strategy that recognises ``chunk``, promoted; or None.

        Text strategies read assembled messages only: they never take a stream's chunk.
        """
        for position, strategy in enumerate(self._strategies):
            kind = type(strategy)
            wire = _WIRES.get(kind)
            if wire is None:  # (an abstract class's check is slow: once per class)
                wire = _WIRES[kind] = issubclass(kind, ExtractionStrategy)
            if wire and strategy.recognizes(chunk):
                self._promote(position)
                return strategy  # type: ignore[return-value]  # a wire's: _WIRES says so
        return None

    def _promote(self, position: int) -> None:
        if position:
            self._strategies.insert(0, self._strategies.pop(position))

    def __iter__(self) -> Iterator[MessageReader]:
        return iter(list(self._strategies))

    def __len__(self) -> int:
        return len(self._strategies)

    def __repr__(self) -> str:
        return f"ExtractionChain({[s.name for s in self._strategies]!r})"
