"""A call cut short in the text: its partial markup is withheld from the display.

A stream cut by its length limit, a filter or a dropped connection can end inside a call
the model was writing into its text (``<tool_call>{"name": "get_weather", "argu``). Nothing
runs (the call never completed); what the user would see is the half-written markup, the
very leak callgate is there to hide. So the display withholds it: the held text of a block
still open at a cut end is dropped from what is shown, kept as a :class:`CutCall` (the raw
content stays in the buffer's ``get_content()`` and in an audit record), and the surfaces
that speak to a person (the proxy's writers, the integrations) say one short line instead.

The rule (:func:`withholds`): the open block is withheld when the tool it names is one of
the turn's, or when its name has not streamed yet; a block naming another tool is nobody's
call and flows as text, as it does on a normal end. A block that parses where its format's
close is optional is a call (the gate refuses it as cut), not text, so it is not this rule's.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

__all__ = ["CutCall", "Withhold", "withholds"]

Withhold = Callable[[str | None], bool]
"""Whether an open block naming this tool (None: not yet known) is withheld at a cut end."""


@frozen
class CutCall:
    """The call a cut end withheld from the display: the tool it names and its raw markup."""

    name: str | None
    """The tool the block names, or None when the cut came before its name."""
    markup: str
    """The block's text as it came (the opening delimiter and the payload so far)."""


def withholds(known: Callable[[str | None], bool]) -> Withhold:
    """The rule for a turn whose tools are those ``known`` accepts (see the module)."""

    def rule(name: str | None) -> bool:
        return name is None or known(name)

    return rule
