"""Gemini streamGenerateContent: the native response, display, split args, and a stateful fuzz.

The stateful test plans one turn (thought and text parts, then 1-4 whole calls, some of
them split over two chunks as newer models do) and emits it part by part, cutting chunks
at random. Faults are injected at most once each: an id reused by a later call, a call
with non-object args or no name, a truncated stream, a second finishReason, a call after
the finishReason, and a finishReason other than STOP. The test keeps its own model of
every slot and builds the expected stream=false response from what it sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from callgate import BufferUsageError, LLMStreamBuffer, ToolResult
from callgate.cli.check import report
from callgate.strategies import (
    AnthropicStrategy,
    ExtractedCall,
    GeminiStrategy,
    OpenAIStrategy,
    default_wire_strategies,
)
from callgate.testing.plans import REQUIRED_ARGUMENTS as REQUIRED
from callgate.testing.plans import TOOLS as TOOL_SCHEMAS
from callgate.testing.plans import arguments_for
from wire_common import FIXTURES, WireInvariants, calls_of, codes, fed, fed_fixture, stream_of

TEXT = st.text(max_size=8)

Chunk = dict[str, Any]
META = {"modelVersion": "gemini-2.5-flash", "responseId": "mK3aaNaeBcOxz7IP8ZPUoQw"}


def chunk(parts: list[Chunk], finish: str | None = None, tokens: int = 5) -> Chunk:
    candidate: Chunk = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 54, "candidatesTokenCount": tokens}
    return {"candidates": [candidate], "usageMetadata": usage, **META}


def call(name: str | None, args: Any, call_id: str | None = None) -> Chunk:
    function: Chunk = {} if name is None else {"name": name}
    if args is not None:
        function["args"] = args
    if call_id is not None:
        function["id"] = call_id
    return {"functionCall": function}


# -- the native response ------------------------------------------------------------------


def test_parallel_calls_assemble_into_the_stream_false_response() -> None:
    buffer = fed_fixture("gemini_parallel_calls.json")
    assert buffer.strategy is not None and buffer.strategy.name == "gemini"
    assert buffer.executable
    assert buffer.as_dict() == {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "text": "The user wants weather and time; both tools apply.",
                            "thought": True,
                        },
                        {"text": "I'll look both up for you."},
                        {
                            "functionCall": {
                                "name": "get_weather",
                                "args": {"city": "Paris", "unit": "C"},
                                "id": "fc_7qe2",
                            },
                            "thoughtSignature": "CiQBjz1rX2ZkYQ==",
                        },
                        {
                            "functionCall": {
                                "name": "get_time",
                                "args": {"tz": "Europe/Paris"},
                                "id": "fc_9xk1",
                            }
                        },
                        {
                            "functionCall": {
                                "name": "search",
                                "args": {"query": "café near Louvre", "limit": 3},
                                "id": "fc_3mz8",
                            }
                        },
                    ],
                },
                "index": 0,
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 54,
            "candidatesTokenCount": 55,
            "totalTokenCount": 109,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 54}],
        },
        **META,
    }


def test_thought_parts_are_kept_but_never_displayed() -> None:
    buffer = LLMStreamBuffer(tool_schemas=FIXTURES["gemini_parallel_calls.json"]["tool_schemas"])
    shown = []
    for item in stream_of("gemini_parallel_calls.json"):
        buffer.add(item)
        shown.append(buffer.text())
    assert shown[:4] == ["", "", "I'll look both up", " for you."]
    assert buffer.get_content() == "I'll look both up for you."
    strategy = GeminiStrategy()
    assert strategy.content_text(buffer.as_dict()) == "I'll look both up for you."


def test_split_args_are_merged_into_one_call() -> None:
    buffer = fed_fixture("gemini_split_args.json")
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "search", {"query": "café near Louvre", "limit": 3})]
    parts = buffer.as_dict()["candidates"][0]["content"]["parts"]
    assert parts == [
        {"text": "Checking."},
        {"functionCall": {"name": "search", "args": {"query": "café near Louvre", "limit": 3}}},
    ]


def test_snake_case_chunks_keep_their_names() -> None:
    buffer = fed_fixture("gemini_snake_case_sdk.json")
    assert buffer.executable
    message = buffer.as_dict()
    assert set(message) == {"candidates", "model_version", "response_id", "usage_metadata"}
    candidate = message["candidates"][0]
    assert candidate["finish_reason"] == "STOP"
    assert [next(iter(p)) for p in candidate["content"]["parts"]] == [
        "text",
        "function_call",
        "function_call",
    ]
    assert [c.name for c in GeminiStrategy().extract(message)] == ["get_weather", "get_time"]


class FinishReason(str, Enum):  # noqa: UP042 (as google-genai defines it)
    """google-genai's finish reasons are a ``str`` enum."""

    STOP = "STOP"


