"""What every gated turn shares, on any wire: the options, the request's tools, the driver.

:class:`Options` are the command line's flags; :func:`driver_for` compiles the dry-run
:class:`~callgate.driver.Driver` of a request's tools and text formats once per distinct
set; :class:`Call` is one call a client receives; :class:`ThinkSplitter` moves
``<think>…</think>`` of released text to the wire's reasoning channel.
"""

from __future__ import annotations

import functools
import secrets
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from attrs import field, frozen

from callgate.driver.drivers import Driver
from callgate.driver.tools import Tool
from callgate.errors import RequestError
from callgate.gate.turn import CallRef
from callgate.proxy.fastjson import pack_encoder
from callgate.strategies.text.defaults import default_text_formats
from callgate.strategies.text.formats import FORMATS

__all__ = [
    "BLOCKED_MODES",
    "PASSABLE",
    "BlockedMode",
    "Call",
    "Options",
    "RequestError",
    "ThinkSplitter",
    "driver_for",
    "fresh_id",
    "on_blocked",
]

BlockedMode = Literal["notice", "repair", "pass"]
NOTICE: BlockedMode = "notice"
REPAIR: BlockedMode = "repair"
PASS: BlockedMode = "pass"
"""The ``--on-blocked`` modes (``pass`` is a mode here, not the verdict of that name)."""
BLOCKED_MODES: tuple[BlockedMode, ...] = (NOTICE, REPAIR, PASS)
"""What ``--on-blocked`` may say: end with a notice, re-ask the upstream, or forward annotated."""

PASSABLE = frozenset(
    {"schema_invalid", "identity_collision", "args_mismatch", "missing_id", "unknown_tool"}
)
"""Finding codes of a complete call that ``repair`` may re-ask about (``pass``: all but
``unknown_tool``, which never becomes a call). A truncated call, broken JSON or a broken
stream is never passed nor repaired: the model did not finish it."""


_DRIVERS: OrderedDict[tuple[object, tuple[str, ...]], Driver] = OrderedDict()
_DRIVERS_MAX = 256
"""Drivers (schemas compiled) cached per distinct tool set and formats; oldest dropped."""


_model_formats = functools.lru_cache(maxsize=_DRIVERS_MAX)(default_text_formats)
"""The text formats of a wire and model name, read once per name (the model patterns are
fixed): a request asks for them before every turn."""


def _known_formats(_: object, __: object, value: tuple[str, ...] | None) -> None:
    unknown = [name for name in value or () if name not in FORMATS]
    if unknown:
        raise ValueError(f"unknown text format {unknown[0]!r}; one of: {', '.join(FORMATS)}")


@frozen
class Options:
    """How the proxy treats every turn (the command line's flags)."""

    on_blocked: BlockedMode = "repair"
    """A schema or identity failure: ``notice``, ``repair`` (up to :attr:`repairs` times) or
    ``pass`` (forwarded, annotated). The default is the mode that converged in agent loops
    without ever handing a client an invalid call (``bench/bench_proxy.py --modes``)."""
    repairs: int = 2
    """How many times ``repair`` re-asks the upstream before it ends with a notice."""
    stream_args: bool = False
    """Forward native argument deltas as they arrive (``finish_reason: "tool_calls"`` still
    waits for the gate)."""
    normalize: bool = True
    """Rewrite a request strict servers would refuse before it is gated and forwarded
    (:mod:`callgate.proxy.normalize`; ``--no-normalize`` forwards it as the client sent it)."""
    move_reasoning: bool = False
    """Move ``<think>…</think>`` of the content to ``reasoning_content``."""
    text_formats: tuple[str, ...] | None = field(default=None, validator=_known_formats)
    """The text formats read in every turn; None: those of the request's ``model``."""
    repair_json: bool = False
    """Repair a call's broken argument JSON where no value changes and the schema confirms
    the result (the buffer's ``repair="lossless"``); each edit is a ``repaired_arguments``
    warning in the audit record."""


def on_blocked(words: Sequence[str]) -> tuple[BlockedMode, int]:
    """``notice``, ``pass`` or ``repair [N]`` (N >= 1, default 1) as (mode, repairs).

    ValueError says what is wrong (``--on-blocked`` and ``CALLGATE_ON_BLOCKED`` read it).
    """
    if not words:
        raise ValueError("--on-blocked needs a mode: notice, repair N or pass")
    mode, *rest = words
    if mode in (NOTICE, PASS):
        if rest:
            raise ValueError(f"--on-blocked {mode} takes no number")
        return (NOTICE if mode == NOTICE else PASS), 1
    if mode != REPAIR:
        raise ValueError(f"--on-blocked must be notice, repair N or pass, not {mode!r}")
    if len(rest) > 1 or (rest and not rest[0].isdigit()) or (rest and int(rest[0]) < 1):
        raise ValueError("--on-blocked repair takes one whole number >= 1 (repair 2)")
    return REPAIR, int(rest[0]) if rest else 1


