"""Strict parsing of a tool call's arguments text into a JSON object.

Python's json module is lenient (NaN, duplicate keys, lone surrogates, unbounded nesting);
each of those leniencies is turned into its own finding here instead.
"""

from __future__ import annotations

import json
import math
import re
import sys
from itertools import accumulate
from typing import Any

from callgate.gate import fastcodec
from callgate.gate.findings import Finding, finding

_FAST: tuple[Any, Any, Any] | None = (
    (
        fastcodec.json_decoder(),
        fastcodec.json_encoder(),
        (fastcodec.decode_error(), ValueError, RecursionError),
    )
    if fastcodec.FAST
    else None
)
"""msgspec's decode, its encode and the errors its read raises; None: every read takes json."""

DENSE = 128
"""Characters per container (``[`` or ``{``) up to which msgspec's read costs less than the
json module's with the strict hooks (measured: 0.6x at 44-66, even at about 150, 2x at 500)."""

MAX_INT_DIGITS = 4300
"""Integers with more digits than this are refused (CPython's own default conversion limit)."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRUCTURAL = re.compile(r'[\[\]{}"]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_TO_END = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
"""A string as :data:`_STRING_REST` reads it, or, unterminated, the rest of the text."""
_BRACKET = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SNIPPET = 60


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _NonFinite(Exception):
    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


class _IntTooLong(Exception):
    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _clip(text: str) -> str:
    """Cut text to a readable length for a message."""
    if len(text) > _SNIPPET:
        return text[: _SNIPPET - 3] + "..."
    return text


def _short(value: str) -> str:
    """Return a repr of value cut to a readable length."""
    return _clip(repr(value))


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build an object, refusing a key that occurs twice."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def _constant_hook(literal: str) -> Any:
    """Refuse the NaN / Infinity / -Infinity extensions of Python's json."""
    raise _NonFinite(literal)


def _float_hook(literal: str) -> float:
    """Parse a float, refusing one that overflows to infinity (e.g. 1e400)."""
    value = float(literal)
    if not math.isfinite(value):
        raise _NonFinite(literal)
    return value


def _int_hook(literal: str) -> int:
    """Parse an integer, refusing one with more digits than MAX_INT_DIGITS."""
    digits = len(literal) - (1 if literal.startswith("-") else 0)
    if digits > MAX_INT_DIGITS:
        raise _IntTooLong(digits)
    return int(literal)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_hook,
    parse_constant=_constant_hook,
    parse_float=_float_hook,
    parse_int=_int_hook,
)

_NATIVE_INTS = json.JSONDecoder(
    object_pairs_hook=_pairs_hook, parse_constant=_constant_hook, parse_float=_float_hook
)
"""The strict decoder less its integer hook: the interpreter's own digit limit refuses."""


def _raw_decode(text: str, index: int) -> tuple[Any, int]:
    """The strict decoder's ``raw_decode``, integers parsed natively where that is as strict.

    A hook per integer costs a Python call each; while the interpreter's digit limit is
    :data:`MAX_INT_DIGITS` or lower, its own parse raises on every integer the hook would
    refuse (or the limit refuses), and the strict read then names what it was.
    """
    if 0 < sys.get_int_max_str_digits() <= MAX_INT_DIGITS:
        try:
            return _NATIVE_INTS.raw_decode(text, index)
        except json.JSONDecodeError:
            raise
        except ValueError:
            pass  # an integer past the interpreter's limit: the strict read says so
    return _DECODER.raw_decode(text, index)


