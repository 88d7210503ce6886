"""The forms a generated stream takes: plain dicts, the SDKs' typed objects, raw bytes.

The SDKs are never dependencies of callgate: :func:`to_sdk` imports the one it needs
when asked, and says which package to install when it is missing.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from callgate.errors import SdkUnavailableError
from callgate.strategies import WIRE_RECORDS, wire_record
from callgate.testing.wires import WIRES

FORMS = ("dict", "sdk", "sse")

SDK_PACKAGES = {
    name: record.sdk.package if record.sdk is not None else ""
    for name, record in WIRE_RECORDS.items()
    if name in WIRES
}
"""The package whose typed objects ``form="sdk"`` gives per wire (boto3 yields plain dicts)."""


@cache
def _validator(wire: str) -> Callable[[dict[str, Any]], Any]:
    """The SDK's own parser of one chunk of ``wire``, as its record's ``sdk`` names it."""
    sdk = wire_record(wire).sdk
    if sdk is None:
        return dict
    module, _, name = sdk.stream_type.partition(":")
    try:
        stream_type = getattr(importlib.import_module(module), name)
        if sdk.construct:
            # The openai and anthropic clients build their objects without validating them
            # (construct_type): a chunk the types do not foresee still reaches the caller.
            models = importlib.import_module(module.partition(".")[0] + "._models")
            construct = models.construct_type
            return lambda chunk: construct(type_=stream_type, value=chunk)
        from pydantic import TypeAdapter

        adapter: TypeAdapter[Any] = TypeAdapter(stream_type)
        return adapter.validate_python
    except ImportError as exc:
        raise SdkUnavailableError(
            f"form='sdk' for {wire} needs the {sdk.package} package: "
            f"pip install {sdk.package} ({exc})"
        ) from None


def to_sdk(wire: str, chunk: dict[str, Any]) -> Any:
    """``chunk`` as the wire's official SDK yields it.

    openai and anthropic objects are built as those clients build them, without
    validation (``construct_type``); google-genai's are validated, as that client does.
    Bedrock stays a dict (boto3 yields dicts). A chunk a validating SDK refuses (an
    injected fault can make one) stays a plain dict: that SDK would fail on it before
    your adapter saw it. Raises :class:`SdkUnavailableError` when the SDK is missing.
    """
    validate = _validator(wire)
    try:
        return validate(chunk)
    except ValueError:
        return chunk


def sdk_available(wire: str) -> bool:
    """Whether the SDK that ``form="sdk"`` needs for ``wire`` is installed."""
    try:
        _validator(wire)
    except SdkUnavailableError:
        return False
    return True


def _json(chunk: dict[str, Any]) -> bytes:
    return json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode()


def raw_stream(wire: str, chunks: Sequence[dict[str, Any]], *, last: bool = True) -> bytes:
    """The bytes a client reads for ``chunks``.

    As the wire's record frames them (:class:`~callgate.strategies.wire.Framing`):
    server-sent events for the HTTP wires (named events for Anthropic and Responses, CRLF
    for Gemini's ``alt=sse``, OpenAI's ``[DONE]`` at the end); JSON lines for Ollama and
    for Bedrock (what boto3 yields, one event a line: the AWS event-stream framing
    itself is binary and is not generated). ``last``: close the stream (``[DONE]``).
    """
    framing = wire_record(wire).framing
    end = (framing.newline * 2).encode()
    out = bytearray()
    for chunk in chunks:
        if framing.events == "lines":
            out += _json(chunk) + b"\n"
            continue
        if framing.named:
            out += b"event: " + str(chunk.get("type", "")).encode() + framing.newline.encode()
        out += b"data: " + _json(chunk) + end
    if last and framing.done is not None:
        out += b"data: " + framing.done.encode() + end
    return bytes(out)
