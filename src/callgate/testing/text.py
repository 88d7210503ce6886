"""Model output with calls embedded in its text, in every format callgate reads.

:data:`SAMPLES` and :data:`TAIL_SAMPLES` hold one or two sample calls per text format, as
the models write them, with the calls meant; the markup follows each format's public chat
template or its peers' parser tests (see docs/text-formats.md). :func:`text_contents`
draws prose around them, or prose with a near miss (markup that opens like a call and is
not one), and :meth:`TextContent.detected` is callgate's own reading of any cut of it.
"""

from __future__ import annotations

import callgate.testing.needs  # noqa: F401  (Hypothesis, or its install line)

# isort: split

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from callgate.strategies.text.invoke_payloads import DSML
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    SEP,
)

Call = tuple[str, dict[str, Any]]

KIMI_CALL = (
    "<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>"
    '{{"city": "{city}"}}<|tool_call_end|>'
)
DS_PARAM = f'<{DSML}parameter name="city" string="true">{{city}}</{DSML}parameter>'

SAMPLES: dict[str, list[tuple[str, list[Call]]]] = {
    "tool_call_tag": [
        (
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "qwen3_coder_xml": [
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "</function>\n</tool_call>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "glm45": [
        (
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
            "</tool_call>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "gemma_special": [
        (
            '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "tools_tag": [
        (
            '<tools>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tools>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "fenced_json": [
        (
            '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
            [("get_weather", {"city": "Paris"})],
        ),
        (
            '```xml\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "command_r": [
        (
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}}]<|END_ACTION|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "codec": [
        (
            '<callgate:call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
            "</callgate:call>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek": [
        (
            f"{CALLS_BEGIN}{CALL_BEGIN}function{SEP}get_weather\n```json\n"
            f'{{"city": "Paris"}}\n```{CALL_END}{CALLS_END}',
            [("get_weather", {"city": "Paris"})],
        ),
        (
            f'{CALLS_BEGIN}{CALL_BEGIN}get_weather{SEP}{{"city": "Paris"}}{CALL_END}'
            f"{CALL_BEGIN}get_time{SEP}{{}}{CALL_END}{CALLS_END}",
            [("get_weather", {"city": "Paris"}), ("get_time", {})],
        ),
    ],
    "kimi_k2": [
        (
            "<|tool_calls_section_begin|>"
            + KIMI_CALL.format(i=0, city="Paris")
            + KIMI_CALL.format(i=1, city="Oslo")
            + "<|tool_calls_section_end|>",
            [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        ),
    ],
    "kimi_k2_singular": [
        (
            "<|tool_call_section_begin|>"
            + KIMI_CALL.format(i=0, city="Paris")
            + "<|tool_call_section_end|>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "minimax_m2": [
        (
            '<minimax:tool_call>\n<invoke name="get_weather">\n'
            '<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek_v32": [
        (
            f'<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\n'
            + DS_PARAM.format(city="Paris")
            + f"\n</{DSML}invoke>\n</{DSML}function_calls>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek_v4": [
        (
            f'<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">\n'
            + DS_PARAM.format(city="Paris")
            + f"\n</{DSML}invoke>\n</{DSML}tool_calls>",
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "harmony": [
        (
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
            '{"city": "Paris"}<|call|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "harmony_role": [
        (
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
            '{"city": "Paris"}<|call|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "llama4_python": [
        (
            '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
}
"""Formats with a closing delimiter: prose may follow the call."""

TAIL_SAMPLES: dict[str, list[tuple[str, list[Call]]]] = {
    "bracket_tool_calls": [
        (
            '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
        (
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}',
            [("get_weather", {"city": "Paris"}), ("get_time", {})],
        ),
    ],
    "python_tag": [
        (
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "granite": [
        (
            '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "granite_tool_call": [
        (
            '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "phi4_functools": [
        (
            'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "tool_call_tag": [
        (
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "deepseek": [
        (
            f'{CALLS_BEGIN}{CALL_BEGIN}get_weather{SEP}{{"city": "Paris"}}{CALL_END}',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
    "harmony_role": [
        (
            "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
            '<|message|>{"city": "Paris"}',
            [("get_weather", {"city": "Paris"})],
        ),
    ],
}
"""Calls that end the content: formats without a closing delimiter (or with an optional
one), and blocks whose close the server took as its stop sequence (the stream ended
normally after a complete payload)."""

BEFORE = "Sure, checking: "
AFTER = " Done."


NEAR_MISSES: tuple[str, ...] = (
    "<tool_call",
    "<tool>not a call</tool>",
    "``` json is a format",
    "[TOOL_CALL] is how some write it",
    "<|python",
    "a <function=f> in prose",
    "<|START_",
    "use the <tools tag",
    "call:get_weather{city:Paris}",
)
"""Text that opens like a call in some format and is not one: shown unchanged, nothing runs."""

PROSE = st.text(st.sampled_from("abcdefghij klmnop.,!?éß漢"), max_size=24)
"""Prose that cannot open a call in any format."""


@dataclass(frozen=True)
class TextContent:
    """Model output and its ground truth: what the user must see, and the calls it holds.

    ``formats``: the format names the content is meant to be read with (None: callgate's
    defaults).
    """

    content: str
    shown: str
    calls: tuple[Call, ...]
    formats: tuple[str, ...] | None
    format: str | None

    def detected(self, deltas: Iterable[str] | None = None) -> tuple[str, list[Call]]:
        """Callgate's reading of ``deltas`` (default: the whole content): shown text, calls."""
        from callgate.strategies.text.detector import Detector

        detector = Detector(list(self.formats) if self.formats is not None else None)
        steps = [detector.feed(piece) for piece in ([self.content] if deltas is None else deltas)]
        steps.append(detector.finish())
        calls = [(c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
        return "".join(s.shown for s in steps), calls


def _samples(formats: Sequence[str] | None) -> list[tuple[str, str, list[Call], bool]]:
    chosen = None if formats is None else set(formats)
    out = []
    for tail, table in ((False, SAMPLES), (True, TAIL_SAMPLES)):
        for name, samples in table.items():
            if chosen is None or name in chosen:
                out += [(name, markup, calls, tail) for markup, calls in samples]
    return out


@st.composite
def text_contents(
    draw: st.DrawFn, formats: Sequence[str] | None = None, *, near_misses: bool = True
) -> TextContent:
    """Prose around a call in one of ``formats`` (default: every format with a sample).

    A call in a format without a closing delimiter ends the content. With
    ``near_misses``, some contents hold no call but a near miss between the prose. The
    content is read with exactly its own format, so the ground truth is unambiguous.
    """
    samples = _samples(formats)
    if not samples:
        raise ValueError(f"no sample for the formats {formats}; see SAMPLES and TAIL_SAMPLES")
    before, after = draw(PROSE), draw(PROSE)
    if near_misses and draw(st.integers(0, 4)) == 0:
        miss = draw(st.sampled_from(NEAR_MISSES))
        fmt = draw(st.sampled_from(sorted({name for name, *_ in samples})))
        content = f"{before} {miss} {after}"
        return TextContent(content, content, (), (fmt,), None)
    fmt, markup, calls, tail = draw(st.sampled_from(samples))
    if tail:
        return TextContent(before + markup, before, tuple(calls), (fmt,), fmt)
    return TextContent(before + markup + after, before + after, tuple(calls), (fmt,), fmt)
