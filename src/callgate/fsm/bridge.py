"""Build a ``transitions.Machine`` from a :class:`~callgate.fsm.table.Table`.

For users who want the ``transitions`` library's callbacks and tooling on callgate's
machines. The library is imported here only, on first use; callgate's own hot path never
touches it (a trigger there costs far more than the interpreter's dict lookup). The
machine is strict like the interpreter: no automatic ``to_*`` transitions, and an event a
state does not accept raises ``transitions.MachineError``.
"""

from __future__ import annotations

from typing import Any

from callgate.fsm.table import Table


class BridgeModel:
    """A bare model object; ``transitions`` adds ``state`` and ``trigger`` to it."""

    state: str


def to_transitions(table: Table, model: Any = None) -> Any:
    """A ``transitions.Machine`` with the table's states, events and transitions.

    With ``model`` None a fresh :class:`BridgeModel` is used; fire an event with
    ``model.trigger(event)`` and read ``model.state`` (``machine.models[0]`` is the model).
    """
    from transitions import Machine

    spec = [{"trigger": t.event, "source": t.source, "dest": t.target} for t in table.transitions]
    kwargs: dict[str, Any] = {
        "states": list(table.state_names),
        "transitions": spec,
        "initial": table.initial,
        "auto_transitions": False,
        "ignore_invalid_triggers": False,
        "send_event": False,
    }
    return Machine(model=BridgeModel() if model is None else model, **kwargs)
