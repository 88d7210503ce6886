"""Reading a client's request body: bytes in, a request mapping or a clear 400 out.

The envelope is read as strictly as a call's arguments are (:func:`callgate.gate.strictjson.
parse_value`): ``NaN`` and infinities, numbers that overflow to them (``1e400``, which
would be written back as ``Infinity``, a token JavaScript and Go parsers refuse), repeated
keys, integers past the conversion limit and nesting past :data:`MAX_REQUEST_DEPTH` are
refused, and no ``RecursionError`` escapes. The fields callgate itself reads must have the
types the wires give them (``"stream": "true"`` is a string, not a stream); any other field
goes upstream as sent. :func:`output_token_limit` reads the request's output token limit,
for the buffer's ``max_tokens``; :func:`request_bytes` writes a request back for the
upstream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from callgate.errors import RequestBodyError
from callgate.gate.strictjson import parse_value
from callgate.proxy.fastjson import json_encoder

__all__ = [
    "MAX_REQUEST_DEPTH",
    "RequestBodyError",
    "output_token_limit",
    "read_request",
    "request_bytes",
]

MAX_REQUEST_DEPTH = 512
"""The deepest nesting a request body may have (a tool's schema nests inside a request)."""

TOKEN_LIMITS = ("max_completion_tokens", "max_output_tokens", "max_tokens")
"""The request fields of an output token limit, the one that wins first (Chat Completions'
``max_completion_tokens`` over its older ``max_tokens``; Responses ``max_output_tokens``;
Messages ``max_tokens``)."""

_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "model": ((str,), "a string"),
    "stream": ((bool,), "true or false"),
    "messages": ((list,), "a list"),
    "tools": ((list,), "a list"),
    "tool_choice": ((str, dict), "a string or an object"),
    "stream_options": ((dict,), "an object"),
    "n": ((int,), "a count (an integer >= 1)"),
    **{name: ((int,), "a count (an integer >= 1)") for name in TOKEN_LIMITS},
}
"""The fields callgate reads, and the JSON types they must have when present (null is
absent)."""


def read_request(body: bytes, *, max_depth: int = MAX_REQUEST_DEPTH) -> dict[str, Any]:
    """``body`` as the request mapping, or :class:`RequestBodyError` saying what to fix."""
    if not body.strip():
        raise RequestBodyError("the request body is empty: send one JSON object", "invalid_json")
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise RequestBodyError(f"the request body is not UTF-8: {exc}", "invalid_json") from None
    value, problem = parse_value(text, max_depth=max_depth)
    if problem is not None:
        raise RequestBodyError(
            f"the request body is not strict JSON: {_of_the_body(problem.message)}",
            "invalid_json",
        )
    if not isinstance(value, dict):
        raise RequestBodyError("the request body must be a JSON object", "invalid_json")
    for name, (kinds, wanted) in _KINDS.items():
        field = value.get(name)
        if field is None:
            continue
        if not isinstance(field, kinds) or isinstance(field, bool) is not (kinds == (bool,)):
            raise RequestBodyError(f"{name!r} must be {wanted}, not {_described(field)}")
        if isinstance(field, int) and not isinstance(field, bool) and field < 1:
            raise RequestBodyError(f"{name!r} must be {wanted}, not {field}")
    return value


def output_token_limit(request: Mapping[str, Any]) -> int | None:
    """The request's output token limit (see :data:`TOKEN_LIMITS`), or None when it has none."""
    for name in TOKEN_LIMITS:
        value = request.get(name)
        if type(value) is int and value >= 1:
            return value
    return None


_SUBJECTS = (
    ("arguments text ", "its text "),
    ("arguments are ", "it is "),
    ("arguments nest ", "it nests "),
    ("arguments exceed ", "it exceeds "),
)
"""The strict parser's words about a call's arguments, said of the request body."""


_encode = json_encoder()


def request_bytes(body: Mapping[str, Any]) -> bytes:
    """``body`` as the JSON text an upstream gets: what httpx's ``json=`` sends, fast.

    The same JSON value as ``json.dumps(body, ensure_ascii=False, separators=(",", ":"),
    allow_nan=False)`` in UTF-8 (msgspec where installed; it may spell a float's exponent
    otherwise, ``1e16`` for ``1e+16``). A body :func:`read_request` read holds no ``NaN``
    nor infinity; whatever msgspec cannot write, :mod:`json` writes or refuses as before.
    """
    if _encode is not None:
        try:
            return _encode(body)
        except (TypeError, ValueError, OverflowError):
            pass
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def _of_the_body(message: str) -> str:
    """A strict-JSON finding's message about arguments, reworded for the request body."""
    for said, meant in _SUBJECTS:
        if message.startswith(said):
            return meant + message.removeprefix(said)
    return message


def _described(value: object) -> str:
    """A wrong value in brief: its JSON type, and a string's text."""
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    kind = {dict: "an object", list: "a list", int: "a number", float: "a number"}
    return kind[type(value)]  # a JSON value: null is absent, text and booleans said above
