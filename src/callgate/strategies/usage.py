"""Where each wire reports the output tokens a turn used (for ``max_tokens``).

A turn whose output tokens reach the request's limit was cut short, whatever finish
reason the server wrote (vLLM reports ``tool_calls`` on such a turn): the strategies
hand the count to :meth:`~callgate.gate.turn.TurnGate.usage`. The fields, per wire, and
where each is documented:

- openai: ``usage.completion_tokens`` (reasoning tokens included), on the last chunk or
  a usage-only chunk with no choices after the finish (OpenAI API reference, chat
  completion chunk ``usage`` and ``stream_options.include_usage``; TGI's
  ``router/src/chat.rs`` and vLLM's ``serving_chat.py`` send the same chunk);
- openai-responses: ``response.usage.output_tokens`` on ``response.completed`` and
  ``response.incomplete`` (OpenAI API reference, ``ResponseUsage``);
- anthropic: ``message_delta.usage.output_tokens``, cumulative, before ``message_stop``
  (Anthropic Messages streaming docs: each ``message_delta`` count is the running total);
- bedrock: ``metadata.usage.outputTokens``, after ``messageStop`` (Bedrock
  ``ConverseStreamMetadataEvent``, ``TokenUsage``);
- gemini: ``usageMetadata.candidatesTokenCount`` plus ``thoughtsTokenCount`` (a thinking
  model's thought tokens; Gemini API ``GenerateContentResponse.UsageMetadata``), counted
  with the output: a thinking turn can spend its budget thinking;
- cohere: ``message-end`` ``delta.usage.tokens.output_tokens``, else
  ``billed_units.output_tokens`` (Cohere v2 chat stream, ``Usage``);
- ollama: ``eval_count``, the tokens generated, on the ``done: true`` line (Ollama API
  docs, ``/api/chat``).
"""

from __future__ import annotations

from collections.abc import Mapping


def count_at(value: object, *path: str) -> int | None:
    """The int found by following ``path`` through mappings, or None (absent, not a count)."""
    for key in path:
        if type(value) is not dict and not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if type(value) is int and value >= 0 else None


def total(*counts: int | None) -> int | None:
    """The sum of the counts present, or None when none is."""
    present = [c for c in counts if c is not None]
    return sum(present) if present else None
