"""The OpenAI Chat Completions wire's ``add`` for its commonest chunk: one call per fragment.

Most chunks of a turn with calls are a lone choice whose delta holds one ``tool_calls``
entry with an ``index`` and a ``function`` holding an arguments fragment and no id or name
(``"type": "function"`` or ``"id": null`` beside them, which some servers repeat on every entry,
change nothing; an entry with an id or a name takes the buffer's path). :func:`fast_add` appends
such a fragment to its slot in place, within the slot's grant, exactly as the gate's own
``TurnGate.fragment`` does there; every other chunk, and each one once the buffer dropped
``steady``, goes to the buffer's own path (which reads it with the strategy's ``reader``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from callgate.gate.turn import TurnGate
    from callgate.strategies.base import Steady

__all__ = ["fast_add"]


class ChosenAccumulator(Protocol):
    """What the closure reads of the OpenAI accumulator of the chosen choice."""

    gate: TurnGate
    chosen: int
    last: int | None


def fast_add(
    acc: ChosenAccumulator, steady: Steady, rest: Callable[[object], None]
) -> Callable[[object], None]:
    """The buffer's ``add`` for a lone argument fragment of the chosen choice (see module)."""
    slots, chosen = acc.gate.slots, acc.chosen

    def add(chunk: Any) -> None:
        # No type test of the chunk: what is not a dict fails a step below (an SDK object
        # cannot be indexed, UnreadableChunk has no choices) or reads as the same dict would.
        try:
            choices = chunk["choices"]
            if type(choices) is list:
                [choice] = choices
                delta = choice["delta"]
                # a text chunk (no tool_calls) goes on without raising a KeyError here;
                # a delta, entry or function that is no mapping raises a TypeError below
                if len(delta) == 1 and "tool_calls" in delta:
                    entries = delta["tool_calls"]
                    if type(entries) is list:
                        [entry] = entries
                        # index and function, or more with no id (``"type": "function"``,
                        # ``"id": null``, which some servers repeat on every entry); no name
                        if "id" not in entry or entry["id"] is None:
                            function = entry["function"]
                            if "name" not in function or function["name"] is None:
                                index = entry["index"]
                                text = function["arguments"]
                                if type(index) is int and type(text) is str and text:
                                    slot = slots[index]  # a KeyError once the path is cut
                                    # ``in`` tests and subscripts, not ``dict.get``: a method
                                    # call costs about as much as three of them
                                    if (
                                        (
                                            "finish_reason" not in choice
                                            or choice["finish_reason"] is None
                                        )
                                        and "error" not in chunk
                                        and "error" not in choice
                                        and ("usage" not in chunk or chunk["usage"] is None)
                                        and (choice["index"] if "index" in choice else 0) == chosen  # noqa: SIM401
                                    ):
                                        room = slot.room - len(text)  # characters
                                        if room >= 0:
                                            slot.parts.append(text)
                                            slot.room = room
                                            acc.last = index
                                            return
        except (KeyError, TypeError, IndexError, ValueError, AttributeError):
            pass  # a field missing or of another type: the buffer reads and reports it
        rest(chunk)

    def cut() -> None:
        nonlocal slots
        slots = {}

    steady.cut = cut
    return add
