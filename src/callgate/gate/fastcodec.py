"""msgspec's codecs where msgspec is usable, None where it is not: the one place that asks.

msgspec is a core dependency, yet a copy of callgate without its dependencies still runs:
every reader then takes the :mod:`json` module. The strict read of a call's arguments
(:mod:`callgate.gate.strictjson`) and the gateway's parse and writes
(:mod:`callgate.proxy.fastjson`) take their codecs from here, so both answer alike.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["FAST", "decode_error", "json_decoder", "json_encoder", "pack_encoder"]


def _usable() -> ModuleType | None:
    """msgspec, or None where it cannot be imported."""
    try:
        import msgspec
    except ImportError:
        return None
    return msgspec


_MSGSPEC = _usable()
FAST = _MSGSPEC is not None
"""Whether msgspec is usable (it is a core dependency; a copy without it reads with json)."""


def json_decoder() -> Callable[[bytes | bytearray | str], Any] | None:
    """A new msgspec JSON decoder's ``decode`` (None: the caller reads with :mod:`json`)."""
    if _MSGSPEC is None:
        return None
    decode: Callable[[bytes | bytearray | str], Any] = _MSGSPEC.json.Decoder().decode
    return decode


def json_encoder() -> Callable[[Any], bytes] | None:
    """A new msgspec JSON encoder's ``encode`` (None: the caller writes with :mod:`json`)."""
    if _MSGSPEC is None:
        return None
    encode: Callable[[Any], bytes] = _MSGSPEC.json.Encoder().encode
    return encode


def pack_encoder() -> Callable[[Any], bytes] | None:
    """A new msgspec MessagePack encoder's ``encode`` (None: the caller does without)."""
    if _MSGSPEC is None:
        return None
    encode: Callable[[Any], bytes] = _MSGSPEC.msgpack.Encoder().encode
    return encode


def decode_error() -> type[Exception] | None:
    """The base of every error msgspec's decoders raise (None without msgspec)."""
    if _MSGSPEC is None:
        return None
    error: type[Exception] = _MSGSPEC.MsgspecError
    return error
