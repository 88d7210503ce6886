"""Every wire is one record, and every table keyed by a wire's name is read from the records.

A record is complete (its profile name names its strategy and round-trips through the
command line's lookup, its place in recognition is unique, its module defines it), its
terminal rules are the ones its reader applies (a call ended with a reason the record
says ends calls passes; one the record says cuts is refused), and the tables that other
layers keep (strategies, recognition, tool specs, the testing kit's encoders, quirks and
SDK packages, the text engine's cut reasons and leaks) are the records' own fields.
"""

from __future__ import annotations

import json
import sys

import pytest

from callgate import WIRE_STRATEGIES, Wire
from callgate.cli.check import check_stream, load_fixture
from callgate.driver.tooldefs import SPECS, tool_specs
from callgate.strategies import (
    RECOGNITION_ORDER,
    WIRE_RECORDS,
    default_strategies,
    default_wire_strategies,
    wire_record,
)
from callgate.strategies.text.defaults import (
    FILTER_REASONS,
    LENGTH_REASONS,
    WIRE_LEAKS,
    cut_off,
    cut_short,
)
from callgate.strategies.text.formats import FORMATS
from callgate.testing.forms import (
    SDK_PACKAGES,
    SdkUnavailableError,
    raw_stream,
    sdk_available,
    to_sdk,
)
from callgate.testing.wires import (
    ENCODER_CLASSES,
    ENCODERS,
    QUIRKS,
    WIRES,
    Chunk,
    WireCall,
    encoder,
    encoder_class,
)

RECORDS = list(WIRE_RECORDS.values())
KIT = [w for w in RECORDS if w.name in WIRES]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = {"get_weather": SCHEMA}


def kit_wire(record: Wire) -> str:
    """The wire whose encoder writes ``record``'s chunks: its own, or its strategy's base's."""
    for base in record.strategy.__mro__:
        for other in KIT:
            if other.strategy is base:
                return other.name
    raise AssertionError(f"no kit encoder writes {record.name}'s chunks")


def one_call(wire: str, reason: str | None = None, text: str = "") -> list[Chunk]:
    """A turn of ``wire`` with ``text`` and one ``get_weather`` call, ended with ``reason``."""
    enc = encoder(wire)
    call = WireCall(
        enc.id_prefix + "a1",
        "get_weather",
        ('{"city": ', '"Paris"}') if enc.fragmented else (),
        key=enc.first_key(bool(text)),
        arguments={"city": "Paris"},
    )
    pieces = [
        *(p.chunk for p in enc.prelude([text] if text else [])),
        *enc.open(call),
        *(c for f in call.fragments for c in enc.fragment(call, f)),
        *enc.close(call),
        *enc.finish([call], reason),
        *enc.epilogue(),
    ]
    return enc.finalise(pieces)


# -- each record is complete -------------------------------------------------------------------


@pytest.mark.parametrize("record", RECORDS, ids=lambda w: w.name)
def test_a_record_names_its_strategy_and_its_module_defines_it(record: Wire) -> None:
    module = sys.modules[record.strategy.__module__]

    assert record.strategy.name == record.name
    assert any(value is record for value in vars(module).values())
    assert wire_record(record.name) is record
    assert record.terminal.field
    assert record.terminal.calls_end
    assert not record.terminal.calls_end & record.terminal.cuts
    assert set(record.leaks) <= set(FORMATS)


@pytest.mark.parametrize("record", RECORDS, ids=lambda w: w.name)
def test_each_profile_name_round_trips_through_the_command_line_lookup(record: Wire) -> None:
    chunks = one_call(kit_wire(record))

    fixture = load_fixture(json.dumps({"profile": record.name, "chunks": chunks}))
    result = check_stream(chunks, TOOLS, record.name)

    assert fixture["profile"] == record.name
    assert result["profile"] == record.name
    assert result["status"] == "pass", result


def test_an_unknown_profile_is_refused_naming_every_record() -> None:
    result = check_stream(one_call("openai"), TOOLS, "grpc")

    assert result["status"] == "invalid"
    (refused,) = result["findings"]
    assert refused["code"] == "invalid_fixture"
    assert all(name in refused["message"] for name in WIRE_RECORDS)
    with pytest.raises(ValueError, match="known: openai, mistral"):
        wire_record("grpc")


def test_the_recognition_order_is_total_and_by_name_wires_claim_nothing() -> None:
    places = sorted(w.recognition for w in RECORDS if w.recognition is not None)
    by_name = [w for w in RECORDS if w.recognition is None]

    assert places == list(range(len(places)))
    assert [w.name for w in RECOGNITION_ORDER] == [
        w.name
        for w in sorted(RECORDS, key=lambda w: w.recognition or 0)
        if w.recognition is not None
    ]
    for record in by_name:
        chunks = one_call(kit_wire(record))
        assert not any(record.strategy().recognizes(chunk) for chunk in chunks)


@pytest.mark.parametrize("record", KIT, ids=lambda w: w.name)
def test_auto_recognition_finds_each_recognised_wire_as_itself(record: Wire) -> None:
    result = check_stream(one_call(record.name, text="Checking."), TOOLS, "auto")

    assert result["profile"] == record.name
    assert result["status"] == "pass", result


# -- terminal rules are the reader's ---------------------------------------------------------


def terminal_cases() -> list[tuple[str, str, bool]]:
    cases = []
    for record in KIT:
        terminal = record.terminal
        ends = {r for r in terminal.calls_end | terminal.lenient if r is not None}
        cases += [(record.name, reason, True) for reason in sorted(ends)]
        cases += [(record.name, reason, False) for reason in sorted(terminal.cuts)]
    return cases