class SdkChunk:
    """Stands in for a google-genai ``GenerateContentResponse`` (pydantic, snake_case)."""

    def __init__(self, data: Chunk) -> None:
        self.data = data

    def model_dump(self, **options: object) -> Chunk:
        return self.data


def test_sdk_objects_with_an_enum_finish_reason_are_read() -> None:
    chunks = [
        SdkChunk({"candidates": [{"content": {"parts": [{"text": "Hi. "}], "role": "model"}}]}),
        SdkChunk(
            {
                "candidates": [
                    {
                        "content": {
                            "parts": [{"function_call": {"name": "ping", "id": "fc_1"}}],
                            "role": "model",
                        },
                        "finish_reason": FinishReason.STOP,
                    }
                ],
                "usage_metadata": {"total_token_count": 9},
            }
        ),
    ]
    buffer = fed(chunks)
    assert buffer.executable
    assert calls_of(buffer) == [(0, "fc_1", "ping", {})]
    part = buffer.as_dict()["candidates"][0]["content"]["parts"][1]
    assert part == {"function_call": {"name": "ping", "id": "fc_1"}}


def test_a_call_without_args_is_an_empty_object_and_keeps_its_shape() -> None:
    buffer = fed([chunk([call("ping", None)], "STOP")])
    assert buffer.executable
    assert calls_of(buffer) == [(0, None, "ping", {})]
    assert buffer.as_dict()["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "ping"}}
    ]
    assert GeminiStrategy().extract(buffer.as_dict()) == [ExtractedCall(None, "ping", {}, 0)]


def test_calls_are_not_executable_before_the_finish_reason() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    buffer.add(chunk([call("get_weather", {"city": "Paris"})]))
    buffer.add(chunk([{"text": ""}]))
    assert not buffer.executable and not buffer.is_finished()
    assert buffer.slots[0].state == "accumulating"
    buffer.add(chunk([], "STOP"))
    assert buffer.executable and buffer.is_finished()


# -- the split-args rule ------------------------------------------------------------------

