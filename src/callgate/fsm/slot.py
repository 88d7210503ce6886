"""The slot machine: the life of one tool call within one assistant turn.

Theory of operation: a slot is keyed by the provider's own slot (a tool-call index, an
output index, a content-block index, an array position) and never globally. The gate
(:mod:`callgate.gate`) classifies each wire primitive that concerns the slot into one event
of this table and steps the slot; everything the slot may do is in the table below.

A slot starts ``unseen``, becomes ``accumulating`` on its first identity or fragment, and
reaches ``terminal`` only on provider terminal evidence (``close``): a per-call done where
the format has one, otherwise the turn-level done. A JSON prefix that happens to parse is
never terminal evidence. At ``terminal`` the gate runs the checks once (strict JSON, tool
known, schema) and fires ``accept`` or ``reject``. ``validated`` and ``blocked`` are final;
``blocked`` swallows every later event (the first finding stands).

The duplicate-call bug (the same id and name start the slot over after its arguments
already form a complete object) is the ``restart`` event: the slot enters ``replaying``
and compares the repeat with the original; an identical repeat is dropped
(``duplicate_call_ignored``), a different one is an identity collision.
"""

from __future__ import annotations

from typing import Literal

from callgate.fsm.table import Event, State, Table, Transition

SlotState = Literal["unseen", "accumulating", "replaying", "terminal", "validated", "blocked"]
"""The slot machine's state names (a test checks them against :data:`SLOT`)."""

EVENTS = (
    Event("identity", "an id and/or name for the slot, consistent with what it already has"),
    Event("args", "an argument fragment, appended in order"),
    Event("conflict", "an id or name that differs from the slot's, or another slot's id"),
    Event("restart", "the same id and name start over after the arguments are complete"),
    Event("replay_args", "a fragment of the repeat that matches the original so far"),
    Event("replay_done", "the repeat has reproduced the original arguments exactly"),
    Event("replay_diverge", "a fragment of the repeat that differs from the original"),
    Event("restate", "the provider restated the full arguments, and they match"),
    Event("mismatch", "the provider restated the full arguments, and they differ"),
    Event("close", "provider terminal evidence for this call"),
    Event("accept", "the checks at terminal passed"),
    Event("reject", "a check at terminal failed (the finding says which)"),
    Event("turn_end", "turn-level done, in a format whose calls have their own done"),
    Event("bad_terminal", "the turn ended with a reason that is not a tool-call reason"),
    Event("stream_end", "the stream ended; no more input will come"),
    Event("overflow", "a hard limit was hit (bytes, depth)"),
)

# fmt: off
STATES = (
    State("unseen", "no primitive has named this slot yet"),
    State("accumulating", "identity known or pending; fragments are appended",
          tags={"appending"}),
    State("replaying", "a repeat of a complete call is compared with the original",
          tags={"replaying"}),
    State("terminal", "terminal evidence arrived; checks pending", tags={"checking"}),
    State("validated", "strict JSON, known tool, schema-valid", final=True, tags={"valid"}),
    State("blocked", "this call (and so its turn) must not run", final=True, tags={"blocks"}),
)
# fmt: on

_ABSORB = tuple(
    Transition("blocked", e.name, "blocked", "after blocked nothing changes") for e in EVENTS
)

