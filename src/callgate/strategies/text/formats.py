"""Every text format as a data entry: delimiters, how a payload may start, its parser.

The names are part of the command-line contract. Several formats can share an opening
delimiter (``<tool_call>`` opens Hermes JSON, Qwen3-Coder XML and GLM-4.5 payloads): the
detector then tries their parsers in turn, the remembered format first, and the payload
decides. ``viable(head)`` says whether the first characters of a payload can still
become that format (it must stay False once False): a block whose payload cannot is
released as text at the first character that rules it out.

Bare JSON and pythonic lists have no delimiter that prose does not also use, so they are
not stream-detected by default: they are checked once, at the end of the stream, over the
whole content (bare JSON against the exact tool schemas).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from attrs import frozen

from callgate.strategies.text.base import Parser
from callgate.strategies.text.invoke_payloads import DSML, INVOKE_PARSERS
from callgate.strategies.text.json_payloads import JSON_PARSERS
from callgate.strategies.text.markup_payloads import (
    CALL_BEGIN,
    CALLS_BEGIN,
    CALLS_END,
    MARKUP_PARSERS,
    SEP,
)
from callgate.strategies.text.token_payloads import HARMONY_START, KIMI_CALL_BEGIN, TOKEN_PARSERS

Viable = Callable[[str], bool]


def _starts(*literals: str) -> Viable:
    """Viable while the stripped head is empty, a prefix of, or starts with a literal."""

    def viable(head: str) -> bool:
        text = head.lstrip()
        return any(lit.startswith(text) or text.startswith(lit) for lit in literals)

    return viable


_NAME_THEN = re.compile(r"[\w.\-]+\s*")


def _name_then(*literals: str) -> Viable:
    """Viable for a name, optional whitespace, then one of the literals (GLM, Mistral v11)."""

    def viable(head: str) -> bool:
        text = head.lstrip()
        match = _NAME_THEN.match(text)
        if match is None:
            return not text
        rest = text[match.end() :]
        if match.end() == len(text):
            return True
        return any(lit.startswith(rest) or rest.startswith(lit) for lit in literals)

    return viable


def _any(*checks: Viable) -> Viable:
    return lambda head: any(check(head) for check in checks)


def _json_call_head(head: str) -> bool:
    """Viable for what may begin a call object or a list of them: ``{"`` or ``[{"``.

    Bare JSON is read only as the whole content; an object whose first key does not
    follow its brace, an empty list or a list of anything but objects is no call.
    """
    text = head.lstrip()
    if text.startswith("["):
        text = text[1:].lstrip()
    if not text:
        return True
    if not text.startswith("{"):
        return False
    rest = text[1:].lstrip()
    return not rest or rest.startswith('"')


_PY_NAME = re.compile(r"[A-Za-z_][\w.]*")


def _pythonic_head(head: str) -> bool:
    """Viable for what may begin a pythonic call list: ``[``, a name, then ``(``."""
    text = head.lstrip()
    if not text.startswith("["):
        return not text
    rest = text[1:].lstrip()
    match = _PY_NAME.match(rest)
    if match is None:
        return not rest
    after = rest[match.end() :].lstrip()
    return not after or after.startswith("(")


@frozen
class TextFormat:
    """One text format: where its blocks open and close, and how to read the payload."""

    name: str
    opens: tuple[str, ...]
    close: str | None
    parser: Parser
    viable: Viable
    repeats: bool = False
    """The opening delimiter may recur inside one payload (Mistral's ``[TOOL_CALLS]``)."""
    at_start: bool = False
    """The opener counts only at the start of the content (after whitespace)."""
    keep_open: bool = False
    """The opener is part of the payload (bare ``{``, pythonic ``[``)."""
    stream: bool = True
    """Detected while streaming by default; otherwise checked once at the stream's end."""
    inner: tuple[str, ...] = ()
    """Delimiters of this format's own payload grammar: inside its block they break nothing."""
    open_ended: bool = False
    """The close is optional: a block still open at the stream's end may parse (Granite)."""
    default: bool = True
    """Part of the default set (a stream format whose opener prose rarely writes)."""
    syntax: str | None = None
    """For a format whose block is the whole content (``at_start``): the syntax of that one
    value, ``json`` or ``python``. Once the value closes, anything but whitespace after it
    means the content is no call, and the block is shown from there."""


TOOL_CALL = "<tool_call>"

FORMATS: dict[str, TextFormat] = {
    f.name: f
    for f in (
        TextFormat("tool_call_tag", (TOOL_CALL,), "</tool_call>",
                   JSON_PARSERS["tool_call_tag"], _starts("{", "[")),
        TextFormat("qwen3_coder_xml", (TOOL_CALL,), "</tool_call>",
                   MARKUP_PARSERS["qwen3_coder_xml"], _starts("<function=")),
        TextFormat("glm45", (TOOL_CALL,), "</tool_call>",
                   MARKUP_PARSERS["glm45"], _name_then("<arg_key>")),
        TextFormat("gemma_special", ("<|tool_call>",), "<tool_call|>",
                   MARKUP_PARSERS["gemma_special"], _starts("call:")),
        TextFormat("tools_tag", ("<tools>",), "</tools>",
                   JSON_PARSERS["tools_tag"], _starts("{", "[")),
        TextFormat("fenced_json", ("```json", "```xml"), "```",
                   JSON_PARSERS["fenced_json"], _starts("{", "[")),
        TextFormat("bracket_tool_calls", ("[TOOL_CALLS]",), None,
                   JSON_PARSERS["bracket_tool_calls"],
                   _any(_starts("["), _name_then("[ARGS]", "[CALL_ID]", "{")), repeats=True),
        TextFormat("python_tag", ("<|python_tag|>",), None,
                   JSON_PARSERS["python_tag"], _starts("{"), repeats=True),
        TextFormat("deepseek", (CALLS_BEGIN,), CALLS_END,
                   MARKUP_PARSERS["deepseek"], _starts(CALL_BEGIN), inner=("```json",)),
        TextFormat("command_r", ("<|START_ACTION|>",), "<|END_ACTION|>",
                   JSON_PARSERS["command_r"], _starts("[")),
        TextFormat("granite", ("<|tool_call|>",), None,
                   JSON_PARSERS["granite"], _starts("[")),
        TextFormat("codec", ("<callgate:call>",), "</callgate:call>",
                   JSON_PARSERS["codec"], _starts("{")),
        TextFormat("granite_tool_call", (TOOL_CALL,), "</tool_call>",
                   JSON_PARSERS["granite"], _starts("["), open_ended=True),
        TextFormat("kimi_k2", ("<|tool_calls_section_begin|>",), "<|tool_calls_section_end|>",
                   TOKEN_PARSERS["kimi_k2"], _starts(KIMI_CALL_BEGIN)),
        TextFormat("kimi_k2_singular", ("<|tool_call_section_begin|>",),
                   "<|tool_call_section_end|>", TOKEN_PARSERS["kimi_k2"], _starts(KIMI_CALL_BEGIN)),
        TextFormat("minimax_m2", ("<minimax:tool_call>",), "</minimax:tool_call>",
                   INVOKE_PARSERS["minimax_m2"], _starts("<invoke name=")),
        TextFormat("deepseek_v32", (f"<{DSML}function_calls>",), f"</{DSML}function_calls>",
                   INVOKE_PARSERS["deepseek_v32"], _starts(f"<{DSML}invoke name=")),
        TextFormat("deepseek_v4", (f"<{DSML}tool_calls>",), f"</{DSML}tool_calls>",
                   INVOKE_PARSERS["deepseek_v4"], _starts(f"<{DSML}invoke name=")),
        TextFormat("harmony", ("<|channel|>",), "<|call|>", TOKEN_PARSERS["harmony"],
                   _starts("commentary to=functions.", "analysis to=functions.")),
        TextFormat("harmony_role", (HARMONY_START,), "<|call|>", TOKEN_PARSERS["harmony_role"],
                   _starts("assistant to=functions."), inner=("<|channel|>",)),
        TextFormat("llama4_python", ("<|python_start|>",), "<|python_end|>",
                   MARKUP_PARSERS["pythonic"], _starts("["), open_ended=True),
        TextFormat("phi4_functools", ("functools",), None, JSON_PARSERS["granite"],
                   _starts("["), default=False),
        TextFormat("bare_json", ("{", "["), None, JSON_PARSERS["bare_json"], _json_call_head,
                   at_start=True, keep_open=True, stream=False, syntax="json"),
        TextFormat("pythonic", ("[",), None, MARKUP_PARSERS["pythonic"], _pythonic_head,
                   at_start=True, keep_open=True, stream=False, syntax="python"),
    )
}  # fmt: skip
"""Every text format, by its contract name."""

_NAME = r"([\w.\-]+)"
_LEADING_NAMES = tuple(
    re.compile(pattern)
    for pattern in (
        r'\s*\{\s*"(?:name|tool_name|tool)"\s*:\s*"([^"\\]+)"',
        r"\s*<function=([^>\s]+)>",
        r"\s*call:" + _NAME + r"\{",
        r"\s*" + _NAME + r"\s*(?:<arg_key>|\[ARGS\]|\[CALL_ID\]|\{)",
        r"\s*" + re.escape(CALL_BEGIN) + r"(?:function)?" + re.escape(SEP) + _NAME + r"\s",
        r"\s*" + re.escape(CALL_BEGIN) + _NAME + re.escape(SEP) + r"\s*\{",
        r"\s*" + re.escape(KIMI_CALL_BEGIN) + r"\s*(?:functions\.)?([^\s:<>]+):",
        r"\s*<(?:" + DSML + r')?invoke\s+name="([^"<>]+)"',
        r"\s*(?:commentary|analysis)[ \t]+to=functions\.([^\s<>]+)[\s<]",
        r"\s*assistant[ \t]+to=functions\.([^\s<>]+)[\s<]",
    )
)


def leading_name(head: str) -> str | None:
    """The tool a payload names first thing, once that name has fully streamed.

    Only a payload that starts with one call's name is read (a JSON object whose first
    key is ``name``/``tool_name``/``tool``, ``<function=NAME>``, ``call:NAME{``,
    ``NAME<arg_key>``, ``NAME[ARGS]``, ``NAME{``, DeepSeek's name before its separator, Kimi's
    call id, an ``<invoke name=…>``, a Harmony recipient in the channel or the role
    header); a list of calls has no single
    name, so it is decided when the block closes.
    """
    for pattern in _LEADING_NAMES:
        match = pattern.match(head)
        if match is not None:
            return match.group(1)
    return None


DEFAULT_FORMATS = tuple(name for name, f in FORMATS.items() if f.stream and f.default)
"""The formats a detector watches for while streaming unless told otherwise."""

END_FORMATS = ("bare_json", "pythonic")
"""Formats checked once over the whole content when the stream ends."""

MODEL_FORMATS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"gemma", ("gemma_special", "tools_tag")),
    (r"qwen3[.\-_]?coder|qwen3\.5", ("qwen3_coder_xml",)),
    (r"qwen|hermes|nous", ("tool_call_tag", "fenced_json")),
    (r"magistral|devstral|ministral|mistral|mixtral|codestral", ("bracket_tool_calls",)),
    (r"llama[\-_ ]?4", ("llama4_python", "pythonic", "python_tag")),
    (r"llama[\-_ ]?3\.2", ("pythonic", "python_tag")),
    (r"llama", ("python_tag",)),
    (r"deepseek[\-_ ]?v4", ("deepseek_v4",)),
    (r"deepseek[\-_ ]?v3\.2", ("deepseek_v32", "deepseek")),
    (r"deepseek", ("deepseek",)),
    (r"kimi|moonshot", ("kimi_k2", "kimi_k2_singular")),
    (r"minimax", ("minimax_m2",)),
    (r"gpt[\-_ ]?oss", ("harmony", "harmony_role")),
    (r"phi[\-_ ]?4", ("phi4_functools",)),
    (r"command[\-_ ]?r|c4ai", ("command_r",)),
    (r"glm[\-_ ]?4\.[5-9]", ("glm45",)),
    (r"granite[\-_ ]?3\.0", ("granite",)),
    (r"granite", ("granite_tool_call", "tool_call_tag", "granite")),
)
"""Model-name patterns (case-insensitive search) and the formats such models write."""


def formats_for_model(model: str) -> tuple[str, ...]:
    """The formats a model name suggests (first pattern that matches), or ()."""
    for pattern, names in MODEL_FORMATS:
        if re.search(pattern, model, re.IGNORECASE):
            return names
    return ()


def select(names: Iterable[str] | None) -> list[TextFormat]:
    """The formats called ``names`` (default: every stream-detected one); checks names."""
    chosen = DEFAULT_FORMATS if names is None else tuple(names)
    unknown = [n for n in chosen if n not in FORMATS]
    if unknown:
        known = ", ".join(FORMATS)
        raise ValueError(f"unknown text format(s) {', '.join(unknown)}; known: {known}")
    return [FORMATS[n] for n in chosen]


class FormatMemory:
    """Which format the last call used, so the next turn tries it first.

    A detector consults it to order the parsers of a shared delimiter and updates it
    whenever a block parses; a different format simply replaces the remembered one. It can
    be pre-seeded from model names the client already has (callgate fetches nothing).
    """

    def __init__(self, remembered: str | None = None) -> None:
        if remembered is not None and remembered not in FORMATS:
            raise ValueError(f"unknown text format {remembered!r}")
        self.remembered = remembered

    def seed_from_models(self, models: Iterable[str]) -> str | None:
        """Remember the first format any of ``models`` suggests; return it."""
        for model in models:
            names = formats_for_model(model)
            if names:
                self.remembered = names[0]
                return names[0]
        return None

    def remember(self, name: str) -> None:
        """A block of format ``name`` just parsed."""
        self.remembered = name

    def order(self, candidates: Sequence[TextFormat]) -> list[TextFormat]:
        """``candidates`` with the remembered format first (stable otherwise)."""
        return sorted(candidates, key=lambda f: f.name != self.remembered)
