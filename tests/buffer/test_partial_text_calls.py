"""``LLMStreamBuffer.partial_calls()`` on calls written in the text: each format's call
shows its arguments while its block is open, always a prefix of what the format's parser
makes of the closed block, cut at every split (one character per delta and empty deltas
included) and at every cut of the content; malformed text stops growing and never raises.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import LLMStreamBuffer
from callgate.gate.partialjson import is_prefix
from callgate.strategies.text.invoke_payloads import DSML
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    GEMMA_STRING,
    SEP,
)
from callgate.testing.cuts import splits
from corpus.peer_text import CASES, Case
from partial_cases import (
    RENDER,
    check_prefixes,
    openai_finish,
    openai_text,
    outcome,
    play,
    qwen,
    text_buffer,
    text_turns,
)


@settings(max_examples=300)
@given(text_turns())
def test_text_call_arguments_grow_as_prefixes_at_every_split(
    turn: tuple[str, str, list[str]],
) -> None:
    fmt, _, deltas = turn
    chunks = [*map(openai_text, deltas), openai_finish("stop")]
    buffer = text_buffer(fmt)
    seen = play(chunks, buffer)
    finals = {call.slot: call.arguments for call in buffer.calls}
    check_prefixes(seen, finals)
    if fmt in (
        "qwen3_coder_xml", "glm45", "minimax_m2", "tool_call_tag", "gemma_special", "pythonic",
        "llama4_python", "deepseek_v32", "deepseek_v4",
    ):  # the text too  # fmt: skip
        for records in seen:
            for record in records:
                if record.ref in finals:
                    whole = json.dumps(finals[record.ref], ensure_ascii=False)
                    assert whole.startswith(record.text())
        for ref, final in finals.items():
            last = next(r for r in seen[-1] if r.ref == ref)
            assert last.text() == json.dumps(final, ensure_ascii=False)
    quiet = text_buffer(fmt)
    play(chunks, quiet, read=False)
    assert outcome(buffer) == outcome(quiet)


@settings(max_examples=300)
@given(text_turns(), st.data())
def test_a_text_turn_cut_anywhere_runs_nothing_and_shows_only_prefixes(
    turn: tuple[str, str, list[str]], data: st.DataObject
) -> None:
    """Cut at any character (deltas of every shape, empty ones included; prose with no
    markup too): no call runs, every record is a prefix of the uncut call's arguments, and
    prose with no markup is shown whole with no record at all."""
    fmt, content, _ = turn
    whole = text_buffer(fmt)
    play([openai_text(content), openai_finish("stop")], whole)
    finals = {call.slot: call.arguments for call in whole.calls}
    cut = content[: data.draw(st.integers(0, len(content)))]
    deltas = data.draw(splits(cut))
    buffer = text_buffer(fmt)
    shown: list[str] = []
    seen = []
    for delta in deltas:
        buffer.add(openai_text(delta))
        shown.append(buffer.text())
        seen.append(buffer.partial_calls())
    buffer.add(openai_finish("length"))
    buffer.end()
    shown.append(buffer.text())
    seen.append(buffer.partial_calls())
    assert not buffer.calls and buffer.verdict != "pass"
    for records in seen:
        for record in records:
            assert record.ref in finals or not whole.calls, (record, finals)
            if record.ref in finals:
                assert is_prefix(record.arguments, finals[record.ref]), (record, finals)
    if not any(opener in content for opener in ("<", "[", "{", "`")):  # no markup at all
        assert "".join(shown) == cut and all(records == () for records in seen)


@pytest.mark.parametrize("fmt", sorted(RENDER))
def test_a_text_call_shows_its_arguments_while_its_block_is_open(fmt: str) -> None:
    """Not at its close tag: a long string value grows character by character."""
    content = RENDER[fmt]([{"path": "p" * 40, "count": 3}])
    buffer = text_buffer(fmt)
    seen = play([openai_text(c) for c in content] + [openai_finish("stop")], buffer)
    growing = [r[0].arguments.get("path") for r in seen if r and not r[0].complete]
    assert len({p for p in growing if p}) >= 30
    counts = [r[0].arguments.get("count") for r in seen if r]
    assert 3 in counts and counts.index(3) > growing.index("p" * 40)  # typed once whole
    assert seen[-1][0].arguments == {"path": "p" * 40, "count": 3}
    assert seen[-1][0].source == fmt.strip()


def test_a_typed_value_appears_as_the_schema_types_it() -> None:
    content = qwen([{"count": 3, "flag": True, "either": 7, "loose": "7"}])
    buffer = text_buffer("qwen3_coder_xml")
    seen = play([openai_text(c) for c in content] + [openai_finish("stop")], buffer)
    assert seen[-1][0].arguments == {"count": 3, "flag": True, "either": 7, "loose": "7"}
    assert all(r[0].arguments.get("count") in (None, 3) for r in seen if r)


# -- bad text input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "<tool_call>\n<function=write>\n<parameter=path>\nab<parameter=count>\n3\n</parameter>\n"
        "</function>\n</tool_call>",
        "<tool_call>\n<function=write>\n<parameter=count>\nabc\n</parameter>\n</function>\n"
        "</tool_call>",
        "<tool_call>\n<function=write>\n<parameter=path>\nab\ud800cd\n</parameter>\n</function>\n"
        "</tool_call>",
    ],
)
def test_a_broken_text_call_stops_growing_and_never_raises(content: str) -> None:
    buffer = text_buffer("qwen3_coder_xml")
    seen = play([openai_text(c) for c in content] + [openai_finish("stop")], buffer)
    assert not buffer.calls
    shown = [r[0].arguments for r in seen if r]
    assert all(is_prefix(a, shown[-1]) for a in shown)  # it grew, then stopped
    assert seen[-1] == ()  # the block was shown as text: no call is left


JSON_CALL = '{"name": "write", "arguments": {"path": "ab'
BAD_TEXT = {
    "tool_call_tag": [
        f'<tool_call>\n{JSON_CALL}"}}}}}}\n</tool_call>',  # a stray brace
        f"<tool_call>\n{JSON_CALL}\\\n</tool_call>",  # an escape never finished
        f'<tool_call>\n{JSON_CALL}\\ud800cd"}}}}\n</tool_call>',  # half a surrogate pair
        f'<tool_call>\n{JSON_CALL}\ud800cd"}}}}\n</tool_call>',  # a lone surrogate
    ],
    "fenced_json": [
        f'```json\n{JSON_CALL}"}}}}}}\n```',
        f"```json\n{JSON_CALL}\\\n```",
        f'```json\n{JSON_CALL}\\udc00"}}}}\n```',
    ],
    "kimi_k2": [
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0"
        '<|tool_call_argument_begin|>{"path": "ab"}}<|tool_call_end|><|tool_calls_section_end|>',
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0"
        '<|tool_call_argument_begin|>{"path": "ab\\<|tool_call_end|><|tool_calls_section_end|>',
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0"
        '<|tool_call_argument_begin|>{"path": "ab\\ud800x"}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
    ],
    "bracket_tool_calls": [
        '[TOOL_CALLS]write[ARGS]{"path": "ab"}}',
        '[TOOL_CALLS]write[ARGS]{"path": "ab\\',
        '[TOOL_CALLS]write[ARGS]{"path": "ab\\ud800cd"}',
        '[TOOL_CALLS][{"name": "write", "arguments": {"path": "ab\\ud800cd"}}]',
    ],
    "glm45": [
        "<tool_call>write\n<arg_key>path</arg_key>\n<arg_value>ab\ud800cd</arg_value>\n"
        "</tool_call>",
        "<tool_call>write\n<arg_key>count</arg_key>\n<arg_value>3}</arg_value>\n</tool_call>",
    ],
    "gemma_special": [
        f"<|tool_call>call:write{{path:{GEMMA_STRING}ab{GEMMA_STRING}}}}}cd<tool_call|>",
        f"<|tool_call>call:write{{path:{GEMMA_STRING}ab\ud800cd{GEMMA_STRING}}}<tool_call|>",
        f"<|tool_call>call:write{{path:{GEMMA_STRING}ab{GEMMA_STRING},count:3x}}cd<tool_call|>",
    ],
    "deepseek": [
        f'{CALLS_BEGIN}{CALL_BEGIN}write{SEP}{{"path": "ab"}}}}cd{CALL_END}{CALLS_END}',
        f'{CALLS_BEGIN}{CALL_BEGIN}write{SEP}{{"path": "ab\\ud800cd"}}{CALL_END}{CALLS_END}',
    ],
    "pythonic": [
        "[write(path='ab')) cd]",
        "[write(path='ab\\ud800cd')]",
        "[write(path='ab' + 'cd')]",
    ],
    "minimax_m2": [
        '<minimax:tool_call>\n<invoke name="write">\n<parameter name="path">ab\ud800cd'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
        '<minimax:tool_call>\n<invoke name="write">\n<parameter name="meta">{"a": 1}}'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
    ],
    "deepseek_v32": [
        f'<{DSML}function_calls>\n<{DSML}invoke name="write">\n<{DSML}parameter name="path" '
        f'string="true">ab\ud800cd</{DSML}parameter>\n</{DSML}invoke>\n</{DSML}function_calls>',
        f'<{DSML}function_calls>\n<{DSML}invoke name="write">\n<{DSML}parameter name="meta" '
        f'string="false">{{"a": 1}}}}cd</{DSML}parameter>\n</{DSML}invoke>\n'
        f"</{DSML}function_calls>",
        f'<{DSML}function_calls>\n<{DSML}invoke name="write">\n<{DSML}parameter name="path" '
        f'string="true">ab<{DSML}parameter name="count" string="true">3cd</{DSML}parameter>\n'
        f"</{DSML}invoke>\n</{DSML}function_calls>",
    ],
}


@pytest.mark.parametrize(
    ("fmt", "content"), [(fmt, c) for fmt, cases in BAD_TEXT.items() for c in cases]
)
def test_malformed_arguments_stop_at_their_last_valid_prefix_in_every_format(
    fmt: str, content: str
) -> None:
    """A stray brace, an unfinished escape, half a surrogate pair: no raise, no call."""
    for size in (1, 3, len(content)):
        buffer = text_buffer(fmt)
        pieces = [content[i : i + size] for i in range(0, len(content), size)]
        seen = play([*map(openai_text, pieces), openai_finish("stop")], buffer)
        assert not buffer.calls, (fmt, content)
        shown = [r[0].arguments for r in seen if r]
        assert all(is_prefix(a, shown[-1]) for a in shown)  # it grew, then stopped
        assert all("cd" not in json.dumps(a) for a in shown)  # nothing past the break
        assert seen[-1] == ()
        assert shown or size > 1  # one character at a time it showed something first


def test_a_block_naming_no_tool_of_the_turn_lists_no_call() -> None:
    content = "<tool_call>\n<function=other>\n<parameter=path>\nab"
    buffer = text_buffer("qwen3_coder_xml")
    for c in content:
        buffer.add(openai_text(c))
    assert buffer.partial_calls() == ()


DSML_PEER = [c for c in CASES if c.format in ("deepseek_v32", "deepseek_v4") and c.calls]


@pytest.mark.parametrize("case", DSML_PEER, ids=[c.id for c in DSML_PEER])
def test_a_peer_dsml_call_grows_as_prefixes_one_character_at_a_time(case: Case) -> None:
    """The DSML outputs of vLLM's parser tests, one character per delta: every record is a
    prefix of the call the closed block gives, and the last one is that call."""
    schemas = {name: {"type": "object"} for name, _ in case.calls} | (case.schemas or {})
    buffer = LLMStreamBuffer(tool_schemas=schemas, text_formats=[case.format])
    seen = play([*map(openai_text, case.content), openai_finish("stop")], buffer)
    assert [(c.name, c.arguments) for c in buffer.calls] == case.calls
    check_prefixes(seen, {call.slot: call.arguments for call in buffer.calls})
    assert any(not r.complete for records in seen for r in records)  # seen while open


def test_a_dsml_value_reads_as_its_string_flag_says() -> None:
    """``string="true"``: text typed by the schema (a string grows; ``3`` becomes 3 at its
    close); ``string="false"``: strict JSON, whole at its close, even for a string."""
    content = (
        f'<{DSML}tool_calls>\n<{DSML}invoke name="write">\n'
        f'<{DSML}parameter name="path" string="true">abcdef</{DSML}parameter>\n'
        f'<{DSML}parameter name="count" string="true">3</{DSML}parameter>\n'
        f'<{DSML}parameter name="loose" string="false">"xyz"</{DSML}parameter>\n'
        f"</{DSML}invoke>\n</{DSML}tool_calls>"
    )
    buffer = text_buffer("deepseek_v4")
    seen = play([*map(openai_text, content), openai_finish("stop")], buffer)
    shown = [r[0].arguments for r in seen if r]
    paths = [a["path"] for a in shown if "path" in a]
    assert {"a", "abc", "abcde"} <= set(paths)  # grew a character at a time
    assert all(a.get("count") in (None, 3) for a in shown)
    assert next(a["loose"] for a in shown if "loose" in a) == "xyz"  # never part of it
    assert shown[-1] == {"path": "abcdef", "count": 3, "loose": "xyz"}
    assert buffer.calls[0].arguments == shown[-1]
