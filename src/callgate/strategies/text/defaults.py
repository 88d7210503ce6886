"""Which text formats a driver listens for when it is not told: the stream's model decides.

Prose quotes calls ("send ```json {…}```", "Hermes writes <tool_call>…</tool_call>"),
so listening for every format runs tools from explanations. By default a stream's text
is read only in the formats its model writes (``formats_for_model`` on the model name
the stream carries) plus the formats documented as leaking on its wire
(:data:`WIRE_LEAKS`). Fenced JSON, bare JSON and pythonic lists are never chosen by
default (:data:`OPT_IN_FORMATS`): ordinary answers and examples look exactly like them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callgate.strategies.text.formats import formats_for_model

OPT_IN_FORMATS = ("fenced_json", "bare_json", "pythonic")
"""Formats read only when a driver names them: prose and answers quote them."""

WIRE_LEAKS: Mapping[str, tuple[str, ...]] = {"cohere": ("command_r",)}
"""Formats a wire's models write into text whatever the model name (Cohere's Command
models fall back to their action markup). Other wires leak in their model's own format,
read from the model name."""


def model_name(chunk: Mapping[str, Any]) -> str | None:
    """The model name a first chunk carries, where its wire puts it, or None.

    OpenAI chunks and Ollama lines: ``model``; Anthropic ``message_start``:
    ``message.model``; Responses ``response.created``: ``response.model``; Gemini:
    ``modelVersion``. Bedrock and Cohere streams carry none.
    """
    for holder, key in ((chunk, "model"), (chunk, "modelVersion")):
        if isinstance(holder.get(key), str):
            return str(holder[key])
    for envelope in ("message", "response"):
        inner = chunk.get(envelope)
        if isinstance(inner, Mapping) and isinstance(inner.get("model"), str):
            return str(inner["model"])
    return None


def default_text_formats(wire: str | None, model: str | None) -> tuple[str, ...]:
    """The formats a driver listens for on ``wire`` for ``model`` when not told."""
    names = [*WIRE_LEAKS.get(wire or "", ()), *formats_for_model(model or "")]
    return tuple(dict.fromkeys(n for n in names if n not in OPT_IN_FORMATS))


LENGTH_REASONS = frozenset(
    {
        "length",
        "max_tokens",
        "MAX_TOKENS",
        "model_context_window_exceeded",
    }
)
"""Turn-level finish reasons that say the output was cut at a length limit, as each wire
spells it: OpenAI and Ollama ``length``, Anthropic and Bedrock ``max_tokens`` (Anthropic
also ``model_context_window_exceeded``), Gemini and Cohere ``MAX_TOKENS``. The Responses
API's ``response.incomplete`` (reason ``incomplete: …``) is a cut whatever its reason."""


FILTER_REASONS = frozenset(
    {
        "content_filter",
        "refusal",
        "guardrail_intervened",
        "content_filtered",
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
    }
)
"""Turn-level finish reasons that say a filter stopped the output, as each wire spells it:
OpenAI ``content_filter``, Anthropic ``refusal``, Bedrock ``guardrail_intervened`` and
``content_filtered``, Gemini's safety reasons."""


def _cut_reason(reason: object, reasons: frozenset[str]) -> bool:
    """Whether ``reason`` is one of ``reasons`` or a Responses ``incomplete`` one.

    A reason that is not text (a malformed chunk's) counts as a cut: that turn did not end
    normally.
    """
    if reason is None:
        return False
    if not isinstance(reason, str):
        return True
    return reason in reasons or reason.startswith("incomplete")


def cut_off(done: bool, reason: object) -> bool:
    """Whether a turn that ended with ``reason`` was cut by a length limit or a filter.

    A text call whose block closed before such an end is not run: its turn did not end
    normally, as a native call's would not have (``wrong_terminal_reason``).
    """
    return done and _cut_reason(reason, LENGTH_REASONS | FILTER_REASONS)


def cut_short(done: bool, reason: object) -> bool:
    """Whether a stream ended short of its normal end: no terminal event, or a length cut.

    A text block still open then is shown (its close may have been cut off); after a
    normal end a complete one is a call (servers use the close as a stop sequence). A
    reason that is neither a string nor absent is the wire's own fault: it counts as a
    cut, so nothing unclosed runs on it.
    """
    return not done or _cut_reason(reason, LENGTH_REASONS)
