"""``LLMStreamBuffer.partial_calls()``: each call's arguments while it forms, on every wire.

After every chunk each record's ``arguments`` is a prefix of the call's final arguments
(:func:`~callgate.gate.partialjson.is_prefix`) and, once the stream ended, equal to them;
reading the records changes neither the calls nor the verdict. Native calls on every
wire come from the kit's generated streams (arguments cut at every split, one character
per fragment included); calls written in the XML-like text formats and Kimi's tokens are
rendered here and their content cut at every split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import LLMStreamBuffer
from callgate.cli.capture import load_capture
from callgate.gate.partialjson import PartialJSON, is_prefix, value_at
from callgate.partial import PartialCall
from callgate.strategies import WIRE_STRATEGIES
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    GEMMA_STRING,
    SEP,
)
from callgate.testing.cuts import splits
from callgate.testing.wire_streams import StreamExample, compiled, streams
from callgate.testing.wires import WIRES, WireCall, encoder


def play(
    chunks: list[Any], buffer: LLMStreamBuffer, *, read: bool = True
) -> list[tuple[PartialCall, ...]]:
    """Feed ``chunks`` (reading the records after each when ``read``), then end."""
    seen = []
    for chunk in chunks:
        buffer.add(chunk)
        buffer.text()
        if read:
            seen.append(buffer.partial_calls())
    buffer.end()
    buffer.text()
    if read:
        seen.append(buffer.partial_calls())
    return seen


def outcome(buffer: LLMStreamBuffer) -> tuple[Any, ...]:
    return (
        buffer.verdict,
        [(c.slot, c.id, c.name, c.arguments) for c in buffer.calls],
        [(f.code, f.slot) for f in buffer.findings],
        buffer.as_dict(),
    )


def check_prefixes(seen: list[tuple[PartialCall, ...]], finals: dict[object, Any]) -> None:
    """Every record is a prefix of its call's final arguments; the last ones equal them."""
    for records in seen:
        for record in records:
            if record.ref in finals:
                assert is_prefix(record.arguments, finals[record.ref]), (record, finals)
    last = {record.ref: record for record in seen[-1]}
    for ref, final in finals.items():
        assert last[ref].arguments == final
        assert last[ref].complete


# -- native calls on every wire ---------------------------------------------------------


def native_buffer(example: StreamExample) -> LLMStreamBuffer:
    return LLMStreamBuffer(
        tool_schemas=compiled(example.tools), strategy=WIRE_STRATEGIES[example.wire]()
    )


@settings(max_examples=150)
@given(st.sampled_from(WIRES).flatmap(lambda wire: streams(wire, calls=(1, 3))))
def test_native_arguments_grow_as_prefixes_on_every_wire(example: StreamExample) -> None:
    buffer = native_buffer(example)
    seen = play(example.feedable(), buffer)
    finals = {call.slot: call.arguments for call in buffer.calls}
    assert buffer.verdict == "pass" and finals
    check_prefixes(seen, finals)
    for record in seen[-1]:
        assert record.source == "native"
        # the model's own text ("" for a call a wire sends with no argument text)
        assert json.loads(record.text() or "{}") == finals[record.ref]
    quiet = native_buffer(example)
    play(example.feedable(), quiet, read=False)
    assert outcome(buffer) == outcome(quiet)


def one_character_stream(wire: str, arguments: dict[str, Any]) -> list[Any]:
    """One call of ``wire`` whose argument text comes one character per fragment."""
    enc = encoder(wire)
    text = json.dumps(arguments)
    call = WireCall("call_1", "write", tuple(text), key=enc.first_key(False), arguments=arguments)
    chunks = [piece.chunk for piece in enc.prelude([])] + enc.open(call)
    if enc.fragmented:
        for char in call.fragments:
            chunks += enc.fragment(call, char)
    chunks += enc.close(call)
    enc.state["reason"] = "tool_calls"
    return enc.finalise(chunks + enc.finish([call]) + enc.epilogue())


