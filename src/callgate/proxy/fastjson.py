"""JSON parsing for the gateway's hot path: msgspec where usable, :mod:`json` otherwise.

The proxy parses every upstream chunk; ``json.loads`` on bytes costs several times
msgspec's parse of a chat chunk. :func:`loads` gives exactly what ``json.loads`` gives:
the same values for every text msgspec accepts (integers of any size included), and for
the rest (``NaN``, numbers past a double's range, lone surrogates, invalid text)
``json.loads`` itself decides, so its values and its errors are what a caller sees.

Whether msgspec is usable (:data:`FAST`) and its encoders come from
:mod:`callgate.gate.fastcodec`, which the strict read of call arguments builds on too.
"""

from __future__ import annotations

import json
import math
from typing import Any

from callgate.gate.fastcodec import FAST, json_decoder, json_encoder, pack_encoder

__all__ = [
    "FAST",
    "fast_object",
    "fast_string",
    "json_encoder",
    "loads",
    "pack_encoder",
    "strict_loads",
]

_fast_loads = json_decoder()


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
