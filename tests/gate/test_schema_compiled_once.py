"""A tool schema is checked against the metaschema and compiled once per distinct schema.

A buffer is built per turn with the same tools; the check costs far more than a turn's
chunks. An equal schema (another object, same key order) reuses the compiled one; a changed
or reordered schema, or one that is not JSON text, is checked anew; the verdicts never change,
and the error a call is refused with does not depend on which schema was compiled first.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from callgate import LLMStreamBuffer
from callgate.gate import schema as schema_module
from callgate.gate.limits import Limits
from callgate.gate.schema import ToolSchemas


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """Every argument the schema module's function ``name`` is called with, from now on."""
    seen: list[Any] = []
    real = getattr(schema_module, name)

    def counting(value: Any) -> Any:
        seen.append(value)
        return real(value)

    monkeypatch.setattr(schema_module, name, counting)
    return seen


@pytest.fixture
def audits(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen = counted(monkeypatch, "_audit")
    monkeypatch.setattr(schema_module, "_COMPILED", type(schema_module._COMPILED)())
    monkeypatch.setattr(schema_module, "_TOOLS", type(schema_module._TOOLS)())
    monkeypatch.setattr(schema_module, "_SHARED", type(schema_module._SHARED)())
    return seen


def schema(limit: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"q": {"type": "string", "maxLength": limit}},
        "required": ["q"],
    }


def test_an_equal_schema_is_not_checked_again(audits: list[Any]) -> None:
    first = ToolSchemas({"find": schema(3)})
    second = ToolSchemas({"find": schema(3), "other": schema(3)})
    assert len(audits) == 1
    for tools in (first, second):
        assert tools.check("find", {"q": "abc"}) is None
        refused = tools.check("find", {"q": "abcd"})
        assert refused is not None and refused.code == "schema_invalid"


def test_a_changed_schema_is_checked_anew(audits: list[Any]) -> None:
    ToolSchemas({"find": schema(3)})
    looser = ToolSchemas({"find": schema(10)})
    assert len(audits) == 2
    assert looser.check("find", {"q": "abcd"}) is None


def test_an_unsupported_schema_keeps_its_reason(audits: list[Any]) -> None:
    bad = {"type": "object", "properties": {"q": {"$ref": "https://example.com/s.json"}}}
    reasons = [ToolSchemas({"find": bad}).unsupported("find") for _ in range(2)]
    assert len(audits) == 1
    assert reasons[0] is not None and reasons[0] == reasons[1]


def test_a_schema_that_is_not_json_is_checked_each_time(audits: list[Any]) -> None:
    odd = {"type": "object", "properties": {"q": {"enum": [{1, 2}]}}}  # a set: not JSON
    for _ in range(2):
        ToolSchemas({"find": odd})
    assert len(audits) == 2


STRICT = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("first_seen", ["as written", "reordered"])
def test_the_reported_error_follows_the_schema_as_written_not_a_reordered_twin(
    audits: list[Any], first_seen: str
) -> None:
    reordered = dict(reversed(list(STRICT.items())))
    order = [STRICT, reordered] if first_seen == "as written" else [reordered, STRICT]
    findings = {id(tool): ToolSchemas({"w": tool}).check("w", {"town": "Oslo"}) for tool in order}
    written, twin = findings[id(STRICT)], findings[id(reordered)]
    assert written is not None and twin is not None
    assert "city" in written.message and "town" in twin.message


