"""JSON parsing for the gateway's hot path: msgspec where installed, :mod:`json` otherwise.

The proxy parses every upstream chunk; ``json.loads`` on bytes costs several times
msgspec's parse of a chat chunk. :func:`loads` gives exactly what ``json.loads`` gives:
the same values for every text msgspec accepts (integers of any size included), and for
the rest (``NaN``, numbers past a double's range, lone surrogates, invalid text)
``json.loads`` itself decides, so its values and its errors are what a caller sees.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = [
    "FAST",
    "fast_object",
    "fast_string",
    "json_encoder",
    "loads",
    "pack_encoder",
    "strict_loads",
]


def _fast() -> Callable[[bytes | bytearray | str], Any] | None:
    try:
        import msgspec
    except ImportError:
        return None
    return msgspec.json.Decoder().decode


_fast_loads = _fast()
FAST = _fast_loads is not None
"""Whether the fast parser is installed (``pip install 'callgate[proxy]'`` brings it)."""


def json_encoder() -> Callable[[Any], bytes] | None:
    """Msgspec's JSON encoder where installed (None: the caller writes with :mod:`json`)."""
    try:
        import msgspec
    except ImportError:
        return None
    return msgspec.json.Encoder().encode


def pack_encoder() -> Callable[[Any], bytes] | None:
    """Msgspec's MessagePack encoder where installed (None: the caller does without)."""
    try:
        import msgspec
    except ImportError:
        return None
    return msgspec.msgpack.Encoder().encode


def loads(data: bytes | bytearray | str) -> Any:
    """Parse one JSON text as ``json.loads`` does (same values, same errors), fast."""
    if _fast_loads is not None:
        try:
            return _fast_loads(data)
        except ValueError:  # msgspec.DecodeError: json.loads decides
            pass
    return json.loads(data)


def strict_loads(data: bytes | bytearray | str) -> Any:
    """Parse an upstream's JSON text, refusing what the proxy could not write back.

    ``NaN``, infinities and numbers that overflow to them (``1e400`` would go out as
    ``Infinity``, which JavaScript and Go parsers refuse) and nesting past the
    interpreter's recursion limit are a ``ValueError``, as invalid text is; nothing else
    escapes.

    msgspec reads what it can (it refuses those same literals and numbers, and keeps the
    last of repeated keys as :mod:`json` does); whatever it refuses, :mod:`json` with those
    checks decides, so the values and the errors are the same either way.
    """
    if _fast_loads is not None:
        try:
            return _fast_loads(data)
        except ValueError:  # msgspec.DecodeError: json decides (lone surrogates, errors)
            pass
        except RecursionError:
            raise ValueError("the JSON nests too deep to read") from None
    try:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("the JSON nests too deep to read") from None


def fast_object(data: bytes) -> dict[str, Any] | None:
    """The JSON object ``data`` holds, read by msgspec alone; None for anything else.

    None also when msgspec is not installed or refuses the text: :func:`strict_loads`
    then decides, so a caller that falls back to it reads every text as it does.
    """
    if _fast_loads is None:
        return None
    try:
        value = _fast_loads(data)
    except (ValueError, RecursionError):
        return None
    return value if type(value) is dict else None


def fast_string(data: bytes) -> str | None:
    """The JSON string ``data`` holds, read by msgspec alone; None for anything else.

    None also when msgspec is not installed or refuses the text (a lone surrogate), as
    :func:`fast_object` does: the same parser reads a string alone as inside an object.
    """
    if _fast_loads is None:
        return None
    try:
        value = _fast_loads(data)
    except ValueError:
        return None
    return value if type(value) is str else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is past a double's range")
    return value