@pytest.mark.parametrize("wire", WIRES)
def test_one_character_per_fragment_shows_every_character_on_every_wire(wire: str) -> None:
    """Fragmented wires grow a character at a time; Gemini and Ollama give the whole value."""
    arguments = {"path": "a.py", "content": 'line "one"\n', "n": [1, 2.5, True, None]}
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play(one_character_stream(wire, arguments), buffer)
    values = [json.dumps(r[0].arguments) for r in seen if r]
    assert all(is_prefix(json.loads(v), arguments) for v in values)
    assert json.loads(values[-1]) == arguments and seen[-1][0].complete
    distinct = len(set(values))
    if encoder(wire).fragmented:
        assert distinct > len(arguments["content"]) + len(arguments["n"])
    else:  # the whole value as soon as the call came, before the gate has it
        assert distinct == 1
        assert seen[0] == () or seen[0][0].arguments == arguments
        assert any(r and r[0].arguments == arguments and r[0].complete for r in seen[:-2])


def test_a_long_string_argument_grows_chunk_by_chunk_on_openai() -> None:
    content = "x" * 200
    text = json.dumps({"path": "a.py", "content": content})
    chunks = [_openai_call(text[i : i + 10]) for i in range(0, len(text), 10)]
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play([_openai_open(), *chunks, _openai_finish("tool_calls")], buffer)
    lengths = [len(r[0].arguments.get("content", "")) for r in seen if r]
    assert lengths == sorted(lengths) and len(set(lengths)) > 15
    assert seen[-1][0].arguments == {"path": "a.py", "content": content}


@settings(max_examples=60)
@given(
    st.text(alphabet='ab\n"\\\t\u00e9\U0001f600\x01', min_size=1, max_size=40),
    st.integers(1, 7),
    st.randoms(use_true_random=False),
)
def test_records_read_in_any_order_keep_the_value_they_were_taken_with(
    content: str, size: int, order: Any
) -> None:
    """Escapes cut anywhere: each record, read before or after later ones, shows its prefix."""
    text = json.dumps({"content": content, "n": 1})
    chunks = [_openai_call(text[i : i + size]) for i in range(0, len(text), size)]
    chunks[1::3] = [[chunk, _openai_call("")] for chunk in chunks[1::3]]  # empty deltas between
    flat = [c for chunk in chunks for c in (chunk if isinstance(chunk, list) else [chunk])]
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    records = [r[0] for r in play([_openai_open(), *flat], buffer) if r]
    inside = 0
    shuffled = list(enumerate(records))
    order.shuffle(shuffled)
    for n, record in shuffled:
        value = record.arguments
        assert is_prefix(value, {"content": content, "n": 1})
        fresh = PartialJSON()
        fresh.feed(record.text(0))  # the same text read in one piece by a reader of its own
        assert value == value_at(fresh.shot()), (n, record.text(0))
        inside += "content" in value and not record.complete
    assert inside  # some records were taken inside the string


def test_a_long_string_with_escapes_cut_in_two_is_read_without_the_general_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """4-character deltas of a string whose newline escapes fall across deltas: the general
    reader runs for the text around the string, not once per cut escape (O(1) per delta)."""
    content = "def f(x):\n    return x  # \u00e9\n" * 200
    text = json.dumps({"path": "a.py", "content": content}, ensure_ascii=False)
    feeds: list[str] = []
    feed = PartialJSON.feed

    def counted(reader: PartialJSON, piece: str) -> None:
        feeds.append(piece)
        feed(reader, piece)

    monkeypatch.setattr(PartialJSON, "feed", counted)
    chunks = [_openai_call(text[i : i + 4]) for i in range(0, len(text), 4)]
    cut = sum(text[i + 3] == "\\" for i in range(0, len(text) - 4, 4))
    assert cut >= 100  # the stream does cut escapes in two
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play([_openai_open(), *chunks, _openai_finish("tool_calls")], buffer)
    assert len(feeds) < 20, feeds[:30]
    check_prefixes(seen, {0: {"path": "a.py", "content": content}})
    shown = [r[0].arguments.get("content", "") for r in seen if r]
    assert all(not s.endswith("\\") for s in shown) and len(set(shown)) > len(chunks) - 20


