"""One verdict for a Bedrock or Ollama turn the provider's error cuts, from every entry point.

The streams come from the public testing kit: text (with calls written in it, or prose,
or a near miss) cut at any split, then zero to two native calls, the last perhaps cut
mid-arguments, then the provider's error. Bedrock's are the exception events of
ConverseStreamOutput (Amazon Bedrock API Reference, "ConverseStreamOutput",
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html,
each with botocore's fields, see test_bedrock_errors.py); Ollama's is the line
``{"error": "an error was encountered while running the model"}`` (Ollama's API docs,
"Errors that occur while streaming", https://docs.ollama.com/api/errors). ``check``,
``replay --json``, a bare :class:`LLMStreamBuffer` and ``run_turn`` must all say ``fail``
with the ``provider_error`` first, run nothing and lose none of the text, as they do for
the OpenAI wire's errors (tests/buffer/test_one_verdict.py).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from callgate.testing import splits, stream_plans, text_contents
from callgate.testing.plans import TOOLS
from callgate.testing.wires import QUIRKS, WireCall, chunks_of, encoder
from entry_points import played_everywhere

Chunk = dict[str, Any]

ERRORS: dict[str, list[Chunk]] = {
    "bedrock": [
        {"internalServerException": {"message": "An internal server error occurred."}},
        {
            "modelStreamErrorException": {
                "message": "The model stream was interrupted.",
                "originalStatusCode": 500,
                "originalMessage": "Internal server error",
            }
        },
        {"validationException": {"message": "Input validation failed."}},
        {"throttlingException": {"message": "Too many tokens, please wait."}},
        {"serviceUnavailableException": {"message": "The service isn't available."}},
    ],
    "ollama": [{"error": "an error was encountered while running the model"}],
}
"""How each wire reports the provider's error once the stream began."""


@st.composite
def errored_streams(draw: st.DrawFn) -> tuple[str, list[Chunk], dict[str, Any], Any]:
    """A Bedrock or Ollama stream (text cut anywhere, then native calls) the error ends."""
    wire = draw(st.sampled_from(sorted(ERRORS)))
    quirks = frozenset(draw(st.sets(st.sampled_from(QUIRKS[wire]))))
    content = draw(text_contents())
    deltas = [d for d in draw(splits(content.content)) if d]
    plan = draw(stream_plans(calls=(0, 2), text=False))
    enc = encoder(wire, quirks)
    first = enc.first_key(bool(deltas))
    chunks = chunks_of(enc.prelude(deltas))
    for n, planned in enumerate(plan.calls):
        call = WireCall(
            None if wire == "ollama" else enc.id_prefix + planned.suffix,
            planned.name,
            planned.fragments if enc.fragmented else (),
            key=first + n,
            arguments=planned.arguments,
        )
        chunks += enc.open(call)
        sent = draw(st.integers(0, len(call.fragments)))
        for fragment in call.fragments[:sent]:
            chunks += enc.fragment(call, fragment)
        if sent == len(call.fragments) and draw(st.booleans()):
            chunks += enc.close(call)
    error = draw(st.sampled_from(ERRORS[wire]))
    event(f"{wire}: {next(iter(error))}, {len(plan.calls)} native calls")
    chunks.append(json.loads(json.dumps(error)))
    names = sorted({name for name, _ in content.calls})
    tools = {**TOOLS, **{name: {"type": "object"} for name in names}}
    return wire, chunks, tools, content


def listed(calls: list[dict[str, Any]]) -> list[tuple[str, Any, str]]:
    """A report's calls as (slot, name, state)."""
    return [(str(c["slot"]), c["name"], c["state"]) for c in calls]


@given(errored_streams())
def test_a_turn_the_provider_error_cuts_fails_alike_everywhere_and_runs_nothing(
    drawn: tuple[str, list[Chunk], dict[str, Any], Any],
) -> None:
    wire, chunks, tools, content = drawn
    checked, replayed, buffer, turn = played_everywhere(chunks, tools, content.formats)

    assert checked["profile"] == replayed["wire"] == wire
    assert checked["status"] == replayed["status"] == buffer.verdict == turn.status == "fail"
    errors = [f["code"] for f in checked["findings"] if f["severity"] == "error"]
    assert errors[0] == "provider_error"
    assert errors.count("provider_error") == 1
    assert [f.code for f in buffer.findings] == [f["code"] for f in checked["findings"]]
    assert listed(checked["calls"]) == listed(replayed["calls"])
    assert all(c["state"] != "validated" for c in checked["calls"])
    assert buffer.calls == []
    assert [r for r in turn.results if not r.refused] == []
    assert replayed["display"] == turn.text
    assert buffer.get_content() == content.content