# fmt: off
TRANSITIONS = (
    Transition("unseen", "identity", "accumulating", "first sighting carries an id and/or name"),
    Transition("unseen", "args", "accumulating", "first sighting is a bare fragment"),
    Transition("unseen", "conflict", "blocked", "its id is another slot's",
               output="identity_collision"),
    Transition("unseen", "restate", "blocked", "full arguments for a call never opened",
               output="orphan_event"),
    Transition("unseen", "mismatch", "blocked", "full arguments for a call never opened",
               output="orphan_event"),
    Transition("unseen", "close", "blocked", "done for a call never opened",
               output="orphan_event"),
    Transition("unseen", "overflow", "blocked", "limit hit at once", output="limit_exceeded"),
    Transition("unseen", "turn_end", "blocked", "the turn ended; its opening was unreadable",
               output="missing_terminal"),
    Transition("unseen", "bad_terminal", "blocked", "the turn ended; its opening was unreadable",
               output="wrong_terminal_reason"),
    Transition("unseen", "stream_end", "blocked", "the stream ended; its opening was unreadable",
               output="missing_terminal"),

    Transition("accumulating", "identity", "accumulating", "a late or repeated id or name"),
    Transition("accumulating", "args", "accumulating", "append the fragment"),
    Transition("accumulating", "conflict", "blocked", "two identities in one slot",
               output="identity_collision"),
    Transition("accumulating", "restart", "replaying",
               "same id and name again over complete arguments", guard="arguments_complete"),
    Transition("accumulating", "restate", "accumulating", "the restated arguments match"),
    Transition("accumulating", "mismatch", "blocked", "the restated arguments differ",
               output="args_mismatch"),
    Transition("accumulating", "close", "terminal", "provider terminal evidence"),
    Transition("accumulating", "turn_end", "blocked", "the turn ended before this call's done",
               output="missing_terminal"),
    Transition("accumulating", "bad_terminal", "blocked", "the turn ended for another reason",
               output="wrong_terminal_reason"),
    Transition("accumulating", "stream_end", "blocked", "the stream ended before terminal evidence",
               output="missing_terminal"),
    Transition("accumulating", "overflow", "blocked", "limit hit", output="limit_exceeded"),

    Transition("replaying", "identity", "replaying", "the repeat restates its identity"),
    Transition("replaying", "conflict", "blocked", "the repeat names another call",
               output="identity_collision"),
    Transition("replaying", "replay_args", "replaying", "the repeat matches so far"),
    Transition("replaying", "replay_done", "accumulating", "identical repeat dropped",
               output="duplicate_call_ignored"),
    Transition("replaying", "replay_diverge", "blocked", "the repeat differs from the original",
               output="identity_collision"),
    Transition("replaying", "restate", "replaying", "the restated arguments match the original"),
    Transition("replaying", "mismatch", "blocked", "the restated arguments differ",
               output="args_mismatch"),
    Transition("replaying", "close", "blocked", "done arrived while the repeat was incomplete",
               output="identity_collision"),
    Transition("replaying", "turn_end", "blocked", "the turn ended inside an incomplete repeat",
               output="identity_collision"),
    Transition("replaying", "bad_terminal", "blocked", "the turn ended for another reason",
               output="wrong_terminal_reason"),
    Transition("replaying", "stream_end", "blocked", "the stream ended inside a repeat",
               output="missing_terminal"),
    Transition("replaying", "overflow", "blocked", "limit hit", output="limit_exceeded"),

    Transition("terminal", "accept", "validated", "every check passed"),
    Transition("terminal", "reject", "blocked", "a check failed", output="check_finding"),

    Transition("validated", "identity", "validated", "the same identity restated, no arguments"),
    Transition("validated", "args", "blocked", "a fragment after terminal",
               output="delta_after_terminal"),
    Transition("validated", "conflict", "blocked", "another identity after terminal",
               output="identity_collision"),
    Transition("validated", "restate", "validated", "the restated arguments match"),
    Transition("validated", "mismatch", "blocked", "the restated arguments differ",
               output="args_mismatch"),
    Transition("validated", "close", "blocked", "a second terminal", output="duplicate_terminal"),
    Transition("validated", "turn_end", "validated", "the turn confirms the closed call"),
    Transition("validated", "bad_terminal", "blocked", "the turn ended for another reason",
               output="wrong_terminal_reason"),
    Transition("validated", "stream_end", "validated", "nothing more will come"),
    Transition("validated", "overflow", "blocked", "limit hit", output="limit_exceeded"),
    *_ABSORB,
)
# fmt: on

SLOT = Table(
    name="slot",
    doc="One tool call of one assistant turn: unseen, accumulating, terminal, validated "
    "or blocked.",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="unseen",
)