GEMINI_STREAMED = sorted(
    path
    for path in (Path(__file__).parents[1] / "captures" / "gemini").glob("*.jsonl")
    if "partialArgs" in path.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("path", GEMINI_STREAMED, ids=lambda p: p.stem)
def test_gemini_partial_args_show_a_growing_object_on_the_recorded_streams(path: Path) -> None:
    """``streamFunctionCallArguments``: the object grows piece by piece, not ``{}``."""
    chunks = list(load_capture(path.read_bytes()))
    buffer = LLMStreamBuffer()
    seen = play(chunks, buffer)
    finals = {call.slot: call.arguments for call in buffer.calls}
    check_prefixes(seen, finals)
    forming = [
        json.dumps(r.arguments) for records in seen for r in records if not r.complete
    ]
    if finals and any(finals.values()):
        assert len({f for f in forming if f != "{}"}) >= 2, forming  # it grew while open
        assert [r.arguments for r in seen[-1]] == list(finals.values())


# -- bad native input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "last"),
    [
        (['{"path": "a', '.py"}', "}"], {"path": "a.py"}),  # a stray close
        (['{"path": "a\\', "x", 'y"}'], {"path": "a"}),  # an unknown escape
        (['{"path": "a\\u00', '"}'], {"path": "a"}),  # an escape cut off
        (['{"path": "a\\ud800"}'], {"path": "a"}),  # a lone surrogate escape
        (['{"path": "a\udcc3', '\udca9"}'], {"path": "a"}),  # UTF-8 halves kept as surrogates
    ],
)
def test_bad_native_arguments_stop_growing_and_never_raise(
    fragments: list[str], last: dict[str, Any]
) -> None:
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    chunks = [_openai_open(), *map(_openai_call, fragments), _openai_finish("tool_calls")]
    seen = play(chunks, buffer)
    assert buffer.verdict == "fail" and not buffer.calls
    assert seen[-1][0].arguments == last
    assert not seen[-1][0].complete


def _openai_open() -> dict[str, Any]:
    delta = {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "write"}}]}
    return _openai(delta, None)


def _openai_call(text: str) -> dict[str, Any]:
    return _openai({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}, None)


def _openai_finish(reason: str) -> dict[str, Any]:
    return _openai({}, reason)


def _openai_text(text: str) -> dict[str, Any]:
    return _openai({"content": text}, None)


def _openai(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
    }


# -- calls written in the text ------------------------------------------------------------

TOOLS = {
    "write": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "count": {"type": "integer"},
            "flag": {"type": "boolean"},
            "meta": {"type": "object"},
            "either": {"type": ["integer", "string"]},
            "loose": {},
        },
    }
}
TEXT = st.text(alphabet='ab </>=\n"\\é{}[]:,', max_size=14) | st.sampled_from(
    [
        "</parameter>",
        "</parameter> x",
        "</arg_value>",
        "a\n",
        "\n",
        "<b>",
        "<parameter",
        "</function",
    ]
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "path": TEXT,
    "count": st.integers(-(10**6), 10**6),
    "flag": st.booleans(),
    "meta": st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=2),
    "either": st.integers(0, 99) | st.text(alphabet="xy", min_size=1, max_size=3),
    "loose": TEXT,
}


@st.composite
def text_arguments(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.permutations(list(VALUES)))[: draw(st.integers(0, len(VALUES)))]
    return {key: draw(VALUES[key]) for key in keys}