W = "get_weather"
SPLIT_CASES: list[tuple[str, list[Chunk], list[tuple[Any, ...]]]] = [
    (
        "disjoint keys in the next chunk: merged",
        [chunk([call(W, {"city": "Paris"})]), chunk([call(W, {"unit": "C"})], "STOP")],
        [(0, None, W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "an empty text part between the pieces: merged",
        [
            chunk([call(W, {"city": "Paris"})]),
            chunk([{"text": ""}]),
            chunk([call(W, {"unit": "C"})], "STOP"),
        ],
        [(0, None, W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "the rest without an id, the first with one: merged, id kept",
        [chunk([call(W, {"city": "Paris"}, "fc_1")]), chunk([call(W, {"unit": "C"})], "STOP")],
        [(0, "fc_1", W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "the rest with the same id: merged",
        [
            chunk([call(W, {"city": "Paris"}, "fc_1")]),
            chunk([call(W, {"unit": "C"}, "fc_1")], "STOP"),
        ],
        [(0, "fc_1", W, {"city": "Paris", "unit": "C"})],
    ),
    (
        "both in one chunk: two calls",
        [chunk([call("ping", {"a": 1}), call("ping", {"b": 2})], "STOP")],
        [(0, None, "ping", {"a": 1}), (1, None, "ping", {"b": 2})],
    ),
    (
        "an overlapping key: two calls",
        [chunk([call(W, {"city": "Paris"})]), chunk([call(W, {"city": "Rome"})], "STOP")],
        [(0, None, W, {"city": "Paris"}), (1, None, W, {"city": "Rome"})],
    ),
    (
        "another name: two calls",
        [
            chunk([call(W, {"city": "Paris"})]),
            chunk([call("search", {"query": "x", "limit": 1})], "STOP"),
        ],
        [(0, None, W, {"city": "Paris"}), (1, None, "search", {"query": "x", "limit": 1})],
    ),
    (
        "another id: two calls",
        [
            chunk([call(W, {"city": "Paris"}, "fc_1")]),
            chunk([call(W, {"unit": "C", "city": "Rome"}, "fc_2")], "STOP"),
        ],
        [(0, "fc_1", W, {"city": "Paris"}), (1, "fc_2", W, {"unit": "C", "city": "Rome"})],
    ),
    (
        "an id where the first had none: two calls",
        [
            chunk([call(W, {"city": "Paris"})]),
            chunk([call(W, {"city": "Rome", "unit": "C"}, "fc_2")], "STOP"),
        ],
        [(0, None, W, {"city": "Paris"}), (1, "fc_2", W, {"city": "Rome", "unit": "C"})],
    ),
    (
        "text between the pieces: two calls",
        [
            chunk([call("ping", {"a": 1})]),
            chunk([{"text": "and "}, call("ping", {"b": 2})], "STOP"),
        ],
        [(0, None, "ping", {"a": 1}), (1, None, "ping", {"b": 2})],
    ),
    (
        "empty args on either side: two calls",
        [chunk([call("ping", {})]), chunk([call("ping", {"b": 2})], "STOP")],
        [(0, None, "ping", {}), (1, None, "ping", {"b": 2})],
    ),
]


@pytest.mark.parametrize(
    ("chunks", "expected"), [c[1:] for c in SPLIT_CASES], ids=[c[0] for c in SPLIT_CASES]
)
def test_split_args_rule(chunks: list[Chunk], expected: list[tuple[Any, ...]]) -> None:
    buffer = fed(chunks)
    assert (calls_of(buffer), codes(buffer)) == (expected, [])
    assert buffer.executable


def test_overlapping_key_with_the_same_id_is_a_collision_not_a_merge() -> None:
    buffer = fed_fixture("gemini_identity_collision.json")
    assert codes(buffer) == [("identity_collision", 1)]
    assert not buffer.executable


def test_a_piece_after_the_finish_reason_is_never_merged() -> None:
    buffer = fed([chunk([call(W, {"city": "Paris"})], "STOP"), chunk([call(W, {"unit": "C"})])])
    assert codes(buffer) == [("delta_after_terminal", 1), ("missing_terminal", 1)]
    assert not buffer.executable


@pytest.mark.parametrize(
    ("part", "code"),
    [
        (call(W, ["Paris"]), "non_object_arguments"),
        (call(W, "Paris"), "non_object_arguments"),
        (call(None, {"city": "Paris"}), "missing_name"),
        ({"functionCall": "get_weather"}, "malformed_chunk"),
        ("get_weather", "malformed_chunk"),
    ],
)
def test_unreadable_or_invalid_calls_block_the_turn(part: Any, code: str) -> None:
    buffer = fed([chunk([call(W, {"city": "Rome"}), part], "STOP")])
    assert code in [c for c, _ in codes(buffer)]
    assert not buffer.executable


def test_a_second_candidate_is_refused() -> None:
    second = chunk([call(W, {"city": "Rome"})], "STOP")
    second["candidates"].append({**second["candidates"][0], "index": 1})
    buffer = fed([second])
    assert ("malformed_chunk", None) in codes(buffer)
    assert not buffer.executable


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", "OTHER"])
def test_only_stop_ends_a_turn_with_calls(reason: str) -> None:
    buffer = fed([chunk([call(W, {"city": "Rome"})], reason)])
    assert codes(buffer) == [("wrong_terminal_reason", 0)]


# -- reading messages, results, recognition ------------------------------------------------


def test_extract_and_content_text_read_the_response() -> None:
    strategy = GeminiStrategy()
    message = fed_fixture("gemini_parallel_calls.json").as_dict()
    assert strategy.extract(message) == [
        ExtractedCall("fc_7qe2", "get_weather", {"city": "Paris", "unit": "C"}, 0),
        ExtractedCall("fc_9xk1", "get_time", {"tz": "Europe/Paris"}, 1),
        ExtractedCall("fc_3mz8", "search", {"query": "café near Louvre", "limit": 3}, 2),
    ]
    text_only = fed_fixture("gemini_text_only.json").as_dict()
    assert strategy.extract(text_only) == []
    assert strategy.content_text(text_only) == "Paris is the capital of France."
    assert strategy.extract({"role": "model", "parts": [call("ping", None)]}) == [
        ExtractedCall(None, "ping", {}, 0)
    ]


def test_result_messages_are_function_responses_in_a_user_content() -> None:
    calls = [
        ExtractedCall("fc_1", "get_weather", {"city": "Paris"}, 0),
        ExtractedCall(None, "get_time", {"tz": "UTC"}, 1),
    ]
    results = [ToolResult(calls[0], "18 C"), ToolResult(calls[1], "no such zone", is_error=True)]
    assert GeminiStrategy().result_messages(results) == [
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "18 C"},
                        "id": "fc_1",
                    }
                },
                {"functionResponse": {"name": "get_time", "response": {"error": "no such zone"}}},
            ],
        }
    ]
    assert GeminiStrategy().result_messages([]) == []


def test_prompt_blocked_response_ends_the_turn_without_calls() -> None:
    buffer = fed_fixture("gemini_prompt_blocked.json")
    assert buffer.is_finished() and buffer.turn_state == "not_applicable"
    assert "candidates" not in buffer.as_dict()


def own_shapes() -> list[Chunk]:
    shapes = [c for name in FIXTURES if name.startswith("gemini_") for c in stream_of(name)]
    return [*shapes, fed_fixture("gemini_parallel_calls.json").as_dict()]


def other_shapes() -> list[Chunk]:
    others = [
        c
        for name, data in FIXTURES.items()
        if not name.startswith("gemini_")
        for c in data.get("chunks", data.get("events"))
    ]
    messages = [
        fed(stream_of("openai_single_call.json")).as_dict(),
        fed(FIXTURES["anthropic_single_call.json"]["events"]).as_dict(),
    ]
    return others + messages


def test_recognition_is_disjoint_from_every_other_wire_strategy() -> None:
    strategies = default_wire_strategies()
    for shape in own_shapes():
        claimed = [s.name for s in strategies if s.recognizes(shape)]
        assert claimed == ["gemini"], (claimed, shape)
    gemini = GeminiStrategy()
    for shape in other_shapes():
        assert not gemini.recognizes(shape), shape
    assert not OpenAIStrategy().recognizes({"candidates": []})
    assert not AnthropicStrategy().recognizes({"candidates": []})


def test_profile_attributes() -> None:
    strategy = GeminiStrategy()
    assert (strategy.name, strategy.per_call_done, strategy.requires_id) == ("gemini", False, False)
    assert strategy.empty_arguments_object and strategy.leaks_into_text


def test_auto_recognition_picks_gemini() -> None:
    buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
    buffer.add(chunk([{"text": "hi"}]))
    assert buffer.strategy is not None and buffer.strategy.name == "gemini"


# -- the stateful test --------------------------------------------------------------------


@dataclass
class PlannedCall:
    name: str | None
    args: Any
    call_id: str | None
    split: tuple[dict[str, Any], dict[str, Any]] | None = None

    def part(self) -> Chunk:
        return call(self.name, self.args, self.call_id)


@dataclass
class SlotModel:
    key: int
    name: str | None
    call_id: str | None
    args: Any
    fate: str = "ok"
    """ok, or the finding code its checks will give (non_object_arguments, missing_name)."""
    state: str = "accumulating"
    late: bool = False


@dataclass
class Piece:
    kind: str
    """text, thought, call, half1 or half2."""
    text: str = ""
    call: PlannedCall | None = None


@dataclass
class Emitted:
    parts: list[Chunk] = field(default_factory=list)
    kinds: list[tuple[str, Any]] = field(default_factory=list)


@st.composite
def turn_plans(draw: st.DrawFn) -> list[Piece]:
    """Thought and text, then 1-4 calls (each holding key ``seq``), some split in two."""
    with_ids = draw(st.booleans())
    pieces: list[Piece] = [Piece("thought", t) for t in draw(st.lists(TEXT, max_size=2))]
    pieces += [Piece("text", t) for t in draw(st.lists(TEXT, max_size=3))]
    count = draw(st.integers(1, 4))
    for n in range(count):
        name = draw(st.sampled_from(sorted(TOOL_SCHEMAS)))
        args = {"seq": n, **{k: v for k, v in draw(arguments_for(name)).items() if k != "seq"}}
        call_id = f"fc_{n}{draw(st.text('abcdefgh0123456789', min_size=3, max_size=8))}"
        planned = PlannedCall(name, args, call_id if with_ids else None)
        keys = list(args)
        if len(keys) >= 2 and draw(st.booleans()):
            cut = draw(st.integers(1, len(keys) - 1))
            planned.split = (
                {k: args[k] for k in keys[:cut]},
                {k: args[k] for k in keys[cut:]},
            )
            pieces += [Piece("half1", call=planned), Piece("half2", call=planned)]
        else:
            pieces.append(Piece("call", call=planned))
        if draw(st.booleans()):
            pieces.append(Piece("text", draw(TEXT)))
    return pieces


class GeminiMachine(WireInvariants):
    """Emits one planned Gemini turn part by part; chunk boundaries and faults are drawn."""

    @initialize(plan=turn_plans())
    def open_turn(self, plan: list[Piece]) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOL_SCHEMAS)
        self.pending = list(plan)
        self.current = Emitted()
        self.sent: list[tuple[str, Any]] = []
        self.slots: list[SlotModel] = []
        self.turn = "streaming"
        self.split_open = False
        self.terminal_sent = False
        self.ended = False
        self.faults: set[str] = set()
        self.expected: list[tuple[str, int | None]] = []
        self.ranks: dict[int, int] = {}
        self.tokens = 0

    # -- plumbing ----------------------------------------------------------------------

    def _send(self, finish: str | None = None) -> None:
        """Send the current chunk; the model reads its parts first, then its finish."""
        self.tokens += 1
        self.buffer.add(chunk(self.current.parts, finish, self.tokens))
        for kind, value in self.current.kinds:
            self.sent.append((kind, value))
            if kind in ("call", "half1", "late"):
                self._open_slot(value, late=kind == "late")
        self.current = Emitted()
        if finish is not None:
            self._apply_finish(finish)

    def _apply_finish(self, reason: str) -> None:
        """The gate's turn done: the first closes and checks the open slots; a second
        blocks a turn that had ended cleanly (duplicate_terminal) and changes no slot."""
        if self.terminal_sent:
            if self.turn in ("executable", "not_applicable"):
                self.expected.append(("duplicate_terminal", None))
            self.turn = "blocked"
            for slot in self.slots:  # the buffer ends the stream on every finish chunk
                if slot.state == "accumulating":
                    self._block(slot, "missing_terminal")
            return
        self.terminal_sent = True
        for slot in self.slots:
            if slot.state == "accumulating":
                if reason != "STOP":
                    self._block(slot, "wrong_terminal_reason")
                elif slot.fate != "ok":
                    self._block(slot, slot.fate)
                else:
                    slot.state = "validated"
            elif slot.state == "validated":
                code = "duplicate_terminal" if reason == "STOP" else "wrong_terminal_reason"
                self._block(slot, code)
        if self.turn == "streaming":
            self.turn = "executable" if self.slots else "not_applicable"

    def _open_slot(self, planned: PlannedCall, *, late: bool) -> None:
        slot = SlotModel(len(self.slots), planned.name, planned.call_id, planned.args, late=late)
        if planned.name is None:
            slot.fate = "missing_name"
        elif not isinstance(planned.args, dict):
            slot.fate = "non_object_arguments"
        earlier = [s for s in self.slots if planned.call_id and s.call_id == planned.call_id]
        self.slots.append(slot)
        if late:
            if self.turn in ("executable", "not_applicable"):
                self.expected.append(("delta_after_terminal", slot.key))
            self.turn = "blocked"
        if earlier:
            self._block(slot, "identity_collision")
            slot.name = slot.call_id = None  # a conflicting identity is never recorded

    def _block(self, slot: SlotModel, code: str) -> None:
        slot.state = "blocked"
        self.expected.append((code, slot.key))
        self.turn = "blocked"

    def _add(self, piece: Piece) -> None:
        planned = piece.call
        if piece.kind in ("text", "thought"):
            part: Chunk = {"text": piece.text}
            if piece.kind == "thought":
                part["thought"] = True
            self.current.parts.append(part)
            self.current.kinds.append((piece.kind, piece.text))
            return
        assert planned is not None
        if piece.kind == "call":
            self.current.parts.append(planned.part())
            self.current.kinds.append(("call", planned))
        elif piece.kind == "half1":
            assert planned.split is not None
            self.current.parts.append(call(planned.name, planned.split[0], planned.call_id))
            self.current.kinds.append(("half1", planned))
            self._send()
            self.split_open = True
        else:
            assert planned.split is not None and not self.current.parts
            self.current.parts.append(call(planned.name, planned.split[1], None))
            self.current.kinds.append(("half2", planned))
            self.split_open = False

    # -- the stream --------------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        return not self.terminal_sent and not self.ended

    @precondition(lambda self: self.streaming and bool(self.pending))
    @rule()
    def add_next_part(self) -> None:
        self._add(self.pending.pop(0))

    @precondition(lambda self: self.streaming and bool(self.pending))
    @rule()
    def add_the_rest(self) -> None:
        while self.pending:
            self._add(self.pending.pop(0))

    @precondition(lambda self: not self.ended and bool(self.current.parts))
    @rule()
    def cut_chunk(self) -> None:
        self._send()

    @precondition(lambda self: not self.ended and not self.current.parts)
    @rule()
    def empty_text_chunk(self) -> None:
        self.current.parts.append({"text": ""})
        self.current.kinds.append(("text", ""))
        self._send()

    @precondition(lambda self: self.streaming)
    @rule()
    def finish_turn(self) -> None:
        while self.pending:
            self._add(self.pending.pop(0))
        self._send("STOP")

    @precondition(lambda self: self.terminal_sent and not self.ended)
    @rule()
    def end_stream(self) -> None:
        self._end()

    def _end(self) -> None:
        self.ended = True
        for slot in self.slots:
            if slot.state == "accumulating":
                self._block(slot, "missing_terminal")
        if self.turn == "streaming":
            self.turn = "not_applicable"
        self.buffer.end()

    @precondition(lambda self: self.ended)
    @rule()
    def add_after_end_is_refused(self) -> None:
        findings = self.buffer.findings
        with pytest.raises(BufferUsageError):
            self.buffer.add(chunk([{"text": "late"}]))
        assert self.buffer.findings == findings

    # -- faults, each at most once -----------------------------------------------------

    def _ids_to_reuse(self) -> list[PlannedCall]:
        """Calls with an id: sent, in the current chunk, or still to come."""
        done = [c for kind, c in self.sent + self.current.kinds if kind in ("call", "half1")]
        coming = [p.call for p in self.pending if p.kind in ("call", "half1") and p.call]
        return [c for c in done + coming if c.call_id]

    @precondition(
        lambda self: (
            self.streaming
            and not self.split_open
            and "id_reuse" not in self.faults
            and bool(self._ids_to_reuse())
        )
    )
    @rule(pick=st.integers(0, 3))
    def reuse_an_id(self, pick: int) -> None:
        """A call with another call's id (whichever comes second collides)."""
        self.faults.add("id_reuse")
        targets = self._ids_to_reuse()
        target = targets[pick % len(targets)]
        again = PlannedCall(target.name, target.args, target.call_id)
        self.current.parts.append(again.part())
        self.current.kinds.append(("call", again))

    @precondition(
        lambda self: "bad_call" not in self.faults and any(p.kind == "call" for p in self.pending)
    )
    @rule(pick=st.integers(0, 3), kind=st.sampled_from(["list", "string", "number", "no_name"]))
    def break_a_pending_call(self, pick: int, kind: str) -> None:
        self.faults.add("bad_call")
        calls = [p.call for p in self.pending if p.kind == "call" and p.call is not None]
        planned = calls[pick % len(calls)]
        if kind == "no_name":
            planned.name = None
        else:
            planned.args = {"list": [planned.args], "string": "{}", "number": 7}[kind]

    @precondition(lambda self: self.streaming and "truncation" not in self.faults and self.slots)
    @rule()
    def truncate(self) -> None:
        self.faults.add("truncation")
        self._end()

    @precondition(lambda self: self.streaming and "wrong_reason" not in self.faults)
    @rule(reason=st.sampled_from(["MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL"]))
    def finish_with_another_reason(self, reason: str) -> None:
        self.faults.add("wrong_reason")
        while self.pending:
            self._add(self.pending.pop(0))
        self._send(reason)

    @precondition(
        lambda self: (
            self.terminal_sent
            and not self.ended
            and "duplicate_terminal" not in self.faults
            and any(s.state == "validated" for s in self.slots)
        )
    )
    @rule()
    def second_finish_reason(self) -> None:
        self.faults.add("duplicate_terminal")
        self.current.parts.append({"text": ""})
        self.current.kinds.append(("text", ""))
        self._send("STOP")

    @precondition(
        lambda self: self.terminal_sent and not self.ended and "late_call" not in self.faults
    )
    @rule(name=st.sampled_from(sorted(TOOL_SCHEMAS)))
    def call_after_the_finish_reason(self, name: str) -> None:
        self.faults.add("late_call")
        args = {"seq": 99, **{key: "x" for key in REQUIRED[name]}}
        self.current.parts.append(call(name, args))
        self.current.kinds.append(("late", PlannedCall(name, args, None)))
        self._send()

    # -- the model's view, for the shared invariants (wire_common.WireInvariants) --------

    def model_slots(self) -> dict[int, str]:
        return {s.key: s.state for s in self.slots}

    def model_turn(self) -> str:
        return self.turn

    # -- the end of the turn -----------------------------------------------------------

    def teardown(self) -> None:
        if not hasattr(self, "buffer"):
            return
        if not self.ended:
            while self.pending and not self.terminal_sent:
                self._add(self.pending.pop(0))
            if not self.terminal_sent:
                self._send("STOP")
            self._end()
        result = report(self.buffer)
        assert [(c["slot"], c["id"], c["name"]) for c in result["calls"]] == [
            (s.key, s.call_id, s.name) for s in self.slots
        ]
        assert self.buffer.get_content() == "".join(v for k, v in self.sent if k == "text")
        if not self.faults:
            assert result["status"] == "pass", result
            assert result["findings"] == []
            assert [c["arguments"] for c in result["calls"]] == [s.args for s in self.slots]
            assert self.buffer.as_dict() == self._expected_response()
        else:
            assert result["status"] == "fail", result
            assert self.expected, f"faults {self.faults} predicted no finding"
            found = {(f["code"], f["slot"]) for f in result["findings"]}
            assert set(self.expected) <= found, (self.expected, found)

    def _expected_response(self) -> Chunk:
        """The stream=false response of a clean run, from what was sent."""
        parts: list[Chunk] = []
        run_kind: str | None = None
        for kind, value in self.sent:
            if kind in ("text", "thought"):
                if not value:
                    continue
                if run_kind == kind:
                    parts[-1]["text"] += value
                else:
                    parts.append(
                        {"text": value, **({"thought": True} if kind == "thought" else {})}
                    )
                    run_kind = kind
            elif kind in ("call", "half1"):
                parts.append(value.part())
                run_kind = None
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "index": 0,
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {"promptTokenCount": 54, "candidatesTokenCount": self.tokens},
            **META,
        }


def test_generated_turns_with_injected_faults_follow_the_model() -> None:
    run_state_machine_as_test(GeminiMachine, settings=settings.get_profile("machine"))
