"""``LLMStreamBuffer.partial_calls()``: each call's arguments while it forms, on every wire.

After every chunk each record's ``arguments`` is a prefix of the call's final arguments
(:func:`~callgate.gate.partialjson.is_prefix`) and, once the stream ended, equal to them;
reading the records changes neither the calls nor the verdict. Native calls on every
wire come from the kit's generated streams (arguments cut at every split, one character
per fragment included). Calls written in the text: ``test_partial_text_calls.py``.
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
from callgate.partial import PartialCalls
from callgate.strategies import WIRE_STRATEGIES
from callgate.testing.wire_streams import StreamExample, compiled, streams
from callgate.testing.wires import WIRES, WireCall, encoder
from partial_cases import check_prefixes, openai_call, openai_finish, openai_open, outcome, play

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
    chunks = [openai_call(text[i : i + 10]) for i in range(0, len(text), 10)]
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], buffer)
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
    chunks = [openai_call(text[i : i + size]) for i in range(0, len(text), size)]
    chunks[1::3] = [[chunk, openai_call("")] for chunk in chunks[1::3]]  # empty deltas between
    flat = [c for chunk in chunks for c in (chunk if isinstance(chunk, list) else [chunk])]
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    records = [r[0] for r in play([openai_open(), *flat], buffer) if r]
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
    chunks = [openai_call(text[i : i + 4]) for i in range(0, len(text), 4)]
    cut = sum(text[i + 3] == "\\" for i in range(0, len(text) - 4, 4))
    assert cut >= 100  # the stream does cut escapes in two
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], buffer)
    assert len(feeds) < 20, feeds[:30]
    check_prefixes(seen, {0: {"path": "a.py", "content": content}})
    shown = [r[0].arguments.get("content", "") for r in seen if r]
    assert all(not s.endswith("\\") for s in shown) and len(set(shown)) > len(chunks) - 20


def test_characters_json_allows_but_python_does_not_print_stay_on_the_short_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """U+2028, a no-break space, DEL, a zero-width space: strict JSON takes them raw in a
    string, so each delta is more of it (the general way is not taken for it); a raw tab
    is not, and the string stops growing before it."""
    content = "ab\u2028cd\u00a0ef\x7fgh\u200bij" * 40
    text = json.dumps({"content": content}, ensure_ascii=False)
    assert text.count("\u2028") == 40  # written raw, not escaped
    general: list[object] = []
    cold = PartialCalls._cold
    monkeypatch.setattr(PartialCalls, "_cold", lambda s, *a: (general.append(a), cold(s, *a))[1])
    chunks = [openai_call(text[i : i + 4]) for i in range(0, len(text), 4)]
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], buffer)
    assert len(general) < 10 < len(chunks)
    check_prefixes(seen, {0: {"content": content}})
    tabbed = text[:-6] + "\t" + text[-6:]
    chunks = [openai_call(tabbed[i : i + 4]) for i in range(0, len(tabbed), 4)]
    buffer = LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], buffer)
    assert not buffer.calls
    assert seen[-1][0].arguments == {"content": content[: len(content) - 4]}


def writer() -> LLMStreamBuffer:
    return LLMStreamBuffer(tool_schemas={"write": {"type": "object"}})


def test_deltas_whose_escapes_are_newlines_are_read_without_the_escape_regex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A delta whose only escapes are newlines is more of the open string without the
    escape regex; an escaped backslash before an ``n``, or a tab, still goes through it."""
    from callgate import partial

    matched: list[str] = []
    split = partial.PLAIN_SPLIT
    monkeypatch.setattr(partial, "PLAIN_SPLIT", lambda t: (matched.append(t), split(t))[1])
    content = "abc\nxyz" * 60  # each newline's escape whole in one 4-character delta
    text = json.dumps({"content": content})
    chunks = [openai_call(text[i : i + 4]) for i in range(0, len(text), 4)]
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], writer())
    check_prefixes(seen, {0: {"content": content}})
    assert sum("\\n" in text[i : i + 4] for i in range(0, len(text), 4)) > 50
    assert matched == []
    content = "a\\nb\tc\\\n" * 30  # a backslash then n; a tab; a backslash, a newline
    text = json.dumps({"content": content})
    chunks = [openai_call(text[i : i + 4]) for i in range(0, len(text), 4)]
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], writer())
    check_prefixes(seen, {0: {"content": content}})
    assert len(matched) > 30
    assert seen[-1][0].arguments == {"content": content}


@settings(max_examples=200)
@given(
    st.text(alphabet=["a", "n", "\\", "\n", "\t", '"', "\u00e9", "\x01"], max_size=60),
    st.integers(1, 7),
)
def test_a_string_of_escapes_grows_as_prefixes_at_any_delta_size(content: str, size: int) -> None:
    """Newlines, backslashes before an ``n``, quotes, tabs, control characters: every
    record is a prefix of the final arguments, whichever delta the escapes fall in."""
    text = json.dumps({"content": content, "n": 1}, ensure_ascii=False)
    chunks = [openai_call(text[i : i + size]) for i in range(0, len(text), size)]
    seen = play([openai_open(), *chunks, openai_finish("tool_calls")], writer())
    check_prefixes(seen, {0: {"content": content, "n": 1}})


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
    forming = [json.dumps(r.arguments) for records in seen for r in records if not r.complete]
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
    chunks = [openai_open(), *map(openai_call, fragments), openai_finish("tool_calls")]
    seen = play(chunks, buffer)
    assert buffer.verdict == "fail" and not buffer.calls
    assert seen[-1][0].arguments == last
    assert not seen[-1][0].complete