def raw(value: Any) -> str:
    """A value as the XML-like formats write it: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def qwen(calls: list[dict[str, Any]]) -> str:
    body = "".join(
        "<function=write>\n"
        + "".join(f"<parameter={k}>\n{raw(v)}\n</parameter>\n" for k, v in args.items())
        + "</function>\n"
        for args in calls
    )
    return f"<tool_call>\n{body}</tool_call>"


def glm(calls: list[dict[str, Any]]) -> str:
    pairs = "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{raw(v)}</arg_value>\n" for k, v in calls[0].items()
    )
    return f"<tool_call>write\n{pairs}</tool_call>"


def minimax(calls: list[dict[str, Any]]) -> str:
    body = "".join(
        '<invoke name="write">\n'
        + "".join(f'<parameter name="{k}">{raw(v)}</parameter>\n' for k, v in args.items())
        + "</invoke>\n"
        for args in calls
    )
    return f"<minimax:tool_call>\n{body}</minimax:tool_call>"


def kimi(calls: list[dict[str, Any]]) -> str:
    body = "".join(
        f"<|tool_call_begin|>functions.write:{n}<|tool_call_argument_begin|>"
        f"{json.dumps(args, ensure_ascii=False)}<|tool_call_end|>"
        for n, args in enumerate(calls)
    )
    return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


def tool_call_tag(calls: list[dict[str, Any]]) -> str:
    call = {"name": "write", "arguments": calls[0]}
    return f"<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"


def fenced(calls: list[dict[str, Any]]) -> str:
    call = {"name": "write", "parameters": calls[0]}
    return f"```json\n[{json.dumps(call, separators=(',', ':'))}]\n```"


def mistral(calls: list[dict[str, Any]]) -> str:
    return "".join(f"[TOOL_CALLS]write[ARGS]{json.dumps(args)}" for args in calls[:1])


def mistral_array(calls: list[dict[str, Any]]) -> str:
    return "[TOOL_CALLS]" + json.dumps([{"name": "write", "arguments": calls[0]}])


def gemma_value(value: Any) -> str:
    """A value as Gemma 4 writes it: strings between ``<|"|>`` tokens, keys too."""
    if isinstance(value, str):
        return f"{GEMMA_STRING}{value}{GEMMA_STRING}"
    if isinstance(value, dict):
        items = (f"{GEMMA_STRING}{k}{GEMMA_STRING}:{gemma_value(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(gemma_value, value)) + "]"
    return json.dumps(value)


def gemma(calls: list[dict[str, Any]]) -> str:
    pairs = ",".join(f"{k}:{gemma_value(v)}" for k, v in calls[0].items())
    return f"<|tool_call>call:write{{{pairs}}}<tool_call|>"


def deepseek(calls: list[dict[str, Any]]) -> str:
    """DeepSeek V3.1: ``NAME<sep>{json}`` per entry."""
    entries = "".join(
        f"{CALL_BEGIN}write{SEP}{json.dumps(args, ensure_ascii=False)}{CALL_END}" for args in calls
    )
    return f"{CALLS_BEGIN}{entries}{CALLS_END}"


def deepseek_v3(calls: list[dict[str, Any]]) -> str:
    """DeepSeek V3: ``function<sep>NAME`` then the arguments in a json fence, per entry."""
    entries = "".join(
        f"{CALL_BEGIN}function{SEP}write\n```json\n{json.dumps(args)}\n```{CALL_END}\n"
        for args in calls
    )
    return f"{CALLS_BEGIN}{entries}{CALLS_END}"


def pythonic(calls: list[dict[str, Any]]) -> str:
    """Python source: each value as ``repr`` writes it (quotes and escapes its own way)."""
    body = ", ".join(
        "write(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")" for args in calls
    )
    return f"[{body}]"


def llama4(calls: list[dict[str, Any]]) -> str:
    return f"<|python_start|>{pythonic(calls)}<|python_end|>"


