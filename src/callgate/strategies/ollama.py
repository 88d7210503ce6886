"""Ollama native /api/chat stream lines into the stream=false chat response (not yet implemented)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from callgate.strategies.base import ExtractedCall, ExtractionStrategy, Forming, Shape, ToolResult

if TYPE_CHECKING:
    from callgate.gate import TurnGate


class OllamaStrategy(ExtractionStrategy):
    """Placeholder until the format is implemented; recognises nothing."""

    name = "ollama"

    def recognizes(self, shape: Shape) -> bool:
        """Nothing yet."""
        return False

    def new_accumulator(self, gate: TurnGate) -> Any:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def accumulate(self, acc: Any, chunk: Shape) -> str:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def is_done(self, chunk: Shape) -> bool:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def message(self, acc: Any) -> dict[str, Any]:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def content_text(self, message: Shape) -> str:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def forming(self, message: Shape) -> Forming:
        """Not implemented yet."""
        raise NotImplementedError(self.name)

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """Not implemented yet."""
        raise NotImplementedError(self.name)