def test_a_turns_tools_from_an_equal_mapping_are_made_once(
    audits: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A buffer built per turn from the same tool mapping skips the dialect rewrite and the
    lookups; each turn still gets tables of its own, and a changed mapping is made anew."""
    made = counted(monkeypatch, "_tools")
    gemini = {"type": "OBJECT", "properties": {"q": {"type": "STRING", "nullable": True}}}
    turns = [ToolSchemas({"find": gemini, "other": schema(3)}) for _ in range(3)]
    assert len(made) == 1
    assert turns[0]._validators is not turns[1]._validators
    for tools in turns:
        assert tools.raw["find"] == {
            "type": "object",
            "properties": {"q": {"type": ["string", "null"]}},
        }
        assert tools.check("other", {"q": "abcd"}) is not None
    ToolSchemas({"other": schema(3), "find": gemini})  # another order: another mapping
    assert len(made) == 2


@pytest.mark.parametrize("other", [True, 1.0], ids=["true", "float"])
def test_values_equal_in_python_but_not_in_json_are_different_schemas(
    audits: list[Any], other: object
) -> None:
    """``1 == 1.0 == True`` in Python; a schema's ``const`` tells them apart, so must the key."""
    one = {"find": {"type": "object", "properties": {"q": {"const": 1}}}}
    twin = {"find": {"type": "object", "properties": {"q": {"const": other}}}}
    first, second = ToolSchemas(one), ToolSchemas(twin)
    assert first.check("find", {"q": 1}) is None
    assert second.raw["find"]["properties"]["q"]["const"] is other
    assert (second.check("find", {"q": 1}) is None) is (other == 1.0 and other is not True)
    assert ToolSchemas(one).check("find", {"q": True}) is not None


def test_an_equal_mapping_is_made_once_however_its_objects_are_shared(
    audits: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is the content only: neither which objects the mapping shares nor whether a
    name was built at run time (not interned) makes an equal mapping another entry."""
    made = counted(monkeypatch, "_tools")
    shared = schema(3)
    name = "".join(["fi", "nd"])
    ToolSchemas({"find": shared, "other": shared})
    ToolSchemas({name: schema(3), "other": schema(3)})
    assert len(made) == 1


def test_a_mapping_changed_after_a_turn_is_its_own_and_the_turn_keeps_its_own(
    audits: list[Any],
) -> None:
    """The user's dicts are not kept: a schema changed in place after a turn is the next
    turn's, and the earlier turn (and any later equal to it) still checks the old one."""
    tools = {"find": schema(3)}
    before = ToolSchemas(tools)
    tools["find"]["properties"]["q"]["maxLength"] = 10
    after = ToolSchemas(tools)
    assert after.check("find", {"q": "abcd"}) is None
    assert before.check("find", {"q": "abcd"}) is not None
    assert ToolSchemas({"find": schema(3)}).check("find", {"q": "abcd"}) is not None
    assert before.raw["find"]["properties"]["q"]["maxLength"] == 3


def one_call_turn(buffer: LLMStreamBuffer, arguments: str) -> str:
    """The verdict of an Anthropic turn of one ``find`` call with ``arguments``."""
    tool = {"type": "tool_use", "id": "toolu_1", "name": "find", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": arguments}
    for event in (
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": tool},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ):
        buffer.add(event)
    buffer.end()
    return buffer.verdict


def test_buffers_built_from_equal_mappings_share_their_checked_tools(audits: list[Any]) -> None:
    """A buffer per turn from an equal mapping gets the one ToolSchemas made for it (nothing
    of it changes in a turn); other tools, another schema or another step limit get their own,
    and each buffer's verdict follows its own schemas whichever was built first."""
    strict, loose = {"find": schema(3)}, {"find": schema(10)}
    first, again = (
        LLMStreamBuffer(tool_schemas=strict),
        LLMStreamBuffer(tool_schemas=copy.deepcopy(strict)),
    )
    assert first.schemas is again.schemas
    looser = LLMStreamBuffer(tool_schemas=loose)
    steps = LLMStreamBuffer(tool_schemas=strict, limits=Limits(max_schema_steps=1))
    other = LLMStreamBuffer(tool_schemas={"find": schema(3), "other": schema(3)})
    assert len({id(b.schemas) for b in (first, looser, steps, other)}) == 4
    assert one_call_turn(first, '{"q": "abcd"}') == "fail"
    assert one_call_turn(looser, '{"q": "abcd"}') == "pass"
    assert one_call_turn(again, '{"q": "abc"}') == "pass"
    assert one_call_turn(steps, '{"q": "abc"}') == "fail"
    assert [f.code for f in steps.findings] == ["limit_exceeded"]
    assert one_call_turn(LLMStreamBuffer(tool_schemas=strict), '{"q": "abcd"}') == "fail"
    assert one_call_turn(LLMStreamBuffer(tool_schemas={"other": schema(3)}), '{"q": "a"}') == "fail"


def test_a_mapping_that_is_not_json_gets_tools_of_its_own(audits: list[Any]) -> None:
    """Only a mapping that is JSON text is keyed; one marshal takes but JSON does not (a
    set in a schema) is made for each buffer."""
    odd = {"find": {"type": "object", "enum": {1, 2}}}
    assert (
        LLMStreamBuffer(tool_schemas=odd).schemas is not LLMStreamBuffer(tool_schemas=odd).schemas
    )
