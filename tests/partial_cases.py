"""What the partial-arguments tests share: feeding a buffer and reading its records after
every chunk, the checks of a prefix, OpenAI chunks, and the text formats' renderers (a
call's arguments written the way each format writes them)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from callgate import LLMStreamBuffer
from callgate.gate.partialjson import is_prefix
from callgate.partial import PartialCall
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


def openai_open() -> dict[str, Any]:
    delta = {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "write"}}]}
    return _openai(delta, None)


def openai_call(text: str) -> dict[str, Any]:
    return _openai({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}, None)


def openai_finish(reason: str) -> dict[str, Any]:
    return _openai({}, reason)


def openai_text(text: str) -> dict[str, Any]:
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


def dsml(calls: list[dict[str, Any]], opener: str, *, typed: bool) -> str:
    """DeepSeek's DSML invokes: text as ``string="true"``; any other value as JSON with
    ``string="false"``, or (``typed``) as text the schema types, ``string="true"``."""

    def parameter(key: str, value: Any) -> str:
        text = isinstance(value, str) or typed
        flag = "true" if text else "false"
        body = raw(value) if text else json.dumps(value, ensure_ascii=False)
        return f'<{DSML}parameter name="{key}" string="{flag}">{body}</{DSML}parameter>\n'

    body = "".join(
        f'<{DSML}invoke name="write">\n'
        + "".join(parameter(k, v) for k, v in args.items())
        + f"</{DSML}invoke>\n"
        for args in calls
    )
    return f"<{DSML}{opener}>\n{body}</{DSML}{opener}>"


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
    "deepseek_v32": lambda calls: dsml(calls, "function_calls", typed=False),
    "deepseek_v4": lambda calls: dsml(calls, "tool_calls", typed=True),
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
