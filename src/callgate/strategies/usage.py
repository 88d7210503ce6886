"""Where each wire reports the output tokens a turn used (for ``max_tokens``).

A turn whose output tokens reach the request's limit was cut short, whatever finish
reason the server wrote (vLLM reports ``tool_calls`` on such a turn): the strategies
hand the count to :meth:`~callgate.gate.turn.TurnGate.usage`. The fields, per wire:

- openai: ``usage.completion_tokens`` (reasoning tokens included), on the last chunk or
  a usage-only chunk after the finish (``stream_options.include_usage``);
- openai-responses: ``response.usage.output_tokens`` on ``response.completed``;
- anthropic: ``message_delta.usage.output_tokens`` (cumulative), before ``message_stop``;
- bedrock: ``metadata.usage.outputTokens``, after ``messageStop``;
- gemini: ``usageMetadata.candidatesTokenCount`` plus ``thoughtsTokenCount`` (thinking
  counts against ``maxOutputTokens``), on the finishing chunk;
- cohere: ``message-end`` ``delta.usage.tokens.output_tokens`` (else ``billed_units``);
- ollama: ``eval_count`` on the ``done: true`` line.
"""

from __future__ import annotations

from collections.abc import Mapping


def count_at(value: object, *path: str) -> int | None:
    """The int found by following ``path`` through mappings, or None (absent, not a count)."""
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if type(value) is int and value >= 0 else None


def total(*counts: int | None) -> int | None:
    """The sum of the counts present, or None when none is."""
    present = [c for c in counts if c is not None]
    return sum(present) if present else None