def fresh_id(prefix: str = "call_") -> str:
    """A new call id, unique with overwhelming probability (for a call read from text)."""
    return prefix + secrets.token_hex(12)


def _tool_list(request: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """The request's tools as (name, description, schema), in any served wire's shape.

    Chat Completions nests a function under ``function``; Responses and Messages name it
    at the top (Responses with ``type: function``, Messages with ``input_schema``).
    """
    raw = request.get("tools")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RequestError("tools must be a list")
    tools = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise RequestError("each tool must be an object")
        nested = entry.get("function") if entry.get("type") == "function" else None
        spec = nested if isinstance(nested, Mapping) else entry
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            if "type" in entry and entry.get("type") != "function":  # a built-in: no schema
                continue
            raise RequestError("each tool needs a name")
        schema = spec.get("parameters", spec.get("input_schema"))
        if schema is None:
            schema = {"type": "object"}
        if not isinstance(schema, Mapping):
            raise RequestError(f"the schema of tool {spec['name']!r} must be an object")
        description = spec.get("description")
        tools.append((spec["name"], description if isinstance(description, str) else "", schema))
    return tools


_pack = pack_encoder()
"""MessagePack's encoder where msgspec is installed (the proxy extra brings it)."""


def _key(tools: object) -> object:
    """The tools as a key, equal for equal tools as given (their key order counts).

    Their MessagePack bytes (a tenth of ``repr``'s time on a request's tool list of a few
    tens of KB; NaN, a string and bytes stay apart, as in ``repr``); ``repr`` where
    MessagePack cannot carry a value (an integer past 64 bits) or msgspec is missing.
    """
    if _pack is not None:
        try:
            return _pack(tools)
        except (TypeError, ValueError, OverflowError):
            pass
    return repr(tools)


def driver_for(request: Mapping[str, Any], options: Options, wire: str = "openai") -> Driver:
    """A dry-run driver for the request's tools and formats, compiled once per distinct set.

    Under ``tool_choice: "none"`` it owns no tool and reads no format: nothing is a call.
    Drivers keep no per-stream state, so one serves every request with the same tools.
    They are found by the tools as the request gives them (equal tools are equal text), so
    a request whose tools were read once is not read again.
    """
    choice = request.get("tool_choice")
    none = choice == "none" or (isinstance(choice, Mapping) and choice.get("type") == "none")
    formats: tuple[str, ...] | None
    if none:
        formats = ()
    elif options.text_formats is not None:
        formats = options.text_formats
    else:
        model = request.get("model")
        formats = _model_formats(wire, model if isinstance(model, str) else None)
    key = (_key(None if none else request.get("tools")), formats)
    driver = _DRIVERS.get(key)
    if driver is None:
        tools = [] if none else _tool_list(request)
        try:
            driver = Driver(
                [Tool(name, schema, description=text) for name, text, schema in tools],
                text_formats=formats,
                name="proxy",
            )
        except ValueError as exc:  # two tools of one name, an empty name
            raise RequestError(str(exc)) from exc
        _DRIVERS[key] = driver
        if len(_DRIVERS) > _DRIVERS_MAX:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(key)
    return driver


class ThinkSplitter:
    """Splits released content into reasoning (inside ``<think>…</think>``) and the rest.

    Incremental: a tag cut between two pieces is held (at most its length) until the next
    piece or :meth:`flush` says what it was.
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.inside = False
        self._tail = ""

    def feed(self, text: str) -> tuple[str, str]:
        """(reasoning, content) of ``text``, with a possible cut tag held back."""
        reasoning: list[str] = []
        content: list[str] = []
        for inside, piece in self.pieces(text):
            (reasoning if inside else content).append(piece)
        return "".join(reasoning), "".join(content)

    def pieces(self, text: str) -> list[tuple[bool, str]]:
        """``text`` as (inside the tags, piece) in order, with a possible cut tag held back.

        For a wire whose reasoning and text are blocks in sequence (Anthropic's); no
        piece is empty.
        """
        text = self._tail + text
        self._tail = ""
        out: list[tuple[bool, str]] = []
        while text:
            tag = self.CLOSE if self.inside else self.OPEN
            at = text.find(tag)
            if at >= 0:
                if at:
                    out.append((self.inside, text[:at]))
                text = text[at + len(tag) :]
                self.inside = not self.inside
                continue
            keep = next(
                (
                    n
                    for n in range(min(len(tag) - 1, len(text)), 0, -1)
                    if tag.startswith(text[-n:])
                ),
                0,
            )
            if len(text) > keep:
                out.append((self.inside, text[: len(text) - keep]))
            self._tail = text[len(text) - keep :]
            break
        return out

    def flush(self) -> tuple[str, str]:
        """What is held at the end, as it was."""
        tail, self._tail = self._tail, ""
        return (tail, "") if self.inside else ("", tail)


@frozen
class Call:
    """One call the client receives (or was withheld): where it came from, its parts."""

    id: str
    name: str
    arguments: str
    """The arguments as the JSON string the wire carries."""
    source: str
    """``native`` or the text format it was read from."""
    slot: CallRef | None