def _exceeds_depth(text: str, max_depth: int) -> bool:
    """Tell whether brackets outside strings nest deeper than max_depth.

    Counting brackets is a cheap upper bound; only when it is over the limit are the
    strings cut out and the depth summed over the brackets left, in the regex engine and
    ``itertools`` (no Python step per bracket). A close bracket with none open (text that
    is no JSON) takes :func:`_scan_depth`, whose count stays at zero there.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return False
    brackets = _BRACKET.findall(_STRING_TO_END.sub("", text))
    depths = list(accumulate(map(_STEP.__getitem__, brackets)))
    if min(depths, default=0) >= 0:
        return max(depths, default=0) > max_depth
    return _scan_depth(text, max_depth)


def _too_deep(value: Any, bound: int, max_depth: int) -> bool:
    """:func:`_exceeds_depth` for a text already read to ``value``, its brackets ``bound``.

    Below the bound nothing is walked; above it the value's containers are counted one
    level at a time (the text's strings are not cut out, which costs far more on a large
    request).
    """
    if bound <= max_depth:
        return False
    depth, level = 0, [value]
    while True:
        level = [node for node in level if type(node) is dict or type(node) is list]
        if not level:
            return depth > max_depth
        depth += 1
        if depth > max_depth:
            return True
        level = [
            child for node in level for child in (node.values() if type(node) is dict else node)
        ]


def _fast_read(text: str, max_depth: int) -> tuple[bool, Any, int]:
    """(read, value, brackets): msgspec's read where it is the cheaper, and the bracket bound.

    Its repeated-key count costs a few passes over the characters, the json module's
    hooks a call per object: msgspec reads a text with a container for every
    :data:`DENSE` characters or fewer (call arguments, mostly), and a text whose brackets
    are over ``max_depth`` (its nesting is then counted on the value, not scanned).
    """
    bound = text.count("[") + text.count("{")
    if len(text) >= DENSE * (bound + 1) and bound <= max_depth:
        return False, None, bound
    read, value = _fast_decode(text)
    return read, value, bound


def _scan_depth(text: str, max_depth: int) -> bool:
    """:func:`_exceeds_depth` one structural character at a time, stopping at the first excess."""
    depth = 0
    pos = 0
    while True:
        match = _STRUCTURAL.search(text, pos)
        if match is None:
            return False
        char = match.group()
        pos = match.end()
        if char == '"':
            rest = _STRING_REST.match(text, pos)
            if rest is None:
                return False
            pos = rest.end()
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif depth > 0:
            depth -= 1


def _where(text: str, index: int) -> str:
    """Describe a character index as a line and column, as json's errors do."""
    line = text.count("\n", 0, index) + 1
    column = index - text.rfind("\n", 0, index)
    return f"line {line} column {column} (char {index})"


