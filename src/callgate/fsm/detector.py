"""The detector machine: tool calls that a model writes into the content channel as text.

Theory of operation: the detector reads content deltas of any size. In ``printing`` text
flows to the display. Text that is a proper prefix of an opening delimiter is held
(``matching_prefix``); the hold is bounded by the longest delimiter. When the prefix can
no longer open a block it is released, in order; when a delimiter completes, its markup
is dropped and the detector is ``in_block``. A block ends with its closing delimiter:
the payload either parses as calls (``close_call``: the markup never reaches the display)
or does not (``close_text``: the whole block is released, unchanged). A block whose
payload breaks (a start no format can have, another control marker, the size limit) is
released as text at the exact point where it broke (``break``), and the rest is read
again; one that never closes is released at the end of the stream (``finish_text``),
unless its format has no closing delimiter and the payload parses (``finish_call``).

``<think>`` opens ``reasoning``: that text is shown like any other content but never
scanned for calls; a call-shaped marker in it is reported (``reasoning_marker``, finding
``call_in_reasoning``), or, when a driver opts in, closes the reasoning and opens a block
(``reasoning_open``). ``ended`` is final: nothing may be fed after the end.
"""

from __future__ import annotations

from typing import Literal

from callgate.fsm.table import Event, State, Table, Transition

DetectorState = Literal["printing", "matching_prefix", "in_block", "reasoning", "ended"]
"""The detector machine's state names (a test checks them against :data:`DETECTOR`)."""

EVENTS = (
    Event("text", "text that cannot start a delimiter: shown"),
    Event("prefix", "text ending in a proper prefix of an opening delimiter: held"),
    Event("open", "an opening delimiter completed: its markup is dropped"),
    Event("think", "<think> opened: reasoning text is shown but not scanned"),
    Event("payload", "text inside a block: held"),
    Event("close_call", "the closing delimiter arrived and the payload is a call"),
    Event("close_text", "the closing delimiter arrived and the payload is no call"),
    Event("break", "the payload broke: a start no format has, a new marker, the size limit"),
    Event("unthink", "</think> closed the reasoning"),
    Event("reasoning_marker", "a call marker inside reasoning: reported, not run"),
    Event("reasoning_open", "a call marker inside reasoning, with the driver's opt-in"),
    Event("end", "the stream ended outside a block"),
    Event("finish_call", "the stream ended in a block without closing delimiter; it parses"),
    Event("finish_text", "the stream ended in a block that is no call"),
)

# fmt: off
STATES = (
    State("printing", "text flows to the display", tags={"scans", "passes"}),
    State("matching_prefix", "a possible opening delimiter is held back",
          tags={"scans", "holds"}),
    State("in_block", "inside a confirmed block: nothing is shown", tags={"collects", "holds"}),
    State("reasoning", "inside <think>: shown, never scanned for calls", tags={"reasons"}),
    State("ended", "the stream is over", final=True),
)
# fmt: on

# fmt: off
TRANSITIONS = (
    Transition("printing", "text", "printing", "plain text is shown"),
    Transition("printing", "prefix", "matching_prefix", "hold a possible delimiter"),
    Transition("printing", "open", "in_block", "a delimiter opens a block", output="drop_markup"),
    Transition("printing", "think", "reasoning", "reasoning starts (shown)"),
    Transition("printing", "end", "ended", "nothing is held"),
    Transition("matching_prefix", "text", "printing", "the held text cannot open a block",
               output="release_held"),
    Transition("matching_prefix", "prefix", "matching_prefix", "still a possible delimiter"),
    Transition("matching_prefix", "open", "in_block", "the held text was a delimiter",
               output="drop_markup"),
    Transition("matching_prefix", "think", "reasoning", "the held text was <think> (shown)"),
    Transition("matching_prefix", "end", "ended", "the held text is released",
               output="release_held"),
    Transition("in_block", "payload", "in_block", "the payload grows, unseen"),
    Transition("in_block", "close_call", "printing", "a complete call: markup dropped",
               output="extract"),
    Transition("in_block", "close_text", "printing", "not a call: the block is shown unchanged",
               output="release_block"),
    Transition("in_block", "break", "printing", "the block broke: shown up to the break",
               output="release_block"),
    Transition("in_block", "finish_call", "ended", "an unclosed format's payload parses",
               output="extract"),
    Transition("in_block", "finish_text", "ended", "an unterminated block is shown",
               output="release_block"),
    Transition("reasoning", "text", "reasoning", "reasoning text is shown"),
    Transition("reasoning", "unthink", "printing", "reasoning ends"),
    Transition("reasoning", "reasoning_marker", "reasoning", "a call in reasoning is reported",
               output="call_in_reasoning"),
    Transition("reasoning", "reasoning_open", "in_block", "opt-in: the call closes reasoning",
               output="call_in_reasoning"),
    Transition("reasoning", "end", "ended", "the stream ended inside reasoning"),
)
# fmt: on

DETECTOR = Table(
    name="detector",
    doc="Text-embedded tool calls in the content channel: printing, matching_prefix, "
    "in_block, reasoning.",
    states=STATES,
    events=EVENTS,
    transitions=TRANSITIONS,
    initial="printing",
)