@pytest.mark.parametrize(("wire", "reason", "ends"), terminal_cases())
def test_a_call_ended_with_a_reason_passes_exactly_when_the_record_says_it_ends_calls(
    wire: str, reason: str, ends: bool
) -> None:
    result = check_stream(one_call(wire, reason), TOOLS, wire)

    assert result["status"] == ("pass" if ends else "fail"), result
    if not ends:
        assert "wrong_terminal_reason" in {f["code"] for f in result["findings"]}


@pytest.mark.parametrize(
    ("wire", "reason"),
    [(w.name, r) for w in KIT for r in sorted(w.terminal.lenient)],
)
def test_a_lenient_reason_is_refused_under_strict_finish(wire: str, reason: str) -> None:
    result = check_stream(one_call(wire, reason), TOOLS, wire, strict_finish=True)

    assert result["status"] == "fail", result


def test_the_text_engines_cut_reasons_are_exactly_the_records() -> None:
    length = set().union(*(w.terminal.length for w in RECORDS))
    filtered = set().union(*(w.terminal.filtered for w in RECORDS))

    assert all(cut_short(True, r) and cut_off(True, r) for r in length)
    assert all(cut_off(True, r) for r in filtered)
    ends = {r for w in RECORDS for r in w.terminal.calls_end | w.terminal.lenient}
    assert not any(cut_off(True, r) for r in ends)
    assert set(LENGTH_REASONS) <= length
    assert set(FILTER_REASONS) <= filtered


def test_the_text_engines_wire_leaks_are_the_records() -> None:
    assert dict(WIRE_LEAKS) == {w.name: w.leaks for w in RECORDS if w.leaks}


# -- the old tables are read from the records ------------------------------------------------


def test_the_strategy_tables_are_the_records() -> None:
    assert list(WIRE_STRATEGIES) == list(WIRE_RECORDS)
    assert all(WIRE_STRATEGIES[w.name] is w.strategy for w in RECORDS)
    assert [type(s) for s in default_wire_strategies()] == [w.strategy for w in RECOGNITION_ORDER]
    chain = default_strategies()
    assert [type(s) for s in chain[: len(RECOGNITION_ORDER)]] == [
        w.strategy for w in RECOGNITION_ORDER
    ]


def test_the_tool_specs_are_the_records_shapes_and_wraps() -> None:
    tools = [("get_weather", "Weather.", SCHEMA), ("ping", "Ping.", {"type": "object"})]

    assert list(SPECS) == list(WIRE_RECORDS)
    for record in RECORDS:
        specs = [record.tool_spec(*tool) for tool in tools]
        assert SPECS[record.name] is record.tool_spec
        wrapped = tool_specs(record.name, tools)
        if record.tools_key is None:
            assert wrapped == specs
        else:
            assert wrapped == [{record.tools_key: specs}]
        assert tool_specs(record.name, []) == []


def test_the_testing_kits_tables_are_the_records() -> None:
    assert list(ENCODERS) == [w.name for w in KIT]
    assert {cls.WIRE.name for cls in ENCODER_CLASSES} == set(WIRES)
    for cls in ENCODER_CLASSES:
        record = cls.WIRE
        assert encoder_class(record.name) is cls
        assert QUIRKS[record.name] is record.quirks
        made = encoder(record.name, frozenset(record.quirks))
        assert made.wire == record.name
        assert made.QUIRKS is record.quirks
        assert SDK_PACKAGES[record.name] == (record.sdk.package if record.sdk else "")
    with pytest.raises(ValueError, match="unknown wire 'mistral'"):
        encoder_class("mistral")


@pytest.mark.parametrize("record", KIT, ids=lambda w: w.name)
def test_the_raw_bytes_are_framed_as_the_record_says(record: Wire) -> None:
    chunks = one_call(record.name)
    raw = raw_stream(record.name, chunks).decode()
    framing = record.framing

    if framing.events == "lines":
        assert [json.loads(line) for line in raw.splitlines()] == chunks
        return
    events = [e for e in raw.split(framing.newline * 2) if e]
    done = [f"data: {framing.done}"] if framing.done is not None else []
    datas = [e.split(framing.newline)[-1] for e in events]
    assert (
        datas
        == [f"data: {json.dumps(c, ensure_ascii=False, separators=(',', ':'))}" for c in chunks]
        + done
    )
    named = [e.split(framing.newline)[0] for e in events[: len(chunks)]]
    if framing.named:
        assert named == [f"event: {c.get('type', '')}" for c in chunks]
    else:
        assert all(line.startswith("data: ") for line in named)


@pytest.mark.parametrize("record", KIT, ids=lambda w: w.name)
def test_the_sdk_form_is_the_records(record: Wire) -> None:
    chunk = one_call(record.name)[0]
    if record.sdk is None:
        assert SDK_PACKAGES[record.name] == ""
        assert to_sdk(record.name, chunk) == chunk
        return
    if not sdk_available(record.name):
        with pytest.raises(SdkUnavailableError, match=f"pip install {record.sdk.package}"):
            to_sdk(record.name, chunk)
        return
    module = record.sdk.stream_type.partition(":")[0]
    typed = to_sdk(record.name, chunk)
    assert not isinstance(typed, dict)
    assert type(typed).__module__.split(".")[0] == module.split(".")[0]


def test_an_unknown_wire_gets_the_known_ones_from_the_kits_forms() -> None:
    with pytest.raises(ValueError, match="unknown wire 'grpc'; known: openai, mistral"):
        raw_stream("grpc", [{"a": 1}])
    with pytest.raises(ValueError, match="unknown wire 'grpc'; known: openai, mistral"):
        to_sdk("grpc", {"a": 1})