def _path_step(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _find_surrogate(value: Any) -> tuple[str, str] | None:
    """Return (where, offending text) for the first string or key holding a surrogate."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return f"string at {path}", node
        elif isinstance(node, dict):
            for key, child in reversed(list(node.items())):
                if _SURROGATE.search(key):
                    return f"a key of the object at {path}", key
                stack.append((_path_step(path, key), child))
        elif isinstance(node, list):
            for index in range(len(node) - 1, -1, -1):
                stack.append((_path_step(path, index), node[index]))
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"


def _encodes(text: str) -> bool:
    """Whether ``text`` holds no surrogate code point: it encodes to UTF-8 (half a search)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fast_decode(text: str) -> tuple[bool, Any]:
    r"""(True, value) where msgspec reads text as the strict read does, else (False, None).

    Msgspec refuses what the strict read refuses (NaN, numbers past a double, integers past
    the interpreter's digit limit, trailing text, an unpaired surrogate escape) but keeps
    the last of a repeated key, so the colons are counted. Each key gives one colon in the
    text and one in the compact re-encoding, and every colon of the strings comes back,
    plus one for each written as an escape (``\u003a``); a dropped key takes its colon
    and its value's with it. So the re-encoding has the text's colons and its escaped ones
    exactly when no key was dropped (counting an escaped backslash before ``u003a`` as a
    colon only sends the text to the strict read). The rest is the strict read's.
    """
    if _FAST is None or not 0 < sys.get_int_max_str_digits() <= MAX_INT_DIGITS:
        return False, None
    decode, encode, refused = _FAST
    try:
        value = decode(text)
    except refused:
        return False, None
    colons = text.count(":")
    if "\\u003" in text:
        colons += text.count("\\u003a") + text.count("\\u003A")
    if colons != encode(value).count(b":"):
        return False, None  # a key given twice: the strict read names it
    return True, value


def _decode(text: str) -> tuple[Any, Finding | None]:
    """Decode exactly one JSON value filling text, or say why not (the json module's read)."""
    start = _WHITESPACE.match(text, 0)
    index = start.end() if start else 0
    try:
        value, end = _raw_decode(text, index)
    except json.JSONDecodeError as error:
        if not text.strip(" \t\n\r"):
            return None, finding(
                "malformed_json",
                f"arguments text is empty: expected a JSON value at {_where(text, error.pos)}",
            )
        return None, finding(
            "malformed_json",
            f"arguments are not valid JSON: {error.msg} at {_where(text, error.pos)}",
        )
    except _DuplicateKey as error:
        return None, finding(
            "duplicate_key", f"key {_short(error.key)} appears twice in the same object"
        )
    except _NonFinite as error:
        if error.literal in ("NaN", "Infinity", "-Infinity"):
            detail = f"{error.literal} is not a JSON number"
        else:
            detail = f"number {_clip(error.literal)} overflows to infinity"
        return None, finding("non_finite_number", f"{detail}; JSON allows only finite numbers")
    except _IntTooLong as error:
        return None, finding(
            "limit_exceeded",
            f"integer with {error.digits} digits exceeds the limit of {MAX_INT_DIGITS} digits",
        )
    except RecursionError:
        return None, finding("limit_exceeded", "arguments nest too deeply to parse")
    except (ValueError, OverflowError) as error:
        return None, finding("limit_exceeded", f"arguments exceed a parser limit: {error}")
    tail = _WHITESPACE.match(text, end)
    after = tail.end() if tail else end
    if after != len(text):
        return None, finding(
            "trailing_data",
            f"a complete JSON value ends at {_where(text, end)} but more text follows "
            f"at {_where(text, after)}",
        )
    return value, None


def parse_arguments(
    text: str, *, max_depth: int = 128
) -> tuple[dict[str, Any] | None, Finding | None]:
    """Parse a tool call's arguments strictly; return (object, None) or (None, finding).

    Never raises for any str: every problem becomes a finding with its own code.
    """
    fast, value, bound = _fast_read(text, max_depth)
    if fast:
        if _too_deep(value, bound, max_depth):
            return None, _arguments_too_deep(max_depth)
        if isinstance(value, dict):
            return value, None
        return None, _not_an_object(value)
    if bound > max_depth and _exceeds_depth(text, max_depth):
        return None, _arguments_too_deep(max_depth)
    raw = None if text.isascii() or _encodes(text) else _SURROGATE.search(text)
    if raw is not None:
        return None, finding(
            "lone_surrogate",
            f"arguments text contains the surrogate code point U+{ord(raw.group()):04X} "
            f"at {_where(text, raw.start())}",
        )
    value, problem = _decode(text)
    if problem is not None:
        return None, problem
    escaped = None  # no backslash-u escape, no escaped surrogate (one backslash is a memchr)
    if "\\" in text and "\\u" in text:
        escaped = _find_surrogate(value)
    if escaped is not None:
        where, string = escaped
        return None, finding(
            "lone_surrogate",
            f"{where} ({_short(string)}) holds an unpaired surrogate written as a \\u escape",
        )
    if not isinstance(value, dict):
        return None, _not_an_object(value)
    return value, None


def _arguments_too_deep(max_depth: int) -> Finding:
    return finding("limit_exceeded", f"arguments nest deeper than the limit of {max_depth} levels")


def _not_an_object(value: Any) -> Finding:
    return finding(
        "non_object_arguments", f"arguments must be a JSON object, got a JSON {_json_type(value)}"
    )


def parse_value(text: str, *, max_depth: int = 128) -> tuple[Any, Finding | None]:
    """Parse any one JSON value as strictly as arguments are: (value, None) or (None, finding).

    NaN, infinities and numbers that overflow to them (``1e400``), repeated keys,
    integers past :data:`MAX_INT_DIGITS`, nesting past ``max_depth`` and trailing text are
    findings; nothing raises for any str (a request envelope is read with it).
    """
    fast, value, bound = _fast_read(text, max_depth)
    if fast and not _too_deep(value, bound, max_depth):
        return value, None
    if bound > max_depth and _exceeds_depth(text, max_depth):
        return None, finding("limit_exceeded", f"the JSON nests deeper than {max_depth} levels")
    return _decode(text)


def is_complete_object(text: str) -> bool:
    """Tell whether text strictly parses to a JSON object (used to recognise a repeated call)."""
    value, _ = parse_arguments(text)
    return value is not None