RENDER = {
    "pythonic": pythonic,
    "llama4_python": llama4,
    "gemma_special": gemma,
    "deepseek": deepseek,
    "deepseek ": deepseek_v3,
    "qwen3_coder_xml": qwen,
    "glm45": glm,
    "minimax_m2": minimax,
    "kimi_k2": kimi,
    "tool_call_tag": tool_call_tag,
    "fenced_json": fenced,
    "bracket_tool_calls": mistral,
    "bracket_tool_calls ": mistral_array,  # the format before v11 (the key told apart by a space)
}
ONE_CALL = (
    "gemma_special", "glm45", "tool_call_tag", "fenced_json", "bracket_tool_calls",
    "bracket_tool_calls ",
)  # fmt: skip
"""Formats rendered here with one call per block."""


PROSE = st.text(alphabet="ab .,\né:", max_size=12)
"""Text with no markup of any format."""


@st.composite
def text_turns(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    """A format, a content in it (or prose alone, no markup at all), and its deltas (empty
    ones included)."""
    fmt = draw(st.sampled_from(sorted(RENDER)))
    if draw(st.integers(0, 5)) == 0:
        content = draw(PROSE)
        return fmt, content, draw(splits(content))
    calls = draw(st.lists(text_arguments(), min_size=1, max_size=1 if fmt in ONE_CALL else 2))
    content = draw(st.sampled_from(["", "Sure. "])) + RENDER[fmt](calls)
    return fmt, content, draw(splits(content))


def text_buffer(fmt: str) -> LLMStreamBuffer:
    return LLMStreamBuffer(tool_schemas=TOOLS, text_formats=[fmt.strip()])


@settings(max_examples=300)
@given(text_turns())
def test_text_call_arguments_grow_as_prefixes_at_every_split(
    turn: tuple[str, str, list[str]],
) -> None:
    fmt, _, deltas = turn
    chunks = [*map(_openai_text, deltas), _openai_finish("stop")]
    buffer = text_buffer(fmt)
    seen = play(chunks, buffer)
    finals = {call.slot: call.arguments for call in buffer.calls}
    check_prefixes(seen, finals)
    if fmt in (
        "qwen3_coder_xml", "glm45", "minimax_m2", "tool_call_tag", "gemma_special", "pythonic",
        "llama4_python",
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
    play([_openai_text(content), _openai_finish("stop")], whole)
    finals = {call.slot: call.arguments for call in whole.calls}
    cut = content[: data.draw(st.integers(0, len(content)))]
    deltas = data.draw(splits(cut))
    buffer = text_buffer(fmt)
    shown: list[str] = []
    seen = []
    for delta in deltas:
        buffer.add(_openai_text(delta))
        shown.append(buffer.text())
        seen.append(buffer.partial_calls())
    buffer.add(_openai_finish("length"))
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
    seen = play([_openai_text(c) for c in content] + [_openai_finish("stop")], buffer)
    growing = [r[0].arguments.get("path") for r in seen if r and not r[0].complete]
    assert len({p for p in growing if p}) >= 30
    counts = [r[0].arguments.get("count") for r in seen if r]
    assert 3 in counts and counts.index(3) > growing.index("p" * 40)  # typed once whole
    assert seen[-1][0].arguments == {"path": "p" * 40, "count": 3}
    assert seen[-1][0].source == fmt.strip()


def test_a_typed_value_appears_as_the_schema_types_it() -> None:
    content = qwen([{"count": 3, "flag": True, "either": 7, "loose": "7"}])
    buffer = text_buffer("qwen3_coder_xml")
    seen = play([_openai_text(c) for c in content] + [_openai_finish("stop")], buffer)
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
    seen = play([_openai_text(c) for c in content] + [_openai_finish("stop")], buffer)
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
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0'
        '<|tool_call_argument_begin|>{"path": "ab"}}<|tool_call_end|><|tool_calls_section_end|>',
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0'
        '<|tool_call_argument_begin|>{"path": "ab\\<|tool_call_end|><|tool_calls_section_end|>',
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0'
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
        seen = play([*map(_openai_text, pieces), _openai_finish("stop")], buffer)
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
        buffer.add(_openai_text(c))
    assert buffer.partial_calls() == ()
